"""Cost growth: the same store and retriever at 20k, 200k and 1M passages (~5M sentence vectors).

    .venv/bin/python benchmarks/scale.py growth --sizes 20963,200000,1000000 \
        --factory "IVF4096,SQ4" --search-params '{"nprobe": 32}' --top-n 1000
    # -> benchmarks/results/cost_growth.json (+ .md, .svg)

Encoding a million passages on this 2-core CPU is out of reach, so the corpus is the 20,963 real
SQuAD paragraphs with their real MiniLM sentence vectors (from ``ann_study.py``'s cache) plus
*distractor* passages written straight into the store: digit-free synthetic sentences (so no
answer can match them by accident) whose vectors are drawn from a Gaussian fitted to the real
sentence vectors (their mean and covariance, then normalised), with the real passages' sentence
counts. The 1,000 real dev questions measure accuracy inside the larger corpus.

The real passages go through ``FAISSDocumentStore.write_documents``. Haystack writes SQL rows one ORM
object at a time (~500 sentence rows/s on this machine: ~3 hours for a million passages), so the
distractors are written as the same rows with plain ``executemany`` into the store's SQLite file and
their vectors added to its FAISS index, exactly the layout ``write_documents`` produces (the report
gives both rates). Everything after that is the product's own path.

Each size runs in child processes, so peak RAM is per step: ``build`` (train the index on a
sample, write every sentence Document with its vector as described above, save the index and the
retriever's vector map) and ``query`` (``FAISSDocumentStore.load``, a new
``DCSRRetriever``, the first answered query; then ``retrieve`` p50/p95, ``retrieve_batch`` ms per
query and top-k). The first query is also timed without the saved vector map, i.e. with the full
SQL scan the retriever does otherwise.
"""

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

import numpy as np  # noqa: E402

VECTORS = ROOT / "benchmarks" / "cache" / "ann" / "MiniLM_zero-shot" / "sentence_vectors.npy"
MODEL = "all-MiniLM-L6-v2"
CHUNK = 25_000  # passages written per write_documents call


def peak_rss_gib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def word(i: int) -> str:
    """A digit-free token for a number: 0 -> 'ba', 1 -> 'be', ..."""
    letters = "bcdfghjklmnpqrstvwxz"
    vowels = "aeiou"
    out = ""
    while True:
        out += letters[i % 20] + vowels[(i // 20) % 5]
        i //= 100
        if i == 0:
            return out


def real_corpus():
    from squad_data import load_squad

    from haystack_dcsr import SentencePreprocessor

    passages, questions = load_squad(n_questions=1000, seed=0)
    sentences = SentencePreprocessor(progress_bar=False).process(passages)["documents"]
    return passages, questions, sentences


def distractors(n: int, counts: np.ndarray, vectors: np.ndarray, seed: int = 0):
    """``n`` synthetic passages in chunks: (sentence Documents, their vectors)."""
    from haystack.schema import Document

    from haystack_dcsr import SentencePreprocessor

    rng = np.random.default_rng(seed)
    mean = vectors.mean(0)
    root = np.linalg.cholesky(np.cov(vectors, rowvar=False) + 1e-6 * np.eye(vectors.shape[1]))
    pre = SentencePreprocessor(progress_bar=False)
    for start in range(0, n, CHUNK):
        passages = []
        for i in range(start, min(n, start + CHUNK)):
            count = int(rng.choice(counts))
            text = " ".join(f"Distractor {word(i)} says {word(j)} things about {word(i + j)}." for j in range(count))
            passages.append(Document(content=text, id=f"syn-{word(i)}", meta={"title": "distractor"}))
        docs = pre.process(passages)["documents"]
        sample = mean + rng.standard_normal((len(docs), vectors.shape[1])).astype(np.float32) @ root.T
        yield docs, (sample / np.linalg.norm(sample, axis=1, keepdims=True)).astype(np.float32)


def write_straight(db: Path, store, docs, vectors: np.ndarray) -> float:
    """Sentence Documents as ``FAISSDocumentStore.write_documents`` lays them out: one ``document`` row
    (content as JSON, the next vector id) and one ``meta_document`` row per meta field (value as JSON).
    Returns the seconds spent adding to the FAISS index (for HNSW, its build)."""
    index = store.faiss_indexes[store.index]
    first = index.ntotal
    start = time.perf_counter()
    index.add(vectors)
    added = time.perf_counter() - start
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    with sqlite3.connect(db) as connection:
        connection.executemany(
            'INSERT INTO document (id, created_at, updated_at, content, content_type, "index", vector_id) '
            "VALUES (?, ?, ?, ?, 'text', ?, ?)",
            [(d.id, now, now, json.dumps(d.content), store.index, str(first + i)) for i, d in enumerate(docs)],
        )
        connection.executemany(
            "INSERT INTO meta_document (id, created_at, updated_at, name, value, document_id, document_index) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (str(uuid.uuid4()), now, now, name, json.dumps(value), d.id, store.index)
                for d in docs
                for name, value in d.meta.items()
            ],
        )
    return added


def served_retriever(store, args):
    """The retriever both steps use, so the build maps the index the query step serves."""
    from haystack_dcsr import DCSRRetriever

    return DCSRRetriever(
        document_store=store,
        query_model=MODEL,
        progress_bar=False,
        top_n_sentences=args.top_n,
        search_params=args.search_params,
    )


def build(args) -> dict:
    from haystack.document_stores import FAISSDocumentStore
    from haystack.schema import Document

    began = time.perf_counter()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "store.db"
    db.unlink(missing_ok=True)
    passages, _, sentences = real_corpus()
    vectors = np.load(VECTORS)
    per_passage = {}
    for doc in sentences:
        per_passage[doc.meta["dcsr"]["passage_id"]] = doc.meta["dcsr"]["count"]
    counts = np.array(list(per_passage.values()))
    store = FAISSDocumentStore(
        sql_url=f"sqlite:///{db}",
        embedding_dim=vectors.shape[1],
        faiss_index_factory_str=args.factory,
        similarity="dot_product",
        duplicate_documents="skip",
        progress_bar=False,
    )
    n_synthetic = max(0, args.size - len(passages))
    report = {"size": args.size, "real_passages": len(passages), "synthetic_passages": n_synthetic}
    start = time.perf_counter()
    index = store.faiss_indexes[store.index]
    if not index.is_trained:
        sample = [vectors]
        want = min(args.train_sample, len(vectors) + int(n_synthetic * counts.mean()))
        for docs, synthetic in distractors(max(0, (want - len(vectors)) // 5 + 1), counts, vectors, seed=99):
            sample.append(synthetic)
        sample = np.concatenate(sample)[:want]
        store.train_index(embeddings=sample)
    report["train_s"] = round(time.perf_counter() - start, 1)
    peaks = report["peak_rss_gib_after"] = {"corpus_and_train": peak_rss_gib()}  # which phase sets the peak
    start = time.perf_counter()
    store.write_documents(
        [Document(content=d.content, id=d.id, meta=d.meta, embedding=v) for d, v in zip(sentences, vectors)],
        batch_size=10_000,
    )
    report["real_write_s"] = round(time.perf_counter() - start, 1)
    report["haystack_write_rows_per_s"] = round(len(sentences) / report["real_write_s"])
    peaks["real_write"] = peak_rss_gib()
    written, index_add_s = len(sentences), 0.0
    start = time.perf_counter()
    for docs, synthetic in distractors(n_synthetic, counts, vectors):
        index_add_s += write_straight(db, store, docs, synthetic)
        written += len(docs)
        print(f"  wrote {written} sentences ({time.perf_counter() - start:.0f}s)", file=sys.stderr, flush=True)
    report["distractor_write_s"] = round(time.perf_counter() - start, 1)
    report["distractor_index_add_s"] = round(index_add_s, 1)
    report["sentences"] = written
    peaks["distractor_write"] = peak_rss_gib()
    assert store.get_document_count() == store.get_embedding_count() == written
    start = time.perf_counter()
    index_path = workdir / "index.faiss"
    store.save(str(index_path))
    retriever = served_retriever(store, args)
    retriever.save_index_map(index_path)  # maps the index (one SQL scan) and saves the map beside it
    report["save_and_map_s"] = round(time.perf_counter() - start, 1)
    peaks["save_and_map"] = peak_rss_gib()
    report["build_wall_s"] = round(time.perf_counter() - began, 1)  # the whole step, corpus loading included
    report["build_peak_rss_gib"] = peak_rss_gib()
    report["disk_bytes"] = {p.name: p.stat().st_size for p in workdir.iterdir() if p.is_file()}
    return report


def query(args) -> dict:
    from haystack.document_stores import FAISSDocumentStore
    from squad_data import load_squad

    from haystack_dcsr.core.ranking.metrics import first_hit_ranks, top_k_accuracy

    _, questions = load_squad(n_questions=1000, seed=0)
    index_path = Path(args.workdir) / "index.faiss"
    map_path = Path(f"{index_path}.dcsr-map.npz")
    hidden = Path(f"{map_path}.hidden")
    if args.without_map:
        map_path.rename(hidden)
    try:
        start = time.perf_counter()
        store = FAISSDocumentStore.load(str(index_path))
        loaded = time.perf_counter()
        retriever = served_retriever(store, args)
        ready = time.perf_counter()
        retriever.retrieve(questions[0][0])
        first = time.perf_counter()
    finally:
        if args.without_map:
            hidden.rename(map_path)
    report = {
        "store_load_s": round(loaded - start, 2),
        "retriever_init_s": round(ready - loaded, 2),
        "first_query_s": round(first - ready, 2),
        "load_to_first_answer_s": round(first - start, 2),
    }
    if args.without_map:
        report["peak_rss_gib"] = peak_rss_gib()
        return report
    texts = [q for q, _, _ in questions]
    times = []
    for text in texts:
        t = time.perf_counter()
        retriever.retrieve(text, top_k=10)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    for begin in range(0, len(texts), 32):
        retriever.retrieve_batch(texts[begin : begin + 32], top_k=10)
    batch_ms = 1000 * (time.perf_counter() - t) / len(texts)
    results = []
    for begin in range(0, len(texts), 64):
        results.extend(retriever.retrieve_batch(texts[begin : begin + 64], top_k=100))
    ranks = first_hit_ranks([[d.content for d in docs] for docs in results], [a for _, a, _ in questions])
    report.update(
        retrieve_ms_p50=round(1000 * float(np.percentile(times, 50)), 2),
        retrieve_ms_p95=round(1000 * float(np.percentile(times, 95)), 2),
        retrieve_batch_ms_per_query=round(batch_ms, 2),
        peak_rss_gib=peak_rss_gib(),
        **{f"top{k}": round(100 * v, 1) for k, v in top_k_accuracy(ranks, (1, 20, 100)).items()},
    )
    return report


def child(step: str, args, size: int, extra=()) -> dict:
    command = [
        sys.executable,
        __file__,
        "--step",
        step,
        "--size",
        str(size),
        "--factory",
        args.factory,
        "--search-params",
        json.dumps(args.search_params),
        "--top-n",
        str(args.top_n),
        "--workdir",
        str(Path(args.workdir) / str(size)),
        "--train-sample",
        str(args.train_sample),
        *extra,
    ]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20963,200000,1000000")
    parser.add_argument("--factory", default="IVF4096,SQ4")
    parser.add_argument("--search-params", type=json.loads, default={"nprobe": 32})
    parser.add_argument("--top-n", type=int, default=1000)
    parser.add_argument("--train-sample", type=int, default=200_000)
    parser.add_argument("--workdir", default=str(ROOT / "benchmarks" / "cache" / "growth"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cost_growth.json")
    parser.add_argument(
        "--redo", action="store_true", help="measure the sizes again even where the report already has them"
    )
    parser.add_argument("--step", choices=["build", "query"], help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--without-map", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        result = build(args) if args.step == "build" else query(args)
        print(json.dumps(result), flush=True)
        return
    if not VECTORS.is_file():
        parser.error(
            f"{VECTORS.relative_to(ROOT)} is missing: the real passages' sentence vectors come from the ANN study's "
            "cache; make it first with `python benchmarks/scale.py presets --prepare-only` (~10 min on 2 cores)"
        )
    report = json.loads(args.out.read_text()) if args.out.is_file() else {}
    report.update(factory=args.factory, search_params=args.search_params, top_n_sentences=args.top_n)
    rows = {row["size"]: row for row in report.get("rows", [])}
    for size in [int(s) for s in args.sizes.split(",")]:
        if size in rows and "query" in rows[size] and not args.redo:
            continue
        row = {"size": size, "build": child("build", args, size)}
        row["first_query_without_map"] = child("query", args, size, ["--without-map"])
        row["query"] = child("query", args, size)
        rows[size] = row
        report["rows"] = [rows[s] for s in sorted(rows)]
        args.out.write_text(json.dumps(report, indent=1))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
