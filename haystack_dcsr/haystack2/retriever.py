"""Haystack 2.x retrieval: a query embedding in, passages ranked by HasAns out, as the integrations split it.

``DCSREmbeddingRetriever`` takes ``query_embedding`` (from ``DCSRTextEmbedder``), like
``QdrantEmbeddingRetriever`` or ``InMemoryEmbeddingRetriever``; ``DCSRRetriever`` is the two in one
component for the common case, a query string in.
"""

import asyncio
import functools
from typing import Any, Dict, List, Optional, Union

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack.utils.deserialization import deserialize_component_inplace

from haystack_dcsr.core.model.dcsr_model import DCSRModel, ModelFiles
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.model.model_settings import model_setting
from haystack_dcsr.core.model.models import DEFAULT_MODEL, Precision
from haystack_dcsr.core.ranking.hasans import TOP_N_SENTENCES
from haystack_dcsr.core.ranking.parameters import check_parameters, check_quantize_device
from haystack_dcsr.core.ranking.passage_ranking import RankedPassage, passage_parts, rank_passages
from haystack_dcsr.haystack2.filters import checked
from haystack_dcsr.haystack2.stores import sentence_store_for


@component
class DCSRTextEmbedder:
    """Embeds a query with a DCSR model's query tower (the text embedder beside ``DCSREmbeddingRetriever``).

    :param model: the DCSR model the sentences were embedded with (only its query tower is loaded).
    :param device: torch device; None picks CUDA when available.
    :param precision: ``auto``, ``fp32``, ``fp16`` or ``bf16``.
    :param quantize: ``"int8"``: the query tower runs int8, compiled at ``warm_up`` (CPU only); the
        document embedder that wrote the sentences should be set the same way.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        device: Optional[str] = None,
        precision: Precision = "auto",
        quantize: Optional[Quantize] = None,
    ):
        check_parameters("DCSRTextEmbedder", ("quantize",), quantize=quantize)
        check_quantize_device("DCSRTextEmbedder", quantize, device)
        self.model = model
        self.device = device
        self.precision = precision
        self.quantize = quantize
        self._model = DCSRModel.from_pretrained(model, device=device, precision=precision, quantize=quantize)

    def warm_up(self) -> None:
        """Load the query tower now rather than on the first query (an int8 one compiles here too)."""
        self._model.query_tower.warm_up()

    @component.output_types(embedding=List[float])
    def run(self, text: str) -> Dict[str, List[float]]:
        if not isinstance(text, str):
            raise TypeError(
                f"DCSRTextEmbedder embeds one string (documents: DCSRDocumentEmbedder), got {type(text).__name__}"
            )
        return {"embedding": self._model.encode_queries([text])[0].tolist()}

    @component.output_types(embedding=List[float])
    async def run_async(self, text: str) -> Dict[str, List[float]]:
        """``run`` in a worker thread: the event loop keeps serving while the query is encoded."""
        return await asyncio.to_thread(self.run, text)

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(
            self, model=self.model, device=self.device, precision=self.precision, quantize=self.quantize
        )

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRTextEmbedder":
        return default_from_dict(cls, data)


@component
class DCSREmbeddingRetriever:
    """Dense Contextual Sentence Representation retrieval (Wu et al., ACL 2022) from a query embedding.

    Reads the ``top_n_sentences`` sentences nearest to ``query_embedding`` from a store of DCSR sentence
    Documents (``DCSRSentenceSplitter`` -> ``DCSRDocumentEmbedder`` -> ``DocumentWriter``), softmaxes their
    scores into p_i and returns passages ranked by ``HasAns(P) = 1 - prod(1 - p_i)``, each rebuilt
    exactly from its sentences, with HasAns as ``score`` and the supporting sentences in
    ``meta["dcsr_sentences"]``. Sentences left over from an older version of a re-written passage are
    never counted or shown.

    :param document_store: ``InMemoryDocumentStore``, ``QdrantDocumentStore`` or ``MilvusDocumentStore`` holding
        sentence Documents.
    :param model: the DCSR model the sentences were embedded with: only its settings are read (the HasAns
        temperature, whether vectors are normalised), no weights.
    :param filters: default filters (Haystack 2.x syntax, on the passages' meta, which sentences carry).
    :param top_k: passages returned.
    :param top_n_sentences: sentences read per query (paper: 3,000); engines that cap k need less.
    :param temperature: HasAns softmax temperature; None uses the model's.
    :param filter_policy: how ``run``'s filters meet ``filters``: ``replace`` them (the default) or ``merge``
        with them (an AND of both), as the Haystack integrations' retrievers do.
    :param rank_in_database: compute HasAns in the engine, in one statement per query, instead of in this process
        (``PgvectorDocumentStore`` only: see ``haystack_dcsr.haystack2.pgvector``).
    """

    def __init__(
        self,
        document_store: Any,
        model: str = DEFAULT_MODEL,
        filters: Optional[Dict[str, Any]] = None,
        top_k: int = 10,
        top_n_sentences: int = TOP_N_SENTENCES,
        temperature: Optional[float] = None,
        filter_policy: Union[str, FilterPolicy] = FilterPolicy.REPLACE,
        rank_in_database: bool = False,
    ):
        check_parameters(
            "DCSREmbeddingRetriever", top_k=top_k, top_n_sentences=top_n_sentences, temperature=temperature
        )
        self.document_store = document_store
        self.model = model
        self.filters = filters
        self.top_k = top_k
        self.top_n_sentences = top_n_sentences
        self.temperature = temperature
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.rank_in_database = rank_in_database
        self._sentences = sentence_store_for(document_store)
        if rank_in_database and not callable(getattr(self._sentences, "rank_in_database", None)):
            raise ValueError(
                f"rank_in_database=True needs an engine that computes HasAns itself (PgvectorDocumentStore); "
                f"{type(document_store).__name__} is ranked in this process: leave rank_in_database False"
            )
        self._settings = ModelFiles.locate(model).settings
        if self._sentences.similarity == "cosine" and not self._settings.normalize:
            raise ValueError(
                "This model's vectors are not normalised, so they must be compared by dot product, but the store uses "
                "cosine: create it with similarity='dot_product' (Qdrant, DCSRMilvusDocumentStore), "
                "embedding_similarity_function='dot_product' (InMemory) or vector_function='inner_product' (pgvector)"
            )

    @component.output_types(documents=List[Document])
    def run(
        self, query_embedding: List[float], filters: Optional[Dict[str, Any]] = None, top_k: Optional[int] = None
    ) -> Dict[str, List[Document]]:
        if top_k is not None:
            check_parameters("DCSREmbeddingRetriever", top_k=top_k)
        filters = checked(apply_filter_policy(self.filter_policy, self.filters, filters))
        temperature = model_setting(self.temperature, self._settings, "temperature")
        rank = (
            self._sentences.rank_in_database
            if self.rank_in_database
            else functools.partial(rank_passages, self._sentences)
        )
        ranked = rank(  # under the store's read guard: one state between search and reads
            np.asarray([query_embedding], dtype=np.float32),
            temperature,
            self.top_n_sentences,
            self.top_k if top_k is None else top_k,
            [filters],
        )[0]
        return {"documents": [self._document(passage) for passage in ranked]}

    @component.output_types(documents=List[Document])
    async def run_async(
        self, query_embedding: List[float], filters: Optional[Dict[str, Any]] = None, top_k: Optional[int] = None
    ) -> Dict[str, List[Document]]:
        """``run`` in a worker thread: the engine's search and reads block, the event loop does not. Concurrent
        queries see the store between two writes, as ``run``'s do (the store's guard)."""
        return await asyncio.to_thread(self.run, query_embedding, filters, top_k)

    def delete_passages(self, passage_ids: Optional[List[str]] = None, filters: Optional[Dict[str, Any]] = None) -> int:
        """Delete whole passages from the store (every sentence of each, stale ones included) by passage id, or
        those whose meta matches ``filters`` (Haystack 2.x syntax), as the 1.x retriever's ``delete_passages``
        does; returns the sentence Documents deleted."""
        return self._sentences.delete_passages(passage_ids=passage_ids, filters=filters)

    @staticmethod
    def _document(ranked: RankedPassage) -> Document:
        doc_id, content, meta = passage_parts(ranked)
        return Document(id=doc_id, content=content, meta=meta, score=ranked.hasans)

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            model=self.model,
            filters=self.filters,
            top_k=self.top_k,
            top_n_sentences=self.top_n_sentences,
            temperature=self.temperature,
            filter_policy=self.filter_policy.value,
            rank_in_database=self.rank_in_database,
        )

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSREmbeddingRetriever":
        deserialize_component_inplace(data["init_parameters"], key="document_store")
        return default_from_dict(cls, data)


@component
class DCSRRetriever:
    """DCSR retrieval from a query string: ``DCSRTextEmbedder`` and ``DCSREmbeddingRetriever`` in one
    component, for the common case (see ``DCSREmbeddingRetriever`` for what it returns). Its settings are its
    two inner components' (``RETRIEVER_SETTINGS`` and ``EMBEDDER_SETTINGS``): read and saved from them.

    :param document_store: ``InMemoryDocumentStore``, ``QdrantDocumentStore``, ``DCSRMilvusDocumentStore`` or
        ``MilvusDocumentStore`` holding sentence Documents.
    :param model: the DCSR model the sentences were embedded with (only its query tower is loaded).
    :param filters: default filters (Haystack 2.x syntax), as for ``DCSREmbeddingRetriever``.
    :param top_k: passages returned.
    :param top_n_sentences: sentences read per query.
    :param temperature: HasAns softmax temperature; None uses the model's.
    :param device: torch device; None picks CUDA when available.
    :param precision: ``auto``, ``fp32``, ``fp16`` or ``bf16``.
    :param quantize: ``"int8"``: the query tower runs int8, compiled at ``warm_up`` (CPU only), as for
        ``DCSRTextEmbedder``.
    :param filter_policy: ``replace`` (the default) or ``merge`` ``run``'s filters with ``filters``.
    :param rank_in_database: HasAns computed by the engine (``PgvectorDocumentStore``), as for
        ``DCSREmbeddingRetriever``.
    """

    RETRIEVER_SETTINGS = (
        "document_store",
        "model",
        "filters",
        "top_k",
        "top_n_sentences",
        "temperature",
        "filter_policy",
        "rank_in_database",
    )
    EMBEDDER_SETTINGS = ("device", "precision", "quantize")
    _OWNERS = {**dict.fromkeys(RETRIEVER_SETTINGS, "_retriever"), **dict.fromkeys(EMBEDDER_SETTINGS, "_embedder")}

    def __init__(
        self,
        document_store: Any,
        model: str = DEFAULT_MODEL,
        filters: Optional[Dict[str, Any]] = None,
        top_k: int = 10,
        top_n_sentences: int = TOP_N_SENTENCES,
        temperature: Optional[float] = None,
        device: Optional[str] = None,
        precision: Precision = "auto",
        quantize: Optional[Quantize] = None,
        filter_policy: Union[str, FilterPolicy] = FilterPolicy.REPLACE,
        rank_in_database: bool = False,
    ):
        check_parameters(  # named as the component the user built
            "DCSRRetriever",
            optional=("quantize",),
            top_k=top_k,
            top_n_sentences=top_n_sentences,
            temperature=temperature,
            quantize=quantize,
        )
        check_quantize_device("DCSRRetriever", quantize, device)
        self._retriever = DCSREmbeddingRetriever(
            document_store, model, filters, top_k, top_n_sentences, temperature, filter_policy, rank_in_database
        )
        self._embedder = DCSRTextEmbedder(model, device, precision, quantize)

    def __getattr__(self, name: str) -> Any:
        """The settings live in the inner components: ``retriever.top_k`` is its ``DCSREmbeddingRetriever``'s."""
        inner = self.__dict__.get(self._OWNERS.get(name, ""))  # (absent while the object is being copied or built)
        if inner is not None:
            return getattr(inner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def warm_up(self) -> None:
        """Load the query tower now rather than on the first query (an int8 one compiles here too)."""
        self._embedder.warm_up()

    def delete_passages(self, passage_ids: Optional[List[str]] = None, filters: Optional[Dict[str, Any]] = None) -> int:
        """``DCSREmbeddingRetriever.delete_passages``: whole passages out of the store."""
        return self._retriever.delete_passages(passage_ids=passage_ids, filters=filters)

    @component.output_types(documents=List[Document])
    def run(
        self, query: str, filters: Optional[Dict[str, Any]] = None, top_k: Optional[int] = None
    ) -> Dict[str, List[Document]]:
        if top_k is not None:
            check_parameters("DCSRRetriever", top_k=top_k)
        embedding = self._embedder.run(query)["embedding"]
        return self._retriever.run(embedding, filters=filters, top_k=top_k)

    @component.output_types(documents=List[Document])
    async def run_async(
        self, query: str, filters: Optional[Dict[str, Any]] = None, top_k: Optional[int] = None
    ) -> Dict[str, List[Document]]:
        """``run`` in a worker thread (encoding, search and reads), for ``Pipeline.run_async`` and asyncio servers."""
        return await asyncio.to_thread(self.run, query, filters, top_k)

    def to_dict(self) -> Dict[str, Any]:
        """The inner components' settings, saved as this component's (one source: the components themselves)."""
        retriever = self._retriever.to_dict()["init_parameters"]
        embedder = self._embedder.to_dict()["init_parameters"]
        return default_to_dict(self, **retriever, **{key: embedder[key] for key in self.EMBEDDER_SETTINGS})

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRRetriever":
        deserialize_component_inplace(data["init_parameters"], key="document_store")
        return default_from_dict(cls, data)
