"""Loading and saving YAML pipelines: errors that name the component and the parameter, and
FAISS stores that survive the round trip.

Haystack 1.x validates a YAML pipeline against JSON schemas generated from each node's typed
``__init__``, but reports any failure in a custom node as "found, but it failed validation" without
saying which parameter. ``load_pipeline`` checks each component against the same schema first and
reports the parameter, the problem and (for a misspelt name) the closest real one; then it hands
the file to ``Pipeline.load_from_yaml``. Importing this package registers the DCSR node types, so
the YAML can name them.

``Pipeline.save_to_yaml`` writes a ``FAISSDocumentStore`` by its creation parameters: reloaded, it
opens the same SQL database with a new, empty FAISS index (the vectors were never saved).
``save_pipeline`` saves each FAISS index (and the retriever's vector map) beside the YAML and
writes the store as ``faiss_index_path``, the form ``FAISSDocumentStore.load`` reads back.
"""

import difflib
import inspect
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import yaml
from haystack import Pipeline
from haystack.errors import PipelineConfigError
from haystack.nodes.base import BaseComponent


def load_pipeline(
    path: Union[str, Path], pipeline_name: Optional[str] = None, overwrite_with_env_variables: bool = True
) -> Pipeline:
    """``Pipeline.load_from_yaml`` with each component's parameters checked first.

    pipeline = load_pipeline("examples/pipelines/query.haystack-pipeline.yml", pipeline_name="query")
    """
    path = Path(path)
    config = read_pipeline_yaml(path)
    problems = [problem for component in config.get("components", []) for problem in _check_component(component)]
    if problems:
        raise PipelineConfigError(f"{path}: " + "; ".join(problems))
    try:
        return Pipeline.load_from_yaml(
            path, pipeline_name=pipeline_name, overwrite_with_env_variables=overwrite_with_env_variables
        )
    except PipelineConfigError as error:
        cause = error.__cause__
        if cause is None:
            raise
        while isinstance(cause, PipelineConfigError) and cause.__cause__ is not None:
            cause = cause.__cause__  # a component that failed while building another one
        # Haystack says "see the stacktrace"; the node's own message (e.g. a value out of range) is the answer
        what = str(error).split(". See the stacktrace")[0]
        raise PipelineConfigError(f"{path}: {what}: {type(cause).__name__}: {cause}") from cause


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


def save_pipeline(pipeline: Pipeline, path: Union[str, Path], index_dir: Optional[Union[str, Path]] = None) -> Path:
    """``Pipeline.save_to_yaml`` that keeps FAISS stores loadable (see the module docstring).

    save_pipeline(pipeline, "query.yml")          # + DocumentStore.faiss/.json/.faiss.dcsr-map.npz beside it
    pipeline = load_pipeline("query.yml")
    """
    from haystack.document_stores import FAISSDocumentStore

    from haystack_dcsr.retriever import DCSRRetriever

    path = Path(path)
    index_dir = Path(index_dir) if index_dir is not None else path.parent
    index_dir.mkdir(parents=True, exist_ok=True)
    components = _components(pipeline)
    config = pipeline.get_config()
    for definition in config["components"]:
        store = components.get(definition["name"])
        if isinstance(store, FAISSDocumentStore):
            index_path = index_dir / f"{definition['name']}.faiss"
            store.save(str(index_path))
            for retriever in components.values():
                if isinstance(retriever, DCSRRetriever) and retriever.document_store is store:
                    retriever.save_index_map(index_path)
            definition["params"] = {"faiss_index_path": str(index_path)}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


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
