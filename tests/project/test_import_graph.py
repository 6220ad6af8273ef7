"""The layers are folders (core, haystack1, haystack2, training) and the import graph is a DAG over them:
core <- each adapter; core <- training; the core imports no Haystack; the adapters never import each other."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("core", "haystack1", "haystack2", "training")  # one folder each under haystack_dcsr/
# what each layer may import of the package (besides itself): the folders are the layers
ALLOWED = {"core": set(), "haystack1": {"core"}, "haystack2": {"core"}, "training": {"core"}}
# the one crossing: `dcsr-train mine-bm25 --elasticsearch-url` builds its retriever with the 1.x adapter
# (imported inside that option's branch; everything else in the trainer runs on the core alone)
TRAINING_THROUGH_HAYSTACK1 = {"haystack_dcsr.training.cli"}


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
    """The folder a module lives in; ``package`` for ``haystack_dcsr/__init__`` and its compatibility modules."""
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in LAYERS else "package"


def test_every_module_lives_in_a_layer_folder():
    loose = [name for name, _ in package_modules() if layer(name) == "package"]
    assert sorted(loose) == ["haystack_dcsr", "haystack_dcsr.hub", "haystack_dcsr.serve"]
    assert all((ROOT / "haystack_dcsr" / folder / "__init__.py").is_file() for folder in LAYERS)


def test_each_layer_imports_only_the_layers_below_it():
    for name, path in package_modules():
        own = layer(name)
        if own == "package":
            continue
        for target in imports(path):
            if own == "core":
                assert target.split(".")[0] != "haystack", f"{name} imports {target}"
            if not target.startswith("haystack_dcsr.") or layer(target) in (own, "package"):
                continue
            if own == "training" and name in TRAINING_THROUGH_HAYSTACK1 and layer(target) == "haystack1":
                continue
            assert layer(target) in ALLOWED[own], f"{own} module {name} imports {target} ({layer(target)})"


def test_the_compatibility_modules_only_re_export():
    for name in ("hub", "serve"):
        tree = ast.parse((ROOT / "haystack_dcsr" / f"{name}.py").read_text())
        defined = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        assert defined == [], f"haystack_dcsr/{name}.py defines code; it should only point at its layer"


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
    assert order.index("haystack_dcsr.core.text.sentence_units") < order.index("haystack_dcsr.haystack1.retriever")
    for name in modules:
        if layer(name) != "training":
            assert not any(layer(t) == "training" for t in graph[name]), f"{name} imports the training package"


def test_the_1x_folder_shows_its_nodes_and_one_engine_and_the_public_names_still_import():
    """The nodes, the stores and the pipeline tools sit in haystack1/; the SQL + FAISS engine in haystack1/engine/.
    What users import (the package's names, the YAML ``type:`` names) is where it was before the move."""
    import haystack_dcsr

    folder = ROOT / "haystack_dcsr" / "haystack1"
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    assert modules == [
        "bm25", "evaluation", "filters", "hybrid", "milvus_store", "mining", "pipelines", "preprocessor",
        "query_encoder", "reranker", "rest_api", "retriever", "serve",
    ]  # fmt: skip
    assert sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__") == ["engine"]
    for name in haystack_dcsr.__all__:
        assert getattr(haystack_dcsr, name) is not None
    from haystack.nodes.base import BaseComponent

    for yaml_type in ("DCSRRetriever", "SentencePreprocessor", "QueryEncoder", "HybridJoin", "CrossEncoderRanker",
                      "SparseBM25DocumentStore", "MilvusDocumentStore"):  # fmt: skip
        assert yaml_type in BaseComponent._subclasses


CORE_ROOMS = ["indexes", "model", "ranking", "storage", "text"]
COMPONENTS = ("DCSRRetriever", "SentencePreprocessor", "QueryEncoder", "HybridJoin", "CrossEncoderRanker",
              "DCSRSentenceSplitter", "DCSRTextEmbedder", "DCSRDocumentEmbedder", "DCSREmbeddingRetriever",
              "EvaluationResult", "FAISSDocumentStore", "InMemoryDocumentStore", "MilvusDocumentStore")  # fmt: skip


def test_the_core_has_rooms_and_its_code_names_no_haystack_component():
    """Every core module sits in a room; no string the core's code builds (messages, defaults; docstrings aside)
    names a component of either Haystack adapter: the adapters name their own."""
    core = ROOT / "haystack_dcsr" / "core"
    assert sorted(p.name for p in core.iterdir() if p.is_dir() and p.name != "__pycache__") == CORE_ROOMS
    assert sorted(p.name for p in core.glob("*.py")) == ["__init__.py"]
    named = []
    for path in sorted(core.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                named += [f"{path.relative_to(core)}:{node.lineno} {c}" for c in COMPONENTS if c in node.value]
    assert named == []
