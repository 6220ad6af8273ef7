"""benchmarks/gpu_detached.sh: a pair started in one call survives it and a later call collects it.

The device tool empties $OUT before every call, so the pair writes elsewhere; this drives the script with
a stand-in for gpu_side_by_side.sh that writes a result after a pause, as the real pair does after training.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "gpu_detached.sh"

STAND_IN = """#!/usr/bin/env bash
for spec in $RUNS; do name=${spec%%:*}; mkdir -p "$OUT/$name"; echo "training $name" > "$OUT/$name.console.log"; done
sleep 2
for spec in $RUNS; do name=${spec%%:*}; echo '{"runs": 1}' > "$OUT/$name/gpu_train.json"; done
echo "side by side done"
"""


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    shutil.copy(SCRIPT, tmp_path / "benchmarks" / "gpu_detached.sh")
    (tmp_path / "benchmarks" / "gpu_side_by_side.sh").write_text(STAND_IN)
    return tmp_path


def call(repo, out, **env):
    """One device call: a fresh, empty $OUT each time."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    variables = {**os.environ, "OUT": str(out), "DETACHED_DIR": str(repo / "detached"), **env}
    return subprocess.run(
        ["bash", "benchmarks/gpu_detached.sh"], cwd=repo, env=variables, capture_output=True, text=True, timeout=60
    )


def test_the_pair_outlives_the_first_call_and_the_next_collects_it(repo, tmp_path):
    out = tmp_path / "out"
    first = call(repo, out, RUNS="a:epochs=1 b:epochs=1", WAIT="0")
    assert first.returncode == 0 and "still running: call again" in first.stdout
    assert not (out / "a" / "gpu_train.json").exists()  # not written yet: the call returned first
    again = call(repo, out, RUNS="a:epochs=1", WAIT="0")  # a second start on the same machine is refused
    assert again.returncode == 2 and "already started" in again.stdout
    last = call(repo, out, WAIT="30")
    assert last.returncode == 0 and "finished (status 0)" in last.stdout
    assert "side by side done" in last.stdout
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "a.console.log",
        "a/gpu_train.json",
        "b.console.log",
        "b/gpu_train.json",
    ]


def test_a_fresh_machine_says_nothing_was_started(repo, tmp_path):
    result = call(repo, tmp_path / "out", WAIT="1")
    assert result.returncode == 2 and "nothing was started on this machine" in result.stdout
