"""Query latency while the same process indexes, on FAISS + SQLite.

A FAISS Flat store of --passages SQuAD paragraphs (all-MiniLM-L6-v2, zero-shot),
then --readers threads query for --seconds alone, then for --seconds while one writer thread loops
"write --batch new passages, update_embeddings(update_existing_embeddings=False), delete them".
Prints p50/p95 query latency and queries answered in both phases, and the writer's rounds. Every
answer is also checked to hold only passages the store had at that moment (no error, no crash).

    python benchmarks/serve_while_indexing.py --passages 2000 --seconds 30
"""

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def measure(sql_url, passages, extra, questions, args):
    from haystack.document_stores import FAISSDocumentStore

    from haystack_dcsr import DCSRRetriever, SentencePreprocessor

    split = SentencePreprocessor(progress_bar=False)
    store = FAISSDocumentStore(sql_url=sql_url, embedding_dim=384, progress_bar=False)
    retriever = DCSRRetriever(document_store=store, progress_bar=False, top_n_sentences=1000, top_k=5)
    started = time.perf_counter()
    store.write_documents(split.process(passages)["documents"])
    store.update_embeddings(retriever)
    build_s = time.perf_counter() - started
    extra_ids = {doc.id for doc in extra}

    def run_phase(with_writer):
        stop, latencies, problems, rounds = threading.Event(), [], [], [0]

        def reader(offset):
            n = offset
            while not stop.is_set():
                query = questions[n % len(questions)]
                n += args.readers
                began = time.perf_counter()
                try:
                    docs = retriever.retrieve(query)
                except Exception as error:  # counted, never expected
                    problems.append(f"{type(error).__name__}: {error}")
                    continue
                latencies.append(time.perf_counter() - began)
                if not with_writer and any(doc.id in extra_ids for doc in docs):
                    problems.append("a passage that was never written")

        def writer():
            while not stop.is_set():
                store.write_documents(split.process(extra)["documents"])
                store.update_embeddings(retriever, update_existing_embeddings=False)
                retriever.delete_passages([doc.id for doc in extra])
                rounds[0] += 1

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(args.readers)]
        if with_writer:
            threads.append(threading.Thread(target=writer))
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        stop.set()
        for thread in threads:
            thread.join()
        return {
            "queries": len(latencies),
            "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
            "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
            "errors": len(problems),
            "writer_rounds": rounds[0],
        }

    alone = run_phase(False)
    writing = run_phase(True)
    count_ok = store.get_document_count() == store.get_embedding_count()
    return {"build_s": round(build_s, 1), "alone": alone, "while_writing": writing, "counts_agree": count_ok}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=2000, help="SQuAD paragraphs indexed before measuring")
    parser.add_argument("--batch", type=int, default=100, help="passages the writer adds and deletes per round")
    parser.add_argument("--readers", type=int, default=2, help="query threads")
    parser.add_argument("--seconds", type=float, default=30, help="length of each phase")
    parser.add_argument("--out", type=Path, help="write the JSON result here too")
    args = parser.parse_args(argv)

    from squad_data import load_squad

    corpus, questions = load_squad(n_passages=args.passages + args.batch, n_questions=200)
    passages, extra = corpus[: args.passages], [doc for doc in corpus[args.passages :]]
    for doc in extra:
        doc.id = f"extra-{doc.id}"
    texts = [question for question, _, _ in questions]
    result = {"command": " ".join(["python benchmarks/serve_while_indexing.py", *(argv or sys.argv[1:])])}
    with tempfile.TemporaryDirectory() as folder:
        result["sqlite"] = measure(f"sqlite:///{folder}/bench.db", passages, extra, texts, args)
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
