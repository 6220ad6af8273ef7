"""The Haystack 2.x stores as sentence indexes (``core.passage_ranking.SentenceIndex``) for the ranking driver.

Every Haystack 2.x store integration has its own embedding search, score scale and filter translation; this
module is the one place that knows them. Supported: ``InMemoryDocumentStore`` (exact search),
``QdrantDocumentStore`` (``qdrant-haystack``: HNSW, local or a cluster) and ``MilvusDocumentStore``
(``milvus-haystack``: a Milvus server, a cluster or Milvus Lite). A store of DCSR's own (``DCSRMilvusDocumentStore``)
brings its sentence index itself (``dcsr_search``). A hit's passage version is read off the hit
itself, so a sentence left over from an older version of its passage (a re-write through the store, a direct
delete) is a version the store cannot serve whole: the driver leaves it out.
"""

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from haystack import Document

from haystack_dcsr.core.parameters import check_passages_or_filters
from haystack_dcsr.core.passage_ranking import MaplessIndex, SentenceHits
from haystack_dcsr.core.sentence_units import META, PassageRef, current_sentences, passage_sentence_ids, position
from haystack_dcsr.core.store_guard import guard

PASSAGE_FIELD = f"meta.{META}.passage_id"
READ_CHUNK = 1_000  # ids per read: keeps an "in" filter small for every engine
SPLITTER = "DCSRSentenceSplitter"


class StoreSentences(MaplessIndex):
    """Search and read over one 2.x store; subclasses say how the store searches (``_search_one``).

    Searches and reads take the read side of the store's guard (``core.store_guard``), whose write side wraps
    the store's own write and delete methods, so a search or a read sees the store between two writes, never
    inside one (the stores are not safe under concurrent use); the retriever holds the read side across a whole
    query, so its search and its reads see one state. Writes by other processes (a server) are not guarded:
    there the passage versions keep a partial passage out."""

    def __init__(self, document_store):
        self.document_store = document_store
        self._guard = guard(document_store)

    def search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]]) -> List[SentenceHits]:
        with self._guard.reading():
            return self._search(query_vectors, top_n, filters)

    def _search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]]) -> List[SentenceHits]:
        hits = []
        for vector in np.asarray(query_vectors):
            found = self._search_one(vector, top_n, filters)
            positions = [position(doc, SPLITTER) for doc in found]
            hits.append(SentenceHits.of([doc.score for doc in found], positions, {doc.id: doc for doc in found}))
        return hits

    def _search_one(self, vector: np.ndarray, top_n: int, filters: Optional[Dict[str, Any]]) -> List[Document]:
        raise NotImplementedError

    def read(self, passages: Sequence[PassageRef], known: Dict[str, Any]) -> Dict[PassageRef, Optional[list]]:
        """Passages whose sentences were all hits come from the hits; the others are read from the store."""
        result = {ref: current_sentences(ref, known) for ref in passages}
        unread = [ref for ref, sentences in result.items() if sentences is None]
        if unread:
            with self._guard.reading():
                stored = {doc.id: doc for doc in self._stored(unread)}
            result.update((ref, current_sentences(ref, stored)) for ref in unread)
        return result

    def _stored(self, passages: Sequence[PassageRef]) -> List[Document]:
        """Every sentence stored under these passages' ids: one nested-meta ``in`` filter per chunk."""
        return self._filter_in(PASSAGE_FIELD, list(dict.fromkeys(ref.passage_id for ref in passages)))

    def delete_passages(self, passage_ids: Optional[List[str]] = None, filters: Optional[Dict[str, Any]] = None) -> int:
        """Delete whole passages (every sentence of each, of any version) by passage id, or those whose meta
        matches ``filters`` (the store's 2.x filters); returns the sentence Documents deleted."""
        check_passages_or_filters(passage_ids, filters)
        if filters is not None:
            matching = self.document_store.filter_documents(filters)
            passage_ids = list(dict.fromkeys(position(doc, SPLITTER).passage_id for doc in matching))
        ids = [doc.id for doc in self._sentences_of(list(passage_ids))]
        if ids:
            self.document_store.delete_documents(ids)  # the store's own write guard holds queries off meanwhile
        return len(ids)

    def _sentences_of(self, passage_ids: List[str]) -> List[Document]:
        return self._filter_in(PASSAGE_FIELD, passage_ids)

    def _filter_in(self, field: str, values: List[str]) -> List[Document]:
        found: List[Document] = []
        for start in range(0, len(values), READ_CHUNK):
            chunk = values[start : start + READ_CHUNK]
            found.extend(self.document_store.filter_documents({"field": field, "operator": "in", "value": chunk}))
        return found


class InMemorySentences(StoreSentences):
    def _search_one(self, vector, top_n, filters):
        return self.document_store.embedding_retrieval(
            query_embedding=list(map(float, vector)),
            filters=filters,
            top_k=top_n,
            scale_score=False,
            return_embedding=False,
        )


class QdrantSentences(StoreSentences):
    def __init__(self, document_store):
        super().__init__(document_store)
        from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever

        self._retriever = QdrantEmbeddingRetriever(document_store=document_store, scale_score=False)

    def _search_one(self, vector, top_n, filters):
        return self._retriever.run(query_embedding=list(map(float, vector)), filters=filters, top_k=top_n)["documents"]


class MilvusSentences(StoreSentences):
    """``milvus-haystack``'s ``MilvusDocumentStore``. Its search rescales inner products to ``(ip + 1) / 2``,
    which is undone here (HasAns softmaxes raw scores); its filters cannot reach inside the ``dcsr`` meta
    (field names are plain identifiers), so passages are read by their sentence ids (``id in [...]``)."""

    METRICS = ("IP", "COSINE")

    def __init__(self, document_store):
        super().__init__(document_store)
        metric = milvus_metric(document_store)
        if metric not in self.METRICS:
            raise ValueError(
                f"DCSR ranks by inner product, but this MilvusDocumentStore's index uses {metric}: create it with "
                "index_params={'index_type': 'HNSW' (or 'FLAT'), 'metric_type': 'IP', 'params': {...}}"
            )

    def _search_one(self, vector, top_n, filters):
        found = self.document_store._embedding_retrieval(list(map(float, vector)), filters=filters, top_k=top_n)
        return [doc if doc.score is None else _with_score(doc, 2.0 * doc.score - 1.0) for doc in found]

    def _stored(self, passages: Sequence[PassageRef]) -> List[Document]:
        return self._filter_in(
            "id", [sid for ref in passages for sid in passage_sentence_ids(ref.passage_id, ref.count)]
        )

    def _sentences_of(self, passage_ids: List[str]) -> List[Document]:
        """Its filters cannot reach a passage's sentences of every version: the collection is listed and sorted here."""
        wanted = set(passage_ids)
        return [doc for doc in self.document_store.filter_documents() if position(doc, SPLITTER).passage_id in wanted]


def _with_score(doc: Document, score: float) -> Document:
    return replace(doc, score=score)


def milvus_metric(document_store) -> str:
    """The metric of a ``MilvusDocumentStore``'s vector index (``L2`` when it was created without index_params)."""
    params = document_store.index_params or {}
    return str(params.get("metric_type", "L2")).upper()


STORES = {
    "InMemoryDocumentStore": InMemorySentences,
    "QdrantDocumentStore": QdrantSentences,
    "MilvusDocumentStore": MilvusSentences,
}


def sentence_store_for(document_store):
    """The driver's ``SentenceIndex`` over a store: the store's own (``dcsr_search``, a DCSR store such as
    ``DCSRMilvusDocumentStore``), or this module's adapter for an integration's store."""
    if callable(getattr(document_store, "dcsr_search", None)):
        return document_store.dcsr_search()
    kind = type(document_store).__name__
    if kind not in STORES:
        raise TypeError(
            f"DCSRRetriever does not support {kind} yet: use {', '.join(STORES)}, or add an adapter in "
            "haystack_dcsr/haystack2/stores.py"
        )
    return STORES[kind](document_store)


def similarity_of(document_store) -> str:
    """The store's vector comparison: ``dot_product`` or ``cosine`` (each store names it its own way)."""
    if type(document_store).__name__ == "MilvusDocumentStore":
        return "cosine" if milvus_metric(document_store) == "COSINE" else "dot_product"
    return getattr(document_store, "embedding_similarity_function", None) or getattr(document_store, "similarity")
