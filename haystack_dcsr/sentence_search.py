"""Finding the top-N sentences of a query in a document store, and fetching the passages they form.

DCSR reads ~N=3,000 sentence hits per query, far more than a passage retriever. Haystack's
``FAISSDocumentStore.query_by_embedding`` fetches every hit from SQL and sorts them with a
quadratic ``list.index`` (and ignores filters), so for FAISS the search runs on the FAISS index
directly with an in-memory map from vector id to (passage, sentence), built once from a single SQL
scan; a flat inner-product index is scanned with one BLAS product (FAISS's per-query heap is slow
for k = 3,000). Only the top_k winning passages are then read from SQL, as plain columns, and kept
in an LRU cache that is cleared whenever the index changes. Other stores go through their own
``query_by_embedding``, which must honour filters and return raw scores.
"""
import logging
from collections import OrderedDict
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.schema import Document

from haystack_dcsr.sentence_docs import (
    assemble_passage,
    group_by_passage,
    parse_sentence_id,
    passage_sentence_ids,
    position,
)

logger = logging.getLogger(__name__)


class Hits(NamedTuple):
    """The retrieved sentences of one query: raw scores and where each sentence belongs."""

    scores: np.ndarray
    passage_keys: np.ndarray  # int keys into SentenceSearch.passage_ids
    sentence_indices: np.ndarray


class SentenceSearch:
    """Top-N sentence search over one index of a document store; see the module docstring."""

    def __init__(self, document_store: BaseDocumentStore, index: Optional[str] = None, cache_size: int = 0):
        self.document_store = document_store
        self.index = index or document_store.index
        self.passage_ids: List[str] = []
        self.sentence_counts: List[int] = []
        self._known: Dict[str, Document] = {}
        self.cache_size = cache_size
        self._cache: "OrderedDict[str, Tuple[Document, List[Document]]]" = OrderedDict()

    def invalidate(self) -> None:
        """Forget what was read from the store (call after changing it)."""
        self._cache.clear()

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[Hits]:
        raise NotImplementedError

    def fetch_passages(self, keys: Iterable[int]) -> Dict[int, Tuple[Document, List[Document]]]:
        """For each passage key: the passage rebuilt from its sentences, and those sentences in order."""
        result = {}
        uncached = []
        for key in keys:
            cached = self._cache.get(self.passage_ids[key])
            if cached is None:
                uncached.append(key)
            else:
                self._cache.move_to_end(self.passage_ids[key])
                result[key] = cached
        wanted = [sid for key in uncached for sid in passage_sentence_ids(self.passage_ids[key], self.sentence_counts[key])]
        missing = [sid for sid in wanted if sid not in self._known]
        fetched = fetch_documents(self.document_store, missing, self.index)
        groups = group_by_passage([self._known[sid] for sid in wanted if sid in self._known] + fetched)
        for key in uncached:
            sentences = sorted(groups.get(self.passage_ids[key], []), key=lambda doc: position(doc).index)
            result[key] = (assemble_passage(sentences), sentences)
            if self.cache_size:
                self._cache[self.passage_ids[key]] = result[key]
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return result


class FaissSentenceSearch(SentenceSearch):
    """Searches a ``FAISSDocumentStore``'s FAISS index directly (no SQL per hit)."""

    def __init__(self, document_store, index: Optional[str] = None, cache_size: int = 0):
        super().__init__(document_store, index, cache_size)
        self._map_key: Optional[Tuple[int, int]] = None
        self._vector_passage = np.zeros(0, dtype=np.int64)
        self._vector_sentence = np.zeros(0, dtype=np.int32)

    @property
    def faiss_index(self):
        faiss_index = self.document_store.faiss_indexes.get(self.index)
        if faiss_index is None:
            raise ValueError(f"Index {self.index!r} does not exist in the FAISSDocumentStore: index documents first")
        return faiss_index

    def invalidate(self) -> None:
        super().invalidate()
        self._map_key = None

    def _refresh(self) -> None:
        faiss_index = self.faiss_index
        key = (id(faiss_index), faiss_index.ntotal)
        if key == self._map_key:
            return
        super().invalidate()
        from haystack.document_stores.sql import DocumentORM

        rows = (
            self.document_store.session.query(DocumentORM.id, DocumentORM.vector_id)
            .filter(DocumentORM.index == self.index, DocumentORM.vector_id.isnot(None))
            .all()
        )
        passage_key: Dict[str, int] = {}
        vector_passage = np.full(faiss_index.ntotal, -1, dtype=np.int64)
        vector_sentence = np.zeros(faiss_index.ntotal, dtype=np.int32)
        counts: Dict[int, int] = {}
        for doc_id, vector_id in rows:
            passage_id, sentence_index = parse_sentence_id(doc_id)
            pkey = passage_key.setdefault(passage_id, len(passage_key))
            vector = int(vector_id)
            if vector < faiss_index.ntotal:
                vector_passage[vector] = pkey
                vector_sentence[vector] = sentence_index
            counts[pkey] = max(counts.get(pkey, 0), sentence_index + 1)
        self.passage_ids = list(passage_key)
        self.sentence_counts = [counts[k] for k in range(len(passage_key))]
        self._vector_passage, self._vector_sentence = vector_passage, vector_sentence
        self._map_key = key

    def _allowed_vectors(self, filters: FilterType) -> np.ndarray:
        from haystack.document_stores.filter_utils import LogicalFilterClause
        from haystack.document_stores.sql import DocumentORM, MetaDocumentORM

        select_ids = LogicalFilterClause.parse(filters).convert_to_sql(MetaDocumentORM)
        rows = (
            self.document_store.session.query(DocumentORM.vector_id)
            .filter(DocumentORM.index == self.index, DocumentORM.vector_id.isnot(None), DocumentORM.id.in_(select_ids))
            .all()
        )
        return np.array(sorted(int(r[0]) for r in rows), dtype=np.int64)

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[Hits]:
        self._refresh()
        faiss_index = self.faiss_index
        queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if self.document_store.similarity == "cosine":
            queries = queries / np.linalg.norm(queries, axis=1, keepdims=True).clip(min=1e-12)
        if faiss_index.ntotal == 0:
            return [_no_hits() for _ in queries]
        if filters:
            allowed = self._allowed_vectors(filters)
            if len(allowed) == 0:
                return [_no_hits() for _ in queries]
            scores, vector_ids = _search_selected(faiss_index, queries, min(top_n, len(allowed)), allowed)
        else:
            scores, vector_ids = _search(faiss_index, queries, min(top_n, faiss_index.ntotal))
        hits = []
        for row_scores, row_ids in zip(scores, vector_ids):
            valid = row_ids >= 0
            row_ids = row_ids[valid]
            keys = self._vector_passage[row_ids]
            mapped = keys >= 0
            hits.append(Hits(row_scores[valid][mapped], keys[mapped], self._vector_sentence[row_ids][mapped]))
        return hits


class StoreSentenceSearch(SentenceSearch):
    """Any Haystack store with ``query_by_embedding`` (e.g. ``InMemoryDocumentStore``).

    No passage cache: such stores give no cheap signal that their content changed."""

    def __init__(self, document_store, index: Optional[str] = None, cache_size: int = 0):
        super().__init__(document_store, index, cache_size=0)

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None) -> List[Hits]:
        self._known = {}
        passage_key: Dict[str, int] = {}
        self.passage_ids, self.sentence_counts = [], []
        hits = []
        for vector in query_vectors:
            docs = self.document_store.query_by_embedding(
                vector, filters=filters, top_k=top_n, index=self.index, scale_score=False, return_embedding=False
            )
            keys, sentences, scores = [], [], []
            for doc in docs:
                where = position(doc)
                key = passage_key.get(where.passage_id)
                if key is None:
                    key = passage_key[where.passage_id] = len(self.passage_ids)
                    self.passage_ids.append(where.passage_id)
                    self.sentence_counts.append(where.count)
                self._known[doc.id] = doc
                keys.append(key)
                sentences.append(where.index)
                scores.append(doc.score)
            hits.append(Hits(np.array(scores, dtype=np.float32), np.array(keys, dtype=np.int64), np.array(sentences, dtype=np.int32)))
        return hits


def fetch_documents(document_store: BaseDocumentStore, ids: List[str], index: Optional[str] = None) -> List[Document]:
    """Documents by id. For SQL-backed stores (FAISS included) reads plain columns instead of ORM
    objects: Haystack's ``get_documents_by_id`` builds an ORM object per row, milliseconds each,
    which would dominate query latency when a query reads hundreds of sentences."""
    from haystack.document_stores.sql import DocumentORM, MetaDocumentORM, SQLDocumentStore

    if not ids:
        return []
    if not isinstance(document_store, SQLDocumentStore):
        return document_store.get_documents_by_id(ids, index=index)
    index = index or document_store.index
    session = document_store.session
    documents: Dict[str, Document] = {}
    # Select by id only and check the index in Python: with "index = ?" in the WHERE clause SQLite
    # picks the index on that column, which every row shares, and scans the whole table.
    for start in range(0, len(ids), _SQL_BATCH):
        chunk = ids[start : start + _SQL_BATCH]
        rows = session.query(DocumentORM.id, DocumentORM.index, DocumentORM.content, DocumentORM.content_type,
                             DocumentORM.vector_id).filter(DocumentORM.id.in_(chunk))
        for row in rows:
            if row.index == index:
                meta = {} if row.vector_id is None else {"vector_id": row.vector_id}
                documents[row.id] = Document(id=row.id, content=row.content, content_type=row.content_type, meta=meta)
        metas = session.query(MetaDocumentORM.document_id, MetaDocumentORM.document_index, MetaDocumentORM.name,
                              MetaDocumentORM.value).filter(MetaDocumentORM.document_id.in_(chunk))
        for row in metas:
            if row.document_index == index and row.document_id in documents:
                documents[row.document_id].meta[row.name] = row.value
    return list(documents.values())


_SQL_BATCH = 5000


def _no_hits() -> Hits:
    return Hits(np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int32))


def sentence_search_for(document_store: BaseDocumentStore, index: Optional[str] = None, cache_size: int = 0) -> SentenceSearch:
    from haystack.document_stores import FAISSDocumentStore

    if isinstance(document_store, FAISSDocumentStore):
        return FaissSentenceSearch(document_store, index, cache_size)
    return StoreSentenceSearch(document_store, index)


def _search(faiss_index, queries: np.ndarray, k: int):
    """FAISS search; for a flat inner-product index, one BLAS product over the index's own vectors
    and a partial sort, which for DCSR's large k (3,000) is several times faster than FAISS's
    per-query heap."""
    import faiss

    base = faiss.downcast_index(faiss_index)
    flat_ip = isinstance(base, faiss.IndexFlat) and base.metric_type == faiss.METRIC_INNER_PRODUCT
    if not flat_ip or k >= base.ntotal:
        return faiss_index.search(queries, k)
    vectors = faiss.rev_swig_ptr(base.get_xb(), base.ntotal * base.d).reshape(base.ntotal, base.d)
    all_scores = queries @ vectors.T
    top = np.argpartition(-all_scores, k - 1, axis=1)[:, :k]
    top_scores = np.take_along_axis(all_scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    return np.take_along_axis(top_scores, order, axis=1), np.take_along_axis(top, order, axis=1).astype(np.int64)


def _search_selected(faiss_index, queries: np.ndarray, k: int, allowed: np.ndarray):
    """FAISS search restricted to the ``allowed`` vector ids, with the index type's own parameters."""
    import faiss

    selector = faiss.IDSelectorBatch(allowed)
    base = faiss.downcast_index(faiss_index)
    if isinstance(base, faiss.IndexIVF):
        params = faiss.SearchParametersIVF(sel=selector, nprobe=base.nprobe)
    elif isinstance(base, faiss.IndexHNSW):
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=base.hnsw.efSearch)
    else:
        params = faiss.SearchParameters(sel=selector)
    try:
        return faiss_index.search(queries, k, params=params)
    except RuntimeError:
        # index types without selector support: over-fetch and keep the allowed hits
        logger.info("FAISS index %s has no ID selector support; filtering hits after search", type(base).__name__)
        scores, ids = faiss_index.search(queries, min(faiss_index.ntotal, k * 10))
        keep = np.isin(ids, allowed)
        out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        out_ids = np.full((len(queries), k), -1, dtype=np.int64)
        for row in range(len(queries)):
            row_ids, row_scores = ids[row][keep[row]][:k], scores[row][keep[row]][:k]
            out_ids[row, : len(row_ids)], out_scores[row, : len(row_scores)] = row_ids, row_scores
        return out_scores, out_ids
