"""The Haystack 1.x side of ranking: a query's passages as Documents, from the one driver in the core.

The search (``sentence_search``) is a ``passage_ranking.SentenceIndex``; ``passage_ranking.rank_passages``
ranks its hits by HasAns and serves only passages the store still holds whole; ``SentenceRanker`` wraps what
it returns in Haystack 1.x Documents.
"""

import dataclasses
from typing import Callable, List, Optional, Sequence

import numpy as np
from haystack.document_stores.base import FilterType
from haystack.schema import Document

from haystack_dcsr.core.evidence import mark_answer_sentences
from haystack_dcsr.core.passage_ranking import RankedPassage, passage_parts, rank_passages
from haystack_dcsr.haystack1.engine.sentence_search import SentenceSearch

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
        """Each query's top ``top_k`` passages (``filters``: one per query)."""
        ranked = rank_passages(search, vectors, self.temperature, self.top_n, top_k, filters)
        return [[self._document(passage) for passage in passages] for passages in ranked]

    def _document(self, ranked: RankedPassage) -> Document:
        doc_id, content, meta = passage_parts(ranked)
        if self.with_sentences:  # for the answer-sentence pass, which removes them
            meta[SENTENCE_TEXTS] = [sentence.content for sentence in ranked.sentences]
        return Document(content=content, id=doc_id, score=ranked.hasans, meta=meta)


def mark_answers(
    queries: Sequence[str], results: List[List[Document]], encode_queries: Callable, encode_passages: Callable
) -> None:
    """The answer-sentence pass (``core.evidence``) over passages ranked ``with_sentences``: each gets
    ``meta["dcsr_answer_sentence"]`` and loses the sentence texts it carried for the pass."""
    for query, passages in zip(queries, results):
        sentences = {doc.id: doc.meta.pop(SENTENCE_TEXTS) for doc in passages}
        mark_answer_sentences(encode_queries, encode_passages, query, passages, lambda doc: sentences[doc.id])
