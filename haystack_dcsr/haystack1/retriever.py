"""DCSRRetriever: sentence vectors in, passages ranked by HasAns out."""

import json
import logging
import threading
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.nodes.retriever.dense import DenseRetriever
from haystack.schema import Document
from tqdm.auto import tqdm

from haystack_dcsr.core.dcsr_model import ModelFiles, model_setting
from haystack_dcsr.core.encoder import PassageTower
from haystack_dcsr.core.evidence import mark_answer_sentences
from haystack_dcsr.core.hasans import TOP_N_SENTENCES, PassageScores, kept_hits, rank_hits
from haystack_dcsr.core.int8 import Quantize
from haystack_dcsr.core.models import DEFAULT_MODEL, Pooling, Precision
from haystack_dcsr.core.parameters import check_parameters, first_device
from haystack_dcsr.core.sentence_units import (
    SUPPORT,
    PassageRef,
    current_sentences,
    group_by_passage,
    head_id,
    passage_sentence_ids,
    position,
)
from haystack_dcsr.core.vector_search import SEARCH_PARAMETERS
from haystack_dcsr.haystack1.passage_deletion import delete_passages
from haystack_dcsr.haystack1.passage_writes import keep_passages_whole
from haystack_dcsr.haystack1.query_encoder import QueryEncoder
from haystack_dcsr.haystack1.sentence_search import Hits, SentenceSearch, sentence_search_for
from haystack_dcsr.haystack1.sql_rows import fetch_documents
from haystack_dcsr.haystack1.store_guard import guard, writes_paused

logger = logging.getLogger(__name__)

CONFIG_NAME = "dcsr_retriever.json"
SENTENCE_TEXTS = "_dcsr_sentence_texts"  # carried from ranking to the answer-sentence pass, then removed


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
        """One vector per sentence Document, encoding each passage once and whole.

        Sentences whose passage siblings are not in ``documents`` (a batch boundary of
        ``update_embeddings``) have them read from the document store. A sentence that is not part
        of its passage's current version (left behind by re-writing the passage), or whose passage
        is missing sentences in the store, gets a zero vector and a warning instead of an error:
        Haystack's ``update_embeddings`` has already reset the index when it calls this, so an
        error here would leave the store without vectors. Such sentences are never retrieved.
        """
        groups = group_by_passage(documents)  # raises for documents that are not DCSR sentences
        if len(documents) == 1 and self.document_store is None and position(documents[0]).count > 1:
            # Haystack stores probe the vector size with one document before update_embeddings:
            # the sentence alone answers that, without its siblings
            return self.passage_encoder.encode([[documents[0].content]])
        passages = self._current_passages(groups)
        encodable = [pid for pid, sentences in passages.items() if sentences is not None]
        with writes_paused():  # queries may run while this batch is encoded (store_guard)
            vectors = self.passage_encoder.encode(
                [[doc.content for doc in passages[pid]] for pid in encodable],
                batch_size=self.batch_size,
                progress_bar=self.progress_bar and len(documents) > 1000,
            )
        row_of: Dict[str, int] = {}
        for pid in encodable:
            for doc in passages[pid]:
                row_of[doc.id] = len(row_of)
        with self._searches_lock:
            for search in self._searches.values():
                search.note_embedding()
        output = np.zeros((len(documents), self.embedding_dim), dtype=np.float32)
        unusable = []
        for i, doc in enumerate(documents):
            row = row_of.get(doc.id)  # only current sentences of complete passages have a row
            if row is None:
                unusable.append(doc.id)
            else:
                output[i] = vectors[row]
        if unusable:
            logger.warning(
                "%d sentence Document(s) are not part of a complete current passage and got no usable vector: %s%s. "
                "They are left over from re-writing a passage with another number of sentences, or their passage "
                "lost sentences; they are never retrieved. DCSRRetriever.delete_passages or re-writing the passage "
                "cleans them up.",
                len(unusable),
                ", ".join(unusable[:5]),
                " ..." if len(unusable) > 5 else "",
            )
        return output

    def _current_passages(self, groups: Dict[str, List[Document]]) -> Dict[str, Optional[List[Document]]]:
        """Each passage's current sentences in order (None when the store lacks some of them)."""
        known = {doc.id: doc for docs in groups.values() for doc in docs}
        heads = {pid: known[head_id(pid)] for pid in groups if head_id(pid) in known}
        refs: Dict[str, Optional[PassageRef]] = {pid: None for pid in groups}
        missing_heads = [head_id(pid) for pid in groups if pid not in heads]
        for doc in self._read(missing_heads):
            heads[position(doc).passage_id] = doc
        for pid, head in heads.items():
            refs[pid] = PassageRef.of(position(head))
        wanted = [
            sid
            for ref in refs.values()
            if ref is not None
            for sid in passage_sentence_ids(ref.passage_id, ref.count)
            if sid not in known
        ]
        known.update((doc.id, doc) for doc in self._read(wanted))
        return {pid: None if ref is None else current_sentences(ref, known) for pid, ref in refs.items()}

    def _read(self, ids: List[str]) -> List[Document]:
        if not ids:
            return []
        if self.document_store is None:
            raise ValueError(
                f"{len(ids)} sibling sentences of these passages are not in this batch and the retriever has "
                "no document store to read them from: create it with DCSRRetriever(document_store=<the store>)"
            )
        return fetch_documents(self.document_store, ids)

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
                results.extend(self._search_and_rank(search, vectors, per_query_filters[start : start + step], top_k))
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

    def _search_and_rank(
        self, search: SentenceSearch, vectors: np.ndarray, filters: List[Optional[FilterType]], top_k: int
    ) -> List[List[Document]]:
        """Queries sharing a filter are searched together; each query keeps its own hits."""
        for attempt in (1, 2):
            hits: List[Optional[Hits]] = [None] * len(vectors)
            for group in _same_filter_groups(filters):
                for row, found in zip(group, search.search(vectors[group], self.top_n_sentences, filters[group[0]])):
                    hits[row] = found
            try:
                return self._rank(search, hits, top_k)
            except _MapOutOfDate:
                if attempt == 2:
                    raise ValueError(
                        "The document store changed while this query ran (its vector ids moved again after the "
                        "retriever re-read them): retry, and avoid writing to the store while it serves queries"
                    ) from None
                search.invalidate()
        raise AssertionError("unreachable")

    def _rank(self, search: SentenceSearch, hits: Sequence[Hits], top_k: int) -> List[List[Document]]:
        """Passages by HasAns, read from the store. A passage that can no longer be rebuilt exactly is
        left out (with a warning) and HasAns is recomputed without its sentences (``rank_hits``,
        the rule the 2.x retriever applies too). Before returning, the search confirms that the
        supporting hits still belong to their sentences."""
        gone: List[set] = [set() for _ in hits]
        fetched: Dict[PassageRef, Optional[tuple]] = {}
        known = {sid: doc for h in hits for sid, doc in h.documents.items()}
        while True:
            views = [self._without(h, gone[q]) for q, h in enumerate(hits)]
            wanted = {h.passages[int(k)]: None for h, s in views for k in s.passages[:top_k]}
            fetched.update(search.fetch_passages([ref for ref in wanted if ref not in fetched], known))
            changed = False
            for q, (h, s) in enumerate(views):
                for key in s.passages[:top_k]:
                    if fetched[h.passages[int(key)]] is None:
                        gone[q].add(int(key))
                        changed = True
            if not changed:
                break
        dropped = sorted({ref.passage_id for ref, passage in fetched.items() if passage is None})
        if dropped:
            logger.warning(
                "Left out %d passage(s) that the store no longer holds as they were indexed (deleted, or re-written "
                "without store.update_embeddings(retriever)): %s",
                len(dropped),
                ", ".join(dropped[:5]),
            )
        supports: List[tuple] = []
        results = [
            [
                self._passage_document(
                    h, s, rank, fetched[h.passages[int(s.passages[rank])]], supports, self.mark_answer_sentence
                )
                for rank in range(min(top_k, len(s.passages)))
            ]
            for h, s in views
        ]
        if not search.verify(supports):
            raise _MapOutOfDate()
        return results

    def _without(self, h: Hits, gone: set) -> Tuple[Hits, PassageScores]:
        """The hits without those of the passages in ``gone``, and their HasAns."""
        keep = kept_hits(h.passage_keys, gone)
        scored = rank_hits(h.scores, h.passage_keys, self.hasans_temperature, gone=gone)
        if keep.all():
            return h, scored
        vector_ids = None if h.vector_ids is None else h.vector_ids[keep]
        kept = Hits(h.scores[keep], h.passage_keys[keep], h.sentence_indices[keep], h.passages, vector_ids, h.documents)
        return kept, scored

    @staticmethod
    def _passage_document(
        h: Hits, scores: PassageScores, rank: int, passage, supports: List[tuple], with_sentences: bool = False
    ) -> Document:
        content, sentences = passage
        key = int(scores.passages[rank])
        ref = h.passages[key]
        support = []
        for i in np.flatnonzero(h.passage_keys == key):
            sentence = sentences[h.sentence_indices[i]]
            if h.vector_ids is not None:
                supports.append((int(h.vector_ids[i]), sentence.id, ref))
            support.append(
                {
                    "sentence_index": int(h.sentence_indices[i]),
                    "text": sentence.content,
                    "score": float(h.scores[i]),
                    "probability": float(scores.sentence_probabilities[i]),
                }
            )
        meta = {**content.meta, SUPPORT: support}
        if with_sentences:  # for the answer-sentence pass, which removes them
            meta[SENTENCE_TEXTS] = [sentence.content for sentence in sentences]
        return Document(content=content.content, id=content.id, score=float(scores.hasans[rank]), meta=meta)

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
        import random

        from haystack.document_stores import FAISSDocumentStore

        from haystack_dcsr.haystack1.sql_rows import passage_head_ids

        store = document_store or self.document_store
        if not isinstance(store, FAISSDocumentStore):
            raise ValueError("train_index needs a FAISSDocumentStore")
        index = index or store.index
        if store.faiss_indexes[index].is_trained:
            return 0
        head_ids = passage_head_ids(store, index)
        random.Random(seed).shuffle(head_ids)
        chosen, total = [], 0
        for start in range(0, len(head_ids), 10_000):  # DCSR passages hold ~5 sentences: few rounds
            for head in fetch_documents(store, head_ids[start : start + 10_000], index):
                if total < max_sentences:
                    chosen.append(PassageRef.of(position(head)))
                    total += position(head).count
            if total >= max_sentences:
                break
        documents = {
            doc.id: doc
            for doc in fetch_documents(
                store, [sid for ref in chosen for sid in passage_sentence_ids(ref.passage_id, ref.count)], index
            )
        }
        passages = [s for s in (current_sentences(ref, documents) for ref in chosen) if s is not None]
        if not passages:
            raise ValueError(f"No complete passages in index {index!r} to train the FAISS index on: write them first")
        vectors = self.passage_encoder.encode(
            [[doc.content for doc in p] for p in passages], batch_size=self.batch_size
        )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if store.similarity == "cosine":
            store.normalize_embedding(vectors)  # as the store does to the vectors it will add
        store.train_index(embeddings=vectors, index=index)
        return len(vectors)

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


class _MapOutOfDate(Exception):
    """A hit's vector id no longer belongs to its sentence in SQL: the map must be rebuilt."""


def _same_filter_groups(filters: List[Optional[FilterType]]) -> List[List[int]]:
    """Row numbers grouped by equal filter, in first-seen order (filters are dicts: not hashable)."""
    groups: List[List[int]] = []
    for row, query_filter in enumerate(filters):
        for group in groups:
            if filters[group[0]] == query_filter:
                group.append(row)
                break
        else:
            groups.append([row])
    return groups


def check_search_params(params: Optional[Dict[str, float]]) -> Dict[str, float]:
    params = dict(params or {})
    for name, value in params.items():
        if name not in SEARCH_PARAMETERS:
            raise ValueError(f"DCSRRetriever: search_params accepts {', '.join(SEARCH_PARAMETERS)}, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"DCSRRetriever: search_params[{name!r}] must be a number > 0, got {value!r}")
    return params


def check_store_dimension(document_store: BaseDocumentStore, dim: int, written: bool = True) -> None:
    store_dim = getattr(document_store, "embedding_dim", None)
    if store_dim is not None and store_dim != dim:
        fix = (
            f"create the store with embedding_dim={dim} (nothing was written to it)"
            if written
            else "query it with the towers its vectors were made with, or re-index it with these"
        )
        raise ValueError(
            f"The document store expects {store_dim}-dimensional embeddings but the DCSR towers produce {dim}: {fix}"
        )
