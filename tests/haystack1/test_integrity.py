"""Files that rot are refused by name: a checkpoint, a model directory's tower weights, ``dcsr_model.json`` and a
saved FAISS index each carry what detects a truncated or altered file (SHA-256 checksums, a schema), and the error
names the file (and the field)."""

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch

from haystack_dcsr.core.model.dcsr_model import DCSRModel, DCSRSettings
from haystack_dcsr.core.storage.checksums import CHECKSUM_FILE, DamagedFileError
from haystack_dcsr.training.checkpoints import CheckpointError, Checkpoints
from haystack_dcsr.training.distributed import Distributed


def flip(path: Path, count: int, at: float = 0.6) -> None:
    """Invert ``count`` bytes in the middle of the file's data (past any header)."""
    data = bytearray(path.read_bytes())
    start = int(len(data) * at)
    data[start : start + count] = bytes(b ^ 0xFF for b in data[start : start + count])
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


@pytest.fixture
def checkpoints(tmp_path):
    saved = Checkpoints(tmp_path / "run", keep=2, dist=Distributed("cpu"))
    weights = torch.arange(200_000, dtype=torch.float32)
    saved.save(10, lambda: {"weights": weights, "step": 10})
    return saved, weights


def test_a_checkpoint_resumes_when_whole(checkpoints):
    saved, weights = checkpoints
    restored = {}
    saved.load("cpu", restored.update)
    assert restored["step"] == 10 and torch.equal(restored["weights"], weights)
    assert (saved.all()[-1] / CHECKSUM_FILE).read_text().count("  ") == 2  # state.pt and rng-0.pt


@pytest.mark.parametrize("damage", [lambda p: flip(p, 256), truncate], ids=["256-bytes-flipped", "truncated"])
def test_a_damaged_checkpoint_is_refused_naming_the_file(checkpoints, damage):
    """256 flipped bytes inside a tensor load as other numbers under torch.load alone; the checksum refuses them."""
    saved, _ = checkpoints
    state = saved.all()[-1] / "state.pt"
    damage(state)
    with pytest.raises(CheckpointError, match=rf"{state}: damaged: its SHA-256 differs"):
        saved.load("cpu", lambda state: None)


@pytest.fixture
def model_dir(tmp_path, tiny_bert):
    DCSRModel.from_pretrained(tiny_bert).save_pretrained(tmp_path / "model")
    return tmp_path / "model"


@pytest.mark.parametrize("damage", [lambda p: flip(p, 4096), truncate], ids=["4KB-flipped", "truncated"])
def test_a_damaged_tower_is_refused_naming_the_tower_file(model_dir, damage):
    weights = model_dir / "query_encoder" / "model.safetensors"
    damage(weights)
    with pytest.raises(DamagedFileError, match=rf"{weights}: damaged"):
        DCSRModel.from_pretrained(str(model_dir)).query_tower
    (model_dir / CHECKSUM_FILE).unlink()  # a directory saved before checksums: the load error still names it
    if damage is truncate:
        with pytest.raises(OSError, match=rf"{weights}: the tower's weights cannot be read"):
            DCSRModel.from_pretrained(str(model_dir)).query_tower


@pytest.mark.parametrize("field", ["pooling", "normalize", "temperature", "level", "max_query_length", "language"])
def test_a_manifest_missing_a_setting_is_refused_naming_it(model_dir, field):
    manifest = model_dir / "dcsr_model.json"
    state = json.loads(manifest.read_text())
    del state[field]
    manifest.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=rf"{manifest}: missing '{field}'"):
        DCSRModel.from_pretrained(str(model_dir))


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"level": "sentence", "pool', "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "expected a JSON object of settings, got a list"),
        (None, "'normalize' must be true or false, got 'yes'"),
    ],
)
def test_a_damaged_manifest_is_refused_naming_the_file_and_the_problem(model_dir, text, message):
    manifest = model_dir / "dcsr_model.json"
    if text is None:
        state = json.loads(manifest.read_text())
        text = json.dumps({**state, "normalize": "yes"})
    manifest.write_text(text)
    with pytest.raises(ValueError, match=rf"{manifest}: .*{message}" if text else rf"{manifest}: {message}"):
        DCSRModel.from_pretrained(str(model_dir))


def test_the_saved_manifest_holds_every_required_setting(model_dir):
    from haystack_dcsr.core.model.model_settings import REQUIRED_SETTINGS

    state = json.loads((model_dir / "dcsr_model.json").read_text())
    assert set(REQUIRED_SETTINGS) <= set(state)
    assert set(REQUIRED_SETTINGS) | {"format_version"} == {f.name for f in dataclasses.fields(DCSRSettings)}


@pytest.mark.parametrize("limit_at", [0.1, 0.9], ids=["rng-file", "state-file"])
def test_a_full_disk_while_writing_a_checkpoint_leaves_none_under_its_name_and_says_so(checkpoints, tmp_path, limit_at):
    """A file-size limit (EFBIG, as a full disk gives ENOSPC) in a child writing the next checkpoint: the child
    reports the disk's error naming the file (not torch's "enforce fail ... unexpected pos"), nothing is left
    under ``checkpoint-0000020`` or as a partial folder, and the run resumes from the checkpoint before."""
    import resource
    import signal

    from forking import exit_code, forked

    saved, weights = checkpoints
    size = (saved.all()[-1] / "state.pt").stat().st_size
    limit = 600_000 if limit_at > 0.5 else 1_000  # past the RNG files, inside the state; or inside the first file
    assert limit < size

    def save_on_a_full_disk(out):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            saved.save(20, lambda: {"weights": weights * 2, "step": 20})
        except OSError as error:
            print("FAILED", type(error).__name__, error, file=out)

    pid, out = forked(save_on_a_full_disk, tmp_path)
    text = out.read()
    assert exit_code(pid) == 0
    assert "FAILED OSError" in text and "could not write the checkpoint file" in text and "File too large" in text
    assert "enforce fail" not in text, text
    names = sorted(p.name for p in saved.output.iterdir() if p.name.startswith(("checkpoint", ".checkpoint")))
    assert names == ["checkpoint-0000010"], names
    restored = {}
    assert saved.load("cpu", restored.update).name == "checkpoint-0000010" and restored["step"] == 10
