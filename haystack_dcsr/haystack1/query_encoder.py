"""QueryEncoder: the query tower as a Haystack node, loadable and savable on its own.

The query tower is the part the MEQ paper's query-side contrastive loss trains, so it lives in
its own HF directory: a tower trained with that loss is swapped in by pointing ``model``
at it, without touching the indexed passages.
"""

from pathlib import Path
from typing import List, Optional, Union

import numpy as np
from haystack.nodes.base import BaseComponent

from haystack_dcsr.core.model.dcsr_model import DCSRModel, save_towers
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.model.models import DEFAULT_MODEL, Pooling, Precision
from haystack_dcsr.core.ranking.parameters import first_device, renamed


class QueryEncoder(BaseComponent):
    """Encodes questions into vectors.

    In a pipeline it adds ``query_embedding`` (or ``query_embeddings`` in ``run_batch``) to the
    output and passes the query on, e.g. to compare a question with its minimally edited variants::

        encoder = QueryEncoder("path/to/trained/query_encoder")
        vectors = encoder.encode(["who wrote the first harry potter book?",
                                  "who wrote the last harry potter book?"])

    :param model: a DCSR model directory (``DCSRModel``: its query tower and settings), a trainer
        output, one HF tower directory (e.g. ``<trainer output>/query_encoder``) or a hub name; the
        same name as ``DCSRRetriever``'s (``model_name_or_path``, Haystack's older name, is accepted too),
        or a ``DCSRModel`` already loaded (then the settings below are its own).
    :param devices: Haystack's device list; the first is used (``device`` is this package's name).
    :param use_auth_token: a Hugging Face token (or True: the stored one) for a private or gated hub model.
    :param pooling: ``marker`` (DCSR: ``[CLS] <sent> q [SEP]`` read at the marker), ``mean`` or ``cls``;
        None takes the model's settings (``dcsr_model.json``/``dcsr_encoder.json``) or infers them.
    :param max_seq_len_query: maximum query length in tokens (longer queries are truncated); DPR's name, as on
        ``DCSRRetriever`` (the core's ``max_query_length``). ``max_seq_len``, its old name here, still works with
        a DeprecationWarning.
    :param quantize: ``"int8"``: queries run through a compiled int8 copy of the tower (CPU only; compiled
        when the node is built); ``save`` keeps the fp32 weights.
    """

    outgoing_edges = 1

    def __init__(
        self,
        model: Optional[Union[str, DCSRModel]] = None,
        pooling: Optional[Pooling] = None,
        normalize: Optional[bool] = None,
        max_seq_len_query: Optional[int] = None,
        batch_size: int = 64,
        use_gpu: bool = True,
        device: Optional[str] = None,
        precision: Precision = "auto",
        progress_bar: bool = True,
        quantize: Optional[Quantize] = None,
        model_name_or_path: Optional[str] = None,
        devices: Optional[List[str]] = None,
        use_auth_token: Optional[Union[str, bool]] = None,
        max_seq_len: Optional[int] = None,
    ):
        super().__init__()
        max_seq_len_query = renamed("QueryEncoder", "max_seq_len_query", max_seq_len_query, "max_seq_len", max_seq_len)
        if model is not None and model_name_or_path is not None:
            raise ValueError("QueryEncoder: give model or model_name_or_path (the same thing), not both")
        if isinstance(model, DCSRModel):  # a retriever's own query side: the model it already located
            self._model = model
        else:
            self._model = DCSRModel.from_pretrained(
                model or model_name_or_path or DEFAULT_MODEL,
                device=first_device("QueryEncoder", device, devices),
                use_gpu=use_gpu,
                precision=precision,
                quantize=quantize,
                token=use_auth_token,
                pooling=pooling,
                normalize=normalize,
                max_query_length=max_seq_len_query,
            )
        self.settings = self._model.settings  # level, pooling, temperature, ...: dcsr_model.json, then the node's
        self.tower = self._model.query_tower
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.tower.warm_up()  # int8 compiles when the pipeline loads, not at the first query

    @property
    def dim(self) -> int:
        return self.tower.dim

    @property
    def temperature(self) -> float:
        """The HasAns temperature the model was trained for."""
        return self.settings.temperature

    def encode(self, queries: List[str]) -> np.ndarray:
        """(len(queries), dim) float32; raises ValueError naming an empty query."""
        show = self.progress_bar and len(queries) > 10 * self.batch_size
        return self.tower.encode(queries, batch_size=self.batch_size, progress_bar=show)

    def run(self, query: str):  # type: ignore
        return {"query": query, "query_embedding": self.encode([query])[0]}, "output_1"

    def run_batch(self, queries: List[str]):  # type: ignore
        return {"queries": queries, "query_embeddings": self.encode(queries)}, "output_1"

    def save(self, directory: Union[str, Path]) -> None:
        """A model directory (``dcsr_model.json`` with this encoder's settings, the tower as ``query_encoder/``,
        shared by both sides): load it back with ``QueryEncoder(directory)``, or give it to ``DCSRRetriever`` as
        ``query_model``."""
        save_towers(directory, self.settings, self.tower)
