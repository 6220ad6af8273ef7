"""The framework-free evaluation: fixed-candidate HasAns scoring, retrieval and pair reports, tables."""

import json

import numpy as np
import pytest
from evaluation import (
    candidate_scores,
    cross_fitted_weight,
    fuse_candidate_scores,
    fuse_rankings,
    load_contrast_set,
    markdown_table,
    own_gold_paired_report,
    own_gold_paired_table,
    pair_report,
    paired_report,
    paired_table,
    question_group,
    question_word_table,
    ranking_paired_report,
    ranking_paired_table,
    ranking_report,
    retrieval_report,
)

from haystack_dcsr.core.ranking.hasans import hasans_of_key, hasans_scores, score_passages


def test_score_passages_ranks_candidates_by_hasans_over_all_their_sentences():
    rng = np.random.default_rng(0)
    query = rng.standard_normal(8)
    candidates = [rng.standard_normal((n, 8)) for n in (3, 1, 4)]
    got = score_passages(query, candidates, temperature=2.0)
    scores = np.concatenate([c @ query for c in candidates])
    keys = np.repeat([0, 1, 2], [3, 1, 4])
    expected = hasans_scores(scores, keys, 2.0)
    assert list(np.argsort(-got, kind="stable")) == list(expected.passages)
    assert np.allclose(1 - np.exp(-np.sort(got)[::-1]), expected.hasans)
    assert score_passages(query, []).shape == (0,)


def test_retrieval_report_counts_answers_in_the_ranked_passages():
    texts = {"a": "Paris is in France", "b": "Berlin is in Germany", "c": "Rome"}
    questions = [
        ("Who lives in Paris?", ["France"], None),
        ("When was Berlin founded?", ["1237"], None),
        ("Where is Berlin?", ["Germany"], None),
    ]
    ranked = [[("b", 2.0), ("a", 1.0)], [("a", 1.0)], [("b", 3.0)]]
    report = retrieval_report(ranked, questions, texts)
    assert report["ranks"] == [2, 0, 1]
    assert report["top_k"]["1"] == pytest.approx(1 / 3) and report["top_k"]["5"] == pytest.approx(2 / 3)
    assert report["by_question_word"]["who"] == {"n": 1, "top_k": {"1": 0.0, "5": 1.0, "20": 1.0, "100": 1.0}}
    assert question_group("Whose book is it?") == "who" and question_group("Name the river.") == "other"


def test_ranking_and_pair_reports_follow_the_meq_paper():
    ranking = [
        {"role": "q", "question": "q1", "candidates": ["g", "x", "y"]},
        {"role": "meq", "question": "m1", "candidates": ["g2", "x", "y"]},
    ]
    table = {"q1": [0.9, 0.1, 0.2], "m1": [0.1, 0.5, 0.2]}  # q' ranks its gold last
    scores = candidate_scores(lambda question, candidates: np.array(table[question]), ranking)
    report = ranking_report(scores, ranking, pairs=[])
    assert report["ranking_q"] == {"MR": 1.0, "MRR": 1.0, "n": 1, "ranks": [1]}
    assert report["ranking_meq"]["MR"] == 3.0 and report["ranking_meq"]["MRR"] == pytest.approx(1 / 3)
    pairs = [
        {"question": "q1", "meq": "m1", "answers": ["gold"], "meq_answers": ["other"], "gold": "g", "meq_gold": "g2"}
    ]
    texts = {"g": "the gold passage", "g2": "the other passage", "x": "nothing"}
    pairs_out = pair_report({"q1": [("g", 1.0), ("x", 0.5)], "m1": [("x", 1.0), ("g2", 0.5)]}, pairs, texts)
    assert pairs_out["hits"]["q"]["1"] == 1.0 and pairs_out["hits"]["meq"]["1"] == 0.0
    assert pairs_out["hits"]["both"]["5"] == 1.0 and pairs_out["overlap"]["5"] == pytest.approx(
        1 / 5
    )  # "x" shared, of k=5
    # q ranks its gold g first and g2 not at all; q' ranks g2 second but above g, which it never retrieves
    assert pairs_out["own_gold_first"] == {"meq": 1.0, "q": 1.0, "pairs": 1, "wins": {"meq": [1], "q": [1]}}


def test_hasans_of_key_gives_back_the_probability_behind_the_ranking_key():
    rng = np.random.default_rng(1)
    query = rng.standard_normal(8)
    candidates = [rng.standard_normal((n, 8)) for n in (2, 5, 1)]
    keys = score_passages(query, candidates, temperature=0.5)
    expected = hasans_scores(np.concatenate([c @ query for c in candidates]), np.repeat([0, 1, 2], [2, 5, 1]), 0.5)
    np.testing.assert_allclose(hasans_of_key(keys)[expected.passages], expected.hasans, rtol=1e-12)
    # no sentences at all (-inf key) is 0; a sentence of probability 1 (+inf key) is HasAns 1
    assert hasans_of_key(np.array([-np.inf, np.inf, 0.0])).tolist() == [0.0, 1.0, 0.0]


def test_a_hybrid_ranks_fixed_candidates_by_the_fusion_of_its_systems_scores():
    ranking = [
        {"role": "q", "question": "q1", "candidates": ["g", "x", "y"]},
        {"role": "meq", "question": "m1", "candidates": ["g2", "x", "y"]},
    ]
    dense = [[0.5, 0.6, 0.1], [0.25, 0.5, 0.0]]  # HasAns: the gold second in both rows
    sparse = [[10.0, 2.0, 4.0], [1.0, 3.0, 2.0]]  # BM25: the gold first in row 1, last in row 2
    fused = fuse_candidate_scores(dense, sparse, ranking)
    # both min-max scaled, 0.5 each: row 1 g = 0.5 * 0.8 + 0.5 * 1 = 0.9, x = 0.5, y = 0.125
    np.testing.assert_allclose(fused[0], [0.9, 0.5, 0.125])
    np.testing.assert_allclose(fused[1], [0.25, 1.0, 0.25])  # g2 ties y: ties count against the gold
    report = ranking_report(fused, ranking, pairs=[])
    assert report["ranking_q"]["ranks"] == [1] and report["ranking_meq"]["ranks"] == [3]
    # HasAns kept as a probability, BM25 alone scaled: g = 0.25 + 0.5, x = 0.3 + 0, y = 0.05 + 0.125
    as_is = fuse_candidate_scores(dense, sparse, ranking, mode="hasans-as-is")[0]
    np.testing.assert_allclose(as_is, [0.75, 0.3, 0.175])
    # the same numbers as fusing the two top lists themselves
    as_lists = fuse_rankings([list(zip("gxy", dense[0]))], [list(zip("gxy", sparse[0]))])[0]
    assert dict(as_lists) == pytest.approx(dict(zip("gxy", fused[0])))
    # by ranks (Haystack's RRF): g is 2nd by HasAns and 1st by BM25, x 1st and 3rd, y 3rd and 2nd
    by_rank = fuse_candidate_scores(dense, sparse, ranking, mode="rrf")[0]
    np.testing.assert_allclose(by_rank, np.array([1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 63 + 1 / 62]) * 61 / 2)
    as_lists = fuse_rankings([list(zip("gxy", dense[0]))], [list(zip("gxy", sparse[0]))], mode="rrf")[0]
    assert dict(as_lists) == pytest.approx(dict(zip("gxy", by_rank)))
    with pytest.raises(ValueError, match="1 dense and 2 sparse score rows for 2 ranking rows"):
        fuse_candidate_scores(dense[:1], sparse, ranking)
    with pytest.raises(ValueError, match="2 / 3 scores for 3 candidates"):
        fuse_candidate_scores([[0.5, 0.6], dense[1]], sparse, ranking)
    with pytest.raises(ValueError, match="fusion mode 'as-is': expected one of min-max, hasans-as-is, rrf"):
        fuse_candidate_scores(dense, sparse, ranking, mode="as-is")
    with pytest.raises(ValueError, match="fusion mode 'RRF'"):
        fuse_rankings([list(zip("gxy", dense[0]))], [list(zip("gxy", sparse[0]))], mode="RRF")


def test_tables_and_paired_tests(tmp_path):
    first_hits = {"A": [1, 1, 1, 2], "B": [2, 1, 0, 2]}
    paired = paired_report(first_hits, ["A", "B"])
    assert paired["A vs B"]["1"]["a_only"] == 2 and paired["A vs B"]["1"]["b_only"] == 0
    system = {
        "top_k": {"1": 0.5, "5": 0.6, "20": 0.7, "100": 0.8},
        "timing": {"index_s": 12.0},
        "by_question_word": {"who": {"n": 3, "top_k": {"1": 0.5, "20": 1.0}}},
    }
    report = {"systems": {"A": system}, "paired": paired}
    assert "| A | 50.0 | 60.0 | 70.0 | 80.0 | - | - | - | - | - | - | 12 | - |" in markdown_table(report)
    assert "| A vs B | 2 / 0 (0.5) |" in paired_table(report)
    assert "| A | 50.0 / 100.0 |" in question_word_table(report)
    assert load_contrast_set(tmp_path) == ([], [])
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps({"i": i}) for i in range(3)))
    (tmp_path / "ranking.jsonl").write_text("\n".join(json.dumps({"pair": i}) for i in range(3)))
    pairs, ranking = load_contrast_set(tmp_path, limit=2)
    assert len(pairs) == 2 and [r["pair"] for r in ranking] == [0, 1]


def test_ranking_paired_report_tests_systems_that_kept_ranks():
    def system(q_ranks, meq_ranks):
        return {"contrast": {"ranking_q": {"ranks": q_ranks}, "ranking_meq": {"ranks": meq_ranks}}}

    systems = {
        "A": system([1] * 6, [1, 1, 1, 1, 1, 7]),
        "B": system([2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 0, 6]),
        "old": {"contrast": {"ranking_q": {"MRR": 0.5}}},  # written before ranks were kept: skipped
    }
    paired = ranking_paired_report(systems)
    assert list(paired) == ["A vs B"]
    assert paired["A vs B"]["q"] == {"a_better": 6, "b_better": 0, "p_value": 2 / 64}
    assert paired["A vs B"]["meq"]["a_better"] == 5 and paired["A vs B"]["meq"]["b_better"] == 1
    assert "| A vs B | 6 / 0 (0.031) | 5 / 1 (0.062) |" in ranking_paired_table({"ranking_paired": paired})


def test_cross_fitted_weight_scores_each_fold_with_a_weight_chosen_on_the_others():
    # weight 0.3 wins questions 0-5, weight 0.7 wins 6-9; the a-priori 0.5 wins none
    ranks = {0.3: [1] * 6 + [2] * 4, 0.5: [2] * 10, 0.7: [3] * 6 + [1] * 4}
    result = cross_fitted_weight(ranks, k=1, folds=2, seed=0)
    fold_of = np.random.default_rng(0).permutation(10) % 2
    for fold, weight in enumerate(result["weights"]):
        others = fold_of != fold
        wins = {w: sum(1 for r in np.asarray(v)[others] if r == 1) for w, v in ranks.items()}
        assert wins[weight] == max(wins.values())
        held_out = np.flatnonzero(~others)
        assert [result["ranks"][i] for i in held_out] == [ranks[weight][i] for i in held_out]
    # a tie goes to the weight nearest the prior; misses (rank 0) never count as hits
    tied = cross_fitted_weight({0.2: [1, 0, 1, 0], 0.6: [1, 0, 1, 0], 0.9: [0, 0, 0, 0]}, folds=2)
    assert tied["weights"] == [0.6, 0.6] and tied["ranks"] == [1, 0, 1, 0]
    with pytest.raises(ValueError, match="one length"):
        cross_fitted_weight({0.2: [1, 2], 0.4: [1]})


def test_own_gold_paired_report_pairs_systems_that_kept_outcomes():
    def system(meq, q):
        return {
            "contrast": {
                "own_gold_first": {"meq": sum(meq) / len(meq), "q": sum(q) / len(q), "wins": {"meq": meq, "q": q}}
            }
        }

    systems = {
        "A": system([1, 1, 1, 1, 1, 1, 0], [1, 0, 1, 0, 1, 0, 1]),
        "B": system([0, 0, 0, 0, 0, 0, 0], [0, 1, 1, 0, 1, 0, 1]),
        "old": {"contrast": {"own_gold_first": {"meq": 0.5, "q": 0.5, "pairs": 7}}},  # no outcomes: skipped
        "bm25": {"top_k": {}},
    }
    paired = own_gold_paired_report(systems)
    assert list(paired) == ["A vs B"]
    assert paired["A vs B"]["meq"] == {"a_only": 6, "b_only": 0, "p_value": 2 / 64}
    assert paired["A vs B"]["q"] == {"a_only": 1, "b_only": 1, "p_value": 1.0}
    assert "| A vs B | 6 / 0 (0.031) | 1 / 1 (1) |" in own_gold_paired_table({"own_gold_paired": paired})


def test_kept_outcomes_read_back_what_the_reports_keep_and_refuse_another_sets():
    from evaluation import kept_outcomes

    pairs = [{"gold": "a", "meq_gold": "b"}, {"gold": "a", "meq_gold": "a"}, {"gold": "c", "meq_gold": "d"}]
    contrast = {"own_gold_first": {"wins": {"meq": [1, 0]}}, "ranking_meq": {"ranks": [1, 3, 2]}}
    wins, ranks = kept_outcomes(contrast, pairs)
    assert wins.dtype == bool and wins.tolist() == [True, False] and ranks.tolist() == [1, 3, 2]
    assert kept_outcomes({"own_gold_first": {"meq": 0.5}}, pairs) == (None, None)  # a summary only
    with pytest.raises(ValueError, match="do not match the contrast set's 2 pairs"):
        kept_outcomes(contrast, pairs[:2])  # two wins, but one pair whose golds differ
    with pytest.raises(ValueError, match="do not match the contrast set's 3 pairs"):
        kept_outcomes({"ranking_meq": {"ranks": [1, 2]}}, pairs)
