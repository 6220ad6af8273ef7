import math

import numpy as np
import pytest

from haystack_dcsr.core.ranking.hasans import hasans_scores, sentence_probabilities


def test_probabilities_are_a_tempered_softmax():
    p = sentence_probabilities(np.array([2.0, 1.0, 0.0]), temperature=0.5)
    e = [math.exp(4), math.exp(2), 1.0]
    assert p == pytest.approx([x / sum(e) for x in e])
    with pytest.raises(ValueError, match="temperature"):
        sentence_probabilities(np.array([1.0]), temperature=0)


def test_hasans_matches_hand_computation():
    scores = np.array([3.0, 1.0, 2.0, 0.5])
    passages = np.array([7, 7, 9, 4])
    z = sum(math.exp(s) for s in scores)
    p = [math.exp(s) / z for s in scores]
    expected = {7: 1 - (1 - p[0]) * (1 - p[1]), 9: p[2], 4: p[3]}
    result = hasans_scores(scores, passages)
    assert list(result.passages) == [7, 9, 4]
    assert result.hasans == pytest.approx([expected[7], expected[9], expected[4]])
    assert result.sentence_probabilities == pytest.approx(p)


def test_two_good_sentences_outrank_one_slightly_better_sentence():
    # A: one sentence at 2.1; B: two sentences at 2.0. p_A = e^2.1/Z, 1-(1-p_B)^2 > p_A when maths says so.
    scores = np.array([2.1, 2.0, 2.0, 0.0, 0.0])
    passages = np.array([0, 1, 1, 2, 3])
    result = hasans_scores(scores, passages)
    z = math.exp(2.1) + 2 * math.exp(2.0) + 2
    hasans_a = math.exp(2.1) / z
    hasans_b = 1 - (1 - math.exp(2.0) / z) ** 2
    assert hasans_b > hasans_a
    assert list(result.passages[:2]) == [1, 0]
    assert result.hasans[:2] == pytest.approx([hasans_b, hasans_a])


def test_single_sentence_wins_when_it_dominates():
    result = hasans_scores(np.array([5.0, 2.0, 2.0]), np.array([0, 1, 1]))
    assert list(result.passages) == [0, 1]


def test_log_space_separates_passages_that_round_to_one():
    # p close to 1 for two sentences: HasAns of both passages is 1.0 in float64 only for the first.
    scores = np.array([60.0, 0.0, 30.0, 30.0])
    result = hasans_scores(scores, np.array([0, 1, 2, 2]), temperature=1.0)
    assert list(result.passages) == [0, 2, 1]
    assert result.log_none[0] < result.log_none[1] < result.log_none[2]


def test_empty_hits_give_no_passages():
    result = hasans_scores(np.zeros(0), np.zeros(0, dtype=np.int64))
    assert len(result.passages) == 0 and len(result.hasans) == 0


def test_rank_hits_keeps_the_top_k_and_every_probability():
    import numpy as np

    from haystack_dcsr.core.ranking.hasans import rank_hits

    scores = np.array([3.0, 2.5, 2.0, 1.0, 0.5])
    keys = np.array([7, 7, 9, 4, 9])
    full = rank_hits(scores, keys, 1.0)
    assert full.passages.tolist() == [7, 9, 4]
    top = rank_hits(scores, keys, 1.0, top_k=2)
    assert top.passages.tolist() == [7, 9] and np.allclose(top.hasans, full.hasans[:2])
    assert len(top.sentence_probabilities) == 5  # every hit's p_i, whatever top_k


def test_exact_index_ranks_as_hasans_over_its_top_n():
    import numpy as np

    from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
    from haystack_dcsr.core.ranking.hasans import hasans_scores

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((12, 8)).astype(np.float32)
    counts = [3, 0, 4, 5]  # passage 1 has no sentences
    index = ExactSentenceIndex(vectors, counts)
    queries = rng.standard_normal((2, 8)).astype(np.float32)
    ranked = index.rank_passage_numbers(queries, temperature=0.5, top_n=6, top_k=3)
    for query, result in zip(queries, ranked):
        row_scores = vectors @ query
        top = np.argsort(-row_scores)[:6]
        expected = hasans_scores(row_scores[top], index.owner[top], 0.5)
        assert result.passages.tolist() == expected.passages[:3].tolist()
        assert np.allclose(result.hasans, expected.hasans[:3])
    assert 1 not in index.owner and index.passage_vectors(2).shape == (4, 8)
    with pytest.raises(ValueError, match="12 vectors but sentences_per_passage adds up to 11"):
        ExactSentenceIndex(vectors, [3, 4, 4])
