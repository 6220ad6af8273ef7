"""Marker vs mean pooling at equal budget, and the marker recipes (training/marker.py).

For each variant: the collapse of the sentence vectors before and after training (mean cosine
between two sentences of one passage, and between sentences of different passages, over a fixed
sample of dev passages: a collapsed marker gives ~1.0 within a passage) and the trainer's own
retrieval validation (MRR@10 / recall@k of the gold passage among a fixed slice of dev passages,
ranked as served). Same records, seed, batches and budget for every variant.

    python benchmarks/studies/marker_recipe.py --steps 100 --batch-size 16 \
        --variant "mean:pooling=mean" --variant "marker:pooling=marker" \
        --variant "marker, mean init, own lr, warm-up:pooling=marker,marker_init=mean,marker_lr=1e-3,\
marker_warmup_steps=20"
    # -> benchmarks/results/marker_recipe.json
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from gpu_train import RECIPE  # noqa: E402  (the README's recipe: mean pooling, cosine / 0.05, lr 3e-5)

from haystack_dcsr.training.config import TrainConfig  # noqa: E402
from haystack_dcsr.training.data import load_records  # noqa: E402
from haystack_dcsr.training.engine import Trainer  # noqa: E402
from haystack_dcsr.training.validation import RetrievalValidation  # noqa: E402


@torch.no_grad()
def collapse(trainer: Trainer, passages) -> dict:
    """Mean cosine of sentence vectors within a passage vs across passages (vectors L2-normalised here)."""
    trainer.model.eval()
    units = [trainer.builder.sentences(p) for p in passages]
    vectors = trainer.passage.encode(units)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    owner = np.repeat(np.arange(len(units)), [len(u) for u in units])
    same = owner[:, None] == owner[None, :]
    cosine = vectors @ vectors.T
    within = cosine[same & ~np.eye(len(owner), dtype=bool)]
    trainer.model.train()
    return {"within_passage": round(float(within.mean()), 4), "across_passages": round(float(cosine[~same].mean()), 4)}


def validate(trainer: Trainer, retrieval: RetrievalValidation) -> dict:
    trainer.model.eval()
    metrics = retrieval(trainer.query, trainer.passage, trainer.qp.temperature)
    trainer.model.train()
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", default="data/squad_train_bm25.jsonl")
    parser.add_argument("--dev", default="data/squad_dev_bm25.jsonl")
    parser.add_argument("--base", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--dev-questions", type=int, default=500)
    parser.add_argument("--dev-passages", type=int, default=1000)
    parser.add_argument("--collapse-passages", type=int, default=100)
    parser.add_argument("--variant", action="append", required=True, help="NAME:key=value,key=value")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/marker_recipe.json")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/marker_recipe"))
    args = parser.parse_args()

    records = load_records(args.train).records
    dev = load_records(args.dev).records[: args.dev_questions]
    sample = list({r.positives[0].key: r.positives[0] for r in dev}.values())[: args.collapse_passages]
    report = {"command": " ".join(sys.argv), "budget": f"{args.steps} steps x {args.batch_size} questions", "runs": {}}
    if args.out.is_file():
        report["runs"] = json.loads(args.out.read_text()).get("runs", {})
    for spec in args.variant:
        name, _, settings = spec.partition(":")
        overrides = [item for item in settings.split(",") if item]
        values = dict(
            RECIPE,
            tensorboard=False,
            base_model=args.base,
            output_dir=str(args.workdir / name.replace(" ", "_").replace(",", "")),
            batch_size=args.batch_size,
            max_steps=args.steps,
            warmup_steps=args.warmup,
        )
        recipe = args.workdir / "recipe.yaml"
        args.workdir.mkdir(parents=True, exist_ok=True)
        recipe.write_text(json.dumps(values))  # JSON is YAML
        # no dev records for the trainer: the one retrieval validation is ours, before and after
        trainer = Trainer(TrainConfig.from_yaml(recipe, overrides), records=records, dev_records=[])
        retrieval = RetrievalValidation(dev, trainer.builder, args.dev_passages)
        before = {"collapse": collapse(trainer, sample), "retrieval": validate(trainer, retrieval)}
        start = time.perf_counter()
        history = trainer.train(resume=False)
        seconds = time.perf_counter() - start
        after = {"collapse": collapse(trainer, sample), "retrieval": validate(trainer, retrieval)}
        report["runs"][name] = {
            "command": report["command"],
            "budget": report["budget"],
            "settings": overrides,
            "before": before,
            "after": after,
            "train_s": round(seconds, 1),
            "loss_first_10": round(float(np.mean([h["loss"] for h in history[:10]])), 4),
            "loss_last_10": round(float(np.mean([h["loss"] for h in history[-10:]])), 4),
        }
        print(name, json.dumps(report["runs"][name]), flush=True)
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
