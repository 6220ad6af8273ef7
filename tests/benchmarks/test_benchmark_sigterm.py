"""A benchmark stopped with ``kill`` must not leave its scratch store behind in the cache."""

import os
import signal
import tempfile
import time
from pathlib import Path

from benchmark_scripts import BENCHMARKS
from forking import exit_code, forked


def test_sigterm_removes_the_scratch_directory(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import squad_open  # imported here, so the forked child starts with it

    def index_into_scratch(out):
        squad_open.exit_on_sigterm()
        with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
            print(scratch, file=out)
            time.sleep(120)

    pid, out = forked(index_into_scratch, tmp_path)
    scratch = Path(out.readline().strip())
    assert scratch.is_dir() and scratch.parent == tmp_path
    time.sleep(0.2)
    os.kill(pid, signal.SIGTERM)
    assert exit_code(pid) == 128 + signal.SIGTERM
    assert not scratch.exists()
    assert list(tmp_path.iterdir()) == []
