"""Spot check: the README's zero-shot numbers through the framework-free API (DCSRModel + core only).

    .venv/bin/python benchmarks/api_spot_check.py   # -> benchmarks/results/api_spot_check.json

Splits the 20,963 SQuAD paragraphs with ``DCSRModel.passage_units`` (no Haystack), re-encodes a sample
of passages with ``DCSRModel.encode_passages`` and compares them with the cached sentence vectors of
``scale.py ann`` (encoded by the Haystack 1.x ``DCSRRetriever``; encoded here when that cache is missing,
~15 min on 2 cores), then answers the 1,000 dev questions with ``DCSRModel.encode_queries`` and
``ExactSentenceIndex.rank_passage_numbers`` (exact top-3,000 sentences, HasAns): top-1/20/100 must equal the README's
DCSR Flat row (66.0 / 93.8 / 97.7).
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
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

VECTORS = ROOT / "benchmarks" / "cache" / "ann" / "MiniLM_zero-shot" / "sentence_vectors.npy"


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    # imported after the arguments, so --help answers at once (importing the package imports Haystack 1.x)
    import numpy as np
    from squad_data import load_squad

    from haystack_dcsr import DCSRModel
    from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
    from haystack_dcsr.core.ranking.metrics import first_hit_ranks, top_k_accuracy

    passages, questions = load_squad(n_questions=1000, seed=0)
    model = DCSRModel.from_pretrained("all-MiniLM-L6-v2", use_gpu=False)
    units = model.passage_units([p.content for p in passages])  # split as the retrievers split
    cached_by_haystack = VECTORS.is_file()
    if not cached_by_haystack:
        VECTORS.parent.mkdir(parents=True, exist_ok=True)
        np.save(VECTORS, model.encode_passages(units, progress_bar=True))
    index = ExactSentenceIndex(np.load(VECTORS), [len(u) for u in units])
    sample = sorted(random.Random(0).sample(range(len(passages)), 300))
    fresh = model.encode_passages([units[i] for i in sample])
    cached = np.concatenate([index.passage_vectors(i).numpy() for i in sample])
    start = time.perf_counter()
    query_vectors = model.encode_queries([q for q, _, _ in questions])
    ranked = [
        [passages[int(key)].content for key in scored.passages]
        for scored in index.rank_passage_numbers(query_vectors, model.temperature, top_k=100)
    ]
    ranks = first_hit_ranks(ranked, [a for _, a, _ in questions])
    report = {
        "sentences": len(index),
        "vectors": "cached by DCSRRetriever (scale.py ann)" if cached_by_haystack else "encoded here by DCSRModel",
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
