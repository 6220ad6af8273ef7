"""A small REST API for a saved Haystack 1.x pipeline, installable from PyPI (``haystack-dcsr[serve]``).

Haystack 1.x's own ``rest_api`` comes only from a git checkout of Haystack; this app answers the same routes
with the same request and response shapes, so clients written for it keep working:

- ``GET /initialized``, ``GET /hs_version``: health and version;
- ``POST /query`` ``{"query": str, "params": {...}, "debug": bool}`` -> ``{"query", "answers", "documents"}``;
- ``POST /documents/get_by_filters`` ``{"filters": {...}}`` -> the documents (without embeddings);
- ``POST /documents/delete_by_filters`` ``{"filters": {...}}``: only with ``allow_writes`` (else 403 saying so);
  whole passages go (``DCSRRetriever.delete_passages``: a passage whose meta matches, every sentence of it) and the
  pipeline is saved to its folder with ``save_pipeline`` (crash-safe) before the route answers, so a restart from
  that folder serves exactly what was acknowledged, and a kill before that serves the state before the request.

Every error is a JSON ``{"errors": [one line]}``; a traceback never reaches the client:

- 400: the body is not JSON, or nests deeper than ``MAX_DEPTH``; 413: it is larger than ``max_body_bytes``;
- 422: valid JSON that the pipeline cannot answer as written, naming the field, node, parameter or filter;
- 403: a write route on a read-only server; 503 (with ``Retry-After``): the engine behind the store is unavailable
  (its own message); 500: anything else, its traceback in the server's log.

``/documents/get_by_filters`` evaluates filters as retrieval does (``filters.matcher``: numbers as numbers, a
comparison of different kinds refused), reading the store's documents once.
"""

import difflib
import inspect
import json
import logging
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from haystack_dcsr.core.storage.body_limit import MAX_BODY_BYTES  # the one limit of both servers
from haystack_dcsr.core.storage.request_errors import RETRY_AFTER_S, first_line, request_status

logger = logging.getLogger(__name__)

QUERY_FIELDS = ("query", "params", "debug")
FILTER_FIELDS = ("filters",)
MAX_DEPTH = 32  # the deepest JSON nesting a request may have (a filter of nested $and / $or included)


class RequestError(ValueError):
    """A request the pipeline cannot answer as written; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


def check_body(body: Any, fields: Tuple[str, ...], required: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The JSON body as a dict with only ``fields``; the first problem as a :class:`RequestError`."""
    if not isinstance(body, dict):
        raise RequestError(f"request body: expected a JSON object with {', '.join(fields)}, got {_kind(body)}")
    unknown = [key for key in body if key not in fields]
    if unknown:
        raise RequestError(f"request body: unknown field {unknown[0]!r}{_close(unknown[0], fields)}")
    missing = [key for key in required if body.get(key) is None]
    if missing:
        raise RequestError(f"request body: {missing[0]!r} is required")
    return body


def check_query_params(pipeline, params: Any) -> Dict[str, Any]:
    """``params`` as Haystack's ``Pipeline.run`` reads them: keys that name a node hold that node's parameters;
    any other key is a parameter for every node that takes it. Each parameter must be one a node's ``run``
    accepts, and filters must be valid Haystack 1.x filters."""
    from haystack_dcsr.core.indexes.filters import FilterError, check_filters

    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RequestError(f"params: expected an object of node names or parameters, got {_kind(params)}")
    nodes = {name: pipeline.get_node(name) for name in pipeline.graph.nodes if name != pipeline.root_node}
    accepted = {name: _run_parameters(node) for name, node in nodes.items()}
    for key, value in params.items():
        if key in nodes:
            if not isinstance(value, dict):
                raise RequestError(f"params.{key}: expected an object of {key}'s parameters, got {_kind(value)}")
            for name in value:
                if name not in accepted[key]:
                    kind = type(nodes[key]).__name__
                    raise RequestError(
                        f"params.{key}.{name}: node {key!r} ({kind}) takes no parameter {name!r}"
                        f"{_close(name, sorted(accepted[key]))}"
                    )
            where = f"params.{key}.filters"
            filters = value.get("filters")
        elif any(key in names for names in accepted.values()):
            where, filters = f"params.{key}", value if key == "filters" else None
        else:
            known = sorted(nodes) + sorted({p for names in accepted.values() for p in names})
            raise RequestError(
                f"params.{key}: no node or parameter {key!r} in this pipeline (nodes: {', '.join(sorted(nodes))})"
                f"{_close(key, known)}"
            )
        try:
            check_filters(filters)
        except FilterError as error:
            raise RequestError(f"{where}: {error}") from None
    return params


def create_app(
    path: Union[str, Path],
    pipeline_name: Optional[str] = None,
    allow_writes: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
):
    """The FastAPI app serving the pipeline ``pipeline_name`` of the YAML at ``path`` (``load_pipeline``: a
    folder written by ``save_pipeline`` loads from anywhere). ``allow_writes`` opens the delete route, which
    saves the pipeline back to ``path`` after each deletion; it needs a pipeline ``save_pipeline`` can write.
    ``max_body_bytes``: larger request bodies are refused (413) before they are parsed."""
    import haystack
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from haystack_dcsr.haystack1.pipelines import load_pipeline, refuse_unsaveable_stores, save_pipeline

    path = Path(path)
    pipeline = load_pipeline(path, pipeline_name=pipeline_name)
    if allow_writes:
        refuse_unsaveable_stores(pipeline)
    write_lock = threading.Lock()
    app = FastAPI(title="haystack-dcsr REST API", version=haystack.__version__)

    async def body_of(request: Request) -> Any:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body_bytes:
            raise RequestError(f"request body: {declared} bytes, more than the {max_body_bytes} allowed", status=413)
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > max_body_bytes:
                raise RequestError(f"request body: more than the {max_body_bytes} bytes allowed", status=413)
        return parse_body(bytes(raw))

    @app.exception_handler(Exception)
    async def unexpected_error(_, error: Exception):  # JSON like every other error; the traceback stays in the log
        logger.error("request failed", exc_info=error)
        return JSONResponse(status_code=500, content={"errors": [f"internal error ({type(error).__name__})"]})

    @app.exception_handler(RequestError)
    async def request_error(_, error: RequestError):
        headers = {"Retry-After": str(RETRY_AFTER_S)} if error.status == 503 else None
        return JSONResponse(status_code=error.status, content={"errors": [str(error)]}, headers=headers)

    @app.get("/initialized")
    def initialized() -> bool:
        return True

    @app.get("/hs_version")
    def hs_version() -> Dict[str, str]:
        return {"hs_version": haystack.__version__}

    @app.post("/query")
    async def query(request: Request):
        body = check_body(await body_of(request), QUERY_FIELDS, required=("query",))
        text = body["query"]
        if not isinstance(text, str) or not text.strip():
            raise RequestError(f"query: expected a non-empty string, got {_kind(text)}")
        if not isinstance(body.get("debug", False), bool):
            raise RequestError(f"debug: expected true or false, got {_kind(body['debug'])}")
        params = check_query_params(pipeline, body.get("params"))
        return await _in_thread(lambda: _answer(pipeline, text, params, bool(body.get("debug", False))))

    @app.post("/documents/get_by_filters")
    async def get_by_filters(request: Request):
        filters = _filters_of(check_body(await body_of(request), FILTER_FIELDS))
        store = _document_store(pipeline)
        return await _in_thread(lambda: _guarded(_documents_matching, store=store, filters=filters))

    @app.post("/documents/delete_by_filters")
    async def delete_by_filters(request: Request):
        if not allow_writes:
            raise RequestError(
                "writes are disabled on this server: start it with --allow-writes to delete documents", status=403
            )
        filters = _filters_of(check_body(await body_of(request), FILTER_FIELDS, required=("filters",)))

        def delete() -> bool:
            with write_lock:  # one deletion and its save at a time; queries go on meanwhile
                _guarded(_dcsr_retriever(pipeline).delete_passages, filters=filters)
                save_pipeline(pipeline, path)
            return True

        return await _in_thread(delete)

    return app


def parse_body(raw: bytes) -> Any:
    """The JSON of a request body; a body that is not JSON, or nests deeper than ``MAX_DEPTH``, is a 400."""
    try:
        body = json.loads(raw or b"null")
    except RecursionError:
        raise RequestError(f"request body: nested deeper than {MAX_DEPTH} levels", status=400) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise RequestError(f"request body: not valid JSON ({error})", status=400) from None
    if _depth(body) > MAX_DEPTH:
        raise RequestError(f"request body: nested deeper than {MAX_DEPTH} levels", status=400)
    return body


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects, without recursion (a hostile body may nest thousands deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _answer(pipeline, query: str, params: Dict[str, Any], debug: bool) -> Dict[str, Any]:
    result = _guarded(pipeline.run, query=query, params=params, debug=debug)
    response = {
        "query": query,
        "answers": [answer.to_dict() for answer in result.get("answers") or []],
        "documents": [_document(document) for document in result.get("documents") or []],
    }
    if debug:
        response["_debug"] = json.loads(json.dumps(result.get("_debug", {}), default=str))
    return response


def _documents_matching(store, filters: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The store's documents whose meta passes ``filters``, evaluated as retrieval evaluates them (a SQL store
    alone would compare numbers as JSON text, and answer a comparison of different kinds with nothing)."""
    from haystack_dcsr.haystack1.filters import matcher

    match = matcher(filters) if filters else (lambda meta: True)
    documents = store.get_all_documents_generator(return_embedding=False)
    return [_document(document) for document in documents if match(document.meta or {})]


def _guarded(call, **kwargs):
    """``call(**kwargs)``; an error that describes the request (a filter comparing kinds, a bad value) is a 422
    naming it (and the node it stopped, from Haystack's wrapper); an engine that is down (a ``ConnectionError``:
    Milvus, the SQL server) a 503 with its own message; anything else a 500 whose traceback stays in the log."""
    from haystack.errors import PipelineError

    try:
        return call(**kwargs)
    except Exception as error:  # noqa: BLE001 - the client gets one line; the log gets the traceback
        cause, where = error, ""
        while type(cause) is Exception and cause.__cause__ is not None:  # Pipeline.run's "while running node"
            where = str(cause).split(":", 1)[0].replace("Exception while running ", "") + ": "
            cause = cause.__cause__
        line = where + first_line(cause)
        status = 422 if isinstance(cause, PipelineError) else request_status(cause)
        if status == 503:
            logger.warning("engine unavailable: %s", line)
        if status != 500:
            raise RequestError(line, status=status) from None
        logger.exception("request failed")
        raise RequestError(f"internal error ({type(cause).__name__}); see the server's log", status=500) from None


def _filters_of(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    from haystack_dcsr.core.indexes.filters import FilterError, check_filters

    filters = body.get("filters")
    try:
        check_filters(filters)
    except FilterError as error:
        raise RequestError(f"filters: {error}") from None
    return filters


def _dcsr_retriever(pipeline):
    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    found = [pipeline.get_node(n) for n in pipeline.graph.nodes if isinstance(pipeline.get_node(n), DCSRRetriever)]
    if not found:
        raise RequestError("this pipeline has no DCSRRetriever to delete passages through", status=404)
    return found[0]


def _document_store(pipeline):
    """The store the pipeline's DCSR retriever reads (else its first retriever's)."""
    from haystack.nodes import BaseRetriever

    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    retrievers = [pipeline.get_node(n) for n in pipeline.graph.nodes if isinstance(pipeline.get_node(n), BaseRetriever)]
    stores = [r.document_store for r in retrievers if getattr(r, "document_store", None) is not None]
    if not stores:
        raise RequestError("this pipeline has no retriever with a document store", status=404)
    dcsr = [r.document_store for r in retrievers if isinstance(r, DCSRRetriever)]
    return (dcsr or stores)[0]


def _document(document) -> Dict[str, Any]:
    serialized = document.to_dict()
    serialized["embedding"] = None  # Haystack's REST API shape; the vectors stay in the store
    return json.loads(json.dumps(serialized, default=str))


async def _in_thread(work):
    """Blocking pipeline work in a worker thread, so the event loop keeps answering other requests."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(work)


def _run_parameters(node) -> List[str]:
    signature = inspect.signature(node.run)
    return [name for name, p in signature.parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {json.dumps(value)[:40]}"


def _close(name: str, choices) -> str:
    """A suggestion for a misspelt name: only a near miss (``top_kk`` -> ``top_k``), never a guess at a name
    that is merely absent (a ``Reader`` a pipeline does not have is not its ``headers``)."""
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.8)
    return f" (did you mean {match[0]!r}?)" if match else ""
