"""The README's zero-shot DCSR row through the Haystack 2.x components, on a real engine: all SQuAD v1.1 dev
questions over all 20,963 paragraphs, split by ``DCSRSentenceSplitter``, embedded by ``DCSRDocumentEmbedder``,
written by ``DocumentWriter`` into a ``DCSRMilvusDocumentStore`` on a Milvus server started for the run (Milvus's
default configuration), ranked by the 2.x ``DCSRRetriever`` (top_n 3,000 and top 100, as ``squad_open.py`` ranks
the 1.x row). ``--store inmemory`` writes into Haystack's ``InMemoryDocumentStore`` instead (exact; the DCSR
adapter searches a view of its Documents, ``haystack2.stores.InMemoryView``). The report gives the p50 seconds a
query took. Run in the 2.x environment:

    SQUAD=path/to/squad .venv2/bin/python benchmarks/squad_open_2x.py --out benchmarks/results/squad_open_2x.json
    SQUAD=path/to/squad .venv2/bin/python benchmarks/squad_open_2x.py --store inmemory \
        --out benchmarks/results/squad_open_2x_inmemory.json

A hit is a returned passage holding an answer (``core.ranking.metrics.first_hit_ranks``), as for the 1.x rows.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "lib"), str(ROOT / "tests" / "support")]

import numpy as np  # noqa: E402
from squad_data import DATA, read_squad  # noqa: E402

from haystack_dcsr.core.ranking.hasans import TOP_N_SENTENCES  # noqa: E402
from haystack_dcsr.core.ranking.metrics import first_hit_ranks, top_k_accuracy  # noqa: E402

KS = (1, 5, 20, 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="SQuAD v1.1's folder (default: $SQUAD)")
    parser.add_argument("--passages", type=int, default=0, help="only the first N paragraphs (0: all; a quick check)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N dev questions (0: all)")
    parser.add_argument("--store", choices=("milvus", "inmemory"), default="milvus")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "squad_open_2x.json")
    args = parser.parse_args()

    from haystack import Document, Pipeline
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from milvus_server import MilvusServer

    from haystack_dcsr.haystack2 import (
        DCSRDocumentEmbedder,
        DCSRMilvusDocumentStore,
        DCSRRetriever,
        DCSRSentenceSplitter,
    )

    started = time.perf_counter()
    paragraphs, questions = read_squad(args.data / "train-v1.1.json.gz", args.data / "dev-v1.1.json.gz")
    if args.passages:
        paragraphs = paragraphs[: args.passages]
        kept = {pid for pid, _, _ in paragraphs}
        questions = [q for q in questions if q[2] in kept]
    if args.questions:
        questions = questions[: args.questions]
    texts = {pid: text for pid, _, text in paragraphs}
    with tempfile.TemporaryDirectory(prefix="dcsr-squad-2x-") as data:
        server = MilvusServer(Path(data), config={}).start() if args.store == "milvus" else None  # Milvus's defaults
        try:
            if server:
                store = DCSRMilvusDocumentStore(uri=server.uri, collection_name="squad", index_preset="flat")
            else:
                store = InMemoryDocumentStore(embedding_similarity_function="dot_product")
            indexing = Pipeline()
            indexing.add_component("split", DCSRSentenceSplitter(model=args.model))
            indexing.add_component("embed", DCSRDocumentEmbedder(model=args.model, progress_bar=True))
            indexing.add_component("write", DocumentWriter(document_store=store))
            indexing.connect("split.documents", "embed.documents")
            indexing.connect("embed.documents", "write.documents")
            documents = [Document(id=pid, content=text, meta={"title": title}) for pid, title, text in paragraphs]
            index_started = time.perf_counter()
            for start in range(0, len(documents), 2000):  # batches of whole passages
                indexing.run({"split": {"documents": documents[start : start + 2000]}})
            index_s = time.perf_counter() - index_started
            retriever = DCSRRetriever(
                document_store=store, model=args.model, top_k=100, top_n_sentences=TOP_N_SENTENCES
            )
            query_started, ranked, latencies = time.perf_counter(), [], []
            for question, _, _ in questions:
                began = time.perf_counter()
                ranked.append([d.id for d in retriever.run(query=question)["documents"]])
                latencies.append(time.perf_counter() - began)
            query_s = time.perf_counter() - query_started
        finally:
            if server:
                server.stop()
    ranks = first_hit_ranks([[texts[pid] for pid in r] for r in ranked], [answers for _, answers, _ in questions])
    accuracy = {str(k): round(100 * v, 1) for k, v in top_k_accuracy(ranks, KS).items()}
    report = {
        "command": "python benchmarks/squad_open_2x.py"
        + (f" --passages {args.passages}" if args.passages else "")
        + (f" --questions {args.questions}" if args.questions else "")
        + (f" --store {args.store}" if args.store != "milvus" else ""),
        "system": f"DCSR zero-shot, {args.model}, Haystack 2.x on "
        + ("DCSRMilvusDocumentStore (flat, Milvus defaults)" if server else "InMemoryDocumentStore (dot_product)"),
        "passages": len(paragraphs),
        "questions": len(questions),
        "top_k": accuracy,
        "index_s": round(index_s),
        "query_s": round(query_s),
        "query_p50_s": round(float(np.percentile(latencies, 50)), 3),
        "wall_s": round(time.perf_counter() - started),
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
