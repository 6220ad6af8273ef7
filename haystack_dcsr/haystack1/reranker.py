"""CrossEncoderRanker: a ``train-cross-encoder`` model over a retriever's passages, as a Haystack 1.x node.

Why beside Haystack's ``SentenceTransformersRanker`` (which serves the same directory): the better use
of this model is a blend with the retriever's own score, which Haystack's ranker cannot do
(``docs/guides/reranker.md``).
"""

import copy
from typing import List, Optional, Union

from haystack.nodes.ranker.base import BaseRanker
from haystack.schema import Document

from haystack_dcsr.core.model.cross_encoder import (
    DEFAULT_FIRST_STAGE_WEIGHT,
    DEFAULT_TOP_K,
    CrossEncoder,
    order_by_cross_encoder,
)
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.ranking.parameters import check_parameters, first_device


class CrossEncoderRanker(BaseRanker):
    """Reorders passages by a cross-encoder's logit, alone or blended with the incoming scores.

    :param model: a ``dcsr-train train-cross-encoder`` output directory, or a hub name of a one-label
        sequence classifier.
    :param first_stage_weight: 0 ranks by the cross-encoder alone (as Haystack's rankers do); w > 0 by
        ``(1 - w) * CE + w * score``, both min-max scaled over the passages given (0.5: the blended row).
    :param top_k: passages returned (None: all given).
    :param scale_score: with ``first_stage_weight=0``, the sigmoid of the logit as the score (Haystack's
        default); False keeps the raw logit. Blended scores are in [0, 1] either way.
    :param progress_bar: a progress bar over scoring batches.
    :param devices: Haystack's device list; the first is used (e.g. ``["cuda:1"]``, ``["cpu"]``).
    :param use_auth_token: a Hugging Face token (or True: the stored one) for a private or gated hub model.
    :param quantize: ``"int8"`` scores on the CPU (whatever ``use_gpu`` says), faster with the same
        preferences; it needs a C++ compiler and compiles here, when the node is built, not at the first
        query (``docs/guides/int8.md``). None: fp32.
    """

    def __init__(
        self,
        model: str,
        first_stage_weight: float = DEFAULT_FIRST_STAGE_WEIGHT,
        top_k: Optional[int] = DEFAULT_TOP_K,
        batch_size: int = 32,
        use_gpu: bool = True,
        quantize: Optional[Quantize] = None,
        scale_score: bool = True,
        progress_bar: bool = True,
        devices: Optional[List[str]] = None,
        use_auth_token: Optional[Union[str, bool]] = None,
    ):
        super().__init__()
        check_parameters(
            "CrossEncoderRanker",
            ("top_k", "quantize"),
            first_stage_weight=first_stage_weight,
            top_k=top_k,
            quantize=quantize,
        )
        self.first_stage_weight, self.top_k = first_stage_weight, top_k
        self.scale_score, self.progress_bar = scale_score, progress_bar
        # Haystack's devices win over use_gpu; with quantize, None is the CPU too
        device = first_device("CrossEncoderRanker", None, devices) or (None if use_gpu else "cpu")
        self.scorer = CrossEncoder(model, batch_size=batch_size, device=device, quantize=quantize, token=use_auth_token)
        self.scorer.warm_up()  # int8 compiles when the pipeline loads, not at the first query

    def predict(self, query: str, documents: List[Document], top_k: Optional[int] = None) -> List[Document]:
        if not documents:
            return []
        logits = self.scorer.score_pairs([(query, doc.content) for doc in documents], self.progress_bar)
        ranked = order_by_cross_encoder(
            logits, [doc.score for doc in documents], self.first_stage_weight, self.scale_score
        )
        out = []
        for i, score in ranked[: top_k or self.top_k or len(ranked)]:
            doc = copy.copy(documents[i])  # the caller's documents keep their retriever scores
            doc.score = score
            out.append(doc)
        return out

    def predict_batch(
        self,
        queries: List[str],
        documents: Union[List[Document], List[List[Document]]],
        top_k: Optional[int] = None,
        batch_size: Optional[int] = None,
    ) -> List[List[Document]]:
        """One list per query: ``documents`` is either one list for every query or one list per query."""
        per_query = documents if documents and isinstance(documents[0], list) else [documents] * len(queries)
        if len(per_query) != len(queries):
            raise ValueError(f"CrossEncoderRanker: {len(per_query)} document lists for {len(queries)} queries")
        return [self.predict(q, docs, top_k) for q, docs in zip(queries, per_query)]
