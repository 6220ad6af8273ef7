"""benchmarks/squad_open.py paired: the tests of chosen pairs, derived from a report's kept outcomes."""

import json

import pytest
from benchmark_scripts import load_benchmark
from evaluation import own_gold_paired_report, paired_report, ranking_paired_report

paired_tests = load_benchmark("paired_tests")


def system(q_ranks, meq_ranks, meq_wins, q_wins):
    own = {"meq": sum(meq_wins) / len(meq_wins), "q": sum(q_wins) / len(q_wins), "wins": {"meq": meq_wins, "q": q_wins}}
    return {
        "top_k": {},
        "contrast": {"ranking_q": {"ranks": q_ranks}, "ranking_meq": {"ranks": meq_ranks}, "own_gold_first": own},
    }


@pytest.fixture
def report(tmp_path):
    systems = {
        "BM25": system([2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 0, 6], [0] * 7, [0, 1, 1, 0, 1, 0, 1]),
        "DCSR": system([1] * 6, [1, 1, 1, 1, 1, 7], [1] * 6 + [0], [1, 0, 1, 0, 1, 0, 1]),
        "Hybrid": system([1, 2, 1, 2, 1, 2], [1, 1, 2, 2, 1, 1], [1, 0] * 3 + [1], [1] * 7),
    }
    first_hits = {"BM25": [1, 1, 1, 2, 0], "DCSR": [2, 1, 0, 2, 1], "Hybrid": [1, 1, 1, 1, 1]}
    path = tmp_path / "squad_open_dev.json"
    path.write_text(json.dumps({"systems": systems}))
    path.with_suffix(".first_hits.json").write_text(json.dumps(first_hits))
    return path


def test_chosen_pairs_keep_the_order_asked_and_test_only_those(report, capsys):
    paired_tests.main([str(report), "--pair", "DCSR", "BM25", "--against", "Hybrid"])
    rows = [line for line in capsys.readouterr().out.splitlines() if " vs " in line and "A vs B" not in line]
    # each of the three tables: DCSR vs BM25 as asked (not BM25 vs DCSR), then Hybrid vs each other
    names = [row.split(" | ")[0].lstrip("| ") for row in rows]
    assert names == ["DCSR vs BM25", "Hybrid vs BM25", "Hybrid vs DCSR"] * 3
    # top-1: DCSR alone has question 4 first, BM25 alone 0 and 2; top-20: one each (rank 0 is a miss)
    assert rows[0] == "| DCSR vs BM25 | 1 / 2 (1) | 1 / 1 (1) |"
    # own gold first q': DCSR alone wins 6 pairs, BM25 none (p = 2 / 64)
    assert rows[6].startswith("| DCSR vs BM25 | 6 / 0 (0.031) |")


def test_every_pair_equals_the_all_pairs_reports(report, capsys):
    paired_tests.main([str(report), "--all"])
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    first_hits = json.loads(report.with_suffix(".first_hits.json").read_text())
    expected = [
        paired_report(first_hits, list(first_hits)),
        ranking_paired_report(data["systems"]),
        own_gold_paired_report(data["systems"]),
    ]
    tables = out.split("\n\n")
    assert len(tables) == 3
    for table, tests in zip(tables, expected):
        assert [line.split(" | ")[0].lstrip("| ") for line in table.splitlines()[2:]] == list(tests)


def test_unknown_system_is_an_error_naming_the_closest(report, capsys):
    with pytest.raises(SystemExit):
        paired_tests.main([str(report), "--pair", "BM25", "DCSR-ft"])
    assert "no system 'DCSR-ft' in the report; closest: ['DCSR'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        paired_tests.main([str(report)])
    assert "name pairs with --pair A B" in capsys.readouterr().err
