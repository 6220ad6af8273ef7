"""An exact sentence index: every sentence vector of a corpus in one matrix, searched by one product.

The framework-free way to rank passages with DCSR: the trainer's validation and dense mining, the
benchmarks, and anyone with vectors and no document store. Queries are scored against all sentence
vectors (on the index's device: a GPU when there is one), the top ``top_n`` sentences of each are kept,
and passages are ranked by HasAns over them (``hasans.rank_hits``), exactly as the Haystack retrievers
rank the hits of their stores. Two ways to rank over it: ``rank_passage_numbers``, the no-read path (passage
numbers and HasAns only: what training loops, mining and benchmarks need), and the driver, ``rank_passages``, for
which it is a ``passage_ranking.SentenceIndex`` like any engine (passages are their numbers, ``remove`` stops
serving some); both give the same ranking.
"""

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np
import torch

from haystack_dcsr.core.ranking.hasans import TOP_N_SENTENCES, PassageScores, rank_hits
from haystack_dcsr.core.ranking.passage_ranking import SentenceHits


class ExactSentenceIndex:
    """Sentence vectors of passages, row ``i`` belonging to passage ``owner[i]``.

        index = ExactSentenceIndex(model.encode_passages(sentences_of_each_passage), [len(s) for s in ...])
        for ranked in index.rank_passage_numbers(model.encode_queries(questions), model.temperature, top_k=20):
            ranked.passages  # passage numbers, best first (ranked.hasans: their HasAns)

    :param vectors: (sentences x dim) vectors, passages' sentences consecutive and in passage order.
    :param sentences_per_passage: how many rows each passage has (0 for a passage without sentences).
    :param device: where the matrix lives and the products run (default: the vectors' device, or cpu).
    """

    def __init__(
        self,
        vectors: Union[np.ndarray, torch.Tensor],
        sentences_per_passage: Sequence[int],
        device: Optional[str] = None,
    ):
        counts = np.asarray(sentences_per_passage, dtype=np.int64)
        matrix = vectors if isinstance(vectors, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(vectors))
        if counts.sum() != len(matrix):
            raise ValueError(f"{len(matrix)} vectors but sentences_per_passage adds up to {int(counts.sum())}")
        self.vectors = matrix.to(device) if device is not None else matrix
        self.owner = np.repeat(np.arange(len(counts)), counts)
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        self.removed: set = set()

    similarity = "dot_product"

    def __len__(self) -> int:
        return len(self.vectors)

    def passage_vectors(self, passage: int) -> torch.Tensor:
        """The sentence vectors of passage number ``passage``."""
        return self.vectors[self.starts[passage] : self.starts[passage + 1]]

    def top_sentences(self, query_vectors: np.ndarray, top_n: int = TOP_N_SENTENCES, batch_size: int = 512):
        """Per query, the ``top_n`` best sentence rows and their inner products (numpy), best first."""
        top_n = min(top_n, len(self.vectors))
        with torch.inference_mode():
            for start in range(0, len(query_vectors), batch_size):
                queries = torch.from_numpy(np.ascontiguousarray(query_vectors[start : start + batch_size]))
                queries = queries.to(self.vectors.device, self.vectors.dtype)
                scores, rows = torch.topk(queries @ self.vectors.T, top_n, dim=1)
                yield from zip(scores.float().cpu().numpy(), rows.cpu().numpy())

    def rank_passage_numbers(
        self,
        query_vectors: np.ndarray,
        temperature: float,
        top_n: int = TOP_N_SENTENCES,
        top_k: Optional[int] = None,
    ) -> List[PassageScores]:
        """Per query, passage numbers ranked by HasAns over its top ``top_n`` sentences (the first ``top_k``), with
        nothing read: the no-read path (``rank_passages`` over this index gives the same ranking as
        ``RankedPassage``s)."""
        return [
            rank_hits(scores, self.owner[rows], temperature, top_k=top_k)
            for scores, rows in self.top_sentences(query_vectors, top_n)
        ]

    def remove(self, passages: Iterable[int]) -> None:
        """Stop serving these passages (their vectors stay, as in an engine whose deletes lag its index)."""
        self.removed.update(int(p) for p in passages)

    def search(self, query_vectors: np.ndarray, top_n: int, filters=None) -> List[SentenceHits]:
        """``top_sentences`` as the driver's ``SentenceHits`` (passage numbers as passages; no filters)."""
        if filters:
            raise ValueError("ExactSentenceIndex has no meta to filter on: filter the passages before indexing them")
        passages = range(len(self.starts) - 1)
        return [
            SentenceHits(scores, self.owner[rows], rows - self.starts[self.owner[rows]], passages)
            for scores, rows in self.top_sentences(query_vectors, top_n)
        ]

    def read(self, passages: Sequence[int], known: Mapping = {}) -> Dict[int, Optional[range]]:
        """Each served passage's sentence positions (the index holds vectors, not texts)."""
        return {p: None if p in self.removed else range(self.starts[p + 1] - self.starts[p]) for p in passages}
