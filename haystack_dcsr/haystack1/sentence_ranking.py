"""Ranking a query's sentence hits into the passages a Haystack 1.x store can serve, as Documents.

The search (``sentence_search``) returns each query's top-N sentence hits; ``SentenceRanker`` ranks
their passages by HasAns (``core.hasans.rank_hits``), reads the best passages' sentences from the store,
leaves out a passage that can no longer be rebuilt exactly (deleted, re-written since it was indexed) and
ranks again without it, and finally has the search confirm that the supporting hits still belong to their
sentences (else the vector map is re-read and the query run again once).
"""

import dataclasses
import logging
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from haystack.document_stores.base import FilterType
from haystack.schema import Document

from haystack_dcsr.core.evidence import mark_answer_sentences
from haystack_dcsr.core.hasans import PassageScores, kept_hits, rank_hits
from haystack_dcsr.core.sentence_units import SUPPORT, PassageRef
from haystack_dcsr.haystack1.sentence_search import Hits, SentenceSearch

logger = logging.getLogger(__name__)

SENTENCE_TEXTS = "_dcsr_sentence_texts"  # carried from ranking to the answer-sentence pass, then removed


@dataclasses.dataclass(frozen=True)
class SentenceRanker:
    """How a retriever ranks: ``top_n`` sentences a query, HasAns at ``temperature``; ``with_sentences``
    carries each passage's sentence texts in its meta (``SENTENCE_TEXTS``) for the answer-sentence pass."""

    top_n: int
    temperature: float
    with_sentences: bool = False

    def search_and_rank(
        self, search: SentenceSearch, vectors: np.ndarray, filters: List[Optional[FilterType]], top_k: int
    ) -> List[List[Document]]:
        """Each query's top ``top_k`` passages; queries sharing a filter are searched together, each keeps its
        own hits. A vector map found out of date mid-query is re-read once."""
        for attempt in (1, 2):
            hits: List[Optional[Hits]] = [None] * len(vectors)
            for group in same_filter_groups(filters):
                for row, found in zip(group, search.search(vectors[group], self.top_n, filters[group[0]])):
                    hits[row] = found
            try:
                return self.rank(search, hits, top_k)
            except _MapOutOfDate:
                if attempt == 2:
                    raise ValueError(
                        "The document store changed while this query ran (its vector ids moved again after the "
                        "retriever re-read them): retry, and avoid writing to the store while it serves queries"
                    ) from None
                search.invalidate()
        raise AssertionError("unreachable")

    def rank(self, search: SentenceSearch, hits: Sequence[Hits], top_k: int) -> List[List[Document]]:
        """Passages by HasAns, read from the store. A passage that can no longer be rebuilt exactly is
        left out (with a warning) and HasAns is recomputed without its sentences (``rank_hits``,
        the rule the 2.x retriever applies too). Before returning, the search confirms that the
        supporting hits still belong to their sentences."""
        gone: List[set] = [set() for _ in hits]
        fetched: Dict[PassageRef, Optional[tuple]] = {}
        known = {sid: doc for h in hits for sid, doc in h.documents.items()}
        while True:
            views = [self._without(h, gone[q]) for q, h in enumerate(hits)]
            wanted = {h.passages[int(k)]: None for h, s in views for k in s.passages[:top_k]}
            fetched.update(search.fetch_passages([ref for ref in wanted if ref not in fetched], known))
            changed = False
            for q, (h, s) in enumerate(views):
                for key in s.passages[:top_k]:
                    if fetched[h.passages[int(key)]] is None:
                        gone[q].add(int(key))
                        changed = True
            if not changed:
                break
        dropped = sorted({ref.passage_id for ref, passage in fetched.items() if passage is None})
        if dropped:
            logger.warning(
                "Left out %d passage(s) that the store no longer holds as they were indexed (deleted, or re-written "
                "without store.update_embeddings(retriever)): %s",
                len(dropped),
                ", ".join(dropped[:5]),
            )
        supports: List[tuple] = []
        results = [
            [
                self._passage_document(
                    h, s, rank, fetched[h.passages[int(s.passages[rank])]], supports, self.with_sentences
                )
                for rank in range(min(top_k, len(s.passages)))
            ]
            for h, s in views
        ]
        if not search.verify(supports):
            raise _MapOutOfDate()
        return results

    def _without(self, h: Hits, gone: set) -> Tuple[Hits, PassageScores]:
        """The hits without those of the passages in ``gone``, and their HasAns (``rank_hits`` over what is
        kept: the same as ranking all of them with those passages ``gone``)."""
        keep = kept_hits(h.passage_keys, gone)
        if not keep.all():
            vector_ids = None if h.vector_ids is None else h.vector_ids[keep]
            h = h._replace(
                scores=h.scores[keep],
                passage_keys=h.passage_keys[keep],
                sentence_indices=h.sentence_indices[keep],
                vector_ids=vector_ids,
            )
        return h, rank_hits(h.scores, h.passage_keys, self.temperature)

    @staticmethod
    def _passage_document(
        h: Hits, scores: PassageScores, rank: int, passage, supports: List[tuple], with_sentences: bool = False
    ) -> Document:
        content, sentences = passage
        key = int(scores.passages[rank])
        ref = h.passages[key]
        support = []
        for i in np.flatnonzero(h.passage_keys == key):
            sentence = sentences[h.sentence_indices[i]]
            if h.vector_ids is not None:
                supports.append((int(h.vector_ids[i]), sentence.id, ref))
            support.append(
                {
                    "sentence_index": int(h.sentence_indices[i]),
                    "text": sentence.content,
                    "score": float(h.scores[i]),
                    "probability": float(scores.sentence_probabilities[i]),
                }
            )
        meta = {**content.meta, SUPPORT: support}
        if with_sentences:  # for the answer-sentence pass, which removes them
            meta[SENTENCE_TEXTS] = [sentence.content for sentence in sentences]
        return Document(content=content.content, id=content.id, score=float(scores.hasans[rank]), meta=meta)


class _MapOutOfDate(Exception):
    """A hit's vector id no longer belongs to its sentence in SQL: the map must be rebuilt."""


def same_filter_groups(filters: List[Optional[FilterType]]) -> List[List[int]]:
    """Row numbers grouped by equal filter, in first-seen order (filters are dicts: not hashable)."""
    groups: List[List[int]] = []
    for row, query_filter in enumerate(filters):
        for group in groups:
            if filters[group[0]] == query_filter:
                group.append(row)
                break
        else:
            groups.append([row])
    return groups


def mark_answers(
    queries: Sequence[str], results: List[List[Document]], encode_queries: Callable, encode_passages: Callable
) -> None:
    """The answer-sentence pass (``core.evidence``) over passages ranked ``with_sentences``: each gets
    ``meta["dcsr_answer_sentence"]`` and loses the sentence texts it carried for the pass."""
    for query, passages in zip(queries, results):
        sentences = {doc.id: doc.meta.pop(SENTENCE_TEXTS) for doc in passages}
        mark_answer_sentences(encode_queries, encode_passages, query, passages, lambda doc: sentences[doc.id])
