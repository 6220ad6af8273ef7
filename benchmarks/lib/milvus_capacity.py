"""How far one Milvus standalone server goes towards a million passages on this machine.

Passages stream into one ``MilvusDocumentStore`` (preset ``flat``, ``duplicate_documents`` as
``--duplicate-documents`` says: ``skip``, a load's setting, inserts the passages not stored yet; ``overwrite``
upserts each), the benchmark's vectors: the real SQuAD
paragraphs first, then ``cost_growth.py``'s distractors, on a fresh server on loopback with Milvus's default
configuration, a chunk at a time through
``write_documents``, waiting for the server to seal and index what was written every ``--seal-every`` passages
(``wait_until_indexed``: growing segments hold rows in a costlier form) and once more before the questions.
After each chunk it records the passages and sentences written, the chunk's write rate, the
server's RSS and the machine's available memory, and where the chunk's time went: the seconds spent in each kind of
request to the server (``requests_s``: reading the stored versions' heads, the upserts), the rest being the
client's own work. A chunk whose write the server
did not answer within the store's timeout (busy compacting) is written again once the server answers, as the
store's error advises, up to ``--retries`` times (counted in ``retries``). It stops at ``--passages``, at
``--minutes``, when the machine's available memory falls under ``--floor-gib`` (so the attempt never takes the
machine down) or when a chunk failed past its retries, then answers
``--questions`` dev questions on what was written (p50 / p95, top-20 against the gold paragraph).

    .venv/bin/python benchmarks/scale.py milvus-capacity --passages 1000000 --minutes 60
    # -> benchmarks/results/milvus_capacity.json
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / d) for d in ("benchmarks/lib", "benchmarks", "tests/support")]

import numpy as np  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "milvus_capacity.json"


def available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return round(int(line.split()[1]) / 2**20, 2)
    return 0.0


def data_by_folder(data: Path, depth: int = 2) -> dict:
    """The server's data folder by subfolder (``depth`` levels down), in GiB: where a sentence row's bytes go
    (the write-ahead log, the segments' binlogs, the vector index)."""
    sizes: dict = {}
    for path in data.rglob("*"):
        if path.is_file():
            key = "/".join(path.relative_to(data).parts[:depth])
            sizes[key] = sizes.get(key, 0) + path.stat().st_size
    return {key: round(size / 2**30, 3) for key, size in sorted(sizes.items(), key=lambda kv: -kv[1]) if size > 2**24}


def timed_requests(index) -> dict:
    """Seconds spent in each kind of request of ``index`` (by the name its requests give, such as "read passage
    heads"), summed until the dict is cleared."""
    phases: dict = {}
    request = index._request

    def timed(what, *args, **kwargs):
        began = time.perf_counter()
        try:
            return request(what, *args, **kwargs)
        finally:
            phases[what] = phases.get(what, 0.0) + time.perf_counter() - began

    index._request = timed
    return phases


def write_with_retries(store, docs, retries: int):
    """Write ``docs``; after a stall past the store's timeout wait until the server answers a count, then write
    the whole chunk again (passages are written whole, so a re-write converges). Returns (retries used, the last
    error's first line or None)."""
    from haystack_dcsr.core.indexes.milvus_index import MilvusUnavailableError

    for attempt in range(retries + 1):
        try:
            store.write_documents(docs)
            return attempt, None
        except MilvusUnavailableError as stalled:
            error = str(stalled).splitlines()[0]
            print(f"write stalled (attempt {attempt + 1}): {error}", flush=True)
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                try:
                    store.get_document_count()
                    break
                except MilvusUnavailableError:
                    time.sleep(5)
    return retries, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--minutes", type=float, default=60.0, help="stop writing after this long")
    parser.add_argument("--floor-gib", type=float, default=3.0, help="stop when the machine has less available")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument(
        "--seal-every",
        type=int,
        default=100_000,
        help="passages between waits for the server to seal and index what was written (0: only at the end)",
    )
    parser.add_argument("--retries", type=int, default=2, help="writes of a chunk again after a server stall")
    parser.add_argument(
        "--duplicate-documents",
        choices=("overwrite", "skip"),
        default="skip",
        help="the store's policy: skip inserts new passages; overwrite upserts every passage (a re-load)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    from engines import corpus_chunks, folder_gib, rss_gib, with_vectors
    from milvus_server import MilvusServer

    from haystack_dcsr import MILVUS_PRESETS, DCSRRetriever
    from haystack_dcsr.core.indexes.milvus_index import MilvusUnavailableError
    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

    started = time.perf_counter()
    steps, stopped, questions = [], "reached the target", None
    data = Path(tempfile.mkdtemp(prefix="dcsr-milvus-capacity-"))
    server = MilvusServer(data, config={}).start()  # Milvus's default configuration, as an operator runs it
    try:
        store = MilvusDocumentStore(
            uri=server.uri,
            index="capacity",
            index_preset="flat",
            duplicate_documents=args.duplicate_documents,
            progress_bar=False,
        )
        phases = timed_requests(store.sentence_index())
        passages = sentences = 0
        writing = time.perf_counter()
        for found, chunk, vectors in corpus_chunks(args.passages):
            questions = questions or found
            docs = with_vectors(chunk, vectors)
            phases.clear()
            chunk_started = time.perf_counter()
            retries, error = write_with_retries(store, docs, args.retries)
            if error:  # the server stalled past the store's timeout, every time: a finding
                stopped = f"the server did not answer within the store's timeout ({retries} retries): {error}"
                print(stopped, flush=True)
                break
            seconds, requests = time.perf_counter() - chunk_started, dict(phases)
            written = len({d.meta["dcsr"]["passage_id"] for d in docs})
            passages += written
            sentences += len(docs)
            sealing = time.perf_counter()
            if args.seal_every and passages // args.seal_every > (passages - written) // args.seal_every:
                store.wait_until_indexed()  # growing segments hold rows in a costlier form than sealed ones
            steps.append(
                {
                    "passages": passages,
                    "sentences": sentences,
                    "chunk_passages_per_s": round(written / seconds),
                    "requests_s": {what: round(spent, 1) for what, spent in requests.items()},
                    "retries": retries,
                    "seal_s": round(time.perf_counter() - sealing, 1),
                    "elapsed_s": round(time.perf_counter() - writing),
                    "server_rss_gib": rss_gib(server.server_pid()),
                    "available_gib": available_gib(),
                }
            )
            print(steps[-1], flush=True)
            if steps[-1]["available_gib"] < args.floor_gib:
                stopped = f"the machine's available memory fell under {args.floor_gib} GiB"
                break
            if time.perf_counter() - writing > 60 * args.minutes:
                stopped = f"the {args.minutes:g}-minute limit"
                break
        retriever = DCSRRetriever(
            document_store=store,
            query_model="all-MiniLM-L6-v2",
            top_k=20,
            progress_bar=False,
            **MILVUS_PRESETS["flat"].retriever_params,
        )
        latencies, found_gold = [], []
        try:
            sealing = time.perf_counter()
            store.wait_until_indexed()
            sealed = {"seal_s": round(time.perf_counter() - sealing, 1), "server_rss_gib": rss_gib(server.server_pid())}
            print(sealed, flush=True)
            retriever.retrieve(questions[0][0])
            for question, _, gold in questions[: args.questions]:
                began = time.perf_counter()
                ranked = [d.id for d in retriever.retrieve(question)]
                latencies.append(time.perf_counter() - began)
                found_gold.append(gold in ranked)
            queries = {
                "questions": len(latencies),
                "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 1),
                "p95_ms": round(1000 * float(np.percentile(latencies, 95)), 1),
                "top20": round(100 * float(np.mean(found_gold)), 1),
                "server_rss_gib": rss_gib(server.server_pid()),
                "sealed_before_queries": sealed,
            }
        except MilvusUnavailableError as error:
            queries = {"questions_answered": len(latencies), "error": str(error).splitlines()[0]}
        print(queries, flush=True)
    finally:
        server.stop()
        data_gib, by_folder = folder_gib(data), data_by_folder(data)
        shutil.rmtree(data, ignore_errors=True)
    report = {
        "command": f"python benchmarks/scale.py milvus-capacity --passages {args.passages} --minutes {args.minutes:g}"
        f" --seal-every {args.seal_every} --retries {args.retries} --duplicate-documents {args.duplicate_documents}",
        "wall_s": round(time.perf_counter() - started),
        "stopped": stopped,
        "server_config": "default",
        "server_data_gib": data_gib,
        "server_data_by_folder": by_folder,
        "bytes_per_sentence": round(data_gib * 2**30 / max(sentences, 1)),
        "machine_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "queries": queries,
        "steps": steps,
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "steps"}, indent=1))


if __name__ == "__main__":
    main()
