"""DCSRRetriever: sentence vectors in, passages ranked by HasAns out."""

import json
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.nodes.retriever.dense import DenseRetriever
from haystack.schema import Document

from haystack_dcsr.core.indexes.filters import per_query_filters
from haystack_dcsr.core.model.dcsr_model import DCSRModel, save_towers
from haystack_dcsr.core.model.encoder import PassageTower
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.model.model_settings import DCSRSettings, model_setting
from haystack_dcsr.core.model.models import DEFAULT_MODEL, Pooling, Precision
from haystack_dcsr.core.ranking.hasans import TOP_N_SENTENCES
from haystack_dcsr.core.ranking.parameters import (
    check_parameters,
    check_passages_or_filters,
    check_search_params,
    first_device,
    renamed,
)
from haystack_dcsr.core.ranking.passage_ranking import rank_passages
from haystack_dcsr.haystack1.engine.passage_deletion import passages_matching
from haystack_dcsr.haystack1.engine.passage_embedding import PassageEmbedder
from haystack_dcsr.haystack1.engine.saved_store import save_faiss_store
from haystack_dcsr.haystack1.engine.sentence_engine import SentenceEngine, attach
from haystack_dcsr.haystack1.engine.sentence_map import map_path
from haystack_dcsr.haystack1.engine.sentence_ranking import mark_answers, passage_document
from haystack_dcsr.haystack1.engine.sentence_search import check_store_dimension, check_store_similarity
from haystack_dcsr.haystack1.query_encoder import QueryEncoder

CONFIG_NAME = "dcsr_retriever.json"
# the node's own settings that save() keeps beside the model directory (the model's are in dcsr_model.json)
SAVED_SETTINGS = ("top_k", "top_n_sentences", "temperature", "batch_size", "passage_cache_size", "search_params")


class DCSRRetriever(DenseRetriever):
    """Dense Contextual Sentence Representation retriever (Wu et al., ACL 2022).

    The store holds one vector per sentence (index passages through ``SentencePreprocessor``); each
    passage is encoded whole, so a sentence vector sees its neighbours. A query retrieves the top
    ``top_n_sentences`` sentences, softmaxes their inner products (``temperature``) into p_i, and
    ranks passages by ``HasAns(P) = 1 - prod(1 - p_i)`` over P's retrieved sentences::

        store = FAISSDocumentStore(embedding_dim=384, faiss_index_factory_str="Flat")
        store.write_documents(SentencePreprocessor().process(passages)["documents"])
        retriever = DCSRRetriever(document_store=store)
        store.update_embeddings(retriever)
        best = retriever.retrieve("Who founded the university?", top_k=5)
        best[0].score, best[0].meta["dcsr_sentences"][0]["text"]

    Returned passages carry their HasAns as ``score`` (already a probability, so ``scale_score`` has
    no effect) and, in ``meta["dcsr_sentences"]``, the retrieved sentences that support them.

    :param model: a DCSR model (``DCSRModel`` directory or hub name, a trainer output, or one tower
        for both sides): both towers and the settings they share; instead of ``query_model``/``passage_model``.
    :param query_model: query tower: HF directory or hub name; ignored when ``query_encoder`` is given.
    :param passage_model: passage tower; None uses ``query_model``'s (the same weights when it is one
        tower, as the paper initialises).
    :param query_encoder: a ``QueryEncoder`` node to use as the query tower (e.g. one trained with
        the MEQ query-side loss); YAML can reference one by name.
    :param pooling: ``marker`` (DCSR, for trained towers) or ``mean`` (zero-shot); None = from the model.
    :param top_n_sentences: sentences read per query before aggregation (paper: 3,000, ~100 x the
        mean sentences per passage).
    :param temperature: softmax temperature; None = the model's (1.0 for raw DCSR dot products as
        in the paper, 0.05 for normalised sentence-transformers vectors).
    :param max_seq_len_query: tokens per query; None = the model's (DPR's name; the core's ``max_query_length``).
    :param max_seq_len_passage: tokens per passage window; longer passages are windowed, never cut; None = the
        model's (DPR's name; the core's ``max_passage_length``).
    :param passage_cache_size: assembled passages kept in memory (LRU) between queries with a
        ``FAISSDocumentStore``, cleared whenever the index changes; 0 reads every passage from SQL.
    :param search_params: FAISS search settings applied per query: ``nprobe`` (IVF), ``efSearch``
        (HNSW; at least ``top_n_sentences`` is used), ``k_factor`` (a ``Refine`` stage). Measured settings:
        ``INDEX_PRESETS`` (``docs/guides/index-presets.md``).
    :param quantize: ``"int8"``: both towers encode with int8 weights and per-token int8 activations
        (CPU only; the device defaults to it). The query tower compiles when the node is built, the passage
        tower at its first indexing batch. Index and query with the same setting: vectors move slightly
        (``docs/guides/int8.md``). A given ``query_encoder`` keeps its own.
    :param devices: Haystack's device list (e.g. ``["cuda:1"]``); the first is used. ``device`` is the
        same as a one-item list.
    :param use_auth_token: a Hugging Face token (or True: the stored one) for private or gated hub models.
    :param mark_answer_sentence: also score every sentence of each returned passage *alone* against the
        query and put the best in ``meta["dcsr_answer_sentence"]`` (``haystack_dcsr.core.text.evidence``): the
        supporting sentences are scored in context, so the first of them is not always the answer.
    :param max_seq_len: deprecated name of ``max_seq_len_passage`` (a DeprecationWarning).
    :param max_query_len: deprecated name of ``max_seq_len_query`` (a DeprecationWarning).
    """

    def __init__(
        self,
        document_store: Optional[BaseDocumentStore] = None,
        model: Optional[str] = None,
        query_model: str = DEFAULT_MODEL,
        passage_model: Optional[str] = None,
        query_encoder: Optional[QueryEncoder] = None,
        pooling: Optional[Pooling] = None,
        normalize: Optional[bool] = None,
        top_k: int = 10,
        top_n_sentences: int = TOP_N_SENTENCES,
        temperature: Optional[float] = None,
        max_seq_len_query: Optional[int] = None,
        max_seq_len_passage: Optional[int] = None,
        batch_size: int = 32,
        use_gpu: bool = True,
        device: Optional[str] = None,
        precision: Precision = "auto",
        progress_bar: bool = True,
        passage_cache_size: int = 100_000,
        search_params: Optional[Dict[str, float]] = None,
        quantize: Optional[Quantize] = None,
        devices: Optional[List[str]] = None,
        mark_answer_sentence: bool = False,
        use_auth_token: Optional[Union[str, bool]] = None,
        max_seq_len: Optional[int] = None,
        max_query_len: Optional[int] = None,
    ):
        super().__init__()
        max_seq_len_passage = renamed(
            "DCSRRetriever", "max_seq_len_passage", max_seq_len_passage, "max_seq_len", max_seq_len
        )
        max_seq_len_query = renamed(
            "DCSRRetriever", "max_seq_len_query", max_seq_len_query, "max_query_len", max_query_len
        )
        check_parameters(
            "DCSRRetriever",
            optional=("quantize",),
            quantize=quantize,
            top_k=top_k,
            top_n_sentences=top_n_sentences,
            temperature=temperature,
            max_seq_len_query=max_seq_len_query,
            max_seq_len_passage=max_seq_len_passage,
            batch_size=batch_size,
            passage_cache_size=passage_cache_size,
        )
        if model is not None and (query_model != DEFAULT_MODEL or passage_model or query_encoder):
            raise ValueError("DCSRRetriever: give either model or query_model/passage_model/query_encoder, not both")
        # a given QueryEncoder is the query side; the model then supplies the passage tower only
        source, passage = (
            (passage_model or query_model, None) if query_encoder else (model or query_model, passage_model)
        )
        self.model = DCSRModel.from_pretrained(  # locates the files now (a missing directory fails here)
            source,
            device=first_device("DCSRRetriever", device, devices),
            use_gpu=use_gpu,
            precision=precision,
            quantize=quantize,
            token=use_auth_token,
            passage=passage,
            pooling=pooling,
            normalize=normalize,
            max_query_length=max_seq_len_query,
            max_passage_length=max_seq_len_passage,
        )
        self.query_encoder = query_encoder or QueryEncoder(self.model, batch_size=batch_size, progress_bar=progress_bar)
        self.document_store = document_store
        self.top_k = top_k
        self.top_n_sentences = top_n_sentences
        self.temperature = temperature
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.passage_cache_size = passage_cache_size
        self.mark_answer_sentence = mark_answer_sentence
        self.search_params = check_search_params(search_params)
        self.engine = SentenceEngine(passage_cache_size, self.search_params)
        if document_store is not None:
            check_store_dimension(document_store, self.embedding_dim)
            check_store_similarity(document_store, self.query_encoder.settings.normalize)
            attach(document_store)

    # ---- encoding -------------------------------------------------------------------------------

    @property
    def embedding_dim(self) -> int:
        return self.query_encoder.dim

    @property
    def passage_model(self) -> str:
        return self.model.files.passage_dir

    @property
    def passage_encoder(self) -> PassageTower:
        """Loaded on first use: query-only pipelines never pay for the passage tower."""
        tower = self.model.passage_tower
        if tower.dim != self.embedding_dim:
            raise ValueError(
                f"Passage tower {self.passage_model!r} has dimension {tower.dim} but the query tower has "
                f"{self.embedding_dim}"
            )
        return tower

    @property
    def hasans_temperature(self) -> float:
        """The softmax temperature HasAns uses: the one given, else the model's (``model_setting``)."""
        return model_setting(self.temperature, self.query_encoder.settings, "temperature")

    def embed_queries(self, queries: List[str]) -> np.ndarray:
        return self.query_encoder.encode(queries)

    def embed_documents(self, documents: List[Document]) -> np.ndarray:
        """One vector per sentence Document, each passage encoded once and whole (``PassageEmbedder``)."""
        return self._embedder(self.document_store).embed(documents)

    def _embedder(self, store: Optional[BaseDocumentStore]) -> PassageEmbedder:
        return PassageEmbedder(
            self.passage_encoder, store, self.batch_size, self.progress_bar, on_embedded=self.engine.note_embedding
        )

    # ---- retrieval ------------------------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        filters: Optional[FilterType] = None,
        top_k: Optional[int] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        scale_score: Optional[bool] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> List[Document]:
        return self.retrieve_batch(
            [query], filters=filters, top_k=top_k, index=index, headers=headers, document_store=document_store
        )[0]

    def retrieve_batch(
        self,
        queries: List[str],
        filters: Optional[Union[FilterType, List[Optional[FilterType]]]] = None,
        top_k: Optional[int] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        batch_size: Optional[int] = None,
        scale_score: Optional[bool] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> List[List[Document]]:
        if isinstance(queries, str):
            queries = [queries]
        if headers:
            raise NotImplementedError("DCSRRetriever does not support headers")
        store = self._store(document_store, "retrieve()")
        top_k = self.top_k if top_k is None else top_k
        check_parameters("DCSRRetriever", top_k=top_k)
        check_store_dimension(store, self.embedding_dim, written=False)
        check_store_similarity(store, self.query_encoder.settings.normalize)
        per_query = per_query_filters(filters, len(queries))  # a bad count fails before any query is encoded
        ranked = rank_passages(
            self.engine.search_for(store, index),
            self.embed_queries(queries),
            self.hasans_temperature,
            self.top_n_sentences,
            top_k,
            per_query,
            batch_size=batch_size or max(self.batch_size, 256),
            progress_bar=self.progress_bar,
        )
        results = [[passage_document(p, self.mark_answer_sentence) for p in passages] for passages in ranked]
        if self.mark_answer_sentence:
            encode_units = lambda units: self.passage_encoder.encode(units, batch_size=self.batch_size)  # noqa: E731
            mark_answers(queries, results, self.embed_queries, encode_units)
        return results

    def _store(self, given: Optional[BaseDocumentStore], where: str) -> BaseDocumentStore:
        store = given or self.document_store
        if store is None:
            raise ValueError(f"DCSRRetriever has no document store: pass one to __init__ or to {where}")
        return store

    # ---- maintenance ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Forget what this retriever read from its stores (vector maps, cached passages). It notices its
        own writes and every write through the store that re-assigns vector ids; call this after changing the FAISS
        index by hand (``store.faiss_indexes``)."""
        self.engine.refresh()

    def save_index_map(
        self,
        index_path: Union[str, Path],
        index: Optional[str] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> Path:
        """Deprecated: ``store.save`` then ``save_index_map`` is not crash-safe (Haystack rewrites the index file in
        place) and checks nothing at load. This saves the whole set with ``save_faiss_store`` instead (the index,
        its config, a copy of a SQLite database and the vector map, each atomically, with checksums): load it with
        ``load_faiss_store(index_path)`` or through ``load_pipeline``. Returns the vector map's path."""
        warnings.warn(
            "save_index_map is deprecated: save with save_faiss_store(store, index_path) (or save_pipeline), which "
            "this now calls, and load with load_faiss_store(index_path)",
            DeprecationWarning,
            stacklevel=2,
        )
        store = self._store(document_store, "save_index_map()")
        search = self.engine.search_for(store, index)
        return map_path(save_faiss_store(store, index_path, index, search=search))

    def train_index(
        self,
        max_sentences: int = 100_000,
        seed: int = 0,
        index: Optional[str] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> int:
        """Train a FAISS index that needs it (SQ, IVF, PQ) on the vectors of a random sample of the
        store's passages, encoded whole as they will be indexed; returns the vectors used (0 when the
        index needs no training). Call it after writing the sentences and before update_embeddings."""
        return self._embedder(document_store or self.document_store).train_faiss_index(max_sentences, seed, index)

    def delete_passages(
        self,
        passage_ids: Optional[List[str]] = None,
        index: Optional[str] = None,
        document_store: Optional[BaseDocumentStore] = None,
        filters: Optional[Dict[str, Any]] = None,
    ) -> int:
        """Delete passages (every sentence Document of each, stale ones included) by passage id, or those
        whose meta matches ``filters`` (Haystack 1.x syntax: a sentence carries its passage's meta), and
        return how many sentence Documents went. Unlike ``store.delete_documents`` on a FAISS Flat index,
        the remaining vectors keep pointing at the right sentences (see ``passage_deletion``), so no
        re-embedding is needed."""
        store = self._store(document_store, "delete_passages()")
        check_passages_or_filters(passage_ids, filters)
        if filters is not None:  # (checked by passages_matching before anything is read or deleted)
            passage_ids = passages_matching(store, filters, index)
        return self.engine.delete_passages(store, index, list(passage_ids))

    # ---- persistence ----------------------------------------------------------------------------

    def save(self, save_dir: Union[Path, str]) -> None:
        """A model directory (``DCSRModel``: both towers and ``dcsr_model.json``) plus this node's own
        settings in ``dcsr_retriever.json``; ``DCSRRetriever.load`` (or ``model=save_dir``) reads it back."""
        settings = DCSRSettings.paired(
            self.query_encoder.settings, self.model.settings, "query encoder", self.passage_model
        )
        save_towers(
            save_dir,
            settings,
            self.query_encoder.tower,
            self.passage_encoder,
            splitter_file=self.model.files.splitter_file,
        )
        config = {name: getattr(self, name) for name in SAVED_SETTINGS}
        (Path(save_dir) / CONFIG_NAME).write_text(json.dumps(config, indent=1))

    @classmethod
    def load(
        cls, load_dir: Union[Path, str], document_store: Optional[BaseDocumentStore] = None, **kwargs
    ) -> "DCSRRetriever":
        """A retriever written by ``save`` (older ones, whose towers carry their own settings, too)."""
        config_file = Path(load_dir) / CONFIG_NAME
        if not config_file.is_file():
            raise FileNotFoundError(f"{config_file} not found: not a directory written by DCSRRetriever.save")
        config = {**json.loads(config_file.read_text()), **kwargs}
        return cls(document_store=document_store, model=str(load_dir), **config)
