"""pytest-xdist workers share the machine's cores instead of each taking all of them.

torch computes with one OpenMP thread per core in every process: two workers on two cores run four
threads that spin against each other, and the small tensor ops of these tests slow down (the engine
tests' training fixture beside a busy worker: 24.8 s with two threads, 13.4 s with one; see
docs/dependencies.md). Each worker, and every process it starts (notebook kernels, servers, wheels
under test), gets cores // workers threads. An OMP_NUM_THREADS set by the caller is kept.
"""

import os


def share_cores_between_workers() -> None:
    """Call before torch is imported (OpenMP reads the variable once)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
