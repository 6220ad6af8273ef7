"""A benchmark stopped with ``kill`` must not leave its scratch store behind in the cache."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from benchmark_scripts import BENCHMARKS

SCRIPT = textwrap.dedent(
    """
    import sys, tempfile, time
    sys.path.insert(0, sys.argv[2])
    import squad_open
    squad_open.exit_on_sigterm()
    with tempfile.TemporaryDirectory(dir=sys.argv[1]) as scratch:
        print(scratch, flush=True)
        time.sleep(120)
    """
)


def test_sigterm_removes_the_scratch_directory(tmp_path):
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path), str(BENCHMARKS)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"},
    )
    scratch = Path(child.stdout.readline().strip())
    assert scratch.is_dir() and scratch.parent == tmp_path
    time.sleep(0.2)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 128 + signal.SIGTERM
    assert not scratch.exists()
    assert list(tmp_path.iterdir()) == []
