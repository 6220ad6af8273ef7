"""Training memory of the README's DCSR recipe on CPU: what the data and model take, what a step adds,
and how the gradient cache bounds the step. Each setting runs in its own process (peak resident set
is a per-process high-water mark).

    python benchmarks/studies/train_memory.py --steps 3 --chunks none 16 4   # -> benchmarks/results/train_memory.json
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(args) -> dict:
    sys.path.insert(0, str(ROOT))
    import torch

    from haystack_dcsr.training.config import TrainConfig
    from haystack_dcsr.training.engine import Trainer
    from haystack_dcsr.training.memory import SavedActivations, peak_memory_gb
    from haystack_dcsr.training.samples import make_batch
    from haystack_dcsr.training.schedule import epoch_batches

    torch.set_num_threads(2)
    chunk = None if args.chunk == "none" else int(args.chunk)
    config = TrainConfig(
        train_file=args.train,
        base_model=args.base,
        output_dir="/tmp/train_memory",
        pooling="mean",
        normalize=True,
        temperature=0.05,
        batch_size=args.batch_size,
        max_passage_length=256,
        grad_cache_chunk=chunk,
        precision="fp32",
        tensorboard=False,
        checkpoint_every=0,
    )
    trainer = Trainer(config)
    loaded = peak_memory_gb()
    scheduled = epoch_batches(trainer.builder, trainer.records, 0, config.batch_size)
    saved, windows, tokens = [], [], []
    for samples in scheduled[: args.steps]:
        batch = make_batch(samples)
        units = [trainer.builder.sentences(p) for p in batch.passages]
        passage_windows, _ = trainer.passage.windows(units)
        windows.append(len(passage_windows))
        tokens.append(sum(len(w.input_ids) for w in passage_windows))
        with SavedActivations() as meter:
            trainer.step([samples])
        saved.append(meter.peak / 2**30)
    return {
        "grad_cache_chunk": chunk,
        "records": len(trainer.records),
        "after_loading_gb": round(loaded, 2),
        "peak_gb": round(peak_memory_gb(), 2),
        "saved_for_backward_peak_gb": round(max(saved), 2),
        "passage_windows_per_step": windows,
        "passage_tokens_per_step": tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", default="data/squad_train_bm25.jsonl")
    parser.add_argument("--base", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--chunks", nargs="+", default=["none", "16", "4"])
    parser.add_argument("--chunk", help=argparse.SUPPRESS)  # one setting, in a child process
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/train_memory.json")
    args = parser.parse_args()
    if args.chunk:
        print(json.dumps(one(args)))
        return
    report = {"command": " ".join(["python", *sys.argv]), "batch_size": args.batch_size, "runs": []}
    for chunk in args.chunks:
        child = [sys.executable, __file__, "--chunk", chunk, "--train", args.train, "--base", args.base]
        child += ["--batch-size", str(args.batch_size), "--steps", str(args.steps)]
        output = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        report["runs"].append(json.loads(output.strip().splitlines()[-1]))
        print(report["runs"][-1], flush=True)
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
