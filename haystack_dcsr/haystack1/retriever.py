"""DCSRRetriever: sentence vectors in, passages ranked by HasAns out."""

import json
import logging
import threading
from pathlib import Path
from typing import Dict, List, Optional, Union

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.nodes.retriever.dense import DenseRetriever
from haystack.schema import Document
from tqdm.auto import tqdm

from haystack_dcsr.core.dcsr_model import ModelFiles, model_setting
from haystack_dcsr.core.encoder import PassageTower
from haystack_dcsr.core.evidence import mark_answer_sentences
from haystack_dcsr.core.hasans import TOP_N_SENTENCES
from haystack_dcsr.core.int8 import Quantize
from haystack_dcsr.core.models import DEFAULT_MODEL, Pooling, Precision
from haystack_dcsr.core.parameters import check_parameters, check_search_params, first_device
from haystack_dcsr.haystack1.passage_deletion import delete_passages
from haystack_dcsr.haystack1.passage_embedding import PassageEmbedder
from haystack_dcsr.haystack1.passage_writes import keep_passages_whole
from haystack_dcsr.haystack1.query_encoder import QueryEncoder
from haystack_dcsr.haystack1.sentence_ranking import SENTENCE_TEXTS, SentenceRanker
from haystack_dcsr.haystack1.sentence_search import SentenceSearch, check_store_dimension, sentence_search_for
from haystack_dcsr.haystack1.store_guard import guard

logger = logging.getLogger(__name__)

CONFIG_NAME = "dcsr_retriever.json"


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
    :param max_seq_len: tokens per passage window; longer passages are windowed, never cut.
    :param passage_cache_size: assembled passages kept in memory (LRU) between queries with a
        ``FAISSDocumentStore``, cleared whenever the index changes; 0 reads every passage from SQL.
    :param search_params: FAISS search settings applied per query: ``nprobe`` (IVF), ``efSearch``
        (HNSW; at least ``top_n_sentences`` is used), ``k_factor`` (a ``Refine`` stage). See the
        README's scale guide for measured settings.
    :param quantize: ``"int8"``: both towers encode with int8 weights and per-token int8 activations,
        compiled at the first batch (CPU only; the device defaults to it). Index and query with the same
        setting: vectors move slightly (README, "The towers on a CPU"). A given ``query_encoder`` keeps its own.
    :param devices: Haystack's device list (e.g. ``["cuda:1"]``); the first is used. ``device`` is the
        same as a one-item list.
    :param use_auth_token: a Hugging Face token (or True: the stored one) for private or gated hub models.
    :param mark_answer_sentence: also score every sentence of each returned passage *alone* against the
        query and put the best in ``meta["dcsr_answer_sentence"]`` (``haystack_dcsr.core.evidence``): the
        supporting sentences are scored in context, so the first of them is not always the answer.
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
        max_seq_len: Optional[int] = None,
        max_query_len: Optional[int] = None,
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
    ):
        super().__init__()
        device = first_device("DCSRRetriever", device, devices)
        check_parameters(
            optional=("quantize",),
            quantize=quantize,
            top_k=top_k,
            top_n_sentences=top_n_sentences,
            temperature=temperature,
            max_seq_len=max_seq_len,
            max_query_len=max_query_len,
            batch_size=batch_size,
            passage_cache_size=passage_cache_size,
        )
        if model is not None and (query_model != DEFAULT_MODEL or passage_model or query_encoder):
            raise ValueError("DCSRRetriever: give either model or query_model/passage_model/query_encoder, not both")
        self.document_store = document_store
        files = ModelFiles.locate(model or query_model, use_auth_token)  # a missing directory fails now
        self.query_encoder = query_encoder or QueryEncoder(
            model or query_model,  # it reads the model's query settings itself (dcsr_model.json wins)
            pooling=pooling,
            normalize=normalize,
            max_seq_len=max_query_len,
            batch_size=batch_size,
            use_gpu=use_gpu,
            device=device,
            precision=precision,
            progress_bar=progress_bar,
            quantize=quantize,
            use_auth_token=use_auth_token,
        )
        if passage_model:
            files = ModelFiles.locate(passage_model, use_auth_token)
        self.passage_model = files.passage_dir
        self._passage_options = {
            **files.settings.tower_overrides("passage"),
            "device": device,
            "use_gpu": use_gpu,
            "precision": precision,
            "quantize": quantize,
        }
        self._passage_options.update(
            (key, value)
            for key, value in dict(pooling=pooling, normalize=normalize, max_length=max_seq_len).items()
            if value is not None
        )
        self._passage_encoder: Optional[PassageTower] = None
        self.top_k = top_k
        self.top_n_sentences = top_n_sentences
        self.temperature = temperature
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.passage_cache_size = passage_cache_size
        self.mark_answer_sentence = mark_answer_sentence
        self.search_params = check_search_params(search_params)
        self._searches: Dict[tuple, SentenceSearch] = {}
        self._searches_lock = threading.Lock()
        if document_store is not None:
            check_store_dimension(document_store, self.embedding_dim)
            attach(document_store)

    # ---- encoding -------------------------------------------------------------------------------

    @property
    def embedding_dim(self) -> int:
        return self.query_encoder.dim

    @property
    def passage_encoder(self) -> PassageTower:
        """Loaded on first use: query-only pipelines never pay for the passage tower."""
        if self._passage_encoder is None:
            self._passage_encoder = PassageTower(self.passage_model, **self._passage_options)
            if self._passage_encoder.dim != self.embedding_dim:
                raise ValueError(
                    f"Passage tower {self.passage_model!r} has dimension {self._passage_encoder.dim} but the query "
                    f"tower has {self.embedding_dim}"
                )
        return self._passage_encoder

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
        def note_embedding():
            with self._searches_lock:
                for search in self._searches.values():
                    search.note_embedding()

        return PassageEmbedder(
            self.passage_encoder, store, self.batch_size, self.progress_bar, on_embedded=note_embedding
        )

    @property
    def _ranker(self) -> SentenceRanker:
        return SentenceRanker(self.top_n_sentences, self.hasans_temperature, self.mark_answer_sentence)

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
        store = document_store or self.document_store
        if store is None:
            raise ValueError("DCSRRetriever has no document store: pass one to __init__ or to retrieve()")
        top_k = self.top_k if top_k is None else top_k
        check_parameters(top_k=top_k)
        check_store_dimension(store, self.embedding_dim, written=False)
        per_query_filters = filters if isinstance(filters, list) else [filters] * len(queries)
        if len(per_query_filters) != len(queries):
            raise ValueError(f"Got {len(per_query_filters)} filters for {len(queries)} queries")
        search = self._search_for(store, index)
        store_guard = guard(store)
        results: List[List[Document]] = []
        step = batch_size or max(self.batch_size, 256)
        batches = range(0, len(queries), step)
        for start in tqdm(batches, disable=not self.progress_bar or len(batches) < 2, desc="Querying", unit=" batches"):
            vectors = self.embed_queries(queries[start : start + step])
            with store_guard.reading():  # never in the middle of a write call (store_guard)
                results.extend(
                    self._ranker.search_and_rank(search, vectors, per_query_filters[start : start + step], top_k)
                )
        if self.mark_answer_sentence:
            for query, passages in zip(queries, results):
                sentences = {doc.id: doc.meta.pop(SENTENCE_TEXTS) for doc in passages}
                mark_answer_sentences(
                    self.embed_queries,
                    lambda units: self.passage_encoder.encode(units, batch_size=self.batch_size),
                    query,
                    passages,
                    lambda doc: sentences[doc.id],
                )
        return results

    def _search_for(self, store: BaseDocumentStore, index: Optional[str]) -> SentenceSearch:
        key = (id(store), index or store.index)
        attach(store)
        with self._searches_lock:
            if key not in self._searches:
                self._searches[key] = sentence_search_for(store, index, self.passage_cache_size, self.search_params)
            return self._searches[key]

    # ---- maintenance ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Forget what this retriever read from its stores (vector maps, cached passages). It notices
        its own writes and Haystack's, and checks results against the store; call this after
        another process rebuilt the index in place."""
        with self._searches_lock:
            for search in self._searches.values():
                search.invalidate()

    def save_index_map(
        self,
        index_path: Union[str, Path],
        index: Optional[str] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> Path:
        """Save the FAISS vector map beside ``index_path`` (call it right after
        ``store.save(index_path)``). A store later loaded with ``FAISSDocumentStore.load(index_path)``
        then answers its first query without reading every sentence row from SQL; the map is
        checked against the index and SQL first and ignored if it does not match.
        """
        from haystack_dcsr.haystack1.sentence_map import MAP_SUFFIX
        from haystack_dcsr.haystack1.sentence_search import FaissSentenceSearch

        store = document_store or self.document_store
        search = self._search_for(store, index) if store is not None else None
        if not isinstance(search, FaissSentenceSearch):
            raise ValueError("save_index_map needs a FAISSDocumentStore (other stores keep no vector map)")
        path = Path(f"{index_path}{MAP_SUFFIX}")
        search.save_map(path)
        return path

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
        self, passage_ids: List[str], index: Optional[str] = None, document_store: Optional[BaseDocumentStore] = None
    ) -> int:
        """Delete passages (every sentence Document of each, stale ones included) by passage id and
        return how many sentence Documents went. Unlike ``store.delete_documents`` on a FAISS Flat
        index, the remaining vectors keep pointing at the right sentences (see
        ``passage_deletion``), so no re-embedding is needed."""
        store = document_store or self.document_store
        if store is None:
            raise ValueError("DCSRRetriever has no document store: pass one to __init__ or to delete_passages()")
        search = self._search_for(store, index)
        with guard(store).writing():
            if hasattr(search, "current_map"):
                search.current_map()  # refuse an index that is already out of sync, before deleting anything
            deleted = delete_passages(store, passage_ids, index)
            self.refresh()
        return deleted

    # ---- persistence ----------------------------------------------------------------------------

    def save(self, save_dir: Union[Path, str]) -> None:
        """``query_encoder/`` and ``passage_encoder/`` HF directories plus ``dcsr_retriever.json``."""
        save_dir = Path(save_dir)
        self.query_encoder.save(save_dir / "query_encoder")
        self.passage_encoder.save(save_dir / "passage_encoder")
        config = {
            "top_k": self.top_k,
            "top_n_sentences": self.top_n_sentences,
            "temperature": self.temperature,
            "batch_size": self.batch_size,
            "passage_cache_size": self.passage_cache_size,
            "search_params": self.search_params,
        }
        (save_dir / CONFIG_NAME).write_text(json.dumps(config, indent=1))

    @classmethod
    def load(
        cls, load_dir: Union[Path, str], document_store: Optional[BaseDocumentStore] = None, **kwargs
    ) -> "DCSRRetriever":
        load_dir = Path(load_dir)
        config_file = load_dir / CONFIG_NAME
        if not config_file.is_file():
            raise FileNotFoundError(f"{config_file} not found: not a directory written by DCSRRetriever.save")
        config = {**json.loads(config_file.read_text()), **kwargs}
        return cls(
            document_store=document_store,
            query_model=str(load_dir / "query_encoder"),
            passage_model=str(load_dir / "passage_encoder"),
            **config,
        )


def attach(document_store: BaseDocumentStore) -> None:
    """What a store gains by serving a DCSRRetriever: its writes wait for queries and the reverse
    (``store_guard``), and a re-written passage leaves no sentences of its old version behind
    (``passage_writes``)."""
    keep_passages_whole(document_store, guard(document_store))
