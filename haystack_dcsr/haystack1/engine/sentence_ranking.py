"""The Haystack 1.x side of ranking: what the one driver in the core returns, as Haystack 1.x Documents.

The retriever calls ``passage_ranking.rank_passages`` over its search (``sentence_search``, a
``passage_ranking.SentenceIndex``) and wraps each ranked passage here (``passage_document``).
"""

from typing import Callable, List, Sequence

from haystack.schema import Document

from haystack_dcsr.core.ranking.passage_ranking import RankedPassage, passage_parts
from haystack_dcsr.core.text.evidence import mark_answer_sentences

SENTENCE_TEXTS = "_dcsr_sentence_texts"  # carried from ranking to the answer-sentence pass, then removed


def passage_document(ranked: RankedPassage, with_sentences: bool = False) -> Document:
    """A ranked passage as a Haystack 1.x Document scored by HasAns; ``with_sentences`` carries its sentence texts in
    its meta (``SENTENCE_TEXTS``) for the answer-sentence pass, which removes them."""
    doc_id, content, meta = passage_parts(ranked)
    if with_sentences:
        meta[SENTENCE_TEXTS] = [sentence.content for sentence in ranked.sentences]
    return Document(content=content, id=doc_id, score=ranked.hasans, meta=meta)


def mark_answers(
    queries: Sequence[str], results: List[List[Document]], encode_queries: Callable, encode_passages: Callable
) -> None:
    """The answer-sentence pass (``core.text.evidence``) over passages ranked ``with_sentences``: each gets
    ``meta["dcsr_answer_sentence"]`` and loses the sentence texts it carried for the pass."""
    for query, passages in zip(queries, results):
        sentences = {doc.id: doc.meta.pop(SENTENCE_TEXTS) for doc in passages}
        mark_answer_sentences(encode_queries, encode_passages, query, passages, lambda doc: sentences[doc.id])
