"""How much of the contrast goals' shortfall is the contrast set itself: the two goal metrics
("own gold first" for q', MEQ MRR of q') of every system in a final-table report, re-read on
subsets of the 352 pairs, and the best any one of them reaches per pair.

Subsets (of the pairs whose per-row outcomes the report kept):
- all: what the final table reports;
- unique: the first of each repeated question pair (SQuAD dev repeats questions, so one pair can
  appear two or four times; ``build-contrast-set`` now drops repeats unless ``--keep-repeats``);
- unique, q's gold lacks q''s answer: for "own gold first" only; where q's gold passage also
  contains an answer of q', ranking it above q''s own gold is not plainly a miss;
- as built now: unique pairs whose answers differ by the builder's default rule
  (``answers_differ``, "shorter_form"): the recorded set was built with exact matching, which let
  paraphrases such as "Who developed..." / "Who came up with the theory of relativity?"
  ("Einstein" / "Albert Einstein") through as MEQs.

No model runs: it reads ``squad_open.py``'s report, the contrast set and the corpus.

    python benchmarks/studies/contrast_audit.py    # -> benchmarks/results/contrast_audit.{json,md}
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import kept_outcomes, load_contrast_set  # noqa: E402

from haystack_dcsr.core.meq import answers_differ  # noqa: E402
from haystack_dcsr.core.metrics import has_answer  # noqa: E402
from haystack_dcsr.training.cli import read_corpus  # noqa: E402
from haystack_dcsr.training.meq_data import first_of_each_text_pair  # noqa: E402


def subsets(pairs: List[Dict], texts: Dict[str, str]) -> Dict[str, np.ndarray]:
    """Boolean masks over the pairs: first of each unordered question-text pair; q's gold lacks
    an answer of q'; answers differ by the builder's default rule; gold passages differ (the pairs
    "own gold first" is defined on)."""
    return {
        "unique": np.array(first_of_each_text_pair([(p["question"], p["meq"]) for p in pairs])),
        "clean": np.array([not has_answer(texts[p["gold"]], p["meq_answers"]) for p in pairs]),
        "answers": np.array([answers_differ(p["answers"], p["meq_answers"]) for p in pairs]),
        "differ": np.array([p["gold"] != p["meq_gold"] for p in pairs]),
    }


def audit(report: Dict, pairs: List[Dict], texts: Dict[str, str]) -> Dict:
    masks = subsets(pairs, texts)
    differ = masks["differ"]
    on_differ = {name: mask[differ] for name, mask in masks.items() if name != "differ"}
    own_sets = {"all": np.ones(differ.sum(), bool), "unique": on_differ["unique"]}
    own_sets["unique, q's gold lacks q''s answer"] = on_differ["unique"] & on_differ["clean"]
    own_sets["as built now"] = on_differ["unique"] & on_differ["answers"]
    mrr_sets = {"all": np.ones(len(pairs), bool), "unique": masks["unique"]}
    mrr_sets["as built now"] = masks["unique"] & masks["answers"]
    systems, wins_all, ranks_all = {}, [], []
    for name, system in report["systems"].items():
        row = {}
        try:
            wins, ranks = kept_outcomes(system.get("contrast", {}), pairs)
        except ValueError as error:
            raise SystemExit(f"{name!r}: {error}") from None
        if wins is not None:
            wins_all.append(wins)
            row["own_gold_first"] = {k: float(wins[m].mean()) for k, m in own_sets.items()}
        if ranks is not None:
            ranks_all.append(ranks)
            row["mrr_meq"] = {k: float((1.0 / ranks[m]).mean()) for k, m in mrr_sets.items()}
        if row:
            systems[name] = row
    best_wins = np.any(wins_all, axis=0)
    best_ranks = np.min(ranks_all, axis=0)
    return {
        "pairs": {k: int(m.sum()) for k, m in mrr_sets.items()},
        "pairs_gold_differ": {k: int(m.sum()) for k, m in own_sets.items()},
        "systems": systems,
        "any_system": {
            "systems": {"own_gold_first": len(wins_all), "mrr_meq": len(ranks_all)},
            "own_gold_first": {k: float(best_wins[m].mean()) for k, m in own_sets.items()},
            "mrr_meq": {k: float((1.0 / best_ranks[m]).mean()) for k, m in mrr_sets.items()},
        },
    }


def markdown(result: Dict) -> str:
    own, mrr = list(result["pairs_gold_differ"]), list(result["pairs"])
    head = [f"own gold first q', {k} ({n})" for k, n in result["pairs_gold_differ"].items()]
    head += [f"MEQ MRR q', {k} ({n})" for k, n in result["pairs"].items()]
    lines = ["| system | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    rows = list(result["systems"].items()) + [("best of any system, per pair", result["any_system"])]
    for name, row in rows:
        cells = [f"{100 * row['own_gold_first'][k]:.1f}" if "own_gold_first" in row else "-" for k in own]
        cells += [f"{row['mrr_meq'][k]:.3f}" if "mrr_meq" in row else "-" for k in mrr]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, default=ROOT / "benchmarks/results/squad_open_dev.json")
    parser.add_argument("--contrast-set", type=Path, default=ROOT / "data/meq_dev")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/contrast_audit.json")
    args = parser.parse_args()
    pairs, _ = load_contrast_set(args.contrast_set)
    if not pairs:
        parser.error(f"no pairs.jsonl in {args.contrast_set}: build it with build-contrast-set --keep-repeats")
    texts = {p.key: p.text for p in read_corpus(str(args.corpus))}
    result = audit(json.loads(args.report.read_text()), pairs, texts)
    result["command"] = " ".join(sys.argv)
    args.out.write_text(json.dumps(result, indent=1))
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
