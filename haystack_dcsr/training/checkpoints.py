"""A run's resumable checkpoints: ``checkpoint-<step>/`` under its output directory, written atomically.

Each holds the weights, optimiser, scheduler and progress (``state.pt``, written by the main rank) and
every rank's random state (``rng-<rank>.pt``), so a resumed run continues exactly where it stopped:
the same batches, dropout masks and loss, and their SHA-256 checksums (``checksums.sha256``). A checkpoint
is refused, by name, when it is damaged (truncated, or bytes altered inside a tensor, which ``torch.load``
alone would read as other numbers) or when the run is resumed with settings that change what it computes.
"""

import io
import logging
import os
import pickle
import random
import shutil
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np
import torch
import yaml

from haystack_dcsr.core.storage.atomic_files import fsync_folder
from haystack_dcsr.core.storage.checksums import DamagedFileError, verify_checksums, write_checksums
from haystack_dcsr.training.distributed import Distributed

logger = logging.getLogger(__name__)

# settings a resumed run may change (logged): its length, its validation, where and how often it writes;
# anything else (data, model, recipe, batch, seed, learning rate) changes what it computes and is refused
RESUME_MAY_CHANGE = (
    "max_steps",
    "epochs",
    "output_dir",
    "device",
    "checkpoint_every",
    "keep_checkpoints",
    "tensorboard",
    "log_every",
    "validate_every",
    "dev_limit",
    "dev_batch_size",
)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed; the message names it and what to do."""


def _numbered(output: Path) -> List[Path]:
    """The complete ``checkpoint-<step>/`` directories in ``output``, oldest first (``state.pt`` is written last)."""
    return [path.parent for path in sorted(Path(output).glob("checkpoint-*/state.pt"))]


def newest_step(output: Path) -> int:
    """The step of the newest complete checkpoint of the run in ``output`` (0: none), e.g. for an ETA."""
    found = _numbered(output)
    return int(found[-1].name.rsplit("-", 1)[1]) if found else 0


class Checkpoints:
    """The checkpoints of the run in ``output``: the newest ``keep`` are kept."""

    def __init__(self, output: Path, keep: int, dist: Distributed):
        self.output, self.keep, self.dist = Path(output), keep, dist

    def all(self) -> List[Path]:
        """Complete checkpoints, oldest first (``checkpoint/`` of runs before retention counts as oldest)."""
        legacy = self.output / "checkpoint" / "state.pt"
        return ([legacy.parent] if legacy.is_file() else []) + _numbered(self.output)

    def save(self, step: int, state: Callable[[], Dict]) -> Path:
        """``checkpoint-<step>/`` with ``state()`` (read on the main rank only) and every rank's RNG state;
        written into ``.checkpoint-<step>.partial/`` and renamed whole, so a failure (a full disk, a kill)
        never leaves a checkpoint under its final name; then all but the newest ``keep`` go. A full disk is
        raised as the disk's own ``OSError`` naming the file, not as torch's serialiser error."""
        directory = self.output / f"checkpoint-{step:07d}"
        partial = self.output / f".{directory.name}.partial"
        if self.dist.main:
            shutil.rmtree(partial, ignore_errors=True)  # left by a run killed while writing it
            partial.mkdir(parents=True)
        self.dist.barrier()
        try:
            save_file(rng_state(), partial / f"rng-{self.dist.rank}.pt")
            self.dist.barrier()
            if self.dist.main:
                save_file(state(), partial / "state.pt")
                rng_files = [path.name for path in partial.glob("rng-*.pt")]
                write_checksums(partial, [*rng_files, "state.pt"])
                if directory.exists():  # the same step written again (a resume that rewound to it)
                    shutil.rmtree(directory)
                os.replace(partial, directory)
                fsync_folder(self.output)
                for old in self.all()[: -self.keep]:
                    shutil.rmtree(old)
        except BaseException:
            if self.dist.main:
                shutil.rmtree(partial, ignore_errors=True)
            raise
        self.dist.barrier()
        return directory

    def load(self, device, restore: Callable[[Dict], None]) -> Path:
        """Hand the newest checkpoint's state to ``restore`` and set this rank's RNG state from it."""
        directory = self.all()[-1]
        state_file = directory / "state.pt"
        try:
            verify_checksums(directory)
        except DamagedFileError as error:
            raise CheckpointError(
                f"Checkpoint {directory} cannot be resumed: {error} Delete that directory to resume from the one "
                "before it, or start over with --no-resume (Trainer.train(resume=False))."
            ) from error
        try:
            restore(torch.load(state_file, map_location=device, weights_only=True))
            rng_file = directory / f"rng-{self.dist.rank}.pt"
            if rng_file.is_file():
                set_rng_state(torch.load(rng_file, weights_only=True))
        except (KeyError, TypeError, EOFError, RuntimeError, ValueError, OSError, pickle.UnpicklingError) as error:
            raise CheckpointError(
                f"Checkpoint {state_file} cannot be resumed ({type(error).__name__}: {error}). It is truncated, "
                "corrupted or from another model: delete that directory, or start over with --no-resume "
                "(Trainer.train(resume=False))."
            ) from error
        return directory

    def check_same_run(self, config_yaml: str) -> None:
        """Refuse to resume with settings that change what the run computes (a resumed run must
        continue the one its checkpoint belongs to); settings of length, validation and output are
        logged as changed. The run's ``config.yaml`` is kept as it was."""
        saved_file = self.output / "config.yaml"
        if not saved_file.is_file():
            return
        saved = yaml.safe_load(saved_file.read_text()) or {}
        current = yaml.safe_load(config_yaml)
        changed = {
            name: f"{name}: {saved[name]!r} -> {value!r}"
            for name, value in current.items()
            if name in saved and saved[name] != value
        }
        refused = [text for name, text in changed.items() if name not in RESUME_MAY_CHANGE]
        if refused:
            raise CheckpointError(
                f"Cannot resume {self.output}: its run was started with other settings ({'; '.join(refused)}). "
                f"Resume with the settings of {saved_file}, or start a new run in another output_dir (or start "
                "over with --no-resume)."
            )
        if changed:
            logger.warning("Resuming %s with changed settings: %s", self.output, "; ".join(changed.values()))

    @staticmethod
    def rewind_log(log: Path, size: Optional[int]) -> None:
        """Cut the run's log back to what it held at the checkpoint: the resumed run logs the steps after it
        again (identically: the resume is exact), and each step should appear once for plots and readers."""
        if size is not None and log.is_file() and log.stat().st_size > size:
            with log.open("r+b") as handle:
                handle.truncate(size)


class _RecordingFile(io.FileIO):
    """A file that keeps the ``OSError`` of a failed write, which torch's serialiser replaces by its own."""

    error: Optional[OSError] = None

    def write(self, data):
        try:
            return super().write(data)
        except OSError as error:
            self.error = error
            raise


def save_file(obj, path: Path) -> None:
    """``torch.save(obj, path)``, flushed to disk; a write that fails (a full disk, a file-size limit) raises the
    disk's own ``OSError`` naming ``path``: torch's serialiser reports it only as "enforce fail ... unexpected pos"."""
    out = _RecordingFile(path, "wb")
    try:
        with out:
            torch.save(obj, out)
            out.flush()
            os.fsync(out.fileno())
    except RuntimeError as error:
        if out.error is None:
            raise
        raise OSError(out.error.errno, f"could not write the checkpoint file {path}: {out.error.strerror}") from error


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> Dict:
    """Plain tensors and lists only, so checkpoints load with ``torch.load(weights_only=True)``."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    state = {
        "python": list(random.getstate()),
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
