"""The core's sparse BM25 breaks ties by corpus order whatever SIMD code numpy dispatches to.

Each run is a child process with numpy's CPU features on or all off (``NPY_DISABLE_CPU_FEATURES``). The
child loads ``core/indexes/sparse_bm25.py`` by its path: it needs numpy and scipy only, so the check costs no
Haystack or torch import (and runs in both environments).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

MODULE = Path(__file__).resolve().parents[2] / "haystack_dcsr" / "core" / "indexes" / "sparse_bm25.py"
TIES_SCRIPT = f"""
import importlib.util, json
spec = importlib.util.spec_from_file_location("sparse_bm25", {str(MODULE)!r})
sparse_bm25 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sparse_bm25)
ids = [str(i) for i in range(300)] + ["match"]
texts = ["filler text number %d" % i for i in range(300)] + ["dd once"]
rows, _ = sparse_bm25.SparseBM25(texts).search(["dd"], top_k=30)[0]
print(json.dumps([ids[row] for row in rows]))
"""


def test_tied_bm25_hits_are_the_same_whatever_simd_code_numpy_picks():
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    dispatched = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    runs = {}
    for disabled in ("", " ".join(dispatched)):
        env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
        out = subprocess.run([sys.executable, "-c", TIES_SCRIPT], env=env, capture_output=True, text=True, check=True)
        runs[disabled] = json.loads(out.stdout.strip().splitlines()[-1])
    assert len({tuple(ids) for ids in runs.values()}) == 1, runs
    assert runs[""] == ["match"] + [str(i) for i in range(29)]  # the match, then the ties in corpus order
