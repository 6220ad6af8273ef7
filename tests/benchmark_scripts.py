"""Benchmark scripts are not a package: tests load one by path to test its functions."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (its sibling imports, e.g. squad_data, resolve)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))
