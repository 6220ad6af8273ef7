"""A small REST API for a saved Haystack 1.x pipeline, installable from PyPI (``haystack-dcsr[serve]``).

Haystack 1.x's own ``rest_api`` comes only from a git checkout of Haystack; this app answers the same routes
with the same request and response shapes, so clients written for it keep working:

- ``GET /initialized``, ``GET /hs_version``: health and version;
- ``POST /query`` ``{"query": str, "params": {...}, "debug": bool}`` -> ``{"query", "answers", "documents"}``;
- ``POST /documents/get_by_filters`` ``{"filters": {...}}`` -> the documents (without embeddings);
- ``POST /documents/delete_by_filters`` ``{"filters": {...}}``: only with ``allow_writes``; whole passages go
  (``DCSRRetriever.delete_passages``: a passage whose meta matches, every sentence of it) and the pipeline is saved
  to its folder with ``save_pipeline`` (crash-safe) before the route answers, so a restart from that folder
  serves exactly what was acknowledged, and a kill before that serves the state before the request.

A bad request gets a 4xx whose ``errors`` name the field, node, parameter or filter at fault; a traceback never
reaches the client (an unexpected failure is a 500 saying so, its traceback in the server's log).
"""

import difflib
import inspect
import json
import logging
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

logger = logging.getLogger(__name__)

QUERY_FIELDS = ("query", "params", "debug")
FILTER_FIELDS = ("filters",)


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
    from haystack_dcsr.haystack1.filters import FilterError, check_filters

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


def refuse_server_databases(pipeline) -> None:
    """The delete route's promise (a restart serves the state before a request or after it, whole) holds for a
    FAISS store whose database is saved into the folder (SQLite). A server database (PostgreSQL) changes at once
    while the folder's FAISS index changes only at the save after it: refused, before anything is served."""
    from haystack.document_stores import FAISSDocumentStore

    for name in pipeline.graph.nodes:
        store = getattr(pipeline.get_node(name), "document_store", None)
        if isinstance(store, FAISSDocumentStore):
            dialect = store.session.bind.dialect.name
            if dialect != "sqlite":
                raise ValueError(
                    f"--allow-writes: the FAISS store's database is a {dialect} server, which a deletion changes "
                    "before the saved folder's index can follow, so a crash in between would leave a folder that "
                    "does not load. Serve this pipeline read-only and delete through DCSRRetriever.delete_passages "
                    "in one process, then save_pipeline; or use a SQLite database, which the save copies."
                )


def create_app(path: Union[str, Path], pipeline_name: Optional[str] = None, allow_writes: bool = False):
    """The FastAPI app serving the pipeline ``pipeline_name`` of the YAML at ``path`` (``load_pipeline``: a
    folder written by ``save_pipeline`` loads from anywhere). ``allow_writes`` adds the delete route, which
    saves the pipeline back to ``path`` after each deletion; it needs a pipeline ``save_pipeline`` can write."""
    import haystack
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from haystack_dcsr.haystack1.pipelines import load_pipeline, refuse_unsaveable_stores, save_pipeline

    path = Path(path)
    pipeline = load_pipeline(path, pipeline_name=pipeline_name)
    if allow_writes:
        refuse_unsaveable_stores(pipeline)
        refuse_server_databases(pipeline)
    write_lock = threading.Lock()
    app = FastAPI(title="haystack-dcsr REST API", version=haystack.__version__)

    async def body_of(request: Request) -> Any:
        raw = await request.body()
        try:
            return json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError) as error:
            raise RequestError(f"request body: not valid JSON ({error})", status=400) from None

    @app.exception_handler(RequestError)
    async def request_error(_, error: RequestError):
        return JSONResponse(status_code=error.status, content={"errors": [str(error)]})

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
        return await _in_thread(lambda: [_document(d) for d in _guarded(store.get_all_documents, filters=filters)])

    if allow_writes:

        @app.post("/documents/delete_by_filters")
        async def delete_by_filters(request: Request):
            filters = _filters_of(check_body(await body_of(request), FILTER_FIELDS, required=("filters",)))

            def delete() -> bool:
                with write_lock:  # one deletion and its save at a time; queries go on meanwhile
                    _guarded(_dcsr_retriever(pipeline).delete_passages, filters=filters)
                    save_pipeline(pipeline, path)
                return True

            return await _in_thread(delete)

    return app


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


def _guarded(call, **kwargs):
    """``call(**kwargs)``; an error that describes the request (a filter comparing kinds, a bad value) is a 400
    naming it (and the node it stopped, from Haystack's wrapper), anything else a 500 whose traceback stays in
    the log."""
    from haystack.errors import PipelineError

    try:
        return call(**kwargs)
    except Exception as error:  # noqa: BLE001 - the client gets one line; the log gets the traceback
        cause, where = error, ""
        while type(cause) is Exception and cause.__cause__ is not None:  # Pipeline.run's "while running node"
            where = str(cause).split(":", 1)[0].replace("Exception while running ", "") + ": "
            cause = cause.__cause__
        if isinstance(cause, (ValueError, TypeError, KeyError, PipelineError)):
            text = str(cause).strip()
            raise RequestError(where + (text.splitlines()[0] if text else type(cause).__name__), status=400) from None
        logger.exception("request failed")
        raise RequestError(f"internal error ({type(cause).__name__}); see the server's log", status=500) from None


def _filters_of(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    from haystack_dcsr.haystack1.filters import FilterError, check_filters

    filters = body.get("filters")
    try:
        check_filters(filters)
    except FilterError as error:
        raise RequestError(f"filters: {error}") from None
    return filters


def _dcsr_retriever(pipeline):
    found = [
        pipeline.get_node(n) for n in pipeline.graph.nodes if type(pipeline.get_node(n)).__name__ == "DCSRRetriever"
    ]
    if not found:
        raise RequestError("this pipeline has no DCSRRetriever to delete passages through", status=404)
    return found[0]


def _document_store(pipeline):
    """The store the pipeline's DCSR retriever reads (else its first retriever's)."""
    from haystack.nodes import BaseRetriever

    retrievers = [pipeline.get_node(n) for n in pipeline.graph.nodes if isinstance(pipeline.get_node(n), BaseRetriever)]
    stores = [r.document_store for r in retrievers if getattr(r, "document_store", None) is not None]
    if not stores:
        raise RequestError("this pipeline has no retriever with a document store", status=404)
    dcsr = [r.document_store for r in retrievers if type(r).__name__ == "DCSRRetriever"]
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
    match = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""
