"""``trainer/train_gpus.sh``, the GPU launch script, run for real with ``dcsr-train`` and ``torchrun`` replaced by
recorders on PATH: it prepares the data once (convert, then mine), starts one process per GPU with the recipe and
the user's settings, and refuses to start without GPUs or data, saying why."""

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "trainer" / "train_gpus.sh"


def recorders(folder: Path, log: Path) -> dict:
    """``dcsr-train`` (creating the file it would write) and ``torchrun`` that append their argv to ``log``."""
    folder.mkdir()
    for name, body in (
        ("dcsr-train", 'echo "dcsr-train $*" >> "$LOG"; [ "$1" = mine-bm25 ] && echo "{}" > "$4"; true'),
        ("torchrun", 'echo "torchrun $*" >> "$LOG"'),
    ):
        path = folder / name
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}", "LOG": str(log)}


def run(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_launch_script_prepares_data_once_then_starts_one_process_per_gpu(tmp_path):
    log = tmp_path / "calls.log"
    env = recorders(tmp_path / "bin", log)
    squad = tmp_path / "squad"
    squad.mkdir()
    (squad / "train-v1.1.json.gz").write_bytes(b"")
    env.update(SQUAD=str(squad), GPUS="4")
    done = run(env, "squad_dcsr.yaml", "--set", "epochs=2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert (
        calls[0] == f"dcsr-train convert-squad {squad}/train-v1.1.json.gz data/train.jsonl --corpus data/corpus.jsonl"
    )
    assert calls[1] == "dcsr-train mine-bm25 data/train.jsonl data/corpus.jsonl data/train_bm25.jsonl"
    assert calls[2] == (
        "torchrun --standalone --nproc_per_node 4 -m haystack_dcsr.training train --config squad_dcsr.yaml "
        "--set train_file=data/train_bm25.jsonl --set output_dir=runs/squad_dcsr --set epochs=2"
    )
    log.unlink()
    assert run(env, cwd=tmp_path).returncode == 0  # the mined data is there: straight to training
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["torchrun"]


def test_the_launch_script_refuses_without_gpus_or_data(tmp_path):
    env = recorders(tmp_path / "bin", tmp_path / "calls.log")
    no_gpu = run({**env, "GPUS": "0"}, cwd=tmp_path)
    assert no_gpu.returncode == 2 and "no CUDA device found" in no_gpu.stderr
    no_data = run({**env, "GPUS": "1"}, cwd=tmp_path)
    assert no_data.returncode != 0 and "set SQUAD" in no_data.stderr
    assert not (tmp_path / "calls.log").exists()  # nothing was started
