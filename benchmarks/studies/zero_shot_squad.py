"""DCSR vs Haystack's EmbeddingRetriever, zero-shot, on open SQuAD: speed and accuracy in one run.

Corpus: every SQuAD v1.1 paragraph (train + dev, 20,963). Questions: a fixed random sample of dev.
Both systems use all-MiniLM-L6-v2 as is (no training), FAISS Flat over SQLite, the same machine
and the same store settings; DCSR uses mean pooling (its marker is untrained) and HasAns.

    .venv/bin/python benchmarks/studies/zero_shot_squad.py                    # full run, ~45 min on 2 cores
    .venv/bin/python benchmarks/studies/zero_shot_squad.py --passages 2000 --questions 200   # quick look

Prints a table and writes benchmarks/results/zero_shot_squad.json.
"""

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from haystack.nodes import EmbeddingRetriever  # noqa: E402
from haystack.schema import Document  # noqa: E402
from squad_data import DATA, faiss_store, load_squad  # noqa: E402

from haystack_dcsr import DCSRRetriever, SentencePreprocessor  # noqa: E402
from haystack_dcsr.core.metrics import first_hit_ranks, top_k_accuracy  # noqa: E402
from haystack_dcsr.core.models import resolve_model_path  # noqa: E402

KS = (1, 5, 20, 100)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def measure_queries(retriever, store, questions, top_k: int, batch: int):
    texts = [q for q, _, _ in questions]
    single, results = [], []
    for text in texts:
        docs, seconds = timed(retriever.retrieve, text, top_k=top_k, document_store=store)
        single.append(seconds)
        results.append(docs)
    batched = []
    for start in range(0, len(texts), batch):
        _, seconds = timed(retriever.retrieve_batch, texts[start : start + batch], top_k=top_k, document_store=store)
        batched.append(seconds)
    ranks = first_hit_ranks([[d.content for d in docs] for docs in results], [a for _, a, _ in questions])
    ms = lambda xs, q: 1000 * float(np.percentile(xs, q))  # noqa: E731
    return {
        "retrieve_ms_median": ms(single, 50),
        "retrieve_ms_p95": ms(single, 95),
        "retrieve_batch_ms_median": ms(batched, 50),
        "retrieve_batch_ms_p95": ms(batched, 95),
        "retrieve_batch_ms_per_query": 1000 * sum(batched) / len(texts),
        "top_k": {str(k): v for k, v in top_k_accuracy(ranks, KS).items()},
    }


def index_with_embedding_retriever(passages, model, db: Path, **kwargs):
    """Haystack's sentence-transformers retriever (CPU, no bar) indexing the corpus, timed as both of its rows are."""
    store = faiss_store(db)
    retriever = EmbeddingRetriever(
        embedding_model=model,
        document_store=store,
        use_gpu=False,
        progress_bar=False,
        model_format="sentence_transformers",
        **kwargs,
    )
    _, write_s = timed(
        store.write_documents, [Document(content=d.content, id=d.id, meta=dict(d.meta)) for d in passages]
    )
    _, embed_s = timed(store.update_embeddings, retriever)
    timing = {
        "index_s": write_s + embed_s,
        "write_s": write_s,
        "embed_s": embed_s,
        "passages_per_s": len(passages) / (write_s + embed_s),
    }
    return store, retriever, timing


def index_er_batch_size_8(report, passages, model, workdir: Path) -> None:
    store, retriever, timing = index_with_embedding_retriever(
        passages, model, workdir / "embedding_bs8.db", batch_size=8
    )
    report["embedding_retriever_batch_size_8"] = timing
    print(f"EmbeddingRetriever(batch_size=8) indexed in {timing['index_s']:.0f}s", flush=True)
    del retriever, store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--passages", type=int, default=10**9, help="corpus size (default: all 20,963)")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top-n-sentences", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=32, help="queries per retrieve_batch call")
    parser.add_argument("--skip-er-batch-size-8", action="store_true", help="skip the extra EmbeddingRetriever row")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/cache/zero_shot"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/zero_shot_squad.json"))
    args = parser.parse_args()

    passages, questions = load_squad(args.data, args.passages, args.questions, args.seed)
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    model = resolve_model_path("all-MiniLM-L6-v2")
    report = {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "passages": len(passages),
        "questions": len(questions),
        "torch_threads": torch.get_num_threads(),
        "systems": {},
    }
    print(f"{len(passages)} passages, {len(questions)} questions, {torch.get_num_threads()} torch threads", flush=True)

    # Haystack EmbeddingRetriever: one vector per passage
    store, retriever, result = index_with_embedding_retriever(passages, model, args.workdir / "embedding.db")
    result["vectors"] = store.get_embedding_count()
    print(f"EmbeddingRetriever indexed in {result['index_s']:.0f}s", flush=True)
    result.update(measure_queries(retriever, store, questions, max(KS), args.batch))
    report["systems"]["EmbeddingRetriever"] = result
    print(json.dumps(result), flush=True)
    del retriever, store

    # The same, with batch_size=8: small batches are faster on CPU for any encoder (indexing only)
    if not args.skip_er_batch_size_8:
        index_er_batch_size_8(report, passages, model, args.workdir)

    # DCSR: one vector per sentence, passages encoded whole, HasAns
    store = faiss_store(args.workdir / "dcsr.db")
    retriever = DCSRRetriever(
        document_store=store,
        query_model=model,
        pooling="mean",
        top_n_sentences=args.top_n_sentences,
        use_gpu=False,
        progress_bar=False,
    )
    splitter = SentencePreprocessor(progress_bar=False)
    sentences, split_s = timed(lambda: splitter.process(passages)["documents"])
    _, write_s = timed(store.write_documents, sentences)
    _, embed_s = timed(store.update_embeddings, retriever)
    index_s = split_s + write_s + embed_s
    result = {
        "index_s": index_s,
        "split_s": split_s,
        "write_s": write_s,
        "embed_s": embed_s,
        "passages_per_s": len(passages) / index_s,
        "vectors": store.get_embedding_count(),
        "sentences_per_passage": len(sentences) / len(passages),
    }
    print(f"DCSR indexed in {index_s:.0f}s", flush=True)
    result.update(measure_queries(retriever, store, questions, max(KS), args.batch))
    report["systems"]["DCSR (zero-shot, mean pooling)"] = result
    print(json.dumps(result), flush=True)
    retriever.passage_cache_size = 0
    retriever.refresh()
    cold = {k: result[k] for k in ("index_s", "passages_per_s", "vectors")}
    cold.update(measure_queries(retriever, store, questions, max(KS), args.batch))
    report["systems"]["DCSR, passage cache off"] = cold
    print(json.dumps(cold), flush=True)

    er, dcsr = report["systems"]["EmbeddingRetriever"], report["systems"]["DCSR (zero-shot, mean pooling)"]
    report["ratios"] = {
        "indexing_speed_dcsr_over_er": dcsr["passages_per_s"] / er["passages_per_s"],
        "retrieve_latency_dcsr_over_er": dcsr["retrieve_ms_median"] / er["retrieve_ms_median"],
        "retrieve_batch_latency_dcsr_over_er": dcsr["retrieve_batch_ms_median"] / er["retrieve_batch_ms_median"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(markdown_table(report))


def markdown_table(report) -> str:
    lines = [
        "| system | passages/s (index) | retrieve ms median / p95 | retrieve_batch ms median / p95 (per batch) "
        "| top-1 | top-5 | top-20 | top-100 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["systems"].items():
        top = " | ".join(f"{100 * r['top_k'][str(k)]:.1f}" for k in KS)
        lines.append(
            f"| {name} | {r['passages_per_s']:.1f} | {r['retrieve_ms_median']:.1f} / {r['retrieve_ms_p95']:.1f} "
            f"| {r['retrieve_batch_ms_median']:.0f} / {r['retrieve_batch_ms_p95']:.0f} | {top} |"
        )
    ratios = report["ratios"]
    if "embedding_retriever_batch_size_8" in report:
        lines.append(
            f"\nEmbeddingRetriever(batch_size=8) indexing: "
            f"{report['embedding_retriever_batch_size_8']['passages_per_s']:.1f} passages/s"
        )
    lines.append(
        f"\nDCSR / EmbeddingRetriever: indexing speed {ratios['indexing_speed_dcsr_over_er']:.2f}x, "
        f"retrieve latency {ratios['retrieve_latency_dcsr_over_er']:.2f}x, "
        f"retrieve_batch latency {ratios['retrieve_batch_latency_dcsr_over_er']:.2f}x"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
