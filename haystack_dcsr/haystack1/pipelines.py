"""Loading and saving YAML pipelines: errors that name the component and the parameter, and
FAISS stores that survive the round trip.

Haystack 1.x validates a YAML pipeline against JSON schemas generated from each node's typed
``__init__``, but reports any failure in a custom node as "found, but it failed validation" without
saying which parameter. ``load_pipeline`` checks each component against the same schema first and
reports the parameter, the problem and (for a misspelt name) the closest real one; then it hands
the config to ``Pipeline.load_from_config``. Importing this package registers the DCSR node types,
so the YAML can name them. Pipeline files are read with limits (size, no YAML anchors or aliases).

``Pipeline.save_to_yaml`` writes a ``FAISSDocumentStore`` by its creation parameters: reloaded, it
opens the same SQL database with a new, empty FAISS index (the vectors were never saved).
``save_pipeline`` saves each FAISS store as one consistent, crash-safe set (``saved_store``) and
writes it as ``faiss_index_path`` relative to the YAML; ``load_pipeline`` resolves those paths, so
a saved pipeline loads from any working directory.
"""

import difflib
import inspect
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

import yaml
from haystack import Pipeline
from haystack.document_stores import FAISSDocumentStore
from haystack.errors import PipelineConfigError
from haystack.nodes.base import BaseComponent

from haystack_dcsr.haystack1.engine.saved_store import adopt_working_copy, discard_temporary_config
from haystack_dcsr.haystack1.preprocessor import stub_haystack_punkt


def load_pipeline(
    path: Union[str, Path], pipeline_name: Optional[str] = None, overwrite_with_env_variables: bool = True
) -> Pipeline:
    """``Pipeline.load_from_yaml`` with each component's parameters checked first.

    pipeline = load_pipeline("examples/pipelines/query.haystack-pipeline.yml", pipeline_name="query")
    """
    path = Path(path)
    for attempt in range(LOAD_ATTEMPTS):
        config = read_pipeline_yaml(path)
        problems = [problem for component in config.get("components", []) for problem in _check_component(component)]
        if problems:
            raise PipelineConfigError(f"{path}: " + "; ".join(problems))
        try:
            config = resolve_saved_stores(config, path.parent.resolve())
            break
        except PipelineConfigError as error:
            # another process saved over this YAML and removed the generation it named: read the newer YAML
            missing = isinstance(error.__cause__, FileNotFoundError)
            if not missing or attempt == LOAD_ATTEMPTS - 1 or read_pipeline_yaml(path) == config:
                raise
    stub_haystack_punkt()  # Haystack's PreProcessor would try to download nltk data DCSR never uses
    try:
        try:
            pipeline = Pipeline.load_from_config(
                config, pipeline_name=pipeline_name, overwrite_with_env_variables=overwrite_with_env_variables
            )
        finally:
            for component in config.get("components", []):
                discard_temporary_config(component.get("params") or {})
        setattr(pipeline, LOADED_NAME, pipeline_name or config["pipelines"][0]["name"])  # save_pipeline keeps it
        read_saved_maps(pipeline)
        return pipeline
    except PipelineConfigError as error:
        cause = error.__cause__
        if cause is None:
            raise
        while isinstance(cause, PipelineConfigError) and cause.__cause__ is not None:
            cause = cause.__cause__  # a component that failed while building another one
        # Haystack says "see the stacktrace"; the node's own message (e.g. a value out of range) is the answer
        what = str(error).split(". See the stacktrace")[0]
        raise PipelineConfigError(f"{path}: {what}: {type(cause).__name__}: {cause}") from cause


LOADED_NAME = "_dcsr_pipeline_name"
LOAD_ATTEMPTS = 5  # re-reads of a YAML that another process saved over while it was being opened
SUPERSEDED_GRACE_S = 120.0  # a generation stays this long after a newer save, for loaders still opening it
MAX_YAML_BYTES = 1_000_000  # a pipeline file is a few KB; more is a mistake or an attack


class _NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses anchors and aliases: pipeline files never need them, and a few
    nested aliases expand to billions of nodes once Haystack copies and validates the parameters."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent) or getattr(self.peek_event(), "anchor", None):
            event = self.peek_event()
            raise PipelineConfigError(
                f"YAML anchors and aliases (&name / *name, line {event.start_mark.line + 1}) are not allowed in a "
                "pipeline file: write the values out"
            )
        return super().compose_node(parent, index)


def read_saved_maps(pipeline: Pipeline) -> None:
    """Tie each loaded FAISS store's working copy to the store's life and read the vector map saved beside its
    index now, at load (not at the first query): the loaded pipeline then needs nothing more from the saved
    folder, which a later save may remove."""
    from haystack_dcsr.haystack1.engine.sentence_search import saved_index_path
    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    components = _components(pipeline).values()
    for component in components:
        if isinstance(component, FAISSDocumentStore):
            adopt_working_copy(component)
    for retriever in components:
        store = getattr(retriever, "document_store", None)
        if isinstance(retriever, DCSRRetriever) and isinstance(store, FAISSDocumentStore) and saved_index_path(store):
            retriever.engine.search_for(store).current_map()


def read_pipeline_yaml(path: Union[str, Path]) -> Dict[str, Any]:
    """A pipeline file's content, refused with a clear error when it is too large, uses anchors or
    aliases, or is not a mapping."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise PipelineConfigError(f"{path}: {size} bytes is larger than a pipeline file may be ({MAX_YAML_BYTES})")
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_NoAliasLoader) or {}
    if not isinstance(config, dict):
        raise PipelineConfigError(f"{path}: a pipeline file is a mapping (version, components, pipelines)")
    return config


def resolve_saved_stores(config: Dict[str, Any], base: Path) -> Dict[str, Any]:
    """The config with each saved FAISS store's files named by absolute paths (``open_params``):
    saved pipelines name them relative to the YAML, so they load from any working directory."""
    import copy

    from haystack_dcsr.haystack1.engine.saved_store import open_params, saved_file

    config = copy.deepcopy(config)
    for component in config.get("components", []):
        params = component.get("params") or {}
        try:
            if component.get("type") == "FAISSDocumentStore" and params.get("faiss_index_path"):
                component["params"] = open_params(params["faiss_index_path"], base)
            elif component.get("type") == "SparseBM25DocumentStore" and params.get("documents_path"):
                component["params"] = {
                    **params,
                    "documents_path": str(saved_file(params["documents_path"], base, "BM25 store")),
                }
        except (OSError, ValueError) as error:
            raise PipelineConfigError(f"component {component.get('name')!r}: {error}") from error
    return config


def _check_component(component: Dict[str, Any]) -> List[str]:
    from haystack.nodes._json_schema import create_schema_for_node_class
    from jsonschema import Draft7Validator

    name, kind = component.get("name", "?"), component.get("type")
    try:
        node_class = BaseComponent.get_subclass(kind)
    except Exception:
        return []  # Haystack's own loader reports unknown types
    definitions, reference = create_schema_for_node_class(node_class)
    schema = definitions[reference["$ref"].rsplit("/", 1)[-1]]["properties"]["params"]
    params = component.get("params") or {}
    allowed = [p for p in inspect.signature(node_class.__init__).parameters if p != "self"]
    problems = []
    for key in params:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (parameters: {', '.join(allowed)})"
            problems.append(f"component {name!r} ({kind}) has no parameter {key!r}{hint}")
    for error in Draft7Validator(schema).iter_errors(params):
        if error.validator == "additionalProperties":
            continue  # reported above, with a suggestion
        where = ".".join(str(p) for p in error.absolute_path) or "params"
        problems.append(f"component {name!r} ({kind}), parameter {where!r}: {error.message}")
    return problems


def save_pipeline(
    pipeline: Pipeline,
    path: Union[str, Path],
    index_dir: Optional[Union[str, Path]] = None,
    pipeline_name: Optional[str] = None,
) -> Path:
    """``Pipeline.save_to_yaml`` that keeps FAISS stores loadable from anywhere, crash-safe.

    save_pipeline(pipeline, "served/query.yml")   # + served/query.files/<generation>/Store.faiss, .json, .db, map
    pipeline = load_pipeline("served/query.yml")  # from any working directory

    Each FAISS store is saved with ``save_faiss_store`` (index, config, vector map with its
    fingerprint, and a copy of a SQLite database) into a new generation folder under
    ``<index_dir>/<yaml name>.files/``; the YAML, naming that folder by a path relative to itself,
    is written last and atomically, then generations superseded a while ago are removed. A kill or a full disk at
    any point leaves the previous YAML and the files it names whole and loadable.

    A ``SparseBM25DocumentStore`` (the hybrid's BM25 side) is saved beside them as JSON lines. A store
    that YAML cannot carry (an ``InMemoryDocumentStore`` holding documents) is refused before anything
    is written. ``pipeline_name`` names the saved pipeline (default: the name it was loaded under).

    Processes: saves to one YAML path take turns (``<yaml>.lock``); a generation is kept for a while after a
    newer save (``remove_superseded_generations``) and ``load_pipeline`` re-reads a YAML saved over while it
    opened it, so a loader gets the previous save or the new one, whole.
    """
    path = Path(path)
    refuse_unsaveable_stores(pipeline)  # before anything is written, the lock file included
    path.parent.mkdir(parents=True, exist_ok=True)
    with save_lock(path):
        return _save_pipeline(pipeline, path, index_dir, pipeline_name)


def _save_pipeline(pipeline: Pipeline, path: Path, index_dir, pipeline_name: Optional[str]) -> Path:
    import shutil
    import time
    import uuid

    from haystack_dcsr.core.storage.atomic_files import atomic_write_text
    from haystack_dcsr.haystack1.bm25 import SparseBM25DocumentStore
    from haystack_dcsr.haystack1.engine.saved_store import save_faiss_store
    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    files = (Path(index_dir) if index_dir is not None else path.parent) / f"{path.stem}.files"
    now = time.time_ns()  # names that sort in save order, to the nanosecond (remove_superseded_generations)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now // 10**9))
    generation = files / f"{stamp}.{now % 10**9:09d}-{uuid.uuid4().hex[:8]}"
    components = _components(pipeline)
    config = pipeline.get_config()
    config["pipelines"][0]["name"] = pipeline_name or getattr(pipeline, LOADED_NAME, config["pipelines"][0]["name"])
    for definition in config["components"]:
        definition["params"] = absolute_local_paths(definition.get("params") or {})
    generation.mkdir(parents=True, exist_ok=True)
    try:
        for definition in config["components"]:
            store = components.get(definition["name"])
            if isinstance(store, SparseBM25DocumentStore):
                saved = store.save(generation / f"{definition['name']}.jsonl.gz")
                definition["params"] = {
                    **{k: v for k, v in (definition.get("params") or {}).items() if k != "documents_path"},
                    "documents_path": os.path.relpath(saved, path.parent.resolve()),
                }
            elif isinstance(store, FAISSDocumentStore):
                search = next(
                    (
                        r.engine.search_for(store)
                        for r in components.values()
                        if isinstance(r, DCSRRetriever) and r.document_store is store
                    ),
                    None,
                )
                index_path = save_faiss_store(store, generation / f"{definition['name']}.faiss", search=search)
                definition["params"] = {"faiss_index_path": os.path.relpath(index_path, path.parent.resolve())}
        atomic_write_text(path, yaml.safe_dump(config, sort_keys=False))
    except BaseException:
        shutil.rmtree(generation, ignore_errors=True)
        raise
    remove_superseded_generations(files, generation)
    return path


@contextmanager
def save_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<yaml>.lock`` for one save: two processes saving to one YAML path take turns
    (each save whole, the last one's YAML stands) instead of interleaving their files."""
    import fcntl

    with open(path.with_name(f"{path.name}.lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def remove_superseded_generations(files: Path, current: Path) -> None:
    """Remove the generations older than the one before ``current`` once a newer one has existed for
    ``SUPERSEDED_GRACE_S``: a loader that read the previous YAML is still opening its generation, and a
    process that re-saves in a loop must not pull it away (``load_pipeline`` re-reads the YAML if it does).
    A loaded pipeline needs its generation no longer: its store works on a copy of the database outside it and
    its retrievers read the vector map at load."""
    import shutil
    import time

    generations = sorted(p for p in files.iterdir() if p.is_dir()) if files.is_dir() else []
    generations = [g for g in generations if g != current] + [current]
    now = time.time()
    for older, newer in zip(generations[:-2], generations[1:-1]):
        if now - newer.stat().st_mtime > SUPERSEDED_GRACE_S:
            shutil.rmtree(older, ignore_errors=True)


PATH_PARAMS = ("model", "query_model", "passage_model", "model_name_or_path", "punkt_params_path")


def absolute_local_paths(params: Dict[str, Any]) -> Dict[str, Any]:
    """Model and file parameters that name a local path relative to the working directory, made
    absolute: the saved YAML then loads from anywhere (a hub name, which is no local path, stays)."""
    return {
        key: str(Path(value).resolve())
        if key in PATH_PARAMS and isinstance(value, str) and not Path(value).is_absolute() and Path(value).exists()
        else value
        for key, value in params.items()
    }


def refuse_unsaveable_stores(pipeline: Pipeline) -> None:
    """A store of the pipeline whose documents the YAML would lose: refused at save time, with the reason."""
    from haystack.document_stores import InMemoryDocumentStore

    from haystack_dcsr.haystack1.bm25 import SparseBM25DocumentStore

    for name, store in _components(pipeline).items():
        if isinstance(store, InMemoryDocumentStore) and not isinstance(store, SparseBM25DocumentStore):
            count = store.get_document_count()
            if count:
                raise PipelineConfigError(
                    f"Cannot save component {name!r}: an InMemoryDocumentStore's {count} documents live in this "
                    "process only, and the YAML would reload it empty. Use a FAISSDocumentStore (saved with its "
                    "index) or SparseBM25DocumentStore (saved as JSON lines) for a pipeline you save. Nothing was "
                    "written."
                )


def _components(pipeline: Pipeline) -> Dict[str, BaseComponent]:
    """Every component of the pipeline by name, the ones only referenced by nodes (stores) included."""
    found: Dict[str, BaseComponent] = {}
    pending = [
        attributes["component"] for name, attributes in pipeline.graph.nodes.items() if name != pipeline.root_node
    ]
    while pending:
        component = pending.pop()
        if component.name in found:
            continue
        found[component.name] = component
        pending.extend(value for value in component.get_params().values() if isinstance(value, BaseComponent))
    return found
