"""The contrast goals on four times the pairs: a looser contrast set, read in bands of cosine.

The contrast set of the README's tables keeps the SQuAD dev pairs whose all-MiniLM-L6-v2 cosine is
at least 0.79 (the paper's Contriever 0.95, transferred as a quantile: README "MEQ tools"). That is
every MEQ SQuAD dev holds: 352 pairs, 142 of them with different gold passages, so one pair moves
"own gold first" by 0.7 points and the best system sits on the 85% line within a pair. No larger set
of the paper's MEQs exists here. Lowering only the cosine floor (``build-contrast-set --threshold
0.6``; 1-3 word edits, the same question word and different answers still required) keeps those
pairs and adds 434 with different golds, at a price: below the floor the edit can change what is
asked ("What disease did Tesla catch?" / "What did Tesla write?"). Read by band, such a set answers
what the 142 pairs cannot:

- does a system's "own gold first" fall as q' nears q? (If so, the pairs below the floor are
  easier, their rates say nothing about the goal, and the floor band is where it is decided);
- do the systems keep their order, and their gaps, on four times the pairs?

Per system and band: "own gold first" of q' with its Wilson 95% interval, MEQ MRR of q' among the
50 candidates; per system, a Mann-Whitney test of the cosines of its won and lost pairs (the
trend); per band, an exact McNemar test of each system against ``--reference``. With ``--check``
(a 352-pair report, repeatable), the bands from the floor (0.79) up must add up to that report's
counts for every system both hold: the looser set nests the MEQ set, so any difference means the
two runs ranked differently.

No model runs: it reads ``squad_open.py``'s report on the looser set (README "Four times the pairs"
has the commands). ``--query-tower NAME=DIR`` adds, for that system, the same trend in its own query
space: the cosine of q and q' under its query tower (seconds on a CPU), whether it tracks MiniLM's
(the band axis) and how it differs between won and lost pairs.

    python benchmarks/studies/contrast_bands.py    # -> benchmarks/results/contrast_bands.{json,md}
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
from scipy.stats import binomtest, mannwhitneyu, spearmanr

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import kept_outcomes, load_contrast_set  # noqa: E402
from significance import mcnemar_exact  # noqa: E402

from haystack_dcsr.core.metrics import reciprocal_ranks  # noqa: E402

FLOOR = 0.79  # the README contrast set's cosine floor (training.cli.MEQ_THRESHOLD)
EDGES = (0.6, 0.7, FLOOR, 0.85)
REFERENCE = "Cross-encoder (all-mpnet-base-v2, 3,200 H200 steps) over BM25, top 20"


def band_labels(edges: Sequence[float]) -> List[str]:
    bounds = list(edges) + [1.0]
    return [f"[{lo:.2f}, {hi:.2f})" if hi < 1.0 else f"[{lo:.2f}, 1]" for lo, hi in zip(bounds, bounds[1:])]


def band_of(cosines: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Band index per pair (0 = the loosest); a pair below the lowest edge is refused, not dropped."""
    if len(cosines) and cosines.min() < edges[0]:
        raise SystemExit(f"a pair's cosine {cosines.min():.3f} lies below the lowest band edge {edges[0]}")
    return np.searchsorted(np.asarray(edges), cosines, side="right") - 1


def share(wins: np.ndarray) -> Dict:
    """Successes, share and Wilson 95% interval (``None`` for an empty band)."""
    n, k = len(wins), int(np.sum(wins))
    if not n:
        return {"n": 0, "wins": 0, "share": None, "ci95": None}
    interval = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return {"n": n, "wins": k, "share": k / n, "ci95": [float(interval.low), float(interval.high)]}


class Outcomes:
    """One system's per-pair outcomes on the contrast set: q' own gold first (pairs whose golds
    differ) and q''s reciprocal rank among the candidates (every pair, where the report kept it)."""

    def __init__(self, name: str, contrast: Dict, pairs: List[Dict]):
        try:
            self.wins, ranks = kept_outcomes(contrast, pairs)
        except ValueError as error:
            raise SystemExit(f"{name!r}: {error}") from None
        self.rr = None if ranks is None else np.asarray(reciprocal_ranks(ranks))


def study(report: Dict, pairs: List[Dict], edges: Sequence[float], reference: str) -> Dict:
    cosines = np.array([p["cosine"] for p in pairs])
    bands = band_of(cosines, edges)
    differ = np.array([p["gold"] != p["meq_gold"] for p in pairs])
    labels = band_labels(edges)
    systems = {
        name: Outcomes(name, s["contrast"], pairs)
        for name, s in report["systems"].items()
        if "wins" in s.get("contrast", {}).get("own_gold_first", {})
    }
    if reference not in systems:
        raise SystemExit(f"no reference system {reference!r} with per-pair outcomes in the report")
    split_bands, split_cosines = bands[differ], cosines[differ]
    out: Dict = {
        "edges": list(edges),
        "pairs": {label: int((bands == i).sum()) for i, label in enumerate(labels)},
        "pairs_gold_differ": {label: int((split_bands == i).sum()) for i, label in enumerate(labels)},
        "reference": reference,
        "systems": {},
    }
    for name, o in systems.items():
        row: Dict = {"all": share(o.wins), "bands": {}}
        for i, label in enumerate(labels):
            band = {"own_gold_first": share(o.wins[split_bands == i])}
            if o.rr is not None:
                band["mrr_meq"] = float(o.rr[bands == i].mean()) if (bands == i).any() else None
            if name != reference:
                here = split_bands == i
                band["vs_reference"] = mcnemar_exact(o.wins[here], systems[reference].wins[here])
            row["bands"][label] = band
        if o.rr is not None:
            row["all"]["mrr_meq"] = float(o.rr.mean())
        found = trend(o.wins, split_cosines)  # does winning depend on how close q' is to q?
        if found:
            row["trend"] = found
        out["systems"][name] = row
    return out


def trend(wins: np.ndarray, cosines: np.ndarray) -> Optional[Dict]:
    """Median cosine of won and lost pairs and the Mann-Whitney p of the difference; ``None`` if all
    pairs are won or all lost."""
    won, lost = cosines[wins], cosines[~wins]
    if not (len(won) and len(lost)):
        return None
    return {
        "median_cosine_won": float(np.median(won)),
        "median_cosine_lost": float(np.median(lost)),
        "p_value": float(mannwhitneyu(won, lost).pvalue),
    }


def own_space(wins: Sequence[bool], query_cosines: np.ndarray, band_cosines: np.ndarray) -> Dict:
    """The trend read in a system's own query space, and how closely that space orders the pairs as
    the band axis does (Spearman)."""
    wins = np.asarray(wins, dtype=bool)
    if not (len(wins) == len(query_cosines) == len(band_cosines)):
        raise ValueError(f"{len(wins)} outcomes, {len(query_cosines)} and {len(band_cosines)} cosines")
    return {
        "trend": trend(wins, query_cosines),
        "spearman_with_band_cosine": float(spearmanr(query_cosines, band_cosines)[0]),
    }


def check_nested(result: Dict, narrow: Dict, floor: float = FLOOR) -> Dict[str, bool]:
    """The bands from ``floor`` up against the narrow (MEQ) set's report: the same wins out of the same
    pairs for every system both hold."""
    above = [label for edge, label in zip(result["edges"], band_labels(result["edges"])) if edge >= floor]
    if not above:
        raise SystemExit(f"no band starts at or above the narrow set's floor {floor}: add it to --edges")
    checked = {}
    for name, row in result["systems"].items():
        first = narrow["systems"].get(name, {}).get("contrast", {}).get("own_gold_first", {})
        if "wins" in first:
            wins = first["wins"]["meq"]
            bands = [row["bands"][label]["own_gold_first"] for label in above]
            checked[name] = (sum(b["wins"] for b in bands), sum(b["n"] for b in bands)) == (sum(wins), len(wins))
    return checked


def markdown(result: Dict) -> str:
    labels = band_labels(result["edges"])
    head = " | ".join(f"{label}: own gold first / q' MRR" for label in labels)
    counts = " / ".join(str(result["pairs_gold_differ"][label]) for label in labels)
    lines = [
        f"Pairs with different golds per band: {counts} (cosine bands; all pairs for MRR: "
        + " / ".join(str(result["pairs"][label]) for label in labels)
        + ")",
        "",
        f"| system | all: own gold first (95% CI) | {head} | trend: median cosine won / lost (p) |",
        "|---" * (3 + len(labels)) + "|",
    ]

    def cell(band: Dict) -> str:
        first = band["own_gold_first"]
        own = f"{100 * first['share']:.1f}" if first["share"] is not None else "-"
        mrr = f"{band['mrr_meq']:.3f}" if band.get("mrr_meq") is not None else "-"
        return f"{own} / {mrr}"

    for name, row in result["systems"].items():
        first = row["all"]
        interval = "-".join(f"{100 * x:.1f}" for x in first["ci95"])
        trend = row.get("trend")
        trend_cell = (
            f"{trend['median_cosine_won']:.3f} / {trend['median_cosine_lost']:.3f} ({trend['p_value']:.2g})"
            if trend
            else "-"
        )
        bands = " | ".join(cell(row["bands"][label]) for label in labels)
        lines.append(f"| {name} | {100 * first['share']:.1f} ({interval}) | {bands} | {trend_cell} |")
    return "\n".join(lines)


def query_space(name: str, directory: str, report: Dict, pairs: List[Dict]) -> Dict:
    """``own_space`` for a system whose query tower is a DCSRModel directory (loaded here only)."""
    from haystack_dcsr.core.dcsr_model import DCSRModel

    split = [p for p in pairs if p["gold"] != p["meq_gold"]]
    model = DCSRModel.from_pretrained(directory)
    q, q_meq = (model.encode_queries([p[key] for p in split]) for key in ("question", "meq"))
    q, q_meq = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (q, q_meq))
    wins = report["systems"][name]["contrast"]["own_gold_first"]["wins"]["meq"]
    found = own_space(wins, (q * q_meq).sum(1), np.array([p["cosine"] for p in split]))
    return {"model": directory, **found}


def parse_edges(text: str) -> List[float]:
    edges = [float(x) for x in text.split(",")]
    if sorted(edges) != edges or len(set(edges)) != len(edges) or not 0 <= edges[0] or edges[-1] >= 1:
        raise argparse.ArgumentTypeError(f"band edges must rise strictly within [0, 1): {text!r}")
    return edges


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, default=ROOT / "benchmarks/results/contrast_loose.json")
    parser.add_argument("--contrast-set", type=Path, default=ROOT / "data/meq_dev_0.6")
    parser.add_argument("--edges", type=parse_edges, default=list(EDGES), help="lower band edges, comma-separated")
    parser.add_argument("--reference", default=REFERENCE, help="the system every other is paired with per band")
    parser.add_argument(
        "--check",
        type=Path,
        action="append",
        default=[],
        help="a report on the narrow set (squad_open_dev.json; repeatable): the nesting check for its systems",
    )
    parser.add_argument(
        "--query-tower",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a system of the report and its DCSRModel directory: the trend in its own query space (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/contrast_bands.json")
    args = parser.parse_args(argv)
    pairs, _ = load_contrast_set(args.contrast_set)
    if not pairs:
        parser.error(f"no pairs.jsonl in {args.contrast_set}: build it with build-contrast-set --threshold 0.6")
    report = json.loads(args.report.read_text())
    result = study(report, pairs, args.edges, args.reference)
    for narrow in args.check:
        result.setdefault("nested_check", {}).update(check_nested(result, json.loads(narrow.read_text())))
    for spec in args.query_tower:
        name, _, directory = spec.partition("=")
        if name not in result["systems"]:
            parser.error(f"--query-tower {spec!r}: no system {name!r} with per-pair outcomes in the report")
        result["systems"][name]["own_query_space"] = query_space(name, directory, report, pairs)
    result["command"] = " ".join(["python", "benchmarks/studies/contrast_bands.py"] + list(argv or sys.argv[1:]))
    args.out.write_text(json.dumps(result, indent=1))
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    if "nested_check" in result:
        print(f"bands from {FLOOR} up equal the narrow report:", result["nested_check"])
    for name, row in result["systems"].items():
        if "own_query_space" in row:
            print(f"{name}, in its own query space:", json.dumps(row["own_query_space"]))


if __name__ == "__main__":
    main()
