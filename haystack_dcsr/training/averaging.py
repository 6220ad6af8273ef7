"""Average the weights of several checkpoints of one model: a uniform "model soup" of stage ends.

Why: the cross-encoder of the README is trained in stages, each with a fresh warm-up and decay, which
makes its run a cyclic schedule; stochastic weight averaging (Izmailov et al., 2018) averages the ends
of such cycles and often lands on a flatter, better point at no training cost. Every ``*.safetensors``
file is averaged with the files at the same relative path in the other directories, so a Hugging Face
directory (``runs/cross_encoder/last``) and a DCSR model directory (``query_encoder/``,
``passage_encoder/``) both work; every other file (config, tokenizer, model card) is the first
directory's. Checkpoints that are not of one architecture raise ``CheckpointMismatch`` before anything
is written.
"""

import shutil
from pathlib import Path
from typing import Dict, List, Sequence

import torch
from safetensors.torch import load_file, save_file


class CheckpointMismatch(ValueError):
    """The checkpoints to average do not share files, tensor names, shapes or dtypes."""


def weight_files(directory: Path) -> List[Path]:
    """The ``*.safetensors`` files under ``directory``, relative to it, sorted."""
    return sorted(p.relative_to(directory) for p in directory.rglob("*.safetensors"))


def _check_same(name: Path, first: Dict[str, torch.Tensor], other: Dict[str, torch.Tensor], paths: Sequence[Path]):
    """``other`` (read from ``paths[1]``) has ``first``'s (``paths[0]``) tensor names, shapes and dtypes."""
    if set(other) != set(first):
        missing = sorted(set(first) ^ set(other))[:3]
        raise CheckpointMismatch(f"{paths[1] / name}: tensor names differ from {paths[0] / name} (e.g. {missing})")
    for key, value in first.items():
        if other[key].shape != value.shape or other[key].dtype != value.dtype:
            raise CheckpointMismatch(
                f"{paths[1] / name}: {key} differs from {paths[0] / name} "
                f"({tuple(other[key].shape)} {other[key].dtype} vs {tuple(value.shape)} {value.dtype})"
            )


def _average_file(name: Path, sources: Sequence[Path]) -> Dict[str, torch.Tensor]:
    """One weight file averaged over ``sources`` as a running float32 sum, so memory stays at a few copies of
    the file however many checkpoints there are; integer buffers (e.g. position ids) must agree."""
    first = load_file(str(sources[0] / name))
    totals = {k: v.to(torch.float32, copy=True) if v.is_floating_point() else v for k, v in first.items()}
    for source in sources[1:]:
        other = load_file(str(source / name))
        _check_same(name, first, other, (sources[0], source))
        for key, value in other.items():
            if value.is_floating_point():
                totals[key] += value.float()
            elif not torch.equal(value, first[key]):
                raise CheckpointMismatch(
                    f"{source / name}: integer tensor {key} differs from {sources[0] / name}; it cannot be averaged"
                )
    return {
        key: (total / len(sources)).to(first[key].dtype).contiguous() if first[key].is_floating_point() else total
        for key, total in totals.items()
    }


def average_checkpoints(directories: Sequence[Path], output_dir: Path) -> Path:
    """Write the uniform average of ``directories`` (two or more) to ``output_dir``, which must not exist."""
    sources = [Path(d) for d in directories]
    if len(sources) < 2:
        raise CheckpointMismatch("averaging needs at least two checkpoint directories")
    output_dir = Path(output_dir)
    if output_dir.exists():
        raise FileExistsError(f"{output_dir} exists; averaging writes a new directory and overwrites nothing")
    names = weight_files(sources[0])
    if not names:
        raise CheckpointMismatch(f"{sources[0]} holds no *.safetensors weights")
    for source in sources[1:]:
        if weight_files(source) != names:
            raise CheckpointMismatch(f"{source} does not hold the same weight files as {sources[0]}: {names}")
    averaged = {name: _average_file(name, sources) for name in names}  # every check passes before anything is written
    scratch = output_dir.with_name(output_dir.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(sources[0], scratch, ignore=shutil.ignore_patterns("*.safetensors"))
    for name, tensors in averaged.items():
        save_file(tensors, str(scratch / name), metadata={"format": "pt"})
    scratch.rename(output_dir)  # a stopped run leaves *.partial, never a half-written model under the real name
    return output_dir
