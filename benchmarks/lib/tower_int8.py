"""DCSR's towers with ``quantize="int8"`` against fp32 on this CPU, side by side in one run: passage
encoding throughput (the cost of indexing), one-query latency (the cost of serving), and how far the
vectors move. Retrieval quality is squad_open.py's (``dcsr-zero-int8`` beside ``dcsr-zero``).

fp32 runs first and last, so drift during the run shows as two fp32 figures; int8 is timed after its
compilation (reported apart: once per process and tower).

The report records the instruction sets the kernels may use (``int8.instruction_sets``), so that runs
with them capped (``int8.ISA_CAPS``) stand in for CPUs without VNNI on this one.

    python benchmarks/speed.py towers [--model all-MiniLM-L6-v2] [--passages 1000] [--queries 300]
    # -> benchmarks/results/tower_int8.json
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from haystack_dcsr.core.model.dcsr_model import DCSRModel  # noqa: E402
from haystack_dcsr.core.model.int8 import instruction_sets  # noqa: E402
from haystack_dcsr.training.cli import read_corpus  # noqa: E402
from haystack_dcsr.training.data import load_records  # noqa: E402


def timed(call, *args, **kwargs):
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--corpus", default=str(ROOT / "data/corpus.jsonl"))
    parser.add_argument("--questions", default=str(ROOT / "data/squad_dev.jsonl"))
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/tower_int8.json")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    texts = [p.text for p in rng.sample(read_corpus(args.corpus), args.passages)]
    questions = [r.question for r in rng.sample(load_records(args.questions).records, args.queries)]
    models = {"fp32": DCSRModel.from_pretrained(args.model, device="cpu")}
    models["int8"] = DCSRModel.from_pretrained(args.model, quantize="int8")
    passages = [models["fp32"].splitter().split(text) for text in texts]
    sentences = sum(map(len, passages))
    report = {"command": " ".join(["python"] + sys.argv), "threads": torch.get_num_threads(), "model": args.model}
    report["instruction_sets"] = instruction_sets()
    report.update(passages=len(passages), sentences=sentences, queries=len(questions))
    _, report["int8_passage_compile_s"] = timed(models["int8"].encode_passages, passages[:8])
    _, report["int8_query_compile_s"] = timed(models["int8"].encode_queries, questions[:2], batch_size=1)

    vectors, runs = {}, []
    for label in ("fp32", "int8", "fp32"):
        model = models[label]
        vectors[label], passage_s = timed(model.encode_passages, passages)
        start = time.perf_counter()
        query_vectors = np.concatenate([model.encode_queries([q], batch_size=1) for q in questions])
        query_s = time.perf_counter() - start
        vectors[label + " queries"] = query_vectors
        runs.append(
            {
                "scorer": label,
                "passages_per_s": len(passages) / passage_s,
                "query_ms": 1000 * query_s / len(questions),
            }
        )
        print(json.dumps(runs[-1]), flush=True)
    fp32_rate = np.mean([r["passages_per_s"] for r in runs if r["scorer"] == "fp32"])
    fp32_ms = np.mean([r["query_ms"] for r in runs if r["scorer"] == "fp32"])
    int8_run = runs[1]
    report["runs"] = runs
    report["passage_speed_vs_fp32"] = int8_run["passages_per_s"] / fp32_rate
    report["query_speed_vs_fp32"] = fp32_ms / int8_run["query_ms"]

    def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    for what, key in (("sentence", ""), ("query", " queries")):
        c = cosines(vectors["int8" + key], vectors["fp32" + key])
        report[f"{what}_cosine_int8_vs_fp32"] = {"min": float(c.min()), "mean": float(c.mean())}
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
