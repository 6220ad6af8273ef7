import math
from fractions import Fraction

import pytest
from significance import mcnemar_exact, paired_rank_test, paired_sign_test

from haystack_dcsr.core.ranking.metrics import (
    answer_tokens,
    answer_words,
    first_hit_ranks,
    has_answer,
    mean_rank,
    mean_reciprocal_rank,
    normalize_answer,
    own_gold_first,
    own_gold_wins,
    pair_hits,
    query_contrast_accuracy,
    rank_of_positive,
    top_k_accuracy,
    top_k_by_group,
    top_k_overlap,
)


def test_answer_tokens_are_normalised():
    assert answer_tokens("Café NEW-York!") == ["cafe", "new", "-", "york", "!"]
    assert answer_tokens("The U.S. (1990)") == ["the", "u", ".", "s", ".", "(", "1990", ")"]


def test_has_answer_matches_whole_token_sequences_case_insensitively():
    passage = "Super Bowl 50 was played in Santa Clara, California."
    assert has_answer(passage, ["santa clara"])
    assert has_answer(passage, ["nowhere", "Bowl 50"])
    assert not has_answer(passage, ["Clar"])  # part of a token is not a match
    assert not has_answer(passage, ["", "   "])


def test_first_hit_ranks_and_top_k():
    ranked = [["a b", "the answer x"], ["x", "y"], ["x is here", "x"]]
    ranks = first_hit_ranks(ranked, [["answer"], ["z"], ["x"]])
    assert ranks == [2, 0, 1]
    assert top_k_accuracy(ranks, ks=(1, 2)) == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}


def test_rank_of_positive_counts_ties_against_the_positive():
    assert rank_of_positive([0.9, 0.1, 0.5]) == 1
    assert rank_of_positive([0.5, 0.9, 0.5, 0.1]) == 3  # one better, one tied
    assert rank_of_positive([1.0, 1.0, 1.0]) == 3
    assert rank_of_positive([0.2, 0.3, 0.1], positive=2) == 3


def test_mean_rank_and_mrr_by_hand():
    ranks = [1, 2, 4, 0]
    assert mean_rank([1, 2, 4]) == pytest.approx(7 / 3)
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 0.5 + 0.25 + 0) / 4)
    assert mean_reciprocal_rank([]) == 0.0


def test_pair_hits_need_both_questions_for_consistency():
    hits = pair_hits([1, 3, 0, 2], [2, 1, 1, 0], ks=[1, 3])
    assert hits["q"] == {1: 0.25, 3: 0.75}
    assert hits["meq"] == {1: 0.5, 3: 0.75}
    assert hits["both"] == {1: 0.0, 3: 0.5}  # pairs 0 (ranks 1, 2) and 1 (3, 1) are both in the top 3
    with pytest.raises(ValueError):
        pair_hits([1], [1, 2])


def test_top_k_by_group_by_hand():
    grouped = top_k_by_group([1, 3, 0, 2, 25], ["who", "what", "who", "what", "what"], ks=(1, 5, 20))
    assert grouped["who"] == {"n": 2, "top_k": {1: 0.5, 5: 0.5, 20: 0.5}}
    assert grouped["what"]["n"] == 3
    assert grouped["what"]["top_k"] == pytest.approx({1: 0.0, 5: 2 / 3, 20: 2 / 3})
    with pytest.raises(ValueError, match="group labels"):
        top_k_by_group([1, 2], ["who"])


def test_own_gold_first_by_hand():
    ranked = [["mine", "theirs"], ["theirs", "mine"], ["x", "mine"], ["x", "theirs"], ["x"]]
    own, other = ["mine"] * 5, ["theirs"] * 5
    # above / below / retrieved while the other is not / only the other retrieved / neither retrieved
    assert own_gold_first(ranked, own, other) == pytest.approx(2 / 5)
    assert own_gold_wins(ranked, own, other) == [True, False, True, False, False]
    assert own_gold_first([], [], []) == 0.0
    with pytest.raises(ValueError, match="rankings"):
        own_gold_first([["a"]], ["a"], [])


def test_top_k_overlap_by_hand():
    q = [["a", "b", "c"], ["a", "b", "c"]]
    meq = [["c", "x", "a"], ["x", "y", "z"]]
    assert top_k_overlap(q, meq, 3) == pytest.approx((2 / 3 + 0) / 2)
    assert top_k_overlap(q, meq, 1) == 0.0
    assert top_k_overlap(q, [["a"], ["b"]], 1) == pytest.approx(0.5)


def test_query_contrast_accuracy():
    assert query_contrast_accuracy([0.9, 0.5, 0.7], [0.8, 0.6, 0.7]) == pytest.approx(1 / 3)  # a tie is a miss


def test_answer_words_delete_punctuation_as_squads_f1_script_does():
    assert answer_words("The non-violent Café, 42,000!") == ["nonviolent", "cafe", "42000"]
    assert answer_words("J. K. Rowling") == ["j", "k", "rowling"]


def test_normalize_answer_is_squad_exact_match_normalisation():
    assert normalize_answer("The  Beatles!") == "beatles"
    assert normalize_answer("Café, an old one") == "cafe old one"


def test_paired_sign_test_by_hand():
    a, b = [1, 2, 0, 1, 5, 0], [2, 1, 1, 0, 0, 0]
    # top-1: a alone hits questions 0 and 3, b alone 1 and 2: n=4, P(X<=2)*2 = 2*(1+4+6)/16 > 1 -> 1
    assert paired_sign_test(a, b, 1) == {"a_only": 2, "b_only": 2, "p_value": 1.0}
    # top-5: a alone hits 3 and 4, b alone 2: n=3, 2*(1+3)/8 -> 1
    assert paired_sign_test(a, b, 5) == {"a_only": 2, "b_only": 1, "p_value": 1.0}
    # five wins, one loss: 2*(1+6)/64
    assert paired_sign_test([1] * 5 + [0], [0] * 5 + [1], 1)["p_value"] == 14 / 64
    # six wins, no losses: 2 / 2**6
    assert paired_sign_test([1] * 6 + [0] * 4, [0] * 10, 1)["p_value"] == 2 / 64
    assert paired_sign_test([3], [3], 1) == {"a_only": 0, "b_only": 0, "p_value": 1.0}
    big = paired_sign_test([1] * 2000 + [0] * 1000, [0] * 2000 + [1] * 1000, 1)  # 2**3000 overflows a float
    assert big["a_only"] == 2000 and 0 < big["p_value"] < 1e-30
    # scipy's binomtest against the exact rational p-value, 2 * sum_{i <= min} C(n, i) / 2**n
    for wins, losses in [(1000, 2000), (37, 63), (990, 1010), (120, 80)]:
        tail = sum(math.comb(wins + losses, i) for i in range(min(wins, losses) + 1))
        exact = min(1.0, float(Fraction(2 * tail, 2 ** (wins + losses))))
        got = paired_sign_test([1] * wins + [0] * losses, [0] * wins + [1] * losses, 1)["p_value"]
        assert got == pytest.approx(exact, rel=1e-12)
    with pytest.raises(ValueError, match="first-hit ranks"):
        paired_sign_test([1, 2], [1], 1)


def test_mcnemar_exact_counts_only_discordant_items():
    # items 0-4: A alone; item 5: B alone; items 6-7: both; item 8: neither -> 5 vs 1, 2 * (1 + 6) / 64
    a = [1, 1, 1, 1, 1, 0, 1, 1, 0]
    b = [0, 0, 0, 0, 0, 1, 1, 1, 0]
    assert mcnemar_exact(a, b) == {"a_only": 5, "b_only": 1, "p_value": 14 / 64}
    assert mcnemar_exact([True], [True]) == {"a_only": 0, "b_only": 0, "p_value": 1.0}
    with pytest.raises(ValueError, match="outcomes"):
        mcnemar_exact([1], [])


def test_paired_rank_test_by_hand():
    # A ranks the gold first on six rows, B lower each time, by distinct margins: the exact
    # two-sided Wilcoxon p is 2 / 2**6
    assert paired_rank_test([1] * 6, [2, 3, 4, 5, 6, 7]) == {"a_better": 6, "b_better": 0, "p_value": 2 / 64}
    # B wins the one row with the smallest reciprocal-rank gap (1/6 - 1/7): W- = 1, p = 2 * 2 / 64;
    # equal ranks are dropped; rank 0 (not found) is worse than any rank
    result = paired_rank_test([1, 1, 1, 1, 1, 7, 4], [2, 3, 4, 5, 0, 6, 4])
    assert result == {"a_better": 5, "b_better": 1, "p_value": pytest.approx(4 / 64)}
    assert paired_rank_test([2, 0], [2, 0]) == {"a_better": 0, "b_better": 0, "p_value": 1.0}
    with pytest.raises(ValueError, match="3 ranks against 2"):
        paired_rank_test([1, 2, 3], [1, 2])
