"""The Haystack 2.x stores as sentence indexes (``core.ranking.passage_ranking.SentenceIndex``) for the ranking driver.

Every Haystack 2.x store integration has its own embedding search, score scale and filter translation; this
module is the one place that knows them. Supported: ``InMemoryDocumentStore`` (exact search),
``QdrantDocumentStore`` (``qdrant-haystack``: HNSW, local or a cluster), ``MilvusDocumentStore``
(``milvus-haystack``: a Milvus server, a cluster or Milvus Lite) and ``PgvectorDocumentStore``
(``pgvector-haystack``: PostgreSQL, exact or HNSW; its adapter lives in ``haystack2.pgvector``).
A store of DCSR's own (``DCSRMilvusDocumentStore``) brings its sentence index itself (``dcsr_search``). A hit's
passage version is read off the hit itself, so a sentence left over from an older version of its passage (a
re-write through the store, a direct delete) is a version the store cannot serve whole: the driver leaves it out.
"""

import operator
import threading
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from haystack import Document

from haystack_dcsr.core.indexes.optional_classes import is_instance
from haystack_dcsr.core.ranking.passage_ranking import SentenceHits
from haystack_dcsr.core.text.sentence_units import META, PassageRef, position, sentence_ids_of
from haystack_dcsr.haystack2.store_sentences import SPLITTER, StoreSentences


class InMemorySentences(StoreSentences):
    """Haystack's ``InMemoryDocumentStore``. Its ``embedding_retrieval`` builds an array of every stored embedding,
    sorts every score and copies each hit on every call, and a filtered read checks every Document: ~3 s a DCSR
    query at 103,368 sentences. Unfiltered searches on a ``dot_product`` store and the reads of passages run over
    an ``InMemoryView`` of the store's Documents instead (their vectors as one array, their sentences by passage),
    built once and rebuilt whenever the Documents the store holds change: the same hits, in the same order, with
    the same scores as ``embedding_retrieval``. Filtered searches go through the store's own."""

    def __init__(self, document_store):
        super().__init__(document_store)
        self._view: Optional[InMemoryView] = None
        self._view_lock = threading.Lock()

    def search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]]) -> List[SentenceHits]:
        if filters or self.similarity != "dot_product":
            return super().search(query_vectors, top_n, filters)
        view = self._current_view()
        return [view.search(vector, top_n) for vector in np.asarray(query_vectors)]

    def _search_one(self, vector, top_n, filters):
        return self.document_store.embedding_retrieval(
            query_embedding=list(map(float, vector)),
            filters=filters,
            top_k=top_n,
            scale_score=False,
            return_embedding=False,
        )

    def _stored(self, passages: Sequence[PassageRef]) -> List[Document]:
        by_passage = self._current_view().by_passage
        return [doc for pid in dict.fromkeys(ref.passage_id for ref in passages) for doc in by_passage.get(pid, ())]

    def _current_view(self) -> "InMemoryView":
        documents = list(self.document_store.storage.values())
        with self._view_lock:
            if self._view is None or not self._view.holds(documents):
                self._view = InMemoryView(documents)
            return self._view


class InMemoryView:
    """The Documents an ``InMemoryDocumentStore`` held at one moment, as a search and a read need them. It keeps
    those Document objects and their embedding lists alive, so ``holds`` can tell by identity whether the store
    still holds exactly them (a write or delete through any instance replaces or removes Document objects); an
    embedding list edited in place on a stored Document is not noticed."""

    def __init__(self, documents: List[Document]):
        self.documents = documents
        self.embeddings = [doc.embedding for doc in documents]
        self.embedded = [doc for doc in documents if doc.embedding is not None]
        # float64, as the store's own search computes its scores
        vectors = [doc.embedding for doc in self.embedded]
        self.matrix = np.array(vectors, dtype=np.float64) if vectors else np.zeros((0, 0))
        self.by_passage: Dict[str, List[Document]] = {}
        for doc in documents:
            info = doc.meta.get(META) if doc.meta else None
            if isinstance(info, dict) and "passage_id" in info:
                self.by_passage.setdefault(info["passage_id"], []).append(doc)

    def holds(self, documents: List[Document]) -> bool:
        return (
            len(documents) == len(self.documents)
            and all(map(operator.is_, documents, self.documents))
            and all(map(operator.is_, (doc.embedding for doc in documents), self.embeddings))
        )

    def search(self, vector: np.ndarray, top_n: int) -> SentenceHits:
        """The ``top_n`` embedded sentences by inner product, best first, ties in the store's order (as
        ``embedding_retrieval`` sorts them)."""
        if not len(self.embedded):
            return SentenceHits.empty()
        scores = np.dot(np.asarray(vector, dtype=np.float64)[None, :], self.matrix.T)[0]
        best = np.argsort(-scores, kind="stable")[:top_n]
        found = [self.embedded[i] for i in best]
        return SentenceHits.of(scores[best], [position(doc, SPLITTER) for doc in found], {d.id: d for d in found})


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

    @property
    def similarity(self) -> str:
        return "cosine" if milvus_metric(self.document_store) == "COSINE" else "dot_product"

    def _search_one(self, vector, top_n, filters):
        found = self.document_store._embedding_retrieval(list(map(float, vector)), filters=filters, top_k=top_n)
        return [doc if doc.score is None else _with_score(doc, 2.0 * doc.score - 1.0) for doc in found]

    def _stored(self, passages: Sequence[PassageRef]) -> List[Document]:
        return self._filter_in("id", sentence_ids_of(passages))

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


def pgvector_sentences(document_store):
    """``pgvector-haystack``'s ``PgvectorDocumentStore`` (``haystack2.pgvector``, imported only when used)."""
    from haystack_dcsr.haystack2.pgvector import PgvectorSentences

    return PgvectorSentences(document_store)


STORES = (  # (module, class, adapter): recognised by isinstance, the integration imported only by its user
    ("haystack.document_stores.in_memory", "InMemoryDocumentStore", InMemorySentences),
    ("haystack_integrations.document_stores.qdrant", "QdrantDocumentStore", QdrantSentences),
    ("milvus_haystack", "MilvusDocumentStore", MilvusSentences),
    ("haystack_integrations.document_stores.pgvector", "PgvectorDocumentStore", pgvector_sentences),
)


def sentence_store_for(document_store):
    """The driver's ``SentenceIndex`` over a store: the store's own (``dcsr_search``, a DCSR store such as
    ``DCSRMilvusDocumentStore``), or this module's adapter for an integration's store."""
    if callable(getattr(document_store, "dcsr_search", None)):
        return document_store.dcsr_search()
    for module, name, adapter in STORES:
        if is_instance(document_store, module, name):
            return adapter(document_store)
    raise TypeError(
        f"DCSRRetriever does not support {type(document_store).__name__} yet: use "
        f"{', '.join(name for _, name, _ in STORES)}, or add an adapter in haystack_dcsr/haystack2/stores.py"
    )
