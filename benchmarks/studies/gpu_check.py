"""The trainer on a GPU: does CUDA train what the CPU trains, and how much faster is it?

    python benchmarks/studies/gpu_check.py --records data/squad_train_bm25.jsonl --limit 640 \
        --out benchmarks/results/gpu_check.json

The model has all-MiniLM-L6-v2's shape and tokenizer but random weights: parity and speed do not
depend on the weights (and the GPU machine could not fetch them). Every check runs the real
``Trainer`` on the same SQuAD records and seed as the README's CPU runs (DCSR, mean pooling,
batch 32, 256-token passages):

1. parity: fp32 on the CPU and fp32 on CUDA, dropout off: the per-step losses agree;
2. precision: bf16 autocast against fp32 on CUDA: the losses agree to bf16 rounding;
3. gradient cache on CUDA with dropout on: each chunk's re-encoding (with autograd) reproduces
   the vectors of its gradient-free pass, i.e. the CUDA RNG replay of ``haystack_dcsr/training/grad_cache.py``
   restores the same dropout masks; a control run with the replay's RNG restore disabled shows
   the gap the check would catch;
4. speed: seconds per step (median after warm-up), CPU fp32 against CUDA fp32 and bf16, at batch 32
   and 128, and peak GPU memory.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertModel  # noqa: E402

from haystack_dcsr.core.models import DEFAULT_MODEL, EncoderConfig, resolve_model_path  # noqa: E402
from haystack_dcsr.training.config import TrainConfig  # noqa: E402
from haystack_dcsr.training.data import load_records  # noqa: E402
from haystack_dcsr.training.engine import Trainer  # noqa: E402
from haystack_dcsr.training.recipes import settings  # noqa: E402


def random_minilm(tokenizer_dir: str, directory: Path, dropout: float, seed: int = 0) -> str:
    """all-MiniLM-L6-v2's architecture and tokenizer, random weights, the CPU runs' geometry."""
    torch.manual_seed(seed)
    config = BertConfig.from_pretrained(
        tokenizer_dir, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout
    )
    BertModel(config).save_pretrained(directory)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(directory)
    EncoderConfig(pooling="mean", max_length=256, normalize=True).save(directory)  # temperature 0.05: cosine's
    return str(directory)


def run(model: str, records, out: Path, steps: int, **overrides) -> Dict:
    """``steps`` training steps; the losses and each step's wall time (synchronised on CUDA)."""
    recipe = settings("build_model.yaml", "budgets.gpu.first")  # the README's recipe, less its warm-up (studies.yaml)
    values = dict(
        base_model=model,
        output_dir=str(out),
        level="sentence",
        negatives="+1 in-passage +1 BM25 random",
        batch_size=recipe["batch_size"],
        max_steps=steps,
        lr=recipe["lr"],
        warmup_steps=settings("studies.yaml", "gpu_check.warmup_steps"),
        max_passage_length=256,
        checkpoint_every=0,
        log_every=0,
    )
    values.update(overrides)
    trainer = Trainer(TrainConfig(**values), records=records)
    times: List[float] = []
    step = trainer.step

    def timed(*args, **kwargs):
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = step(*args, **kwargs)
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        return result

    trainer.step = timed
    if trainer.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    history = trainer.train(resume=False)
    warm = times[2:] or times
    result = {
        "device": str(trainer.device),
        "precision": str(trainer.amp_dtype).replace("torch.", ""),
        "batch_size": values["batch_size"],
        "losses": [h["loss"] for h in history],
        "seconds_per_step": statistics.median(warm),
    }
    if trainer.device.type == "cuda":
        result["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return result


def replay_gap(model: str, records, out: Path, steps: int, restore_rng: bool = True) -> float:
    """Largest difference between a chunk's cached vectors and its replayed ones over ``steps``."""
    from haystack_dcsr.training import grad_cache

    passes: Dict[bool, List[torch.Tensor]] = {False: [], True: []}
    original_run, original_set = grad_cache.CachedPass._run, torch.cuda.set_rng_state

    def recording_run(self, side, windows, n):
        vectors = original_run(self, side, windows, n)
        passes[torch.is_grad_enabled()].append(vectors.detach().float().cpu())
        return vectors

    grad_cache.CachedPass._run = recording_run
    if not restore_rng:
        torch.cuda.set_rng_state = lambda *args, **kwargs: None
    try:
        run(model, records, out, steps, device="cuda", precision="fp32", grad_cache_chunk=8)
    finally:
        grad_cache.CachedPass._run, torch.cuda.set_rng_state = original_run, original_set
    assert len(passes[False]) == len(passes[True]) > 0
    return max(float((a - b).abs().max()) for a, b in zip(passes[False], passes[True]))


def profile(model: str, records, out: Path, steps: int, precision: str, batch: int) -> str:
    """cProfile of ``steps`` CUDA steps: where a step's wall time goes (top functions by own time)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run(model, records, out, steps, device="cuda", precision=precision, batch_size=batch)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    return text.getvalue()


def max_relative_gap(a: List[float], b: List[float]) -> float:
    return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))


def main(argv: Optional[List[str]] = None) -> Dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", required=True, help="training records with BM25 negatives (trainer format)")
    parser.add_argument("--limit", type=int, default=640, help="records to read (the checks cycle through them)")
    parser.add_argument("--tokenizer", default=DEFAULT_MODEL, help="a model directory or name for config + tokenizer")
    parser.add_argument("--parity-steps", type=int, default=5)
    parser.add_argument("--cpu-steps", type=int, default=6)
    parser.add_argument("--gpu-steps", type=int, default=30)
    parser.add_argument("--out", default="benchmarks/results/gpu_check.json")
    parser.add_argument("--profile", action="store_true", help="also cProfile CUDA steps (fp32 and bf16, batch 128)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("no CUDA GPU: this check compares the CPU with a GPU")
    records = load_records(args.records).records[: args.limit]
    tokenizer_dir = resolve_model_path(args.tokenizer)
    report: Dict = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "records": len(records),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        still = random_minilm(tokenizer_dir, tmp_path / "minilm_nodropout", dropout=0.0)
        noisy = random_minilm(tokenizer_dir, tmp_path / "minilm", dropout=0.1)

        cpu = run(still, records, tmp_path / "a", args.parity_steps, device="cpu", precision="fp32")
        gpu = run(still, records, tmp_path / "b", args.parity_steps, device="cuda", precision="fp32")
        report["parity_fp32"] = {
            "cpu": cpu["losses"],
            "cuda": gpu["losses"],
            "max_relative_gap": max_relative_gap(gpu["losses"], cpu["losses"]),
        }
        bf16 = run(still, records, tmp_path / "c", args.parity_steps, device="cuda", precision="bf16")
        report["bf16_vs_fp32"] = {
            "bf16": bf16["losses"],
            "max_relative_gap": max_relative_gap(bf16["losses"], gpu["losses"]),
        }

        report["grad_cache_cuda_dropout"] = {
            "replay_vs_cached_max_abs": replay_gap(noisy, records, tmp_path / "d", args.parity_steps),
            "control_without_rng_restore_max_abs": replay_gap(
                noisy, records, tmp_path / "e", args.parity_steps, restore_rng=False
            ),
        }

        speed = []
        for batch in (32, 128):
            cpu_steps = args.cpu_steps if batch == 32 else 0
            if cpu_steps:
                speed.append(
                    run(
                        noisy,
                        records,
                        tmp_path / f"s_cpu{batch}",
                        cpu_steps,
                        device="cpu",
                        precision="fp32",
                        batch_size=batch,
                    )
                )
            for precision in ("fp32", "bf16"):
                speed.append(
                    run(
                        noisy,
                        records,
                        tmp_path / f"s_{precision}{batch}",
                        args.gpu_steps,
                        device="cuda",
                        precision=precision,
                        batch_size=batch,
                    )
                )
        for row in speed:
            row.pop("losses")
        cpu_time = next(r["seconds_per_step"] for r in speed if r["device"] == "cpu")
        for row in speed:
            row["questions_per_second_vs_cpu"] = cpu_time / row["seconds_per_step"] * row["batch_size"] / 32
        report["speed"] = speed
        if args.profile:
            for precision in ("fp32", "bf16"):
                text = profile(noisy, records, tmp_path / f"p_{precision}", 10, precision, 128)
                Path(args.out).with_suffix(f".profile_{precision}.txt").write_text(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
