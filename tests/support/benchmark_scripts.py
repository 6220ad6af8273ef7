"""Benchmark scripts are not a package: tests load one by path to test its functions."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
FOLDERS = (BENCHMARKS, BENCHMARKS / "lib")


def load_benchmark(name: str):
    """``benchmarks/[lib/]<name>.py`` as a module (its sibling imports, e.g. squad_data, resolve)."""
    path = next(folder / f"{name}.py" for folder in FOLDERS if (folder / f"{name}.py").exists())
    added = [str(folder) for folder in FOLDERS]
    sys.path[:0] = added
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        del sys.path[: len(added)]
