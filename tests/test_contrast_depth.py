"""The reranker's depth cross-fitted by article: each article's pairs are scored at the setting
chosen on the other articles, so a setting that looks best only because of an article's own pairs
does not get credit for them."""

import numpy as np
import pytest
from evaluation import cross_fitted_choice

from tests.benchmark_scripts import load_benchmark


def pair(article: int, index: int, same_gold: bool = False):
    gold = f"dev-{article}-{index}"
    return {"gold": gold, "meq_gold": gold if same_gold else f"dev-{article}-{index + 50}"}


def system(depth: int, wins, rr):
    contrast = {"own_gold_first": {"wins": {"meq": wins}}, "ranking_meq": {"ranks": [1 / x for x in rr]}}
    return {"spec": f"rerank:BM25+runs/ce@{depth}", "contrast": contrast}


# articles 0, 1, 2 with two gold-differ pairs each, then a pair of article 1 whose golds agree (MRR only)
PAIRS = [pair(0, 0), pair(0, 1), pair(1, 0), pair(1, 1), pair(2, 0), pair(2, 1), pair(1, 2, same_gold=True)]
REPORT = {
    "systems": {
        "BM25": {"spec": "bm25", "contrast": {}},
        "CE, top 40": system(40, [0, 0, 1, 1, 1, 1], [0.1, 0.1, 1, 1, 1, 1, 1]),
        "CE, top 5": system(5, [1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0.1, 0.1, 1]),
    }
}


def test_each_article_is_scored_at_the_setting_best_on_the_others():
    depth = load_benchmark("contrast_depth")
    result = depth.study(REPORT, PAIRS, "CE", repeats=20, seed=0)
    # in sample the two tie (4 of 6 wins, MRR 0.743): the shallower wins the tie
    for name in ("CE, top 5", "CE, top 40"):
        assert result["in_sample"][name] == pytest.approx({"own_gold_first": 4 / 6, "mrr_meq": 5.2 / 7})
    assert result["best_in_sample"] == "CE, top 5"
    # article 0 gets top 40 (best on 1 and 2), where it loses; 1 (a tie on 0 and 2) and 2 get top 5
    held_out = result["leave_one_article_out"]
    assert held_out["chosen"] == {"CE, top 40": 1, "CE, top 5": 2}
    assert held_out["own_gold_wins"] == 2 and held_out["own_gold_first"] == pytest.approx(2 / 6)
    assert held_out["mrr_meq"] == pytest.approx((0.1 + 0.1 + 1 + 1 + 0.1 + 0.1 + 1) / 7)
    assert result["pairs"] == 7 and result["pairs_gold_differ"] == 6 and result["articles"] == 3
    halves = result["halves"]
    assert halves["repeats"] == 20 and 0 <= halves["share_meeting"]["both"] <= halves["share_meeting"]["mrr_meq"]


def test_outcomes_that_do_not_match_the_contrast_set_are_refused():
    depth = load_benchmark("contrast_depth")
    with pytest.raises(SystemExit, match="do not match the contrast set's 6 pairs"):
        depth.study(REPORT, PAIRS[:6], "CE", repeats=1, seed=0)
    with pytest.raises(SystemExit, match="no system named like 'mpnet'"):
        depth.study(REPORT, PAIRS, "mpnet", repeats=1, seed=0)


def test_cross_fitted_choice_never_lets_a_fold_choose_for_itself():
    # option "a" is best on fold 0's rows only, "b" on fold 1's: each fold gets the other's favourite
    fold_of = np.array([0, 0, 1, 1])
    values = {"a": np.array([5, 5, 0, 0]), "b": np.array([0, 0, 5, 5])}
    assert cross_fitted_choice(["a", "b"], fold_of, lambda o, train: values[o][train].sum()) == ["b", "a"]
    # ties go to the earlier option
    assert cross_fitted_choice(["b", "a"], np.array([0, 1]), lambda o, train: 0) == ["b", "b"]
