"""The looser contrast set read in cosine bands: each pair lands in its band, each band's "own gold
first" and q' MRR come from that band's pairs only, and the top band is checked against the narrow
set's report."""

import argparse

import numpy as np
import pytest

from tests.benchmark_scripts import load_benchmark

EDGES = (0.6, 0.7, 0.79)


def pair(cosine: float, same_gold: bool = False):
    return {"gold": "dev-1-0", "meq_gold": "dev-1-0" if same_gold else "dev-1-1", "cosine": cosine}


# bands [0.6, 0.7): two pairs; [0.7, 0.79): one; [0.79, 1]: two with different golds and one with the same
PAIRS = [pair(0.61), pair(0.69), pair(0.7), pair(0.79), pair(0.95), pair(0.9, same_gold=True)]


def system(wins, ranks):
    return {"contrast": {"own_gold_first": {"wins": {"meq": wins}}, "ranking_meq": {"ranks": ranks}}}


REPORT = {
    "systems": {
        "BM25": system([1, 1, 0, 0, 0], [1, 1, 2, 4, 4, 1]),
        "CE": system([1, 1, 1, 1, 0], [1, 1, 1, 1, 2, 1]),
        "no per-pair outcomes": {"contrast": {"own_gold_first": {"meq": 0.5}}},
    }
}


def test_each_pair_lands_in_its_band_and_a_pair_below_them_is_refused():
    bands = load_benchmark("contrast_bands")
    assert bands.band_of(np.array([0.6, 0.69, 0.7, 0.7899, 0.79, 1.0]), EDGES).tolist() == [0, 0, 1, 1, 2, 2]
    assert bands.band_labels(EDGES) == ["[0.60, 0.70)", "[0.70, 0.79)", "[0.79, 1]"]
    with pytest.raises(SystemExit, match="cosine 0.550 lies below the lowest band edge 0.6"):
        bands.band_of(np.array([0.55, 0.8]), EDGES)


def test_bands_read_only_their_own_pairs():
    bands = load_benchmark("contrast_bands")
    result = bands.study(REPORT, PAIRS, EDGES, reference="CE")
    assert result["pairs_gold_differ"] == {"[0.60, 0.70)": 2, "[0.70, 0.79)": 1, "[0.79, 1]": 2}
    assert result["pairs"] == {"[0.60, 0.70)": 2, "[0.70, 0.79)": 1, "[0.79, 1]": 3}
    assert list(result["systems"]) == ["BM25", "CE"]  # a system without per-pair outcomes is left out
    bm25 = result["systems"]["BM25"]
    assert bm25["all"]["wins"] == 2 and bm25["all"]["share"] == pytest.approx(0.4)
    assert bm25["all"]["mrr_meq"] == pytest.approx((1 + 1 + 0.5 + 0.25 + 0.25 + 1) / 6)
    top = bm25["bands"]["[0.79, 1]"]
    assert top["own_gold_first"]["n"] == 2 and top["own_gold_first"]["share"] == 0.0
    assert top["mrr_meq"] == pytest.approx((0.25 + 0.25 + 1) / 3)  # the same-gold pair counts for MRR
    # Wilson's interval for 0 of 2: [0, 0.658]
    assert top["own_gold_first"]["ci95"] == pytest.approx([0.0, 0.6576], abs=1e-4)
    assert top["vs_reference"] == {"a_only": 0, "b_only": 1, "p_value": 1.0}
    assert bm25["bands"]["[0.60, 0.70)"]["own_gold_first"]["share"] == 1.0
    # BM25 wins its two closest-to-q-apart pairs and loses the three nearer ones
    assert bm25["trend"]["median_cosine_won"] == pytest.approx(0.65)
    assert bm25["trend"]["median_cosine_lost"] == pytest.approx(0.79)
    assert "vs_reference" not in result["systems"]["CE"]["bands"]["[0.79, 1]"]


def test_the_bands_above_the_floor_are_checked_against_the_narrow_report():
    bands = load_benchmark("contrast_bands")
    narrow = {"systems": {"BM25": system([0, 0], [4, 4, 1]), "CE": system([1, 1], [1, 2, 1])}}
    result = bands.study(REPORT, PAIRS, EDGES, reference="CE")
    assert bands.check_nested(result, narrow, floor=0.79) == {"BM25": True, "CE": False}
    # the floor's pairs split over two bands still add up to the narrow set
    split = bands.study(REPORT, PAIRS, EDGES + (0.9,), reference="CE")
    assert split["pairs_gold_differ"]["[0.79, 0.90)"] == 1 and split["pairs_gold_differ"]["[0.90, 1]"] == 1
    assert bands.check_nested(split, narrow, floor=0.79) == {"BM25": True, "CE": False}
    with pytest.raises(SystemExit, match="no band starts at or above the narrow set's floor 0.95"):
        bands.check_nested(result, narrow, floor=0.95)


def test_outcomes_that_do_not_match_and_a_missing_reference_are_refused():
    bands = load_benchmark("contrast_bands")
    with pytest.raises(SystemExit, match="'BM25': outcomes do not match the contrast set's 5 pairs"):
        bands.study(REPORT, PAIRS[:5], EDGES, reference="CE")
    with pytest.raises(SystemExit, match="no reference system 'mpnet'"):
        bands.study(REPORT, PAIRS, EDGES, reference="mpnet")
    with pytest.raises(argparse.ArgumentTypeError, match="must rise strictly"):
        bands.parse_edges("0.7,0.6")
    assert bands.parse_edges("0.6,0.79") == [0.6, 0.79]


def test_the_trend_in_a_systems_own_query_space():
    bands = load_benchmark("contrast_bands")
    wins = [True, True, False, False]
    found = bands.own_space(wins, np.array([0.5, 0.6, 0.9, 0.8]), np.array([0.61, 0.65, 0.8, 0.9]))
    assert found["trend"]["median_cosine_won"] == pytest.approx(0.55)
    assert found["trend"]["median_cosine_lost"] == pytest.approx(0.85)
    assert found["spearman_with_band_cosine"] == pytest.approx(0.8)  # ranks 1,2,4,3 against 1,2,3,4
    assert bands.own_space([True, True], np.array([0.5, 0.6]), np.array([0.7, 0.8]))["trend"] is None
    with pytest.raises(ValueError, match="3 outcomes, 2 and 2 cosines"):
        bands.own_space([True, False, True], np.array([0.5, 0.6]), np.array([0.7, 0.8]))
