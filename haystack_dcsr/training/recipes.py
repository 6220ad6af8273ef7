"""Read settings out of the recipe files in ``trainer/configs/``, the one place a recipe is written.

Scripts take their learning rates, warm-ups, step counts and batch sizes from here instead of writing their own:
``dcsr-train settings trainer/configs/build_model.yaml budgets.gpu.first --sets`` prints ``--set KEY=VALUE``
arguments for ``dcsr-train train``; Python reads the same mapping with :func:`settings`.
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Union

import yaml

CONFIGS = Path(__file__).resolve().parents[2] / "trainer" / "configs"


def settings(path: Union[str, Path], key: str = "") -> Any:
    """The value at the dotted ``key`` of a YAML file (the whole file for ``""``; a number picks a list item); a
    relative path that does not exist from the working directory is looked up in the repository's
    ``trainer/configs/``."""
    path = Path(path)
    if not path.is_file() and (CONFIGS / path.name).is_file():
        path = CONFIGS / path.name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such recipe file")
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
