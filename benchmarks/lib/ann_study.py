"""ANN and compression study for DCSR's sentence index: accuracy, latency and bytes per index type.

    python benchmarks/scale.py presets  # -> benchmarks/results/ann_study.{json,md,svg}
    python benchmarks/scale.py presets --model "DCSR-ft=runs/gpu/recipe" --settings ft

Corpus: all 20,963 SQuAD v1.1 paragraphs (103k sentence vectors); test: the fixed 1,000 dev
questions of the other benchmarks. For each model the sentence vectors are encoded once and the
sentence Documents written once to a FAISSDocumentStore (SQLite); each index setting is then
created by the store's own ``_create_new_index`` from its factory string, trained on the
vectors, filled in vector-id order and put in the store, and the real ``DCSRRetriever`` is
measured on it: ``retrieve`` p50/p95 (one query at a time, top_k=10, as a pipeline serves),
``retrieve_batch`` ms per query (batches of 32), top-1/20/100 (``retrieve_batch``, top_k=100),
serialised index bytes per passage, build and train time. The reference in the same run:
Haystack's ``EmbeddingRetriever`` over FAISS Flat with the same model (its passage vectors are the
same mean-pooled, normalised MiniLM vectors; its accuracy is read from its FAISS index directly,
since Haystack's top-100 fetch through SQLite costs ~0.8 s a question). Resumable: settings
already in the report are kept.
"""

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from haystack.document_stores import FAISSDocumentStore  # noqa: E402
from haystack.schema import Document  # noqa: E402
from squad_data import faiss_store, load_squad  # noqa: E402

from haystack_dcsr import DCSRRetriever, SentencePreprocessor  # noqa: E402
from haystack_dcsr.core.model.encoder import Tower  # noqa: E402
from haystack_dcsr.core.ranking.metrics import first_hit_ranks, top_k_accuracy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KS = (1, 20, 100)
RUN = time.strftime("%Y-%m-%d %H:%M")  # rows compared for speed must share it
# (factory string, search params, top_n_sentences)
ZERO_SHOT_SETTINGS = [
    ("Flat", {}, 3000),
    ("Flat", {}, 1000),
    ("Flat", {}, 300),
    ("SQfp16", {}, 3000),
    ("SQ8", {}, 3000),
    ("SQ8", {}, 1000),
    ("SQ4", {}, 3000),
    ("SQ4", {}, 1000),
    ("HNSW32", {"efSearch": 300}, 300),
    ("HNSW32", {"efSearch": 1000}, 1000),
    ("HNSW32", {"efSearch": 2000}, 1000),
    ("HNSW32", {"efSearch": 3000}, 3000),
    ("IVF1024,Flat", {"nprobe": 8}, 1000),
    ("IVF1024,Flat", {"nprobe": 32}, 1000),
    ("IVF1024,Flat", {"nprobe": 128}, 1000),
    ("IVF1024,Flat", {"nprobe": 32}, 3000),
    ("IVF1024,Flat", {"nprobe": 32}, 300),
    ("IVF1024,SQ8", {"nprobe": 32}, 1000),
    ("IVF1024,SQ4", {"nprobe": 32}, 1000),
    ("IVF1024,PQ48x8", {"nprobe": 32}, 1000),
    ("IVF1024,PQ96x8", {"nprobe": 32}, 1000),
    ("IVF1024,PQ96x8", {"nprobe": 64}, 3000),
    ("OPQ48_384,IVF1024,PQ48x8", {"nprobe": 32}, 1000),
    ("OPQ96_384,IVF1024,PQ96x8", {"nprobe": 32}, 1000),
    ("IVF1024,PQ48x8,Refine(SQ4)", {"nprobe": 32, "k_factor": 2}, 1000),
    ("HNSW32,SQ8", {"efSearch": 1000}, 1000),
]
FT_SETTINGS = [
    s
    for s in ZERO_SHOT_SETTINGS
    if (s[0], s[2])
    in {
        ("Flat", 3000),
        ("Flat", 1000),
        ("Flat", 300),
        ("SQ8", 1000),
        ("SQ4", 1000),
        ("HNSW32", 1000),
        ("IVF1024,Flat", 1000),
        ("IVF1024,SQ4", 1000),
        ("IVF1024,PQ96x8", 1000),
        ("OPQ96_384,IVF1024,PQ96x8", 1000),
        ("IVF1024,PQ48x8,Refine(SQ4)", 1000),
        ("HNSW32,SQ8", 1000),
    }
    and s[1].get("efSearch", 1000) == 1000
    and s[1].get("nprobe", 32) == 32
]


def towers(model: str) -> Dict[str, str]:
    """A trainer output directory (query_encoder/ + passage_encoder/) or one model for both towers."""
    directory = Path(model)
    if (directory / "query_encoder").is_dir():
        return {"query_model": str(directory / "query_encoder"), "passage_model": str(directory / "passage_encoder")}
    return {"query_model": model}


def label(factory: str, params: Dict, top_n: int) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{factory} ({extra + ', ' if extra else ''}top_n={top_n})"


class ModelIndex:
    """One model's sentence vectors (encoded once) and its SQL store of sentence Documents."""

    def __init__(self, name: str, model: str, passages: List[Document], workdir: Path):
        self.name, self.model = name, model
        self.dir = workdir / name.replace(" ", "_")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.sentences = SentencePreprocessor(progress_bar=False).process(passages)["documents"]
        self.vectors = self._vectors(passages)

    def _vectors(self, passages: List[Document]) -> np.ndarray:
        path = self.dir / "sentence_vectors.npy"
        if path.is_file():
            return np.load(path)
        retriever = DCSRRetriever(**towers(self.model), progress_bar=True)
        by_passage: Dict[str, List[str]] = {}
        for doc in self.sentences:
            by_passage.setdefault(doc.meta["dcsr"]["passage_id"], []).append(doc.content)
        start = time.perf_counter()
        vectors = retriever.passage_encoder.encode(list(by_passage.values()), batch_size=32, progress_bar=True)
        print(f"{self.name}: encoded {len(vectors)} sentences in {time.perf_counter() - start:.0f}s", flush=True)
        np.save(path, vectors)
        return vectors

    @functools.cached_property
    def store(self) -> FAISSDocumentStore:
        """The FAISS Flat store of the sentences, written (once) on first use."""
        index_path = self.dir / "flat.faiss"
        if index_path.is_file():
            return FAISSDocumentStore.load(str(index_path))
        db = self.dir / "store.db"
        db.unlink(missing_ok=True)
        store = faiss_store(db, self.vectors.shape[1])
        docs = [
            Document(content=d.content, id=d.id, meta=d.meta, embedding=v) for d, v in zip(self.sentences, self.vectors)
        ]
        start = time.perf_counter()
        store.write_documents(docs, batch_size=10_000)
        print(f"{self.name}: wrote {len(docs)} sentence rows in {time.perf_counter() - start:.0f}s", flush=True)
        store.save(str(index_path))
        return store

    def install(self, factory: str) -> Dict:
        """Build ``factory`` the way the store builds its indexes, fill it, put it in the store."""
        start = time.perf_counter()
        index = self.store._create_new_index(
            embedding_dim=self.vectors.shape[1], metric_type=faiss.METRIC_INNER_PRODUCT, index_factory=factory
        )
        if not index.is_trained:
            index.train(self.vectors)
        trained = time.perf_counter()
        index.add(self.vectors)
        done = time.perf_counter()
        self.store.faiss_indexes[self.store.index] = index
        return {
            "train_s": round(trained - start, 1),
            "build_s": round(done - start, 1),
            "index_bytes": int(faiss.serialize_index(index).size),
        }


def measure(retriever, store, questions, single: bool = True) -> Dict:
    texts = [q for q, _, _ in questions]
    answers = [a for _, a, _ in questions]
    retriever.retrieve(texts[0], document_store=store)  # the first query maps the index
    row: Dict = {}
    if single:
        times = []
        for text in texts:
            start = time.perf_counter()
            retriever.retrieve(text, top_k=10, document_store=store)
            times.append(time.perf_counter() - start)
        row.update(
            retrieve_ms_p50=round(1000 * float(np.percentile(times, 50)), 2),
            retrieve_ms_p95=round(1000 * float(np.percentile(times, 95)), 2),
        )
    start = time.perf_counter()
    for begin in range(0, len(texts), 32):
        retriever.retrieve_batch(texts[begin : begin + 32], top_k=10, document_store=store)
    row["retrieve_batch_ms_per_query"] = round(1000 * (time.perf_counter() - start) / len(texts), 2)
    return row, answers


def dcsr_accuracy(retriever, store, questions) -> Dict:
    texts, answers = [q for q, _, _ in questions], [a for _, a, _ in questions]
    results = []
    for begin in range(0, len(texts), 64):
        results.extend(retriever.retrieve_batch(texts[begin : begin + 64], top_k=100, document_store=store))
    ranks = first_hit_ranks([[d.content for d in docs] for docs in results], answers)
    return {f"top{k}": round(100 * v, 1) for k, v in top_k_accuracy(ranks, KS).items()}


def embedding_retriever_store(model: str, passages: List[Document], workdir: Path) -> FAISSDocumentStore:
    """The reference's FAISS Flat store of passage vectors (encoded once, then loaded)."""
    directory = workdir / "embedding_retriever"
    directory.mkdir(parents=True, exist_ok=True)
    index_path = directory / "flat.faiss"
    if index_path.is_file():
        return FAISSDocumentStore.load(str(index_path))
    # the passage vectors EmbeddingRetriever computes: mean-pooled, normalised MiniLM over 256 tokens
    tower = Tower(model, pooling="mean", normalize=True, max_length=256)
    vectors = tower.encode_texts([d.content for d in passages], batch_size=32, progress_bar=True, what="Passage")
    (directory / "store.db").unlink(missing_ok=True)
    store = faiss_store(directory / "store.db", vectors.shape[1])
    store.write_documents(
        [Document(content=d.content, id=d.id, meta=d.meta, embedding=v) for d, v in zip(passages, vectors)],
        batch_size=10_000,
    )
    store.save(str(index_path))
    return store


def embedding_retriever_reference(model: str, passages: List[Document], questions, workdir: Path) -> Dict:
    """Haystack's EmbeddingRetriever over FAISS Flat, same model: latency through Haystack,
    accuracy from its FAISS index, bytes of its index."""
    from haystack.nodes import EmbeddingRetriever

    store = embedding_retriever_store(model, passages, workdir)
    from haystack_dcsr.core.model.models import resolve_model_path

    retriever = EmbeddingRetriever(
        document_store=store,
        embedding_model=resolve_model_path(model),
        use_gpu=False,
        progress_bar=False,
        model_format="sentence_transformers",
    )
    row, answers = measure(retriever, store, questions)
    index = store.faiss_indexes[store.index]
    base = faiss.downcast_index(index)
    vectors = faiss.rev_swig_ptr(base.get_xb(), base.ntotal * base.d).reshape(base.ntotal, base.d)
    query_vectors = retriever.embed_queries([q for q, _, _ in questions])
    _, ids = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), 100)
    by_vector = {int(d.meta["vector_id"]): d.content for d in store.get_all_documents()}
    ranks = first_hit_ranks([[by_vector[int(i)] for i in row_ids] for row_ids in ids], answers)
    row.update({f"top{k}": round(100 * v, 1) for k, v in top_k_accuracy(ranks, KS).items()})
    row.update(index_bytes=int(faiss.serialize_index(index).size), vectors=int(index.ntotal))
    del vectors
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", action="append", default=[], metavar="NAME=DIR", help="default: 'MiniLM zero-shot=all-MiniLM-L6-v2'"
    )
    parser.add_argument("--settings", choices=["all", "ft"], default="all", help="ft: the shorter list")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / "cache" / "ann")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ann_study.json")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="SETTING",
        help="measure only these settings of the list (e.g. 'Flat (top_n=1000)'; repeatable)",
    )
    parser.add_argument("--prepare-only", action="store_true", help="encode and write the stores, measure nothing")
    parser.add_argument(
        "--remeasure",
        action="append",
        default=[],
        metavar="SETTING",
        help="measure this setting again (e.g. 'SQ4 (top_n=1000)', 'EmbeddingRetriever Flat'), "
        "so that the rows compared side by side come from one run",
    )
    args = parser.parse_args()
    settings = ZERO_SHOT_SETTINGS if args.settings == "all" else FT_SETTINGS
    unknown = sorted(set(args.only) - {label(*s) for s in settings})
    if unknown:
        parser.error(f"--only {unknown}: not in --settings {args.settings} ({', '.join(label(*s) for s in settings)})")
    models = [m.split("=", 1) for m in args.model] or [["MiniLM zero-shot", "all-MiniLM-L6-v2"]]
    passages, questions = load_squad(n_questions=args.questions, seed=0)
    report = (
        json.loads(args.out.read_text())
        if args.out.is_file()
        else {"passages": len(passages), "questions": len(questions), "rows": []}
    )
    report["rows"] = [r for r in report["rows"] if r["setting"] not in args.remeasure]
    done = {(r["model"], r["setting"]) for r in report["rows"]}

    def save():
        args.out.write_text(json.dumps(report, indent=1))

    if args.prepare_only:
        embedding_retriever_store("all-MiniLM-L6-v2", passages, args.workdir)
        for name, model in models:
            ModelIndex(name, model, passages, args.workdir)
        return
    if not args.skip_reference and ("MiniLM zero-shot", "EmbeddingRetriever Flat") not in done:
        row = embedding_retriever_reference("all-MiniLM-L6-v2", passages, questions, args.workdir)
        row.update(
            model="MiniLM zero-shot",
            setting="EmbeddingRetriever Flat",
            run=RUN,
            bytes_per_passage=round(row["index_bytes"] / len(passages)),
        )
        report["rows"].append(row)
        print(json.dumps(row), flush=True)
        save()
    for name, model in models:
        todo = [s for s in settings if (name, label(*s)) not in done and (not args.only or label(*s) in args.only)]
        if not todo:
            continue
        index = ModelIndex(name, model, passages, args.workdir)
        report.setdefault("sentence_vectors", {})[name] = int(len(index.vectors))
        for factory, params, top_n in todo:
            built = index.install(factory)
            retriever = DCSRRetriever(
                document_store=index.store,
                **towers(model),
                top_n_sentences=top_n,
                search_params=params,
                progress_bar=False,
            )
            row, _ = measure(retriever, index.store, questions)
            row.update(dcsr_accuracy(retriever, index.store, questions), **built)
            row.update(
                model=name,
                setting=label(factory, params, top_n),
                factory=factory,
                search_params=params,
                top_n_sentences=top_n,
                bytes_per_passage=round(built["index_bytes"] / len(passages)),
            )
            row["run"] = RUN
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
            save()
    save()


if __name__ == "__main__":
    main()
