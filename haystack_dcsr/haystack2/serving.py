"""Serving a Haystack 2.x DCSR query pipeline with Hayhooks: a pipeline wrapper that loads the pipeline's YAML
(``Pipeline.dumps``) from the wrapper's folder and answers ``POST /<name>/run`` with ``{"query": ..., "top_k":
..., "filters": ...}``.

Hayhooks deploys every folder of its pipelines directory that holds a ``pipeline_wrapper.py`` defining
``PipelineWrapper``. For DCSR that file is a subclass that adds nothing (the pipeline's YAML is found beside the
file that defines it)::

    # pipelines/dcsr/pipeline_wrapper.py, beside pipelines/dcsr/pipeline.yml
    from haystack_dcsr.haystack2.serving import DCSRPipelineWrapper

    class PipelineWrapper(DCSRPipelineWrapper):
        pass

Why a wrapper rather than a bare YAML pipeline: a request the pipeline refuses (``top_k`` of 0, a filter in 1.x
syntax) is then a 422 naming the fault, and an engine that is down a 503 with ``Retry-After``; Hayhooks answers any
exception of a YAML pipeline with a 500.
"""

import inspect
from pathlib import Path
from typing import Any, Dict, List, Optional

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper
from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError

from haystack_dcsr.core.storage.request_errors import RETRY_AFTER_S, first_line, request_status
from haystack_dcsr.haystack2.retriever import DCSREmbeddingRetriever, DCSRRetriever, DCSRTextEmbedder


class DCSRPipelineWrapper(BasePipelineWrapper):
    """A DCSR query pipeline served by Hayhooks. ``pipeline_file``: the pipeline's YAML, beside the module that
    defines the subclass Hayhooks loads (which may name another file). The pipeline holds a ``DCSRRetriever`` (a
    query in), or a ``DCSRTextEmbedder`` feeding a ``DCSREmbeddingRetriever``; the answer is the retriever's
    passages."""

    pipeline_file = "pipeline.yml"

    def setup(self) -> None:
        folder = Path(inspect.getfile(type(self))).parent
        self.pipeline = Pipeline.loads((folder / self.pipeline_file).read_text())
        self._query_input, self._retriever = _query_input_and_retriever(self.pipeline)

    def run_api(self, query: str, top_k: Optional[int] = None, filters: Optional[Dict[str, Any]] = None) -> List[dict]:
        """Passages for ``query`` ranked by HasAns, each with its supporting sentences (``meta.dcsr_sentences``)."""
        component, name = self._query_input
        inputs = {component: {name: query}}
        inputs.setdefault(self._retriever, {}).update(top_k=top_k, filters=filters)
        try:
            result = self.pipeline.run(inputs)
        except Exception as error:  # noqa: BLE001 - answered by kind, as the 1.x REST server answers
            raise _http_error(error) from None
        return [document.to_dict(flatten=False) for document in result[self._retriever]["documents"]]


def _query_input_and_retriever(pipeline: Pipeline):
    """(the component and input that take the query, the component whose documents answer)."""
    kinds = {name: type(instance) for name, instance in pipeline.walk()}
    for name, kind in kinds.items():
        if kind is DCSRRetriever:
            return (name, "query"), name
    embedders = [name for name, kind in kinds.items() if kind is DCSRTextEmbedder]
    retrievers = [name for name, kind in kinds.items() if kind is DCSREmbeddingRetriever]
    if len(embedders) == 1 and len(retrievers) == 1:
        return (embedders[0], "text"), retrievers[0]
    raise ValueError(
        "A DCSR pipeline to serve holds one DCSRRetriever, or one DCSRTextEmbedder and one DCSREmbeddingRetriever; "
        f"this one holds {', '.join(f'{n} ({k.__name__})' for n, k in kinds.items()) or 'no components'}"
    )


def _http_error(error: Exception) -> HTTPException:
    """A pipeline's error as the HTTP answer a client can act on (``core.storage.request_errors``): 503 for an engine
    that is down, 422 for a request the components refuse (naming the fault), 500 otherwise."""
    cause = error
    while isinstance(cause, PipelineRuntimeError) and cause.__cause__ is not None:
        cause = cause.__cause__  # Haystack wraps a component's error in its own
    status = request_status(cause)
    if status == 503:
        return HTTPException(status_code=503, detail=first_line(cause), headers={"Retry-After": str(RETRY_AFTER_S)})
    if status == 422:
        return HTTPException(status_code=422, detail=first_line(cause))
    return HTTPException(status_code=500, detail=f"internal error ({type(cause).__name__}); see the server's log")
