"""Paired tests between systems of a ``squad_open.py`` report, for the pairs asked for.

The report keeps each system's per-question outcomes (first-hit ranks in ``*.first_hits.json``, the
MEQ ranking's per-row ranks and "own gold first" per pair in the report), so any pair can be tested
later; the tests themselves are not stored: over every pair of 100+ systems they grew quadratically
(3 MB of JSON and 1.5 MB of tables) for a few dozen pairs anyone reads. Prints the rows in the tables'
format of ``docs/research/results.md``: exact McNemar at top-1 / top-20, Wilcoxon signed-rank on the MEQ
ranking's reciprocal ranks, exact McNemar on "own gold first".

    python benchmarks/squad_open.py paired benchmarks/results/squad_open_dev.json --pair BM25 "DCSR-ft"
    python benchmarks/squad_open.py paired benchmarks/results/squad_open_dev.json --against "DCSR-ft"  # vs all
    python benchmarks/squad_open.py paired benchmarks/results/squad_open_dev.json --all  # every pair
"""

import argparse
import difflib
import json
import sys
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

from evaluation import (  # noqa: E402
    own_gold_paired_report,
    own_gold_paired_table,
    paired_report,
    paired_table,
    ranking_paired_report,
    ranking_paired_table,
)


def chosen_pairs(names, pairs=(), against=(), every=False) -> list:
    """The (A, B) pairs asked for, in the order asked; a name not in the report is an error naming
    the closest ones, so a typo never prints an empty table."""
    for name in [n for pair in pairs for n in pair] + list(against):
        if name not in names:
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
            raise ValueError(f"no system {name!r} in the report" + (f"; closest: {close}" if close else ""))
    chosen = [tuple(pair) for pair in pairs]
    chosen += [(a, b) for a in against for b in names if b != a]
    if every:
        chosen += list(combinations(names, 2))
    return list(dict.fromkeys(chosen))


def tables(report: dict, first_hits: dict, pairs) -> str:
    """The three tables for ``pairs`` (a table is left out when none of its pairs kept outcomes)."""
    names = [name for name in report["systems"] if name in first_hits]
    tested = {
        "paired": paired_report(first_hits, names, pairs),
        "ranking_paired": ranking_paired_report(report["systems"], pairs),
        "own_gold_paired": own_gold_paired_report(report["systems"], pairs),
    }
    parts = [paired_table(tested)]
    parts += [ranking_paired_table(tested)] if tested["ranking_paired"] else []
    parts += [own_gold_paired_table(tested)] if tested["own_gold_paired"] else []
    return "\n\n".join(parts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a squad_open.py report (its .first_hits.json beside it)")
    parser.add_argument("--pair", nargs=2, action="append", default=[], metavar=("A", "B"))
    parser.add_argument("--against", action="append", default=[], metavar="NAME", help="NAME vs every other")
    parser.add_argument("--all", action="store_true", help="every pair of systems (long)")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    first_hits = json.loads(args.report.with_suffix(".first_hits.json").read_text())
    try:
        pairs = chosen_pairs(list(report["systems"]), args.pair, args.against, args.all)
    except ValueError as error:
        parser.error(str(error))
    if not pairs:
        parser.error("name pairs with --pair A B, --against NAME or --all")
    print(tables(report, first_hits, pairs))


if __name__ == "__main__":
    main()
