"""Latency side by side: EmbeddingRetriever Flat and DCSR on several sentence indexes, one process,
the systems taking turns in blocks of questions (so drift in this shared machine's speed hits all alike).

Blocks, not single questions: FAISS's and torch's OpenMP threads keep spinning for a while after a call,
so a system called right after another one pays for the other's threads (taking turns question by
question made EmbeddingRetriever look 3x slower than alone). Each block starts with two untimed queries.

    .venv/bin/python benchmarks/scale.py ann     # -> benchmarks/results/ann_latency.json

Uses ``ann_study.py``'s cache (MiniLM zero-shot sentence vectors and their SQL store). Accuracy is
``ann_study.py``'s job; here only ``retrieve`` time (top_k=10, one query at a time) is measured.
EmbeddingRetriever's passage vectors are stand-ins (each passage's mean sentence vector, normalised):
its latency depends on the number and size of its vectors (20,963 x 384 fp32, FAISS Flat), the query
encoder (the same MiniLM) and its SQL reads, not on their values; encoding the real ones takes this CPU
~10 minutes (``ann_study.py`` does, for its accuracy).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

import numpy as np  # noqa: E402
from ann_study import ROOT, ModelIndex, label  # noqa: E402
from haystack.document_stores import FAISSDocumentStore  # noqa: E402
from haystack.nodes import EmbeddingRetriever  # noqa: E402
from haystack.schema import Document  # noqa: E402
from squad_data import faiss_store, load_squad  # noqa: E402

from haystack_dcsr import DCSRRetriever  # noqa: E402
from haystack_dcsr.core.model.models import resolve_model_path  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
BLOCK = 50
SETTINGS = [
    ("Flat", {}, 3000),
    ("SQ4", {}, 1000),
    ("HNSW32", {"efSearch": 1000}, 1000),
    ("HNSW32,SQ8", {"efSearch": 1000}, 1000),
]


def embedding_retriever(index: ModelIndex, passages, workdir: Path) -> EmbeddingRetriever:
    position = {p.id: i for i, p in enumerate(passages)}
    sums = np.zeros((len(passages), index.vectors.shape[1]), dtype=np.float32)
    for doc, vector in zip(index.sentences, index.vectors):
        sums[position[doc.meta["dcsr"]["passage_id"]]] += vector
    sums /= np.linalg.norm(sums, axis=1, keepdims=True)
    db = workdir / "er_standin.db"
    db.unlink(missing_ok=True)
    store = faiss_store(db, sums.shape[1])
    store.write_documents(
        [Document(content=p.content, id=p.id, meta=p.meta, embedding=v) for p, v in zip(passages, sums)],
        batch_size=10_000,
    )
    return EmbeddingRetriever(
        document_store=store,
        embedding_model=resolve_model_path(MODEL),
        use_gpu=False,
        progress_bar=False,
        model_format="sentence_transformers",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "cache" / "ann")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ann_latency.json")
    args = parser.parse_args()
    passages, questions = load_squad(n_questions=args.questions, seed=0)
    index = ModelIndex("MiniLM zero-shot", MODEL, passages, args.workdir)
    systems = {"EmbeddingRetriever Flat": embedding_retriever(index, passages, args.workdir)}
    for factory, params, top_n in SETTINGS:
        store = FAISSDocumentStore.load(str(index.dir / "flat.faiss"))  # its own store object, the same SQL rows
        index.store = store
        index.install(factory)
        systems[label(factory, params, top_n)] = DCSRRetriever(
            document_store=store, query_model=MODEL, top_n_sentences=top_n, search_params=params, progress_bar=False
        )
    texts = [q for q, _, _ in questions]
    for retriever in systems.values():  # warm: models loaded, vector maps read
        retriever.retrieve(texts[0], top_k=10)
    times = {name: [] for name in systems}
    for begin in range(0, len(texts), BLOCK):
        for name, retriever in systems.items():
            for text in texts[max(0, begin - 2) : begin]:  # untimed: the previous system's threads settle
                retriever.retrieve(text, top_k=10)
            for text in texts[begin : begin + BLOCK]:
                start = time.perf_counter()
                retriever.retrieve(text, top_k=10)
                times[name].append(time.perf_counter() - start)
    reference = times["EmbeddingRetriever Flat"]
    report = {"run": time.strftime("%Y-%m-%d %H:%M"), "questions": len(texts), "block": BLOCK, "rows": []}
    for name, values in times.items():
        p50, p95 = (1000 * float(np.percentile(values, q)) for q in (50, 95))
        row = {
            "setting": name,
            "retrieve_ms_p50": round(p50, 2),
            "retrieve_ms_p95": round(p95, 2),
            "x_reference_p50": round(p50 / (1000 * float(np.percentile(reference, 50))), 2),
            "x_reference_p95": round(p95 / (1000 * float(np.percentile(reference, 95))), 2),
        }
        report["rows"].append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
