"""The one ranking driver (``passage_ranking.rank_passages``) over the exact index and over stand-in engines that
fail to serve a passage, change under a query, are filtered per query, guard a store or compare by distance."""

import contextlib

import numpy as np
import pytest

from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
from haystack_dcsr.core.ranking.hasans import hasans_scores
from haystack_dcsr.core.ranking.passage_ranking import (
    GuardedIndex,
    SentenceHits,
    rank_passages,
    same_filter_groups,
)

RNG = np.random.default_rng(3)
VECTORS = RNG.standard_normal((14, 6)).astype(np.float32)
COUNTS = [3, 2, 4, 5]
QUERIES = RNG.standard_normal((3, 6)).astype(np.float32)


def expected(query, removed=(), top_n=14, top_k=4):
    """HasAns over the top ``top_n`` rows, then without the rows of the removed passages."""
    owner = np.repeat(np.arange(len(COUNTS)), COUNTS)
    scores = VECTORS @ query
    top = np.argsort(-scores, kind="stable")[:top_n]
    top = top[~np.isin(owner[top], list(removed))]
    ranked = hasans_scores(scores[top], owner[top], 0.5)
    return ranked.passages[:top_k].tolist(), ranked.hasans[:top_k]


@pytest.mark.parametrize("removed", [(), (2,), (0, 3)])
def test_a_passage_the_index_cannot_serve_is_ranked_as_if_never_indexed(removed):
    index = ExactSentenceIndex(VECTORS, COUNTS)
    index.remove(removed)
    for query, ranked in zip(QUERIES, rank_passages(index, QUERIES, 0.5, top_n=14, top_k=4)):
        passages, hasans = expected(query, removed)
        assert [p.ref for p in ranked] == passages
        assert np.allclose([p.hasans for p in ranked], hasans)
        assert not set(passages) & set(removed)
        for p in ranked:  # every support is a hit of that passage, with its position and probability
            assert {s.sentence_index for s in p.support} <= set(range(COUNTS[p.ref]))
            assert all(0 < s.probability <= 1 for s in p.support)


def test_the_support_probabilities_are_the_softmax_of_the_kept_hits():
    index = ExactSentenceIndex(VECTORS, COUNTS)
    index.remove([1])
    ranked = rank_passages(index, QUERIES[:1], 0.5, top_n=14, top_k=4)[0]
    total = sum(s.probability for p in ranked for s in p.support)
    assert total == pytest.approx(1.0)  # top_n covers every row, so the kept hits are all supports


class Recording:
    """The exact index, recording each search (how many queries, which filter)."""

    similarity = "dot_product"

    def __init__(self):
        self.exact, self.searches = ExactSentenceIndex(VECTORS, COUNTS), []

    def search(self, query_vectors, top_n, filters):
        self.searches.append((len(query_vectors), filters))
        return self.exact.search(query_vectors, top_n)

    def read(self, passages, known):
        return self.exact.read(passages, known)


def test_queries_with_equal_filters_are_searched_together_and_keep_their_own_hits():
    index = Recording()
    filters = [{"a": 1}, None, {"a": 1}]
    ranked = rank_passages(index, QUERIES, 0.5, top_n=14, top_k=3, filters=filters)
    assert index.searches == [(2, {"a": 1}), (1, None)]
    assert [[p.ref for p in r] for r in ranked] == [expected(q, top_k=3)[0] for q in QUERIES]
    assert same_filter_groups([{"x": [1]}, {"x": [1]}, {}, None]) == [[0, 1], [2], [3]]
    with pytest.raises(ValueError, match="2 filters for 3 queries"):
        rank_passages(index, QUERIES, 0.5, top_n=14, top_k=3, filters=[None, None])


def test_an_empty_search_ranks_nothing_and_the_exact_index_refuses_filters():
    class Empty:
        similarity = "cosine"

        def search(self, query_vectors, top_n, filters):
            return [SentenceHits.empty() for _ in query_vectors]

        def read(self, passages, known):
            raise AssertionError("nothing to read")

    assert rank_passages(Empty(), QUERIES, 0.5, top_n=10, top_k=3) == [[], [], []]
    with pytest.raises(ValueError, match="no meta to filter on"):
        rank_passages(ExactSentenceIndex(VECTORS, COUNTS), QUERIES, 0.5, 10, 3, filters=[{"a": 1}] * 3)


def test_the_driver_detects_its_optional_capability_instead_of_calling_a_no_op():
    assert not isinstance(ExactSentenceIndex(VECTORS, COUNTS), GuardedIndex) and isinstance(Guarded(), GuardedIndex)


class Guarded:
    """The exact index behind a read guard that records when it is held, and fails a search or read outside it."""

    similarity = "dot_product"

    def __init__(self):
        self.exact, self.held, self.sections = ExactSentenceIndex(VECTORS, COUNTS), False, []

    @contextlib.contextmanager
    def reading(self):
        self.held = True
        self.sections.append([])
        try:
            yield
        finally:
            self.held = False

    def search(self, query_vectors, top_n, filters):
        assert self.held, "searched outside the read guard"
        self.sections[-1].append(("search", len(query_vectors)))
        return self.exact.search(query_vectors, top_n)

    def read(self, passages, known):
        assert self.held, "read outside the read guard"
        self.sections[-1].append(("read", len(passages)))
        return self.exact.read(passages, known)


def test_the_driver_holds_the_read_guard_across_each_batch_of_queries():
    index = Guarded()
    ranked = rank_passages(index, QUERIES, 0.5, top_n=14, top_k=2, batch_size=2)
    assert [[kind for kind, _ in section] for section in index.sections] == [["search", "read"], ["search", "read"]]
    assert [section[0][1] for section in index.sections] == [2, 1]  # two queries, then one: batches of 2
    assert [[p.ref for p in r] for r in ranked] == [expected(q, top_k=2)[0] for q in QUERIES]


def test_an_index_that_compares_by_distance_is_refused_by_name():
    class ByDistance(Recording):
        similarity = "l2"

    with pytest.raises(ValueError, match="compares vectors by l2, but DCSR ranks by inner product"):
        rank_passages(ByDistance(), QUERIES, 0.5, top_n=14, top_k=2)


def test_the_exact_index_holds_the_index_contract():
    """The exact index holds the contract every engine is held to (``index_contract``); removing a passage is its
    way of no longer serving one."""
    from corpus import CORPUS
    from index_contract import holds_the_contract
    from tiny_models import MINILM

    from haystack_dcsr.core.model.dcsr_model import DCSRModel

    model = DCSRModel.from_pretrained(MINILM, use_gpu=False)
    units = model.passage_units([text for _, text in CORPUS])
    index = ExactSentenceIndex(model.encode_passages(units), [len(u) for u in units])
    paris = [title for title, _ in CORPUS].index("Paris")
    holds_the_contract(index, model, lambda: index.remove([paris]))


def test_two_versions_of_one_passage_that_both_read_whole_are_never_served_twice():
    """An engine whose writes are not atomic (Milvus) can return hits of a passage's old version from a search's
    snapshot and read its new version whole afterwards: the driver leaves both out, so no answer holds one passage
    twice (the passage is absent meanwhile, as a passage being re-written may be)."""
    from haystack_dcsr.core.text.sentence_units import PassageRef

    old, new, other = PassageRef("p", 2, "old"), PassageRef("p", 3, "new"), PassageRef("q", 1, "v")

    class Rewriting:
        similarity = "dot_product"

        def search(self, query_vectors, top_n, filters):
            hits = SentenceHits(np.array([3.0, 2.0, 1.0]), np.array([0, 1, 2]), np.array([0, 0, 0]), [old, new, other])
            return [hits for _ in query_vectors]

        def read(self, passages, known):
            return {ref: list(range(ref.count)) for ref in passages}  # every version reads whole

    ranked = rank_passages(Rewriting(), QUERIES[:1], 0.5, top_n=3, top_k=3)[0]
    assert [p.ref for p in ranked] == [other]
