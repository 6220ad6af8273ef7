"""The contrast audit re-reads the goal metrics on subsets of the pairs: repeats counted once,
pairs where q's gold also answers q' set aside for "own gold first", and pairs the builder now
drops because one answer is a shorter form of the other."""

import pytest
from benchmark_scripts import load_benchmark

TEXTS = {
    "g1": "Denver won Super Bowl 50.",
    "g2": "New England won Super Bowl XLIX.",
    "g3": "Miller was the MVP; Denver won.",
}
PAIRS = [
    {
        "question": "Who won Super Bowl 50?",
        "meq": "Who won Super Bowl XLIX?",
        "gold": "g1",
        "meq_gold": "g2",
        "answers": ["Denver"],
        "meq_answers": ["New England"],
    },
    {
        "question": "Who won Super Bowl XLIX?",
        "meq": "Who won Super Bowl 50?",
        "gold": "g2",
        "meq_gold": "g1",
        "answers": ["New England"],
        "meq_answers": ["Denver"],
    },  # the first pair again, roles swapped: a repeat
    {
        "question": "Who was the MVP?",
        "meq": "Who won the game?",
        "gold": "g3",
        "meq_gold": "g1",
        "answers": ["Denver Broncos"],
        "meq_answers": ["Denver"],
    },  # q's gold g3 also says Denver won; "Denver" is a shorter form of q's answer
    {
        "question": "Who won?",
        "meq": "Who lost?",
        "gold": "g1",
        "meq_gold": "g1",
        "answers": ["Denver"],
        "meq_answers": ["x"],
    },  # same gold
]


def system(wins, ranks):
    return {"contrast": {"own_gold_first": {"wins": {"meq": wins}}, "ranking_meq": {"ranks": ranks}}}


def test_subsets_and_the_best_of_any_system():
    audit = load_benchmark("contrast_audit").audit
    report = {"systems": {"A": system([1, 1, 0], [1, 2, 4, 1]), "B": system([0, 0, 0], [2, 1, 1, 1]), "C": {}}}
    result = audit(report, PAIRS, TEXTS)
    assert result["pairs"] == {"all": 4, "unique": 3, "as built now": 2}
    assert result["pairs_gold_differ"] == {
        "all": 3,
        "unique": 2,
        "unique, q's gold lacks q''s answer": 1,
        "as built now": 1,
    }
    a = result["systems"]["A"]
    assert a["own_gold_first"] == pytest.approx(
        {"all": 2 / 3, "unique": 0.5, "unique, q's gold lacks q''s answer": 1.0, "as built now": 1.0}
    )
    assert a["mrr_meq"] == pytest.approx(
        {"all": (1 + 0.5 + 0.25 + 1) / 4, "unique": (1 + 0.25 + 1) / 3, "as built now": 1.0}
    )
    assert "C" not in result["systems"]  # nothing per pair to re-read
    best = result["any_system"]
    assert best["own_gold_first"]["all"] == pytest.approx(2 / 3)
    assert best["mrr_meq"]["all"] == 1.0 and best["systems"] == {"own_gold_first": 2, "mrr_meq": 2}
