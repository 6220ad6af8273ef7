"""The hybrid's fusion, checked: HasAns min-max scaled or kept as a probability, and the weight.

The hybrid fuses ``w * HasAns + (1 - w) * min-max BM25`` per question with w = 0.5 fixed a priori;
HasAns is min-max scaled too (the join nodes' default) or kept as a probability (``as-is``, the
README's earlier hybrid rows). This reads the rankings ``squad_open.py`` cached for a dense system
and BM25 and, for both treatments, reports (1) top-k per weight of a grid over all questions
(in-sample: the curve, not a result), (2) the cross-fitted hybrid: each half of the questions ranked
with the weight that does best on the other half (``evaluation.cross_fitted_weight``), and
McNemar's tests of w = 0.5 min-max vs as-is and of each cross-fitted hybrid vs its w = 0.5, and
(3) the contrast-set pair metrics at w = 0.5 and at the weight best on all dev questions (chosen
without the contrast set's MEQs or their golds).

    .venv/bin/python benchmarks/studies/fusion_weight.py --questions 0 --contrast-set data/meq_dev \
        --dense "DCSR+QQ, MEQ-centred batches=dcsr:runs/cpu_dcsr_qq_mb/last" --sparse BM25=bm25 \
        --out benchmarks/results/fusion_weight_qq_mb.json
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Set

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import KS, cross_fitted_weight, fuse_rankings, pair_report  # noqa: E402
from significance import paired_sign_test  # noqa: E402
from squad_open import add_data_arguments, load_benchmark  # noqa: E402

from haystack_dcsr.core.metrics import contains_answer, normalize_for_matching, top_k_accuracy  # noqa: E402


def answer_ids(rankings: Sequence, questions: Sequence, texts: Dict[str, str]) -> List[Set[str]]:
    """Per question, which of the passages any system ranked hold an answer (each text normalised once)."""
    normalized: Dict[str, str] = {}
    out = []
    for lists, (_, answers, _) in zip(zip(*rankings), questions):
        golds = [normalize_for_matching(a) for a in answers]
        ids = {pid for ranked in lists for pid, _ in ranked}
        for pid in ids - normalized.keys():
            normalized[pid] = normalize_for_matching(texts[pid])
        out.append({pid for pid in ids if contains_answer(normalized[pid], golds)})
    return out


def first_hits(fused: Sequence, hits: Sequence[Set[str]]) -> List[int]:
    return [next((rank for rank, (pid, _) in enumerate(r, 1) if pid in h), 0) for r, h in zip(fused, hits)]


def percent(ranks: Sequence[int]) -> Dict[str, float]:
    return {str(k): round(100 * v, 2) for k, v in top_k_accuracy(ranks, KS).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser)
    parser.add_argument("--dense", required=True, help="the dense system's squad_open spec, NAME=KIND:DIR")
    parser.add_argument("--sparse", default="BM25=bm25", help="the sparse system's squad_open spec")
    parser.add_argument("--grid", type=int, default=20, help="weights 0, 1/grid, ..., 1")
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    bench = load_benchmark(args)
    cached = {}
    for role, spec in (("dense", args.dense), ("sparse", args.sparse)):
        path = bench.cache_file(args.workdir, spec)
        if not path.is_file():
            raise SystemExit(f"no cached ranking for {spec!r} ({path}): run squad_open.py --system {spec!r} first")
        cached[role] = json.loads(path.read_text())
    dense, sparse = cached["dense"]["ranked"], cached["sparse"]["ranked"]
    hits = answer_ids([dense, sparse], bench.questions, bench.texts)
    weights = [round(i / args.grid, 4) for i in range(args.grid + 1)]
    asked = list(dict.fromkeys(q for p in bench.pairs for q in (p["question"], p["meq"])))
    report = {"dense": args.dense, "sparse": args.sparse, "questions": len(bench.questions), "weights": weights}
    at_half = {}
    for mode, fusion in (("min-max", "min-max"), ("as-is", "hasans-as-is")):
        ranks = {w: first_hits(fuse_rankings(dense, sparse, w, fusion), hits) for w in weights}
        fitted = cross_fitted_weight(ranks, k=1, folds=args.folds)
        best_all = max(weights, key=lambda w: (sum(1 for r in ranks[w] if r == 1), -abs(w - 0.5)))
        at_half[mode] = ranks[0.5]
        contrast = {}
        for w in dict.fromkeys([0.5, best_all]) if bench.pairs else ():
            fused = fuse_rankings(cached["dense"]["contrast_ranked"], cached["sparse"]["contrast_ranked"], w, fusion)
            contrast[str(w)] = pair_report(dict(zip(asked, fused)), bench.pairs, bench.texts)
        report[mode] = {
            "in_sample": {str(w): percent(r) for w, r in ranks.items()},
            "best_on_all_questions": best_all,
            "at_0.5": percent(ranks[0.5]),
            "cross_fitted": {"weights": fitted["weights"], "folds": args.folds, "top_k": percent(fitted["ranks"])},
            "cross_fitted_vs_0.5": {str(k): paired_sign_test(fitted["ranks"], ranks[0.5], k) for k in (1, 20)},
            "contrast": contrast,
        }
    report["min-max_vs_as-is_at_0.5"] = {
        str(k): paired_sign_test(at_half["min-max"], at_half["as-is"], k) for k in (1, 20)
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    for mode in ("min-max", "as-is"):
        r = report[mode]
        print(f"{mode}: top-1 by weight", {w: r["in_sample"][str(w)]["1"] for w in weights})
        print(f"{mode}: at 0.5 {r['at_0.5']}; cross-fitted {r['cross_fitted']}; vs 0.5 {r['cross_fitted_vs_0.5']}")
        for w, c in r["contrast"].items():
            first, overlap = c["own_gold_first"], c["overlap"]["20"]
            print(
                f"{mode}: contrast at {w}: own gold first q' {first['meq']:.3f} / q {first['q']:.3f}, "
                f"top-20 overlap {overlap:.3f}"
            )
    print("min-max vs as-is at 0.5:", report["min-max_vs_as-is_at_0.5"])


if __name__ == "__main__":
    main()
