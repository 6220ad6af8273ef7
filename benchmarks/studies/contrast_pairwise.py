"""A model's preference between the two gold passages of a contrast pair, read directly: does q'
score its own gold above q's gold (and q its own above q''s)? No first stage is involved.

Why: over a first stage, "own gold first" mixes the reranker's judgement with which passages reached
it. Read on the dev contrast set (unique pairs whose golds differ) and on a seeded sample of the
training MEQ pairs the model learnt from, the gap between the two says what limits the reranker:
it fits the training pairs but not dev (short of data) or it fits neither (short of capacity or
steps). Training pairs are kept only where q's gold holds no answer of q' (the trainer's rule for a
contrast negative, ``answerless_negatives``); dev pairs where it does are reported apart.

A model is a cross-encoder directory, or ``dcsr:NAME`` for a bi-encoder read as DCSR (a DCSRModel
directory, a sentence-transformers directory or a hub name): HasAns over the two passages' sentence
vectors, as the MEQ ranking scores its 50 candidates. Whether a larger base orders the two golds
better is then one cheap reading, before any corpus is indexed with it.

    python benchmarks/studies/contrast_pairwise.py runs/cross_encoder_1600/last runs/cross_encoder_2560/last
    python benchmarks/studies/contrast_pairwise.py dcsr:all-MiniLM-L6-v2 dcsr:runs/bases/all-mpnet-base-v2 \\
        --out benchmarks/results/contrast_pairwise_bases.json
    # -> benchmarks/results/contrast_pairwise.json (models compared in order, paired McNemar)
"""

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import load_contrast_set  # noqa: E402
from significance import mcnemar_exact  # noqa: E402

from haystack_dcsr.core.cross_encoder import CrossEncoder  # noqa: E402
from haystack_dcsr.core.dcsr_model import DCSRModel  # noqa: E402
from haystack_dcsr.core.hasans import score_passages  # noqa: E402
from haystack_dcsr.core.metrics import has_answer  # noqa: E402
from haystack_dcsr.training.cli import read_corpus  # noqa: E402
from haystack_dcsr.training.data import load_records  # noqa: E402
from haystack_dcsr.training.meq_data import first_of_each_text_pair  # noqa: E402

Pair = Tuple[str, str, str, str, bool]  # q, q's gold text, q', q''s gold text, q's gold holds no answer of q'
Prefers = Callable[[Sequence[Tuple[str, str, str]]], np.ndarray]  # (question, text a, text b) rows -> a above b


def dev_pairs(contrast_set: Path, texts: Dict[str, str]) -> List[Pair]:
    pairs, _ = load_contrast_set(contrast_set)
    unique = first_of_each_text_pair([(p["question"], p["meq"]) for p in pairs])
    return [
        (
            p["question"],
            texts[p["gold"]],
            p["meq"],
            texts[p["meq_gold"]],
            not has_answer(texts[p["gold"]], p["meq_answers"]),
        )
        for p, first in zip(pairs, unique)
        if first and p["gold"] != p["meq_gold"]
    ]


def train_pairs(path: Path, n: int, seed: int) -> List[Pair]:
    pairs = []
    for record in load_records(path).records:
        for edited in record.negative_questions:
            if record.positives and edited.positives and edited.positives[0].key != record.positives[0].key:
                gold, own = record.positives[0].text, edited.positives[0].text
                if not has_answer(gold, edited.answers):
                    pairs.append((record.question, gold, edited.question, own, True))
    return random.Random(seed).sample(pairs, min(n, len(pairs)))


def cross_encoder_prefers(name: str) -> Prefers:
    model = CrossEncoder(name)

    def prefers(rows: Sequence[Tuple[str, str, str]]) -> np.ndarray:
        s = model.score_pairs([(q, a) for q, a, _ in rows] + [(q, b) for q, _, b in rows]).reshape(2, len(rows))
        return s[0] > s[1]

    return prefers


def dcsr_prefers(name: str) -> Prefers:
    """HasAns over both passages' sentences (``score_passages``), each passage encoded once."""
    model = DCSRModel.from_pretrained(name, use_gpu=False)
    splitter = model.splitter()

    def units(text: str) -> List[str]:
        return splitter.split(text) if model.settings.split_sentences else [text]

    def prefers(rows: Sequence[Tuple[str, str, str]]) -> np.ndarray:
        texts = list(dict.fromkeys(t for _, a, b in rows for t in (a, b)))
        split = [units(t) for t in texts]
        ends = np.cumsum([len(u) for u in split])
        vectors = dict(zip(texts, np.split(model.encode_passages(split), ends[:-1])))
        queries = model.encode_queries([q for q, _, _ in rows])
        keys = [score_passages(v, [vectors[a], vectors[b]], model.temperature) for v, (_, a, b) in zip(queries, rows)]
        return np.array([k[0] > k[1] for k in keys])

    return prefers


def load_prefers(spec: str) -> Prefers:
    kind, _, name = spec.partition(":")
    return dcsr_prefers(name) if kind == "dcsr" and name else cross_encoder_prefers(spec)


def preferences(prefers: Prefers, pairs: Sequence[Pair]) -> Dict[str, List[bool]]:
    """Per pair: q' scores its own gold above q's gold; q scores its own above q''s."""
    won = prefers([(e, own, gold) for q, gold, e, own, _ in pairs] + [(q, gold, own) for q, gold, e, own, _ in pairs])
    return {"meq": won[: len(pairs)].tolist(), "q": won[len(pairs) :].tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "models", nargs="+", help="cross-encoder directories or dcsr:NAME bi-encoders, compared in order"
    )
    parser.add_argument("--contrast-set", type=Path, default=ROOT / "data/meq_dev")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus.jsonl")
    parser.add_argument("--train-file", type=Path, default=ROOT / "data/squad_train_meq.jsonl")
    parser.add_argument("--train-pairs", type=int, default=300, help="seeded sample of training MEQ pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/contrast_pairwise.json")
    args = parser.parse_args()
    texts = {p.key: p.text for p in read_corpus(str(args.corpus))}
    sets = {
        "dev": dev_pairs(args.contrast_set, texts),
        "train": train_pairs(args.train_file, args.train_pairs, args.seed),
    }
    clean = np.array([c for *_, c in sets["dev"]])
    result = {"command": " ".join(sys.argv), "pairs": {k: len(v) for k, v in sets.items()}, "models": {}}
    result["pairs"]["dev, q's gold lacks q''s answer"] = int(clean.sum())
    outcomes = {}
    for name in args.models:
        prefers = load_prefers(name)
        won = {split: preferences(prefers, pairs) for split, pairs in sets.items()}
        outcomes[name] = won
        row = {f"{split} {role}": float(np.mean(w[role])) for split, w in won.items() for role in ("meq", "q")}
        row["dev, q's gold lacks q''s answer, meq"] = float(np.mean(np.array(won["dev"]["meq"])[clean]))
        result["models"][name] = row
        print(name, json.dumps({k: round(v, 3) for k, v in row.items()}), flush=True)
    result["paired"] = {
        f"{a} vs {b}": {
            f"{split} {role}": mcnemar_exact(outcomes[a][split][role], outcomes[b][split][role])
            for split in sets
            for role in ("meq", "q")
        }
        for a, b in zip(args.models, args.models[1:])
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
