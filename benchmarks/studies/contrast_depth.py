"""The reranker's depth, chosen without the pairs it is judged on.

The 3,200-step mpnet reranker meets both contrast goals only over BM25's top 40, a depth read off
a sweep (5-50, "over" and "blended") on the contrast set itself; the max of noisy estimates reads
high. Here every pair is scored at the setting chosen on *other* pairs, by the goals' own rule:
the largest ``min(own gold first - 0.85, MEQ MRR of q' - 0.85)``, ties to the shallower (cheaper)
setting. Pairs are split by SQuAD article, not one by one: every pair lies within one article and
an article's pairs share questions and passages (SQuAD repeats questions), so a pair-level split
would leak. Two splits, both cross-fitted (``evaluation.cross_fitted_choice``):

- leave one article out: each article's pairs at the setting best on all the others;
- two halves of the articles at random, repeated: each half at the setting best on the other half
  (half the data to choose from; the spread shows how much the result rests on the split).

No model runs: it reads the per-pair outcomes ``squad_open.py`` keeps in its report.

    .venv/bin/python benchmarks/studies/contrast_depth.py    # -> benchmarks/results/contrast_depth.json
"""

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import cross_fitted_choice, kept_outcomes, load_contrast_set  # noqa: E402

from haystack_dcsr.core.metrics import reciprocal_ranks  # noqa: E402

FAMILY = "Cross-encoder (all-mpnet-base-v2, 3,200 H200 steps)"
GOAL = 0.85


def article(passage_id: str) -> str:
    """``dev-12-3`` (article 12, paragraph 3) -> ``dev-12``."""
    return passage_id.rsplit("-", 1)[0]


def settings(report: Dict, family: str, pairs: List[Dict]) -> Dict[str, Dict]:
    """The family's systems that kept per-pair outcomes, shallowest first (the tie-break's order)."""
    found = {}
    for name, system in report["systems"].items():
        if family not in name:
            continue
        try:
            wins, ranks = kept_outcomes(system.get("contrast", {}), pairs)
        except ValueError as error:
            raise SystemExit(f"{name!r}: {error}") from None
        if wins is not None and ranks is not None:
            depth = re.search(r"@(\d+)", system["spec"])
            found[name] = {
                "depth": int(depth.group(1)) if depth else 0,
                "wins": wins,
                "rr": np.array(reciprocal_ranks(ranks)),
            }
    if not found:
        raise SystemExit(f"no system named like {family!r} with per-pair outcomes in the report")
    return dict(sorted(found.items(), key=lambda item: (item[1]["depth"], item[0])))


class Outcomes:
    """Per-pair outcomes of each setting, and the goals' rule on any subset of articles."""

    def __init__(self, by_setting: Dict[str, Dict], pairs: List[Dict]):
        self.by_setting = by_setting
        self.articles = sorted({article(p["gold"]) for p in pairs})
        index = {a: i for i, a in enumerate(self.articles)}
        self.pair_article = np.array([index[article(p["gold"])] for p in pairs])  # MRR rows: one per pair
        self.split_article = self.pair_article[[p["gold"] != p["meq_gold"] for p in pairs]]  # own-gold rows

    def metrics(self, name: str, chosen_articles: np.ndarray) -> Dict[str, float]:
        outcome = self.by_setting[name]
        return {
            "own_gold_first": float(outcome["wins"][chosen_articles[self.split_article]].mean()),
            "mrr_meq": float(outcome["rr"][chosen_articles[self.pair_article]].mean()),
        }

    def margin(self, name: str, chosen_articles: np.ndarray) -> float:
        return min(value - GOAL for value in self.metrics(name, chosen_articles).values())

    def cross_fitted(self, fold_of_article: np.ndarray) -> Dict:
        """Each fold's pairs at the setting chosen on the other folds, pooled."""
        chosen = cross_fitted_choice(list(self.by_setting), fold_of_article, self.margin)
        own_fold, mrr_fold = fold_of_article[self.split_article], fold_of_article[self.pair_article]
        wins = np.zeros(len(own_fold), dtype=bool)
        rr = np.zeros(len(mrr_fold))
        for fold, name in enumerate(chosen):
            wins[own_fold == fold] = self.by_setting[name]["wins"][own_fold == fold]
            rr[mrr_fold == fold] = self.by_setting[name]["rr"][mrr_fold == fold]
        own, mrr = float(wins.mean()), float(rr.mean())
        return {"own_gold_first": own, "own_gold_wins": int(wins.sum()), "mrr_meq": mrr, "chosen": chosen}


def study(report: Dict, pairs: List[Dict], family: str, repeats: int, seed: int) -> Dict:
    outcomes = Outcomes(settings(report, family, pairs), pairs)
    everything = np.ones(len(outcomes.articles), dtype=bool)
    in_sample = {name: outcomes.metrics(name, everything) for name in outcomes.by_setting}
    loao = outcomes.cross_fitted(np.arange(len(outcomes.articles)))
    rng = np.random.default_rng(seed)
    halves = [outcomes.cross_fitted(rng.permutation(len(outcomes.articles)) % 2) for _ in range(repeats)]
    own = np.array([h["own_gold_first"] for h in halves])
    mrr = np.array([h["mrr_meq"] for h in halves])
    return {
        "family": family,
        "goal": GOAL,
        "pairs": len(outcomes.pair_article),
        "pairs_gold_differ": len(outcomes.split_article),
        "articles": len(outcomes.articles),
        "in_sample": in_sample,
        "best_in_sample": max(outcomes.by_setting, key=lambda name: outcomes.margin(name, everything)),
        "leave_one_article_out": {**loao, "chosen": dict(Counter(loao["chosen"]).most_common())},
        "halves": {
            "repeats": repeats,
            "seed": seed,
            "chosen": dict(Counter(name for h in halves for name in h["chosen"]).most_common()),
            "own_gold_first": {q: float(np.quantile(own, float(q))) for q in ("0.1", "0.5", "0.9")},
            "mrr_meq": {q: float(np.quantile(mrr, float(q))) for q in ("0.1", "0.5", "0.9")},
            "share_meeting": {
                "own_gold_first": float((own >= GOAL).mean()),
                "mrr_meq": float((mrr >= GOAL).mean()),
                "both": float(((own >= GOAL) & (mrr >= GOAL)).mean()),
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, default=ROOT / "benchmarks/results/squad_open_rerank.json")
    parser.add_argument("--contrast-set", type=Path, default=ROOT / "data/meq_dev")
    parser.add_argument("--family", default=FAMILY, help="the settings compared: systems whose name contains this")
    parser.add_argument("--repeats", type=int, default=1000, help="random halvings of the articles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/contrast_depth.json")
    args = parser.parse_args()
    pairs, _ = load_contrast_set(args.contrast_set)
    if not pairs:
        parser.error(f"no pairs.jsonl in {args.contrast_set}: build it with build-contrast-set --keep-repeats")
    result = study(json.loads(args.report.read_text()), pairs, args.family, args.repeats, args.seed)
    result["command"] = " ".join(sys.argv)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "in_sample"}, indent=1))


if __name__ == "__main__":
    main()
