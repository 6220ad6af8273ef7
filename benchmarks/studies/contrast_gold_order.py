"""The contrast set's pair metrics for the systems whose indexes are on disk: BM25 (built here in
seconds) and zero-shot DCSR (the ANN study's saved FAISS Flat store of all 20,963 paragraphs).

Adds ``own_gold_first`` (for pairs whose gold passages differ: q' ranks its own gold above q's) to
what the final table reports, and re-computes MEQ hit@20 as a check that the systems are the same
as the table's.

    python benchmarks/studies/contrast_gold_order.py    # -> benchmarks/results/contrast_gold_order.json
"""

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from evaluation import DEPTH, load_contrast_set, pair_report  # noqa: E402
from haystack.document_stores import FAISSDocumentStore  # noqa: E402
from haystack.nodes import BM25Retriever  # noqa: E402
from squad_data import load_squad  # noqa: E402

from haystack_dcsr import DCSRRetriever, SparseBM25DocumentStore  # noqa: E402


def ranked(retriever, questions):
    results = retriever.retrieve_batch(questions, top_k=DEPTH)
    return {q: [(d.id, float(d.score)) for d in docs] for q, docs in zip(questions, results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contrast-set", type=Path, default=Path("data/meq_dev"))
    parser.add_argument("--dcsr-store", type=Path, default=ROOT / "benchmarks/cache/ann/MiniLM_zero-shot/flat.faiss")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/contrast_gold_order.json")
    args = parser.parse_args()
    pairs, _ = load_contrast_set(args.contrast_set)
    passages, _ = load_squad(n_questions=0)
    texts = {d.id: d.content for d in passages}
    questions = list(dict.fromkeys(q for p in pairs for q in (p["question"], p["meq"])))
    report = {"command": "python " + " ".join(sys.argv), "pairs": len(pairs), "systems": {}}

    sparse = SparseBM25DocumentStore(progress_bar=False)
    sparse.write_documents(passages)
    systems = {"BM25": BM25Retriever(document_store=sparse, scale_score=False)}
    if args.dcsr_store.is_file():
        store = FAISSDocumentStore.load(str(args.dcsr_store))
        systems["DCSR zero-shot"] = DCSRRetriever(document_store=store, pooling="mean", use_gpu=False)
    for name, retriever in systems.items():
        result = pair_report(ranked(retriever, questions), pairs, texts)
        report["systems"][name] = {
            "own_gold_first": result["own_gold_first"],
            "hit@20 q / q' / both": [round(100 * result["hits"][r]["20"], 1) for r in ("q", "meq", "both")],
            "top-20 overlap": round(100 * result["overlap"]["20"], 1),
        }
        print(name, json.dumps(report["systems"][name]), flush=True)
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
