"""GPU passage encoding and exact sentence search: throughput, and the accuracy of the GPU path.

    python benchmarks/studies/gpu_throughput.py --data .gpu/squad_open.json.gz --model .gpu/minilm --out gpu.json

Runs without Haystack (a GPU machine need not have it): only the framework-free modules are loaded
(encoder, hasans, metrics). ``--data`` is written by ``--prepare`` on a machine with the repo's
environment: every SQuAD v1.1 paragraph split into sentences (the benchmark's corpus, 20,963
passages) and the benchmark's fixed 1,000 dev questions. On whatever device torch sees, it measures:

1. passage encoding: every paragraph encoded whole, a vector per sentence, under fp32, bf16 and
   fp16 autocast: passages/s, sentences/s and tokens/s, and how long the CPU-side tokenising and
   window planning takes (it bounds the GPU's speed for a model this small);
2. the GPU path's accuracy: zero-shot DCSR (mean pooling, HasAns over the top 3,000 sentences,
   temperature 0.05) top-1/5/20/100 on the 1,000 questions from fp32 and from bf16 vectors, to set
   beside the README's CPU run with FAISS Flat (66.0 / 86.5 / 93.8 / 97.7);
3. exact top-3,000 sentence search with torch (one cuBLAS product and ``topk``) over 103k, 1M and
   5M vectors (synthetic unit vectors beyond the real 103k), fp16 and fp32, batches of 1 and 256
   queries. This is what faiss-gpu's flat index computes; faiss-gpu itself could not be installed
   on the GPU machine (its wheels need CUDA 12 libraries; the machine has CUDA 13).
"""

import argparse
import gzip
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
KS = (1, 5, 20, 100)


def import_core():
    """The framework-free modules (``haystack_dcsr.core``: importing the package needs no Haystack)."""
    sys.path.insert(0, str(ROOT))
    from haystack_dcsr.core import encoder, hasans, metrics, models

    return encoder, hasans, metrics, models


def prepare(out: Path) -> None:
    """Write ``--data`` from ../shared/data/squad (needs the repo's environment)."""
    sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]
    from squad_data import load_squad

    from haystack_dcsr.core.splitting import SentenceSplitter

    passages, questions = load_squad(n_questions=1000, seed=0)
    splitter = SentenceSplitter()
    with gzip.open(out, "wt") as handle:
        json.dump(
            {
                "passages": [[d.id, [d.content[a:b] for a, b in splitter.spans(d.content)]] for d in passages],
                "questions": [[q, answers] for q, answers, _ in questions],
            },
            handle,
        )


def synchronise():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def encode_timed(encoder_cls, model: str, passages, precision: str, device: str, batch_size: int):
    tower = encoder_cls(
        model, pooling="mean", normalize=True, temperature=0.05, max_length=512, device=device, precision=precision
    )
    tower.model.float()  # the weights travel as fp16: compute in fp32 (autocast decides the rest)
    tower.encode(passages[:64], batch_size=batch_size)  # warm-up: kernels, allocator
    synchronise()
    start = time.perf_counter()
    windows, n_rows = tower.windows(passages)
    planned = time.perf_counter()
    vectors = tower.encode_windows(windows, n_rows, batch_size)
    synchronise()
    done = time.perf_counter()
    tokens = sum(len(w.input_ids) for w in windows)
    seconds = done - start
    row = {
        "precision": precision,
        "device": device,
        "batch_windows": batch_size,
        "passages": len(passages),
        "sentences": n_rows,
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "tokenise_and_plan_s": round(planned - start, 2),
        "passages_per_s": round(len(passages) / seconds, 1),
        "sentences_per_s": round(n_rows / seconds, 1),
        "tokens_per_s": round(tokens / seconds),
    }
    if device.startswith("cuda"):
        row["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        torch.cuda.reset_peak_memory_stats()
    print(json.dumps(row), flush=True)
    return row, vectors, tower


def zero_shot_accuracy(metrics, tower, vectors, passages, questions, device: str):
    """Top-k of zero-shot DCSR from these sentence vectors: exact top 3,000 on the device, HasAns
    (``ExactSentenceIndex.rank``, at MiniLM's temperature 0.05)."""
    from haystack_dcsr.core.exact_index import ExactSentenceIndex

    index = ExactSentenceIndex(vectors, [len(s) for s in passages], device=device)
    texts = [" ".join(s) for s in passages]
    query_vectors = tower.encode_texts([q for q, _ in questions], batch_size=256)
    ranked = [[texts[p] for p in r.passages] for r in index.rank(query_vectors, temperature=0.05, top_k=100)]
    ranks = metrics.first_hit_ranks(ranked, [answers for _, answers in questions])
    return {str(k): round(100 * v, 1) for k, v in metrics.top_k_accuracy(ranks, KS).items()}


def search_timings(real: np.ndarray, sizes, device: str):
    """Exact top-3,000 inner-product search with torch over n vectors: ms per query."""
    rows = []
    generator = torch.Generator(device=device).manual_seed(0)
    for n in sizes:
        for dtype in (torch.float16, torch.float32):
            extra = max(0, n - len(real))
            base = torch.from_numpy(real[:n]).to(device, dtype)
            if extra:
                noise = torch.randn(extra, real.shape[1], device=device, dtype=dtype, generator=generator)
                base = torch.cat([base, noise / noise.norm(dim=1, keepdim=True)])
            for batch in (1, 256):
                queries = base[torch.randint(0, n, (batch,), device=device, generator=generator)]
                times = []
                for _ in range(12):
                    synchronise()
                    start = time.perf_counter()
                    scores, ids = torch.topk(queries @ base.T, 3000, dim=1)
                    ids.cpu()
                    times.append(time.perf_counter() - start)
                ms = 1000 * statistics.median(times[2:])
                row = {
                    "vectors": n,
                    "dtype": str(dtype).split(".")[-1],
                    "batch": batch,
                    "ms_per_batch": round(ms, 3),
                    "ms_per_query": round(ms / batch, 4),
                    "index_gib": round(base.numel() * base.element_size() / 2**30, 2),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
            del base
            torch.cuda.empty_cache() if device.startswith("cuda") else None
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--model", required=True, help="an HF directory with MiniLM's config, tokenizer, weights")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--prepare", action="store_true", help="write --data from ../shared/data/squad and stop")
    parser.add_argument("--limit", type=int, default=0, help="only this many passages (a quick check)")
    parser.add_argument("--cpu-sample", type=int, default=2000, help="passages encoded on the CPU for the ratio")
    parser.add_argument("--search-sizes", default="103349,1000000,5000000")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.data)
        return
    encoder, _, metrics, _ = import_core()
    data = json.load(gzip.open(args.data, "rt"))
    passages = [sentences for _, sentences in data["passages"]][: args.limit or None]
    questions = data["questions"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    report = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "encoding": [],
        "accuracy": {},
    }
    cpu_row, _, _ = encode_timed(encoder.PassageTower, args.model, passages[: args.cpu_sample], "fp32", "cpu", 32)
    report["encoding"].append(cpu_row)
    vectors_by_precision = {}
    for precision in ("fp32", "bf16", "fp16"):
        for batch in (64, 256):
            row, vectors, tower = encode_timed(encoder.PassageTower, args.model, passages, precision, device, batch)
            row["x_cpu_passages_per_s"] = round(row["passages_per_s"] / cpu_row["passages_per_s"], 1)
            report["encoding"].append(row)
            vectors_by_precision[precision] = (vectors, tower)
    fp32 = vectors_by_precision["fp32"][0]
    for precision in ("bf16", "fp16"):
        other = vectors_by_precision[precision][0]
        cosine = (fp32 * other).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(other, axis=1)
        report[f"{precision}_vs_fp32_cosine"] = {"mean": float(cosine.mean()), "min": float(cosine.min())}
    if not args.limit:
        for precision in ("fp32", "bf16"):
            vectors, tower = vectors_by_precision[precision]
            report["accuracy"][precision] = zero_shot_accuracy(metrics, tower, vectors, passages, questions, device)
            print(precision, report["accuracy"][precision], flush=True)
    sizes = [int(n) for n in args.search_sizes.split(",")]
    report["search"] = search_timings(fp32, sizes, device)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
