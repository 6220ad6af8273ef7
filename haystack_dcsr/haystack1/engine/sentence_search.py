"""Finding the top-N sentences of a query in a document store, and reading the passages they form.

DCSR reads ~N=3,000 sentence hits per query, far more than a passage retriever. Haystack's
``FAISSDocumentStore.query_by_embedding`` fetches every hit from SQL and sorts them with a
quadratic ``list.index`` (and ignores filters), so for FAISS the search runs on the FAISS index
directly with an in-memory ``SentenceMap`` from vector id to (passage, sentence); a flat
inner-product index is scanned with one BLAS product (FAISS's per-query heap is slow for
k = 3,000). Only the winning passages are then read from SQL, as plain columns, and kept in an
LRU cache that is cleared whenever the map changes. Other stores go through their own
``query_by_embedding``, which must honour filters and return raw scores.

Safe under threads and under batches with per-query filters: a search returns self-contained
``SentenceHits`` (they carry the passage table their keys point into), never keys into state that the
next call rewrites; the map is replaced, not mutated; the cache and SQL reads hold locks.
"""

import logging
import threading
from typing import Dict, Iterable, List, Mapping, Optional

import numpy as np
from cachetools import LRUCache
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.schema import Document

from haystack_dcsr.core.indexes.filters import check_filters, mixed_kinds
from haystack_dcsr.core.indexes.optional_classes import is_instance
from haystack_dcsr.core.indexes.vector_search import keeps_ids, search, search_selected
from haystack_dcsr.core.ranking.passage_ranking import SentenceHits
from haystack_dcsr.core.storage.store_guard import guard
from haystack_dcsr.core.text.sentence_units import (
    PassageRef,
    current_sentences,
    head_id,
    position,
    sentence_ids_of,
)
from haystack_dcsr.haystack1.engine.passage_writes import watch
from haystack_dcsr.haystack1.engine.sentence_map import (
    SentenceMap,
    check_in_sync,
    checksum_listing,
    map_path,
)
from haystack_dcsr.haystack1.engine.sql_rows import (
    doc_ids_at,
    fetch_documents,
    vector_columns,
    vector_ids_matching,
)

logger = logging.getLogger(__name__)

NUMERIC_RANGE_STORES = (("qdrant_haystack.document_stores.qdrant", "QdrantDocumentStore"),)  # $gt & co.: numbers only


class SentenceSearch:
    """Top-N sentence search over one index of a document store (a ``passage_ranking.SentenceIndex``); see
    the module docstring."""

    def __init__(self, document_store: BaseDocumentStore, index: Optional[str] = None, cache_size: int = 0):
        self.document_store = document_store
        self.index = index or document_store.index
        self._cache: Optional[LRUCache] = LRUCache(maxsize=cache_size) if cache_size else None
        self._cache_lock = threading.Lock()

    def invalidate(self) -> None:
        """Forget what was read from the store (call after changing it)."""
        if self._cache is not None:
            with self._cache_lock:
                self._cache.clear()

    @property
    def similarity(self) -> str:
        """How the store compares vectors (Haystack's ``similarity``)."""
        return self.document_store.similarity

    def reading(self):
        """The read side of the store's guard (``core.storage.store_guard``): the driver holds it across a batch."""
        return guard(self.document_store).reading()

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[SentenceHits]:
        raise NotImplementedError

    def note_embedding(self) -> None:
        """The retriever is embedding documents for this store (``update_embeddings`` runs)."""
        self.invalidate()

    def read(
        self, refs: Iterable[PassageRef], known: Mapping[str, Document] = {}
    ) -> Dict[PassageRef, Optional[List[Document]]]:
        """Each passage version's sentences in order, or None where the store no longer holds all of
        that version's sentences (deleted, or re-written since it was indexed)."""
        result: Dict[PassageRef, Optional[List[Document]]] = {}
        uncached = []
        for ref in dict.fromkeys(refs):
            cached = self._cached(ref)
            if cached is None:
                uncached.append(ref)
            else:
                result[ref] = cached
        wanted = sentence_ids_of(uncached)
        documents = {sid: known[sid] for sid in wanted if sid in known}
        documents.update(
            (doc.id, doc)
            for doc in fetch_documents(self.document_store, [sid for sid in wanted if sid not in documents], self.index)
        )
        for ref in uncached:
            result[ref] = current_sentences(ref, documents)
            if result[ref] is not None and self._cache is not None:
                with self._cache_lock:
                    self._cache[ref] = result[ref]
        return result

    def _cached(self, ref: PassageRef) -> Optional[List[Document]]:
        if self._cache is None:
            return None
        with self._cache_lock:
            return self._cache.get(ref)


class FaissSentenceSearch(SentenceSearch):
    """Searches a ``FAISSDocumentStore``'s FAISS index directly (no SQL per hit), through its own map of vector ids
    to sentences: extended when vectors are added, rebuilt when a write through the store re-assigns ids (it
    watches the store: ``passage_writes.watch``)."""

    def __init__(
        self,
        document_store,
        index: Optional[str] = None,
        cache_size: int = 0,
        search_params: Optional[Mapping[str, float]] = None,
    ):
        super().__init__(document_store, index, cache_size)
        self.search_params = dict(search_params or {})
        self._map = SentenceMap.empty()
        self._map_index: Optional[int] = None  # id() of the FAISS index the map describes
        self._stale = True
        self._map_lock = threading.Lock()
        watch(document_store, self)

    @property
    def faiss_index(self):
        faiss_index = self.document_store.faiss_indexes.get(self.index)
        if faiss_index is None:
            raise ValueError(f"Index {self.index!r} does not exist in the FAISSDocumentStore: index documents first")
        return faiss_index

    def invalidate(self) -> None:
        self._stale = True
        super().invalidate()

    def note_embedding(self) -> None:
        """Haystack resets the index before re-embedding everything: fewer vectors than the map
        knows means the map must be rebuilt. New vectors at the end only extend it."""
        faiss_index = self.document_store.faiss_indexes.get(self.index)
        if faiss_index is None or id(faiss_index) != self._map_index or faiss_index.ntotal < self._map.ntotal:
            self.invalidate()

    def current_map(self) -> SentenceMap:
        """The map of the index as it is now: extended with new vectors, rebuilt after anything else."""
        if self._fresh(self._map):
            return self._map
        with self._map_lock:
            if self._fresh(self._map):
                return self._map
            faiss_index = self.faiss_index
            ntotal, snapshot = faiss_index.ntotal, self._map
            rebuild = self._stale or self._map_index != id(faiss_index) or ntotal < snapshot.ntotal
            self._stale = False  # before reading: an invalidate() during the read marks it stale again
            try:
                if self._map_index is None:  # first use: a map saved beside the index saves the scan
                    snapshot = self._saved_map(ntotal) or snapshot
                    rebuild = snapshot.ntotal == 0 and ntotal > 0 or ntotal < snapshot.ntotal
                if rebuild or not self._probe(snapshot):
                    rows = vector_columns(self.document_store, self.index)
                    check_in_sync(rows, ntotal, keeps_ids=keeps_ids(faiss_index), describe=self._describe())
                    snapshot = SentenceMap.empty().with_rows(rows, self._read_heads, ntotal)
                else:
                    rows = vector_columns(self.document_store, self.index, range(snapshot.ntotal, ntotal))
                    snapshot = snapshot.with_rows(rows, self._read_heads, ntotal)
            except BaseException:
                self._stale = True
                raise
            self._map, self._map_index = snapshot, id(faiss_index)
            super().invalidate()
            return snapshot

    def _saved_map(self, ntotal: int) -> Optional[SentenceMap]:
        """The map saved beside the index this store was loaded from, if the save's checksums vouch for it (a map
        cut short or from another save is ignored) and it describes these SQL rows (a few vector ids probed)."""
        from haystack_dcsr.core.storage.checksums import verify_checksums

        index_path = saved_index_path(self.document_store)
        path = None if index_path is None else map_path(index_path)
        if path is None or not path.is_file():
            return None
        try:
            verify_checksums(path.parent, only=[path.name], listing=checksum_listing(index_path))
            saved = SentenceMap.load(path)
        except (OSError, ValueError) as error:
            logger.warning("Ignoring the vector map %s (%s): reading the index from SQL instead", path, error)
            return None
        if not (saved.ntotal <= ntotal and self._probe(saved)):
            logger.warning("The vector map %s does not describe this index: reading the index from SQL instead", path)
            return None
        logger.info("Loaded the vector map %s (%d vectors)", path, saved.ntotal)
        return saved

    def _fresh(self, snapshot: SentenceMap) -> bool:
        faiss_index = self.faiss_index
        return not self._stale and self._map_index == id(faiss_index) and snapshot.ntotal == faiss_index.ntotal

    def _probe(self, snapshot: SentenceMap) -> bool:
        """Do a few vectors the map knows still belong to the same sentences? (False when the index
        was rebuilt behind this retriever's back, e.g. by another retriever's update_embeddings.)"""
        probes = snapshot.probe_ids()
        if not probes:
            return snapshot.ntotal == 0
        now = doc_ids_at(self.document_store, self.index, probes)
        return all(now.get(v) == snapshot.sentence_id_at(v) for v in probes)

    def _read_heads(self, passage_ids: List[str]):
        return {
            position(doc).passage_id: position(doc)
            for doc in fetch_documents(self.document_store, [head_id(pid) for pid in passage_ids], self.index)
        }

    def _describe(self) -> str:
        return f"FAISSDocumentStore index {self.index!r}"

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[SentenceHits]:
        check_filters(filters)  # an unknown operator is an error, also on an empty index
        snapshot = self.current_map()
        faiss_index = self.faiss_index
        queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != faiss_index.d:
            raise ValueError(
                f"Query vectors have dimension {queries.shape[-1]} but the FAISS index {self.index!r} holds "
                f"{faiss_index.d}-dimensional vectors: query with the towers the index was built with, or re-index "
                "with store.update_embeddings(retriever)"
            )
        if self.document_store.similarity == "cosine":
            queries = queries / np.linalg.norm(queries, axis=1, keepdims=True).clip(min=1e-12)
        if faiss_index.ntotal == 0:
            return [SentenceHits.empty() for _ in queries]
        if filters:
            allowed = np.array(vector_ids_matching(self.document_store, self.index, filters), dtype=np.int64)
            if len(allowed) == 0:
                return [SentenceHits.empty() for _ in queries]
            scores, vector_ids = search_selected(
                faiss_index, queries, min(top_n, len(allowed)), allowed, self.search_params
            )
        else:
            scores, vector_ids = search(faiss_index, queries, min(top_n, faiss_index.ntotal), self.search_params)
        hits = []
        for row_scores, row_ids in zip(scores, vector_ids):
            keep, keys, sentences = snapshot.lookup(row_ids)
            hits.append(SentenceHits(row_scores[keep], keys, sentences, snapshot.passages))
        return hits


class StoreSentenceSearch(SentenceSearch):
    """Any Haystack store with ``query_by_embedding`` (e.g. ``InMemoryDocumentStore``).

    No passage cache: such stores give no cheap signal that their content changed. Each query's
    hits carry their own passage table, so concurrent and per-filter searches cannot mix."""

    def __init__(self, document_store, index: Optional[str] = None, cache_size: int = 0):
        super().__init__(document_store, index, cache_size=0)
        numeric_only = any(is_instance(document_store, *kind) for kind in NUMERIC_RANGE_STORES)
        self._numeric_ranges = type(document_store).__name__ if numeric_only else None
        self._size_checked = False

    def note_embedding(self) -> None:
        super().note_embedding()
        self._size_checked = False  # the store grows: look at its size again at the next query

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[SentenceHits]:
        check_filters(filters, numeric_ranges=self._numeric_ranges)
        if not self._size_checked:
            self._size_checked = True
            warn_if_brute_force_in_python(self.document_store, self.index)
        return [self._search_one(vector, top_n, filters) for vector in query_vectors]

    def _search_one(self, vector: np.ndarray, top_n: int, filters: Optional[FilterType]) -> SentenceHits:
        try:
            docs = self.document_store.query_by_embedding(
                vector, filters=filters, top_k=top_n, index=self.index, scale_score=False, return_embedding=False
            )
        except TypeError as error:  # InMemoryDocumentStore comparing a number with a string, say
            if not filters:
                raise
            raise mixed_kinds(filters, error) from None
        known = {doc.id: doc for doc in docs}
        where = [position(doc) for doc in docs]
        heads = {w.passage_id: w for w in where if w.index == 0}
        missing = list(dict.fromkeys(head_id(w.passage_id) for w in where if w.passage_id not in heads))
        for doc in fetch_documents(self.document_store, missing, self.index):
            heads[position(doc).passage_id] = position(doc)
        passages: List[PassageRef] = []
        keys: Dict[str, int] = {}
        rows, hit_keys, sentences = [], [], []
        for row, w in enumerate(where):
            head = heads.get(w.passage_id)
            if head is None or not w.same_version(head):
                continue  # a stale sentence, or one whose passage lost its sentence #0
            key = keys.get(w.passage_id)
            if key is None:
                key = keys[w.passage_id] = len(passages)
                passages.append(PassageRef.of(head))
            rows.append(row)
            hit_keys.append(key)
            sentences.append(w.index)
        scores = np.array([docs[row].score for row in rows], dtype=np.float32)
        return SentenceHits(
            scores, np.array(hit_keys, dtype=np.int64), np.array(sentences, dtype=np.int32), passages, known
        )


# sentence vectors past which InMemoryDocumentStore's search (a Python loop over every vector, ~0.1 ms each)
# costs seconds a query: 50,000 one-sentence passages took 6.3 s
IN_MEMORY_SENTENCES_WARNING = 20_000


def warn_if_brute_force_in_python(document_store, index: str) -> None:
    """A warning, naming the store's size and what to use instead, where ``InMemoryDocumentStore`` holds so many
    sentence vectors that every query scores each of them in Python."""
    from haystack.document_stores import InMemoryDocumentStore

    if not isinstance(document_store, InMemoryDocumentStore):
        return
    count = document_store.get_embedding_count(index=index)
    if count > IN_MEMORY_SENTENCES_WARNING:
        logger.warning(
            "InMemoryDocumentStore holds %d sentence vectors: each query scores every one of them in Python "
            "(seconds a query past ~%d). Use FAISSDocumentStore (or a server engine such as Milvus) at this size.",
            count,
            IN_MEMORY_SENTENCES_WARNING,
        )


def saved_index_path(document_store) -> Optional[str]:
    """The saved FAISS index file a store was loaded from (None: not loaded from a save); its vector map and its
    checksum file are named after it (``map_path``, ``checksum_listing``)."""
    return getattr(document_store, "_component_config", {}).get("params", {}).get("faiss_index_path")


def sentence_search_for(
    document_store: BaseDocumentStore,
    index: Optional[str] = None,
    cache_size: int = 0,
    search_params: Optional[Mapping[str, float]] = None,
) -> SentenceSearch:
    from haystack.document_stores import FAISSDocumentStore

    if isinstance(document_store, FAISSDocumentStore):
        return FaissSentenceSearch(document_store, index, cache_size, search_params)
    if hasattr(document_store, "dcsr_search"):  # a store that brings its own search (MilvusDocumentStore)
        return document_store.dcsr_search(index)
    if search_params:
        logger.warning(
            "search_params %s apply to FAISS indexes only; %s ignores them",
            search_params,
            type(document_store).__name__,
        )
    return StoreSentenceSearch(document_store, index)


def check_store_dimension(document_store: BaseDocumentStore, dim: int, written: bool = True) -> None:
    """Refuse a store whose vector width is not the towers'; ``written``: nothing was written yet."""
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


def check_store_similarity(document_store: BaseDocumentStore, normalized: bool) -> None:
    """Refuse a store that searches on its own server (``dcsr_search``: Milvus) and compares by cosine, for a model
    whose vectors are not normalised: the server normalises both sides, which changes the inner products DCSR
    ranks by (FAISS normalises them in the open, as the model's users expect, so it is left as it is)."""
    if hasattr(document_store, "dcsr_search") and document_store.similarity == "cosine":
        if not normalized:
            raise ValueError(
                "This model's vectors are not normalised, so they must be compared by dot product, but the "
                "MilvusDocumentStore uses cosine: create it with similarity='dot_product'"
            )
