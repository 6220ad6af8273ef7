"""How DCSR's index and its cost grow with the corpus: ANN latency and recall, cost growth, map memory, and the
tables of ``docs/benchmarks/scale.md``.

    python benchmarks/scale.py --help
    python benchmarks/scale.py ann --help
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from subcommands import dispatch  # noqa: E402

COMMANDS = {
    "presets": (
        "ann_study.py",
        "every FAISS index type over the same vectors (the study behind INDEX_PRESETS); --prepare-only caches them",
    ),
    "ann": ("ann_latency.py", "query latency and top-k of the index presets (exact, HNSW, IVF) on SQuAD"),
    "growth": ("cost_growth.py", "index build time, size and query latency as the corpus grows"),
    "memory": ("map_memory.py", "memory of the vector-id -> sentence map at a given corpus size"),
    "engines": (
        "engines.py",
        "FAISS (exact, million), Milvus (flat, hnsw), pgvector (both ranking paths): same passages and vectors",
    ),
    "milvus-capacity": ("milvus_capacity.py", "how far one Milvus server goes towards 1M passages on this machine"),
    "milvus-latency": ("milvus_latency.py", "a Milvus search and read at Strong and Bounded consistency"),
    "report": ("scale_report.py", "the scale tables and plots of docs/benchmarks/scale.md from saved results"),
}

if __name__ == "__main__":
    dispatch("scale.py", __doc__.split("\n\n")[0], COMMANDS)
