"""The sentence store behind the 2.x retriever: top-N sentence search and reading passages' sentences.

Every Haystack 2.x store integration has its own embedding retriever component and filter
translation; this module is the one place that knows them. Supported: ``InMemoryDocumentStore``
(exact search) and ``QdrantDocumentStore`` (``qdrant-haystack``: HNSW, local or a cluster).
"""

from typing import Any, Dict, List, Optional, Protocol, Sequence

from haystack import Document

from haystack_dcsr.core.sentence_units import META

PASSAGE_FIELD = f"meta.{META}.passage_id"
READ_CHUNK = 1_000  # passage ids per read: keeps an "in" filter small for every engine


class SentenceStore(Protocol):
    def search(self, vector: Sequence[float], top_n: int, filters: Optional[Dict[str, Any]]) -> List[Document]: ...

    def read(self, passage_ids: Sequence[str]) -> List[Document]: ...


class _Store:
    """Reading by passage id is the same for every store: one nested-meta ``in`` filter."""

    def __init__(self, document_store):
        self.document_store = document_store

    def read(self, passage_ids: Sequence[str]) -> List[Document]:
        found: List[Document] = []
        ids = list(dict.fromkeys(passage_ids))
        for start in range(0, len(ids), READ_CHUNK):
            chunk = ids[start : start + READ_CHUNK]
            found.extend(
                self.document_store.filter_documents({"field": PASSAGE_FIELD, "operator": "in", "value": chunk})
            )
        return found


class InMemorySentences(_Store):
    def search(self, vector, top_n, filters):
        return self.document_store.embedding_retrieval(
            query_embedding=list(map(float, vector)),
            filters=filters,
            top_k=top_n,
            scale_score=False,
            return_embedding=False,
        )


class QdrantSentences(_Store):
    def __init__(self, document_store):
        super().__init__(document_store)
        from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever

        self._retriever = QdrantEmbeddingRetriever(document_store=document_store, scale_score=False)

    def search(self, vector, top_n, filters):
        return self._retriever.run(query_embedding=list(map(float, vector)), filters=filters, top_k=top_n)["documents"]


def sentence_store_for(document_store) -> SentenceStore:
    kind = type(document_store).__name__
    if kind == "InMemoryDocumentStore":
        return InMemorySentences(document_store)
    if kind == "QdrantDocumentStore":
        return QdrantSentences(document_store)
    raise TypeError(
        f"DCSRRetriever does not support {kind} yet: use InMemoryDocumentStore or QdrantDocumentStore "
        "(qdrant-haystack), or add an adapter in haystack_dcsr/haystack2/stores.py"
    )


def similarity_of(document_store) -> str:
    """The store's vector comparison: ``dot_product`` or ``cosine`` (both stores name it their own way)."""
    return getattr(document_store, "embedding_similarity_function", None) or getattr(document_store, "similarity")
