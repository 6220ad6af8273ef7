"""The one contract every engine's sentence index is held to (``core.ranking.passage_ranking.SentenceIndex``), run by
each suite over its engines: the core's (exact, Milvus), Haystack 1.x's (FAISS, InMemory, Qdrant, Milvus) and Haystack
2.x's (InMemory, Qdrant, milvus-haystack, DCSR's Milvus store, pgvector).

An engine's index is built over ``corpus.CORPUS`` written as DCSR sentences with MiniLM's vectors. The contract:
- the index says how it compares vectors, an inner product;
- its optional capability is real where the index has it (a read guard that enters);
- under the one driver it serves the core's ranking and HasAns (``corpus.core_ranking``: the exact index), with every
  passage whole; and once one sentence of "Paris" is deleted through the engine's own store, the core's ranking
  without "Paris" (where the engine can delete a sentence at all);
- a passage version it never held reads as None.
"""

from typing import Callable, Optional

import pytest
from corpus import CORPUS, core_ranking

from haystack_dcsr.core.ranking.passage_ranking import (
    INNER_PRODUCTS,
    GuardedIndex,
    SentenceHits,
    rank_passages,
)
from haystack_dcsr.core.text.sentence_units import PassageRef

QUESTION = "When was the Eiffel Tower completed?"


def title_of(ref) -> str:
    """A passage's title: engines key passages by version (``PassageRef``); the exact index by number."""
    return ref.passage_id if isinstance(ref, PassageRef) else CORPUS[ref][0]


def holds_the_contract(index, model, delete_a_paris_sentence: Optional[Callable[[], None]]) -> None:
    """``index`` over ``CORPUS`` holds the contract; ``delete_a_paris_sentence`` deletes "Paris#1" through the
    engine's own store (None: the engine cannot delete one sentence, e.g. FAISS Flat renumbers its vectors)."""
    assert index.similarity in INNER_PRODUCTS
    if isinstance(index, GuardedIndex):
        with index.reading():
            pass
    query = model.encode_queries([QUESTION])
    for drop in (None, "Paris") if delete_a_paris_sentence else (None,):
        if drop:
            delete_a_paris_sentence()
        ranked = rank_passages(index, query, model.temperature, 3000, 5)[0]
        expected = core_ranking(model, QUESTION, drop=drop)
        assert [title_of(p.ref) for p in ranked] == [title for title, _ in expected]
        assert [p.hasans for p in ranked] == pytest.approx([score for _, score in expected], rel=1e-4, abs=1e-9)
        assert ("Paris" == title_of(ranked[0].ref)) == (drop is None)
        assert all(len(p.sentences) == len(model.passage_units([dict(CORPUS)[title_of(p.ref)]])[0]) for p in ranked)
    assert all(isinstance(hits, SentenceHits) for hits in index.search(query, 10, None))
    unknown = PassageRef("no such passage", 1, "no version")
    if isinstance(ranked[0].ref, PassageRef):
        assert index.read([unknown], {}) == {unknown: None}
