"""DCSRCrossEncoderRanker: a ``train-cross-encoder`` model over a retriever's passages, in a 2.x pipeline.

Why a component of our own: haystack-ai 3.x keeps no cross-encoder ranker in its core package, and the
measured use of this model is a blend with the first stage's score, which its rankers do not do.
"""

import dataclasses
from typing import Any, Dict, List, Optional

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_dcsr.core.model.cross_encoder import (
    DEFAULT_FIRST_STAGE_WEIGHT,
    DEFAULT_TOP_K,
    CrossEncoder,
    order_by_cross_encoder,
)
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.ranking.parameters import check_parameters, check_quantize_device


@component
class DCSRCrossEncoderRanker:
    """Reorders passages by a cross-encoder's logit for (query, passage).

    :param model: a ``dcsr-train train-cross-encoder`` output directory, or a hub name of a one-label
        sequence classifier.
    :param first_stage_weight: 0 ranks by the cross-encoder alone; w > 0 ranks by
        ``(1 - w) * CE + w * incoming score``, both min-max scaled over the passages given (0.5: the
        README's blended row; ``docs/guides/reranker.md``).
    :param top_k: passages returned (None: all given).
    :param scale_score: with ``first_stage_weight=0``, the sigmoid of the logit as the score (Haystack's
        default); False keeps the raw logit. Blended scores are in [0, 1] either way.
    :param progress_bar: a progress bar over scoring batches.
    :param quantize: ``"int8"`` scores on the CPU, faster with the same preferences (``device`` then
        defaults to ``"cpu"`` and may not name another); it needs a C++ compiler and compiles at
        ``warm_up``, which Haystack's ``Pipeline`` calls before the first run (``docs/guides/int8.md``).
        None: fp32.
    """

    def __init__(
        self,
        model: str,
        first_stage_weight: float = DEFAULT_FIRST_STAGE_WEIGHT,
        top_k: Optional[int] = DEFAULT_TOP_K,
        batch_size: int = 32,
        device: Optional[str] = None,
        quantize: Optional[Quantize] = None,
        scale_score: bool = True,
        progress_bar: bool = False,
    ):
        check_parameters(
            "DCSRCrossEncoderRanker",
            ("top_k", "quantize"),
            first_stage_weight=first_stage_weight,
            top_k=top_k,
            quantize=quantize,
        )
        check_quantize_device("DCSRCrossEncoderRanker", quantize, device)
        self.model, self.first_stage_weight, self.top_k = model, first_stage_weight, top_k
        self.batch_size, self.device, self.quantize = batch_size, device, quantize
        self.scale_score, self.progress_bar = scale_score, progress_bar
        self._scorer: Optional[CrossEncoder] = None

    def warm_up(self) -> None:
        if self._scorer is None:
            self._scorer = CrossEncoder(
                self.model, batch_size=self.batch_size, device=self.device, quantize=self.quantize
            )
            self._scorer.warm_up()  # int8 compiles here (Haystack calls warm_up before the first run)

    @component.output_types(documents=List[Document])
    def run(self, query: str, documents: List[Document], top_k: Optional[int] = None) -> Dict[str, List[Document]]:
        if not documents:
            return {"documents": []}
        self.warm_up()
        logits = self._scorer.score_pairs([(query, doc.content or "") for doc in documents], self.progress_bar)
        ranked = order_by_cross_encoder(
            logits, [doc.score for doc in documents], self.first_stage_weight, self.scale_score
        )
        keep = ranked[: top_k or self.top_k or len(ranked)]
        return {"documents": [dataclasses.replace(documents[i], score=s) for i, s in keep]}

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(
            self,
            model=self.model,
            first_stage_weight=self.first_stage_weight,
            top_k=self.top_k,
            batch_size=self.batch_size,
            device=self.device,
            quantize=self.quantize,
            scale_score=self.scale_score,
            progress_bar=self.progress_bar,
        )

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRCrossEncoderRanker":
        return default_from_dict(cls, data)
