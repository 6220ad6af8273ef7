"""Spot check: the README's zero-shot numbers through the framework-free API (DCSRModel + core only).

    .venv/bin/python benchmarks/api_spot_check.py   # -> benchmarks/results/api_spot_check.json

Splits the 20,963 SQuAD paragraphs with ``DCSRModel.splitter`` and ``sentence_units`` (no Haystack),
re-encodes a sample of passages with ``DCSRModel.encode_passages`` and compares them with the cached
sentence vectors of ``ann_study.py`` (encoded by the Haystack 1.x ``DCSRRetriever``), then answers the
1,000 dev questions with ``DCSRModel.encode_queries``, an exact top-3,000 sentence search over those
vectors and ``hasans_scores``: top-1/20/100 must equal the README's DCSR Flat row (66.0 / 93.8 / 97.7).
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from squad_data import load_squad  # noqa: E402

from haystack_dcsr import DCSRModel, hasans_scores  # noqa: E402
from haystack_dcsr.core.metrics import first_hit_ranks, top_k_accuracy  # noqa: E402
from haystack_dcsr.core.sentence_units import sentence_parts  # noqa: E402

VECTORS = ROOT / "benchmarks" / "cache" / "ann" / "MiniLM_zero-shot" / "sentence_vectors.npy"


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    passages, questions = load_squad(n_questions=1000, seed=0)
    model = DCSRModel.from_pretrained("all-MiniLM-L6-v2", use_gpu=False)
    splitter = model.splitter()
    units = [
        [content for _, content, _ in sentence_parts(p.id, p.content, p.meta, splitter.spans(p.content))]
        for p in passages
    ]
    owner = np.repeat(np.arange(len(passages)), [len(u) for u in units])
    vectors = np.load(VECTORS)
    assert len(vectors) == len(owner), f"{len(owner)} sentences split, {len(vectors)} cached vectors"
    sample = sorted(random.Random(0).sample(range(len(passages)), 300))
    starts = np.concatenate([[0], np.cumsum([len(u) for u in units])])
    fresh = model.encode_passages([units[i] for i in sample])
    cached = np.concatenate([vectors[starts[i] : starts[i + 1]] for i in sample])
    start = time.perf_counter()
    query_vectors = model.encode_queries([q for q, _, _ in questions])
    scores, ids = torch.topk(torch.from_numpy(query_vectors) @ torch.from_numpy(vectors).T, 3000, dim=1)
    ranked = []
    for row_scores, row_ids in zip(scores.numpy(), ids.numpy()):
        scored = hasans_scores(row_scores, owner[row_ids], model.temperature)
        ranked.append([passages[int(key)].content for key in scored.passages[:100]])
    ranks = first_hit_ranks(ranked, [a for _, a, _ in questions])
    report = {
        "sentences": int(len(owner)),
        "sample_passages": len(sample),
        "sample_max_abs_diff": float(np.abs(fresh - cached).max()),
        "query_and_rank_s": round(time.perf_counter() - start, 1),
        **{f"top{k}": round(100 * v, 1) for k, v in top_k_accuracy(ranks, (1, 20, 100)).items()},
        "readme_dcsr_flat": {"top1": 66.0, "top20": 93.8, "top100": 97.7},
    }
    out = ROOT / "benchmarks" / "results" / "api_spot_check.json"
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
