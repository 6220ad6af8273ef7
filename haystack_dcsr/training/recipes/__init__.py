"""The trainer's recipes: the YAML files in this folder, the one place a recipe is written.

They ship in the wheel (package data), so ``dcsr-train build-model`` and ``dcsr-train train --config
squad_dcsr.yaml`` find them after ``pip install``; in a clone, ``trainer/configs/`` is this folder. Scripts take
their learning rates, warm-ups, step counts and batch sizes from here instead of writing their own:
``dcsr-train settings build_model.yaml budgets.gpu.first --sets`` prints ``--set KEY=VALUE`` arguments for
``dcsr-train train``; Python reads the same mapping with :func:`settings`.
"""

import json
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Union

import yaml


def recipe_names() -> List[str]:
    """The recipe files that ship with the package, e.g. ``build_model.yaml``."""
    return sorted(item.name for item in resources.files(__name__).iterdir() if item.name.endswith(".yaml"))


def recipe_path(path: Union[str, Path]) -> Path:
    """``path`` when it names a file; otherwise the shipped recipe of that file name (``squad_dcsr.yaml`` or
    ``trainer/configs/squad_dcsr.yaml`` from any directory); a clear error naming the shipped ones if neither."""
    path = Path(path)
    if path.is_file():
        return path
    shipped = resources.files(__name__) / path.name
    if path.suffix in (".yaml", ".yml") and shipped.is_file():
        return Path(str(shipped))
    raise FileNotFoundError(f"{path}: no such recipe file (shipped recipes: {', '.join(recipe_names())})")


def settings(path: Union[str, Path], key: str = "") -> Any:
    """The value at the dotted ``key`` of a recipe (:func:`recipe_path`; the whole file for ``""``; a number
    picks a list item)."""
    path = recipe_path(path)
    value = yaml.safe_load(path.read_text())
    for part in filter(None, key.split(".")):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]  # a list item by position: reranker.continuations.0.steps
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            if isinstance(value, dict):
                there = ", ".join(value)
            elif isinstance(value, list):
                there = f"positions 0-{len(value) - 1}"
            else:
                there = "none: it is a value"
            raise KeyError(f"{path}: no {key!r} (at {part!r}; keys there: {there})")
    return value


def set_arguments(mapping: Dict[str, Any]) -> List[str]:
    """``{"lr": 3e-5}`` -> ``["--set", "lr=3e-05"]``: values as ``TrainConfig.from_yaml`` reads them back."""
    arguments = []
    for name, value in mapping.items():
        arguments += ["--set", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    return arguments
