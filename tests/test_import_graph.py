"""The import graph is a DAG: core <- framework adapters <- training <- benchmarks/examples;
the core imports no Haystack."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = {
    "atomic_files",
    "cross_encoder",
    "dcsr_model",
    "encoder",
    "fusion",
    "hasans",
    "hub",
    "index_presets",
    "int8",
    "meq",
    "metrics",
    "models",
    "parameters",
    "sentence_units",
    "splitting",
}


def imports(path: Path):
    """Every module a file imports, at module level or inside functions (lazy imports count too)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def package_modules():
    for path in sorted((ROOT / "haystack_dcsr").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        yield name, path


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[1:2] in (["haystack2"], ["training"]):
        return parts[1]
    return "core" if len(parts) == 2 and parts[1] in CORE else "haystack1"


def test_the_core_imports_neither_haystack_nor_an_adapter():
    for name, path in package_modules():
        if layer(name) != "core":
            continue
        for target in imports(path):
            assert target.split(".")[0] != "haystack", f"{name} imports {target}"
            if target.startswith("haystack_dcsr."):
                module = ".".join(target.split(".")[:2])
                assert module == "haystack_dcsr" or layer(module) == "core", f"core module {name} imports {target}"


def test_adapters_do_not_import_each_other():
    for name, path in package_modules():
        for target in imports(path):
            if target.startswith("haystack_dcsr.haystack2"):
                assert layer(name) == "haystack2", f"{name} imports the 2.x adapter ({target})"
            elif layer(name) == "haystack2" and target.startswith("haystack_dcsr.") and target.count(".") == 1:
                assert layer(target) == "core", f"2.x module {name} imports the 1.x module {target}"


def test_no_import_cycles_and_nothing_imports_the_training_package():
    modules = dict(package_modules())
    graph = {
        name: {t for t in imports(path) if t in modules and t != name and not name.startswith(t + ".")}
        for name, path in modules.items()
    }
    graph = {name: {t for t in targets if not t == "haystack_dcsr"} for name, targets in graph.items()}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        pytest.fail(f"import cycle: {error.args[1]}")
    assert order.index("haystack_dcsr.sentence_units") < order.index("haystack_dcsr.retriever")
    for name in modules:
        if layer(name) != "training":
            assert not any(layer(t) == "training" for t in graph[name]), f"{name} imports the training package"
