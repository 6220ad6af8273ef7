"""BM25 hard-negative mining for all SQuAD train questions, through Haystack's BM25Retriever.

Corpus: all 20,963 SQuAD v1.1 paragraphs; questions: all 87,599 train questions; top-30, answer-free.
Side by side on the same machine: the embedded SparseBM25DocumentStore (all questions) and
Haystack's InMemoryDocumentStore(use_bm25=True) (a sample, extrapolated: it would take hours).

    .venv/bin/python benchmarks/studies/bm25_mining.py          # writes benchmarks/results/bm25_mining.json
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack.document_stores import InMemoryDocumentStore  # noqa: E402
from haystack.nodes import BM25Retriever  # noqa: E402
from haystack.schema import Document  # noqa: E402

from haystack_dcsr.training.data import squad_to_records  # noqa: E402
from haystack_dcsr.training.mining import bm25_search, mine_hard_negatives  # noqa: E402

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "squad"


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    records, train_passages = squad_to_records(DATA / "train-v1.1.json.gz", id_prefix="train-")
    _, dev_passages = squad_to_records(DATA / "dev-v1.1.json.gz", id_prefix="dev-")
    passages = train_passages + dev_passages
    report = {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "questions": len(records),
        "passages": len(passages),
        "top_k": 30,
    }

    start = time.perf_counter()
    search = bm25_search(passages)
    report["sparse_index_s"] = time.perf_counter() - start
    out = Path(tempfile.mkdtemp()) / "mined.jsonl"
    start = time.perf_counter()
    mine_hard_negatives(records, search, out, top_k=30, keep=30, progress_bar=False)
    report["sparse_mine_s"] = time.perf_counter() - start
    mined = [json.loads(line) for line in out.read_text().splitlines()]
    report["mean_hard_negatives"] = sum(len(m["hard_negative_ctxs"]) for m in mined) / len(mined)

    sample = random.Random(0).sample(records, 200)
    reference = InMemoryDocumentStore(use_bm25=True, progress_bar=False)
    reference.write_documents([Document(content=p.text, id=p.key) for p in passages])
    start = time.perf_counter()
    BM25Retriever(document_store=reference).retrieve_batch([r.question for r in sample], top_k=30)
    per_query = (time.perf_counter() - start) / len(sample)
    report["inmemory_ms_per_query"] = 1000 * per_query
    report["inmemory_extrapolated_s"] = per_query * len(records)
    report["sparse_ms_per_query"] = 1000 * report["sparse_mine_s"] / len(records)
    report["speedup"] = report["inmemory_ms_per_query"] / report["sparse_ms_per_query"]

    target = Path("benchmarks/results/bm25_mining.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
