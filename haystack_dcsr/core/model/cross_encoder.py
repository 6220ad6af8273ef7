"""A cross-encoder over a first stage's top passages: the question and each passage read together.

Why: a bi-encoder (DCSR included) embeds a question and its minimal edit a few degrees apart, so the
two often retrieve the same passages; a cross-encoder attends from the edited word into the passage.
The model is a plain Hugging Face sequence-classification directory with one logit (what
``dcsr-train train-cross-encoder`` writes), so Haystack's own ``SentenceTransformersRanker`` loads
it in a pipeline unchanged. This class is the batch scorer the benchmarks use: pairs are sorted by
length before batching, which on a CPU spends about half the padded tokens of arrival order, and
``quantize="int8"`` scores faster on a CPU with the same preferences (``haystack_dcsr/core/model/int8.py``).
"""

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from haystack_dcsr.core.model.int8 import Quantize, default_device, quantized, warm_up
from haystack_dcsr.core.model.models import pick_device, resolve_model_path
from haystack_dcsr.core.ranking.fusion import fuse

Passages = List[Tuple[str, float]]  # one question's (passage id, score), best first


class CrossEncoder:
    """One relevance logit per (question, passage) pair.

    :param model: a ``train-cross-encoder`` output directory or a hub name of a one-label
        sequence-classification model (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2`` when online).
    :param max_length: question and passage tokens together; the passage is truncated, never the
        question. Default: the tokenizer's ``model_max_length``, which ``train-cross-encoder`` sets to
        its training length, so Haystack's ranker (which truncates there) scores the same tokens.
    :param quantize: ``"int8"``: int8 weights and per-token int8 activations, compiled (CPU only: the
        device defaults to it); ``warm_up`` compiles now, else the first batch does. ``None``: fp32.
    """

    def __init__(
        self,
        model: str,
        max_length: Optional[int] = None,
        batch_size: int = 32,
        device: Optional[str] = None,
        quantize: Optional[Quantize] = None,
        token: Optional[Union[str, bool]] = None,
    ):
        path = resolve_model_path(model, token)
        # never run code shipped with a model directory (an auto_map would make transformers ask, or run it)
        self.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=False)
        if self.model.config.num_labels != 1:
            raise ValueError(
                f"{model}: a cross-encoder needs one output label, this model has {self.model.config.num_labels}"
            )
        self.device = pick_device(default_device(device, quantize))
        self.model.eval()
        int8_model = None if quantize is None else quantized(self.model, quantize, self.device)
        self.quantize = quantize if int8_model is not None else None  # None where int8 does not pay here
        self.model = self.model.to(self.device) if int8_model is None else int8_model
        positions = self.model.config.max_position_embeddings
        self.max_length = min(max_length or self.tokenizer.model_max_length, positions)
        self.batch_size = batch_size

    def warm_up(self) -> None:
        """An int8 model compiles now rather than at the first query (``int8.warm_up``); fp32: nothing."""
        if self.quantize is not None:
            warm_up(lambda n: self.score_pairs([("warm up", "warm up")] * n))

    def encode(self, pairs: Sequence[Tuple[str, str]]):
        return self.tokenizer(
            [q for q, _ in pairs],
            [p for _, p in pairs],
            truncation="only_second",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )

    def score_pairs(self, pairs: Sequence[Tuple[str, str]], progress_bar: bool = False) -> np.ndarray:
        """Logits in the pairs' order, computed in length-sorted batches."""
        from tqdm.auto import tqdm

        lengths = [len(q) + len(p) for q, p in pairs]  # characters: a cheap proxy for the token count
        order = np.argsort(lengths, kind="stable")
        scores = np.empty(len(pairs), dtype=np.float32)
        starts = range(0, len(pairs), self.batch_size)
        with torch.inference_mode():
            for start in tqdm(starts, disable=not progress_bar or len(starts) < 2, desc="Reranking", unit=" batches"):
                chunk = order[start : start + self.batch_size]
                batch = self.encode([pairs[i] for i in chunk]).to(self.device)
                scores[chunk] = self.model(**batch).logits[:, 0].float().cpu().numpy()
        return scores


DEFAULT_FIRST_STAGE_WEIGHT = 0.0  # both rankers: the cross-encoder alone unless asked to blend
DEFAULT_TOP_K = 10  # both rankers, as Haystack's


def order_by_cross_encoder(
    logits: Sequence[float],
    incoming: Optional[Sequence[Optional[float]]] = None,
    first_stage_weight: float = 0.0,
    scale_score: bool = False,
) -> List[Tuple[int, float]]:
    """(position, score) of each passage, best first: by the cross-encoder's logits alone (their
    sigmoid with ``scale_score``, as Haystack's rankers give), or with ``first_stage_weight`` w > 0 by
    ``(1 - w) * CE + w * incoming`` with both min-max scaled over the passages given (already in
    [0, 1]; w = 0.5 is the blended row of the docs). Both rankers use this."""
    ranked = [(str(i), float(s)) for i, s in enumerate(logits)]
    if first_stage_weight > 0:
        if incoming is None or len(incoming) != len(ranked) or any(s is None for s in incoming):
            raise ValueError(
                "first_stage_weight > 0 needs every passage's incoming score, and some passages have none (e.g. "
                "straight from a document store): set first_stage_weight=0 to rank by the cross-encoder alone"
            )
        first = [(str(i), float(s)) for i, s in enumerate(incoming)]
        ranked = fuse([ranked, first], [1 - first_stage_weight, first_stage_weight])
    else:
        ranked.sort(key=lambda x: -x[1])
        if scale_score:
            ranked = [(i, float(1 / (1 + np.exp(-s)))) for i, s in ranked]
    return [(int(i), s) for i, s in ranked]


def rerank(ranked: Passages, scores: Sequence[float], top_n: int) -> Passages:
    """``ranked``'s first ``top_n`` reordered by ``scores`` (one per reranked passage, in ``ranked``'s
    order); the rest keep their order below them, on scores that stay under the lowest reranked one,
    so the list reads as one descending ranking (as a retriever-then-ranker pipeline serves it)."""
    head = ranked[:top_n]
    if len(scores) != len(head):
        raise ValueError(f"{len(scores)} scores for the {len(head)} passages to rerank")
    reranked = sorted(((pid, float(s)) for (pid, _), s in zip(head, scores)), key=lambda x: -x[1])
    floor = min((s for _, s in reranked), default=0.0)
    return reranked + [(pid, floor - 1.0 - i) for i, (pid, _) in enumerate(ranked[top_n:])]
