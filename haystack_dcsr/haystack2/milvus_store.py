"""A Haystack 2.x document store for DCSR sentence Documents on a Milvus server, in the collection layout the 1.x
``MilvusDocumentStore`` writes (``core.indexes.milvus_index``): one collection serves both Haystacks, so a 1.x index
moves to 2.x without re-indexing, and the reverse.

It is a thin store over the core's ``MilvusSentenceIndex``, as the integrations' stores are over their clients:
``DocumentWriter`` writes ``DCSRSentenceSplitter`` -> ``DCSRDocumentEmbedder`` output into it, ``DCSRRetriever``
ranks over it through the one ranking driver, and what DCSR needs of the collection (inner products, a known
index kind, the model's width) is fixed when the store is built, before anything is embedded. milvus-haystack's
own ``MilvusDocumentStore`` stays supported by the 2.x retriever for collections it wrote (``stores``).
"""

import asyncio
from typing import Any, Dict, List, Optional

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace

from haystack_dcsr.core.indexes.milvus_filters import milvus_expression
from haystack_dcsr.core.indexes.milvus_index import READ_BATCH, MilvusSentenceIndex, SentenceRow, literal, metric_of
from haystack_dcsr.core.ranking.parameters import check_passages_or_filters
from haystack_dcsr.core.storage.store_guard import guard
from haystack_dcsr.core.text.sentence_units import position
from haystack_dcsr.haystack2.filters import dict_syntax
from haystack_dcsr.haystack2.store_sentences import SPLITTER


class DCSRMilvusDocumentStore:
    """DCSR sentence Documents in a Milvus collection (a standalone server, a cluster's proxy, Zilliz Cloud).

    :param uri: the server, e.g. ``http://localhost:19530``.
    :param collection_name: the collection; created on first use (the 1.x store's ``index``).
    :param embedding_dim: the DCSR towers' width (checked against an existing collection).
    :param index_preset: the vector index, as on 1.x: ``flat`` (exact), ``hnsw`` or ``ivf_sq8`` (``MILVUS_PRESETS``).
    :param similarity: ``dot_product`` (what DCSR ranks by) or ``cosine`` (for models whose vectors are normalised).
    :param token: ``user:password`` or an API key (default: the ``MILVUS_TOKEN`` variable, if set).
    :param timeout: seconds any server call may take before it fails with ``MilvusUnavailableError``.
    :param consistency_level: ``Session`` (this process reads its own writes; readers do not wait for the server's
        time tick), ``Strong``, ``Bounded`` or ``Eventually`` (``core.indexes.milvus_index.CONSISTENCY_LEVELS``).
    """

    def __init__(
        self,
        uri: str = "http://localhost:19530",
        collection_name: str = "dcsr_sentences",
        embedding_dim: int = 384,
        index_preset: str = "flat",
        similarity: str = "dot_product",
        token: Optional[Secret] = Secret.from_env_var("MILVUS_TOKEN", strict=False),
        timeout: float = 30.0,
        consistency_level: str = "Session",
    ):
        self.uri = uri
        self.collection_name = collection_name
        self.embedding_dim = embedding_dim
        self.index_preset = index_preset
        self.similarity = similarity
        self.token = token
        self.timeout = timeout
        self.consistency_level = consistency_level
        self.index = MilvusSentenceIndex(
            uri,
            collection_name,
            embedding_dim,
            metric_of(similarity),
            index_preset,
            (token.resolve_value() if token else None) or "",
            timeout,
            consistency_level,
        )

    # ---- the Haystack 2.x DocumentStore protocol -------------------------------------------------

    def count_documents(self) -> int:
        """Sentence Documents stored."""
        return self.index.count()

    def filter_documents(self, filters: Optional[Dict[str, Any]] = None) -> List[Document]:
        """Sentence Documents whose passage's meta matches ``filters`` (Haystack 2.x syntax), with their vectors."""
        expression = milvus_expression(dict_syntax(filters))
        return [_document(row) for row in self.index.sentences(expression, with_vectors=True)]

    def write_documents(self, documents: List[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write sentence Documents; each passage named is written whole (its sentences of any other version go).

        ``policy``: ``NONE`` and ``OVERWRITE`` re-write a stored passage (DCSR writes passages whole); ``SKIP``
        leaves a stored passage as it is; ``FAIL`` refuses the call if any sentence is stored already. ``SKIP`` and
        ``FAIL`` insert the passages that are new, so a load keeps its rate as the collection grows (upserts slow
        down: ``MilvusSentenceIndex.write``). Returns the
        sentence Documents written. Documents that are not DCSR sentences, or a call that embeds only some of its
        sentences, are refused before anything is written."""
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise ValueError("write_documents takes a list of Documents (DCSRSentenceSplitter's output)")
        for doc in documents:
            position(doc, SPLITTER)  # a Document that is not a DCSR sentence is refused here, by name
        embedded = [doc.embedding is not None for doc in documents]
        if any(embedded) and not all(embedded):
            raise ValueError(
                f"{embedded.count(False)} of {len(documents)} sentence Documents have no embedding: embed every "
                "sentence (DCSRDocumentEmbedder) or none, so that no passage is served half-embedded"
            )
        new = policy in (DuplicatePolicy.SKIP, DuplicatePolicy.FAIL)  # only passages with no stored sentence are left
        if new:
            documents, stored = self.index.unstored_passages(documents)
            if stored and policy == DuplicatePolicy.FAIL:
                raise DuplicateDocumentError(
                    f"{len(stored)} sentence Document(s) exist already in collection {self.collection_name!r}: "
                    f"{', '.join(sorted(stored)[:5])}"
                )
        vectors = np.asarray([doc.embedding for doc in documents], np.float32) if documents and all(embedded) else None
        return self.index.write(documents, vectors, new=new)

    def delete_documents(self, document_ids: List[str]) -> None:
        """Delete sentence Documents by id (a passage left without one of its sentences is no longer served)."""
        self.index.delete(ids=list(document_ids))

    # the async protocol (DocumentWriter.run_async, Pipeline.run_async): the same calls in a worker thread
    async def count_documents_async(self) -> int:
        return await asyncio.to_thread(self.count_documents)

    async def filter_documents_async(self, filters: Optional[Dict[str, Any]] = None) -> List[Document]:
        return await asyncio.to_thread(self.filter_documents, filters)

    async def write_documents_async(
        self, documents: List[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        return await asyncio.to_thread(self.write_documents, documents, policy)

    async def delete_documents_async(self, document_ids: List[str]) -> None:
        await asyncio.to_thread(self.delete_documents, document_ids)

    # ---- DCSR --------------------------------------------------------------------------------------

    def delete_passages(self, passage_ids: Optional[List[str]] = None, filters: Optional[Dict[str, Any]] = None) -> int:
        """Delete whole passages (every sentence of each, of any version) by passage id, or those whose meta
        matches ``filters`` (Haystack 2.x syntax); returns the sentence Documents deleted."""
        check_passages_or_filters(passage_ids, filters)
        if filters is not None:
            expressions = [milvus_expression(dict_syntax(filters))]
        else:
            ids = list(passage_ids)
            expressions = [f"passage_id in {literal(ids[i : i + READ_BATCH])}" for i in range(0, len(ids), READ_BATCH)]
        deleted = 0
        for expression in expressions:
            deleted += self.index.count(expression)
            self.index.delete(expression=expression)
        return deleted

    def wait_until_indexed(self, timeout: float = 3600.0) -> Dict[str, int]:
        """Seal what was written and wait until the server searches every row through the vector index: after a
        bulk load, before serving (``MilvusSentenceIndex.wait_until_indexed``)."""
        return self.index.wait_until_indexed(timeout)

    def dcsr_search(self) -> "MilvusSentenceSearch":
        """The ranking driver's ``SentenceIndex`` over this collection (what ``DCSRRetriever`` ranks over)."""
        return MilvusSentenceSearch(self)

    # ---- serialisation -----------------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(
            self,
            uri=self.uri,
            collection_name=self.collection_name,
            embedding_dim=self.embedding_dim,
            index_preset=self.index_preset,
            similarity=self.similarity,
            token=self.token.to_dict() if self.token else None,
            timeout=self.timeout,
            consistency_level=self.consistency_level,
        )

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRMilvusDocumentStore":
        deserialize_secrets_inplace(data["init_parameters"], keys=["token"])
        return default_from_dict(cls, data)


class MilvusSentenceSearch:
    """The core Milvus index for the ranking driver, with Haystack 2.x filters turned into Milvus expressions; a
    ``GuardedIndex``, so this process's own writes wait for a query and the reverse."""

    def __init__(self, store: DCSRMilvusDocumentStore):
        self.index, self.delete_passages = store.index, store.delete_passages
        self._guard = guard(store)

    def reading(self):
        return self._guard.reading()

    @property
    def similarity(self) -> str:
        return self.index.similarity

    def search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]] = None):
        return self.index.search(query_vectors, top_n, milvus_expression(dict_syntax(filters)))

    def read(self, passages, known={}):
        return self.index.read(passages, known)


def _document(row: SentenceRow) -> Document:
    embedding = None if row.embedding is None else row.embedding.tolist()
    return Document(id=row.id, content=row.content, meta=dict(row.meta), embedding=embedding)
