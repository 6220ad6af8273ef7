"""Where a DCSR query's time goes on a Milvus server: one top-3,000 search and one read of 100 sentences by id, at
``Strong`` and ``Bounded`` consistency, on a server with the tests' shortened loops or Milvus's defaults.

    .venv/bin/python benchmarks/scale.py milvus-latency --server-config test
    .venv/bin/python benchmarks/scale.py milvus-latency --server-config default

100,000 random 384-dimensional vectors in a FLAT collection (the shape of the 20k-passage benchmark); the median of
10 calls each, printed as lines (no result file: the figures are quoted in docs/benchmarks/engines.md).

``--corpus 20963`` breaks a whole DCSR query down instead, on the engines benchmark's corpus (its cached SQuAD
sentence vectors) in a ``flat`` collection on a default server, beside FAISS exact in the same process, the
questions taking turns: per question the 1.x ``DCSRRetriever`` end to end on each store, the query's encoding,
the FAISS scan at top_n 3,000 and 1,000, the Milvus search at top_n 1,000 with the hits' ``position`` field (what
the store asks for) and without output fields (ids and scores only), and the ranking with its read of the
passages (``rank_passages``); medians in ``benchmarks/results/milvus_breakdown_20k.json``:

    .venv/bin/python benchmarks/scale.py milvus-latency --corpus 20963 --questions 200
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import numpy as np  # noqa: E402

ROWS, DIM = 100_000, 384


def collection(client, name: str, level: str) -> None:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("position", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index(field_name="v", metric_type="IP", index_type="FLAT")
    client.create_collection(name, schema=schema, index_params=index, consistency_level=level)
    vectors = np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32)
    for start in range(0, ROWS, 5000):
        rows = [
            {"id": str(i), "position": {"passage_id": f"p{i // 5}", "index": i % 5}, "v": vectors[i].tolist()}
            for i in range(start, start + 5000)
        ]
        client.insert(name, rows)
    client.flush(name)


def median_ms(call) -> float:
    times = []
    for _ in range(10):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(1000 * float(np.median(times)), 1)


def breakdown(size: int, n_questions: int) -> dict:
    """Where a DCSR query's time goes on Milvus ``flat`` beside FAISS exact, ``size`` passages, medians in ms."""
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "lib"), str(ROOT / "benchmarks")]
    from engines import corpus, with_vectors
    from haystack.document_stores import FAISSDocumentStore
    from milvus_server import MilvusServer

    from haystack_dcsr import DCSRRetriever
    from haystack_dcsr.core.ranking.passage_ranking import rank_passages
    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

    sentences, vectors, questions = corpus(size)
    docs = with_vectors(sentences, vectors)
    timings: dict = {}

    def timed(name, call):
        started = time.perf_counter()
        answer = call()
        timings.setdefault(name, []).append(1000 * (time.perf_counter() - started))
        return answer

    with tempfile.TemporaryDirectory() as data:
        server = MilvusServer(Path(data), config={}).start()  # Milvus's own configuration
        try:
            milvus = MilvusDocumentStore(uri=server.uri, index="breakdown", embedding_dim=DIM, progress_bar=False)
            faiss = FAISSDocumentStore(
                sql_url=f"sqlite:///{data}/faiss.db",
                embedding_dim=DIM,
                faiss_index_factory_str="Flat",
                similarity="dot_product",
                progress_bar=False,
            )
            for store in (milvus, faiss):
                for start in range(0, len(docs), 10_000):
                    store.write_documents(docs[start : start + 10_000])
            milvus.wait_until_indexed()
            on_milvus = DCSRRetriever(
                document_store=milvus,
                query_model="all-MiniLM-L6-v2",
                top_n_sentences=1000,
                top_k=20,
                progress_bar=False,
            )
            on_faiss = DCSRRetriever(
                document_store=faiss, query_model="all-MiniLM-L6-v2", top_n_sentences=3000, top_k=20, progress_bar=False
            )
            index, scan = milvus.sentence_index(), faiss.faiss_indexes[faiss.index]
            temperature = on_milvus.hasans_temperature
            for retriever in (on_milvus, on_faiss):  # warm-up: loads the model, maps the index
                retriever.retrieve(questions[0][0])
            for question, _, _ in questions[:n_questions]:
                timed("FAISS exact, DCSRRetriever end to end (top_n 3,000)", lambda: on_faiss.retrieve(question))  # noqa: B023
                timed("Milvus flat, DCSRRetriever end to end (top_n 1,000)", lambda: on_milvus.retrieve(question))  # noqa: B023
                vector = timed("the query's encoding", lambda: on_milvus.embed_queries([question]))  # noqa: B023
                timed("FAISS scan, top_n 3,000", lambda: scan.search(vector, 3000))  # noqa: B023
                timed("FAISS scan, top_n 1,000", lambda: scan.search(vector, 1000))  # noqa: B023
                timed("Milvus search, top_n 1,000, with position", lambda: index.search(vector, 1000))  # noqa: B023
                timed(
                    "Milvus search, top_n 1,000, ids and scores only",
                    lambda: index.client.search(  # noqa: B023
                        index.collection, data=vector.tolist(), limit=1000, output_fields=[], timeout=index.timeout
                    ),
                )
                timed(
                    "Milvus search and read, ranked (rank_passages, top_n 1,000)",
                    lambda: rank_passages(index, vector, temperature, 1000, 20),  # noqa: B023
                )
        finally:
            server.stop()
    return {
        "command": f"python benchmarks/scale.py milvus-latency --corpus {size} --questions {n_questions}",
        "server_config": "default",
        "passages": size,
        "sentences": len(docs),
        "questions": n_questions,
        "p50_ms": {name: round(float(np.median(values)), 1) for name, values in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-config", choices=["test", "default"], default="default")
    parser.add_argument("--corpus", type=int, default=0, help="break a DCSR query down on this many passages")
    parser.add_argument("--questions", type=int, default=200, help="questions for --corpus")
    args = parser.parse_args()
    if args.corpus:
        report = breakdown(args.corpus, args.questions)
        out = ROOT / "benchmarks" / "results" / f"milvus_breakdown_{args.corpus // 1000}k.json"
        out.write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report, indent=1))
        return
    import milvus_server
    from pymilvus import MilvusClient

    if args.server_config == "default":
        milvus_server.TEST_CONFIG = {}
    with tempfile.TemporaryDirectory() as data:
        server = milvus_server.MilvusServer(Path(data)).start()
        try:
            client = MilvusClient(uri=server.uri)
            query = np.random.default_rng(1).standard_normal((1, DIM)).astype(np.float32).tolist()
            ids = f"id in {json.dumps([str(i) for i in range(100)])}"
            for level in ("Strong", "Bounded"):
                name = f"latency_{level.lower()}"
                collection(client, name, level)
                search = median_ms(
                    lambda: client.search(name, data=query, limit=3000, output_fields=["position"])  # noqa: B023
                )
                read = median_ms(lambda: client.query(name, filter=ids, output_fields=["position"]))  # noqa: B023
                print(f"{args.server_config} server, {level}: search top 3,000 {search} ms, read 100 ids {read} ms")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
