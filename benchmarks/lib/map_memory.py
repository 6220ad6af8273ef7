"""Peak RAM of building DCSR's vector map from SQL on a saved cost-growth store (the saved map hidden).

    .venv/bin/python benchmarks/scale.py memory benchmarks/cache/growth/1000000/index.faiss
    # -> benchmarks/results/map_memory.json

This is the one SQL scan over every sentence row that ``save_index_map`` (the build) and a load without
a saved map do; it set both peaks in ``cost_growth.py``'s 1M run before ``sql_rows.vector_rows`` streamed.
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from haystack.document_stores import FAISSDocumentStore

    from haystack_dcsr import DCSRRetriever

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path, help="a saved cost-growth store's index.faiss")
    index = parser.parse_args().index
    saved = Path(f"{index}.dcsr-map.npz")
    hidden = Path(f"{saved}.hidden")
    saved.rename(hidden)
    try:
        store = FAISSDocumentStore.load(str(index))
        retriever = DCSRRetriever(document_store=store, query_model="all-MiniLM-L6-v2", progress_bar=False)
        start = time.perf_counter()
        retriever.save_index_map(index)
        took = time.perf_counter() - start
    finally:
        saved.unlink(missing_ok=True)
        hidden.rename(saved)
    report = {
        "index": str(index),
        "vectors": int(store.get_embedding_count()),
        "map_from_sql_s": round(took, 1),
        "process_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    (ROOT / "benchmarks" / "results" / "map_memory.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
