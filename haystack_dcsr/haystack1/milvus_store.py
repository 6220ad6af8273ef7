"""A Haystack 1.x document store on a Milvus server, for DCSR sentence Documents.

farm-haystack 1.26 ships no Milvus store. ``MilvusDocumentStore`` is the 1.x face of ``core.indexes.milvus_index``:
``SentencePreprocessor`` output is written with ``write_documents``, ``update_embeddings(retriever)`` gives the
sentences their DCSR vectors, and ``DCSRRetriever`` searches it as it searches a ``FAISSDocumentStore``, with
Haystack 1.x filters translated to Milvus expressions. The data lives in the server: a saved pipeline holds the
URI and collection, not the sentences. Each Haystack ``index`` is one Milvus collection.
"""

import logging
from typing import Any, Dict, Generator, List, Optional, Union

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.errors import DuplicateDocumentError
from haystack.schema import Document, Label

from haystack_dcsr.core.indexes.filters import check_delete_filters, check_filters
from haystack_dcsr.core.indexes.milvus_filters import milvus_expression
from haystack_dcsr.core.indexes.milvus_index import MilvusSentenceIndex, metric_of
from haystack_dcsr.core.text.sentence_units import position
from haystack_dcsr.haystack1.engine.sentence_docs import SPLITTER
from haystack_dcsr.haystack1.engine.sentence_search import SentenceSearch

logger = logging.getLogger(__name__)

STORE = "MilvusDocumentStore"


class MilvusDocumentStore(BaseDocumentStore):
    """DCSR sentence Documents on a Milvus server (a standalone server, a cluster's proxy, or Zilliz Cloud).

    :param uri: the server, e.g. ``http://localhost:19530``.
    :param index: the default index (a Milvus collection).
    :param embedding_dim: the DCSR towers' width.
    :param similarity: ``dot_product`` (what DCSR ranks by) or ``cosine`` (for models whose vectors are normalised).
    :param index_preset: the Milvus vector index: ``flat`` (exact), ``hnsw`` or ``ivf_sq8``.
    :param token: ``user:password`` or an API key.
    :param timeout: seconds a server call may take before it fails with a clear error.
    :param consistency_level: ``Session`` (a query sees every write this process made that returned, without
        waiting for the server's time tick), ``Strong`` (every write that returned, from any process) or
        ``Bounded``/``Eventually`` (``core.indexes.milvus_index.CONSISTENCY_LEVELS``).
    :param duplicate_documents: ``overwrite`` (a passage written again replaces its sentences), ``skip`` (a stored
        passage is left as it is) or ``fail``. ``skip`` and ``fail`` insert the passages that are new, which keeps
        a bulk load's rate as the collection grows (``MilvusSentenceIndex.write``).
    :param progress_bar: shown by ``update_embeddings``.
    """

    def __init__(
        self,
        uri: str = "http://localhost:19530",
        index: str = "document",
        embedding_dim: int = 384,
        similarity: str = "dot_product",
        index_preset: str = "flat",
        token: str = "",
        timeout: float = 30.0,
        consistency_level: str = "Session",
        duplicate_documents: str = "overwrite",
        progress_bar: bool = True,
    ):
        super().__init__()
        metric_of(similarity)  # refused here, by name, before anything connects
        if duplicate_documents not in ("overwrite", "skip", "fail"):
            raise ValueError(f"duplicate_documents must be overwrite, skip or fail, got {duplicate_documents!r}")
        self.uri, self.index, self.embedding_dim, self.similarity = uri, index, embedding_dim, similarity
        self.index_preset, self.token, self.timeout = index_preset, token, timeout
        self.consistency_level, self.duplicate_documents, self.progress_bar = (
            consistency_level,
            duplicate_documents,
            progress_bar,
        )
        self._indexes: Dict[str, MilvusSentenceIndex] = {}
        self.sentence_index(index)  # connects now: a wrong URI fails here, naming it

    def sentence_index(self, index: Optional[str] = None) -> MilvusSentenceIndex:
        """The collection behind a Haystack index (created on first use)."""
        name = index or self.index
        if name not in self._indexes:
            self._indexes[name] = MilvusSentenceIndex(
                self.uri,
                name,
                self.embedding_dim,
                metric_of(self.similarity),
                self.index_preset,
                self.token,
                self.timeout,
                self.consistency_level,
            )
        return self._indexes[name]

    def wait_until_indexed(self, index: Optional[str] = None, timeout: float = 3600.0) -> Dict[str, int]:
        """Seal what was written and wait until the server searches every row through the vector index: after a
        bulk load, before serving (``MilvusSentenceIndex.wait_until_indexed``)."""
        return self.sentence_index(index).wait_until_indexed(timeout)

    def dcsr_search(self, index: Optional[str] = None) -> "MilvusSentenceSearch":
        """The ranking driver's ``SentenceIndex`` over one index (what ``DCSRRetriever`` searches)."""
        return MilvusSentenceSearch(self, index)

    # ---- writes ----------------------------------------------------------------------------------

    def write_documents(
        self,
        documents: Union[List[dict], List[Document]],
        index: Optional[str] = None,
        batch_size: int = 10_000,
        duplicate_documents: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        """Write sentence Documents (``SentencePreprocessor`` output); each passage named is written whole."""
        if headers:
            raise NotImplementedError(f"{STORE} does not support headers")
        docs = [Document.from_dict(d) if isinstance(d, dict) else d for d in documents]
        for doc in docs:
            position(doc, SPLITTER)  # a Document that is not a DCSR sentence is refused before anything is written
        target = self.sentence_index(index)
        policy = duplicate_documents or self.duplicate_documents
        if policy != "overwrite":
            docs, stored = target.unstored_passages(docs)
            if stored and policy == "fail":
                raise DuplicateDocumentError(
                    f"{len(stored)} document(s) exist already in {STORE} index {target.collection!r}: "
                    f"{', '.join(sorted(stored)[:5])}"
                )
        vectors = None
        if docs and all(doc.embedding is not None for doc in docs):
            vectors = np.asarray([doc.embedding for doc in docs], dtype=np.float32)
        target.write(docs, vectors, new=policy != "overwrite")  # "skip" / "fail": only new passages are left

    def update_embeddings(
        self,
        retriever,
        index: Optional[str] = None,
        filters: Optional[FilterType] = None,
        update_existing_embeddings: bool = True,
        batch_size: int = 10_000,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        """Give the sentences their vectors from ``retriever.embed_documents`` (DCSR encodes each passage whole)."""
        target = self.sentence_index(index)
        batch_size = batch_size or 10_000
        embedded = None if update_existing_embeddings else False
        batch: List[Document] = []
        for row in target.sentences(milvus_expression(filters), embedded=embedded, batch=min(batch_size, 10_000)):
            batch.append(self._document(row))
            if len(batch) >= batch_size:
                target.set_vectors(batch, retriever.embed_documents(batch))
                batch = []
        if batch:
            target.set_vectors(batch, retriever.embed_documents(batch))

    def update_document_meta(self, id: str, meta: Dict[str, Any], index: Optional[str] = None) -> None:
        target = self.sentence_index(index)
        rows = list(target.sentences(ids=[id], with_vectors=True))
        if not rows:
            raise ValueError(f"No document {id!r} in {STORE} index {target.collection!r}")
        doc = self._document(rows[0])
        doc.meta.update(meta)
        target.set_vectors([doc], [rows[0].embedding])

    def delete_documents(
        self,
        index: Optional[str] = None,
        ids: Optional[List[str]] = None,
        filters: Optional[FilterType] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        check_delete_filters(filters, numeric_ranges=STORE)  # ``{}`` or an empty $and never deletes all
        target = self.sentence_index(index)
        expression = milvus_expression(filters)
        if ids is not None and expression:
            ids = [row.id for row in target.sentences(expression, ids=ids)]
        target.delete(ids=ids, expression=expression)

    def delete_index(self, index: str) -> None:
        self.sentence_index(index).drop()
        self._indexes.pop(index, None)

    # ---- reads -----------------------------------------------------------------------------------

    def get_all_documents(
        self,
        index: Optional[str] = None,
        filters: Optional[FilterType] = None,
        return_embedding: Optional[bool] = None,
        batch_size: int = 10_000,
        headers: Optional[Dict[str, str]] = None,
    ) -> List[Document]:
        return list(self.get_all_documents_generator(index, filters, return_embedding, batch_size, headers))

    def get_all_documents_generator(
        self,
        index: Optional[str] = None,
        filters: Optional[FilterType] = None,
        return_embedding: Optional[bool] = None,
        batch_size: int = 10_000,
        headers: Optional[Dict[str, str]] = None,
    ) -> Generator[Document, None, None]:
        rows = self.sentence_index(index).sentences(milvus_expression(filters), with_vectors=bool(return_embedding))
        yield from (self._document(row, return_embedding) for row in rows)

    def get_document_by_id(
        self, id: str, index: Optional[str] = None, headers: Optional[Dict[str, str]] = None
    ) -> Optional[Document]:
        found = self.get_documents_by_id([id], index)
        return found[0] if found else None

    def get_documents_by_id(
        self,
        ids: List[str],
        index: Optional[str] = None,
        batch_size: int = 10_000,
        headers: Optional[Dict[str, str]] = None,
    ) -> List[Document]:
        return [self._document(row) for row in self.sentence_index(index).sentences(ids=ids)]

    def get_document_count(
        self,
        filters: Optional[FilterType] = None,
        index: Optional[str] = None,
        only_documents_without_embedding: bool = False,
        headers: Optional[Dict[str, str]] = None,
    ) -> int:
        embedded = False if only_documents_without_embedding else None
        return self.sentence_index(index).count(milvus_expression(filters), embedded=embedded)

    def get_embedding_count(self, index: Optional[str] = None, filters: Optional[FilterType] = None) -> int:
        return self.sentence_index(index).count(milvus_expression(filters), embedded=True)

    def query_by_embedding(
        self,
        query_emb: np.ndarray,
        filters: Optional[FilterType] = None,
        top_k: int = 10,
        index: Optional[str] = None,
        return_embedding: Optional[bool] = None,
        headers: Optional[Dict[str, str]] = None,
        scale_score: bool = True,
    ) -> List[Document]:
        """The nearest sentence Documents (DCSRRetriever ranks passages; this is plain sentence search)."""
        target = self.sentence_index(index)
        hits = self.dcsr_search(index).search(np.asarray([query_emb]), top_k, filters)[0]
        ids = [f"{hits.passages[k].passage_id}#{i}" for k, i in zip(hits.passage_keys, hits.sentence_indices)]
        rows = {row.id: row for row in target.sentences(ids=ids, with_vectors=bool(return_embedding))}
        found = []
        for doc_id, score in zip(ids, hits.scores):
            if doc_id in rows:
                doc = self._document(rows[doc_id], return_embedding)
                doc.score = self.scale_to_unit_interval(float(score), self.similarity) if scale_score else float(score)
                found.append(doc)
        return found

    # ---- labels: not kept ------------------------------------------------------------------------

    def get_all_labels(self, index=None, filters=None, headers=None) -> List[Label]:
        return []

    def get_label_count(self, index: Optional[str] = None, headers: Optional[Dict[str, str]] = None) -> int:
        return 0

    def write_labels(self, labels, index=None, headers=None):
        raise NotImplementedError(f"{STORE} keeps no labels: use an InMemoryDocumentStore or a SQL store for them")

    def delete_labels(self, index=None, ids=None, filters=None, headers=None):
        raise NotImplementedError(f"{STORE} keeps no labels")

    def _create_document_field_map(self) -> Dict:
        return {}

    @staticmethod
    def _document(row, return_embedding: Optional[bool] = False) -> Document:
        return Document(
            id=row.id,
            content=row.content,
            meta=dict(row.meta),
            embedding=row.embedding if return_embedding else None,
        )


class MilvusSentenceSearch(SentenceSearch):
    """The driver's ``SentenceIndex`` over a ``MilvusDocumentStore`` index, with 1.x filters translated."""

    def __init__(self, document_store: MilvusDocumentStore, index: Optional[str] = None, cache_size: int = 0):
        super().__init__(document_store, index, cache_size=0)
        self._index = document_store.sentence_index(self.index)

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[FilterType] = None):
        check_filters(filters, numeric_ranges=STORE)
        return self._index.search(query_vectors, top_n, milvus_expression(filters))

    def read(self, refs, known={}):
        return self._index.read(refs, known)
