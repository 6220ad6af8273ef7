import math

import numpy as np
import pytest

from haystack_dcsr.core.hasans import hasans_scores, sentence_probabilities


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


def test_hasans_without_a_passage_equals_hasans_over_the_rest():
    import numpy as np

    from haystack_dcsr.core.hasans import hasans_scores, hasans_without

    scores = np.array([3.0, 2.5, 2.0, 1.0, 0.5])
    keys = np.array([7, 7, 9, 4, 9])
    keep, without = hasans_without(scores, keys, temperature=1.0, gone={7})
    assert keep.tolist() == [False, False, True, True, True]
    alone = hasans_scores(scores[2:], keys[2:], temperature=1.0)
    assert without.passages.tolist() == alone.passages.tolist() == [9, 4]
    assert np.allclose(without.hasans, alone.hasans)
    keep_all, full = hasans_without(scores, keys, 1.0)
    assert keep_all.all() and full.passages.tolist()[0] == 7
