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

from dataclasses import replace
from typing import List, Sequence

from haystack import Document

from haystack_dcsr.core.indexes.optional_classes import is_instance
from haystack_dcsr.core.text.sentence_units import PassageRef, position, sentence_ids_of
from haystack_dcsr.haystack2.store_sentences import SPLITTER, StoreSentences


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
