"""Peak RAM of building DCSR's vector map from SQL: the one scan over every sentence row that
``save_index_map`` (a build) and a load without a saved map do.

    .venv/bin/python benchmarks/scale.py memory benchmarks/cache/growth/1000000/index.faiss
    # a saved cost-growth store (its saved map hidden meanwhile) -> benchmarks/results/map_memory.json
    .venv/bin/python benchmarks/scale.py memory --synthetic 100000 --out /tmp/map_memory_100k.json
    # a store of 100,000 synthetic passages (~500k sentence rows, written once under benchmarks/cache/)

The package is imported from the Python path first, so ``PYTHONPATH=<another checkout>`` measures that
checkout's scan on the same store (how a before/after pair is taken in one sitting). The report gives
the process's RSS before the scan and its peak: their difference is what the scan costs.
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # after PYTHONPATH: another checkout given there is the one measured
sys.path.append(str(ROOT / "benchmarks" / "lib"))


def rss_gib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 2**20, 2)
    return float("nan")


def synthetic_store(passages: int) -> Path:
    """A Flat FAISS store on SQLite of ``passages`` synthetic passages (3-7 sentences each, random
    unit vectors), laid out as ``write_documents`` writes it, saved with its map; built once."""
    workdir = ROOT / "benchmarks" / "cache" / "map_memory" / str(passages)
    index = workdir / "index.faiss"
    if index.is_file():
        return index
    import numpy as np
    from cost_growth import distractors, write_straight  # puts this checkout first on the path: build only
    from haystack.document_stores import FAISSDocumentStore

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "store.db").unlink(missing_ok=True)
    store = FAISSDocumentStore(
        sql_url=f"sqlite:///{workdir / 'store.db'}",
        embedding_dim=384,
        faiss_index_factory_str="Flat",
        similarity="dot_product",
        progress_bar=False,
    )
    fitted = np.random.default_rng(0).standard_normal((2000, 384)).astype(np.float32)
    for docs, vectors in distractors(passages, np.array([3, 4, 5, 6, 7]), fitted):
        write_straight(workdir / "store.db", store, docs, vectors)
    store.save(str(index))
    retriever(store).save_index_map(index)
    return index


def retriever(store):
    from haystack_dcsr import DCSRRetriever

    return DCSRRetriever(document_store=store, query_model="all-MiniLM-L6-v2", progress_bar=False)


def main() -> None:
    from haystack.document_stores import FAISSDocumentStore

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path, nargs="?", help="a saved store's index.faiss (e.g. a cost-growth one)")
    parser.add_argument("--synthetic", type=int, metavar="PASSAGES", help="measure on a synthetic store this size")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "map_memory.json")
    args = parser.parse_args()
    if (args.index is None) == (args.synthetic is None):
        parser.error("give a saved store's index.faiss or --synthetic PASSAGES (one of them)")
    index = args.index or synthetic_store(args.synthetic)
    saved = Path(f"{index}.dcsr-map.npz")
    hidden = Path(f"{saved}.hidden")
    saved.rename(hidden)
    try:
        store = FAISSDocumentStore.load(str(index))
        reader = retriever(store)
        before = rss_gib()
        start = time.perf_counter()
        reader.save_index_map(index)
        took = time.perf_counter() - start
    finally:
        saved.unlink(missing_ok=True)
        hidden.rename(saved)
    import haystack_dcsr

    report = {
        "command": " ".join(sys.argv),
        "package": str(Path(haystack_dcsr.__file__).parent),
        "index": str(index),
        "vectors": int(store.get_embedding_count()),
        "map_from_sql_s": round(took, 1),
        "rss_before_scan_gib": before,
        "process_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
