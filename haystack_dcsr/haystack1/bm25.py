"""SparseBM25DocumentStore: an embedded BM25 store fast enough to mine hard negatives at scale.

Haystack's ``InMemoryDocumentStore(use_bm25=True)`` scores one query at a time through
``rank_bm25`` (~125 ms a query over SQuAD's 21k paragraphs), so mining 88k training questions
takes hours. This store keeps the same interface (``BM25Retriever`` works on it unchanged) but
scores through the core's ``SparseBM25``: a batch of queries is one sparse product and a top-k
partition, with Lucene/Elasticsearch scores, so it stands in for ``ElasticsearchDocumentStore``.
"""

import copy
import gzip
import json
import logging
from pathlib import Path
from typing import Dict, List, Optional, Union

import numpy as np
from haystack.document_stores import InMemoryDocumentStore
from haystack.document_stores.base import FilterType
from haystack.errors import DocumentStoreError
from haystack.schema import Document
from scipy.special import expit

from haystack_dcsr.core.indexes.filters import per_query_filters
from haystack_dcsr.core.indexes.sparse_bm25 import TOKEN_PATTERN, SparseBM25, top_indices
from haystack_dcsr.core.storage.atomic_files import atomic_write_bytes

__all__ = ["SparseBM25DocumentStore", "read_documents", "top_indices"]

logger = logging.getLogger(__name__)


class _IndexedDocuments:
    """One index's BM25 matrix and the document id of each of its rows."""

    def __init__(self, documents: List[Document], tokenize, k1: float, b: float, query_batch_size: int):
        self.ids = [doc.id for doc in documents]
        self.row_of = {doc_id: row for row, doc_id in enumerate(self.ids)}
        self.bm25 = SparseBM25([d.content for d in documents], k1, b, tokenize, query_batch_size)


def read_documents(path: Union[str, Path]) -> List[Document]:
    """The documents of a file written by ``SparseBM25DocumentStore.save``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the saved BM25 documents of this store are not there")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [Document.from_dict(json.loads(line)) for line in handle if line.strip()]


class SparseBM25DocumentStore(InMemoryDocumentStore):
    """In-memory BM25 store for ``BM25Retriever``, scoring query batches as one sparse product.

        store = SparseBM25DocumentStore()
        store.write_documents(passages)
        hits = BM25Retriever(store).retrieve_batch(questions, top_k=30)

    :param k1, b: BM25 parameters (Elasticsearch defaults).
    :param query_batch_size: queries scored together; memory is query_batch_size x documents floats.
    :param documents_path: a file written by ``save`` (JSON lines, gzip): its documents are loaded into
        the default index. ``save_pipeline`` saves the store this way, so a saved hybrid pipeline answers.
    """

    def __init__(
        self,
        index: str = "document",
        k1: float = 1.2,
        b: float = 0.75,
        query_batch_size: int = 512,
        duplicate_documents: str = "overwrite",
        progress_bar: bool = True,
        bm25_tokenization_regex: str = TOKEN_PATTERN,
        documents_path: Optional[str] = None,
    ):
        super().__init__(
            index=index,
            use_bm25=True,
            duplicate_documents=duplicate_documents,
            progress_bar=progress_bar,
            bm25_tokenization_regex=bm25_tokenization_regex,
            use_gpu=False,
        )
        self.k1, self.b, self.query_batch_size = k1, b, query_batch_size
        self._sparse: Dict[str, _IndexedDocuments] = {}
        if documents_path is not None:
            self.write_documents(read_documents(documents_path), index=index)

    def save(self, path: Union[str, Path], index: Optional[str] = None) -> Path:
        """Write the index's documents (content and meta, no embeddings) to ``path`` as gzipped JSON
        lines, atomically; ``SparseBM25DocumentStore(documents_path=path)`` loads them back."""
        documents = self.get_all_documents(index=index or self.index, return_embedding=False)
        lines = "".join(json.dumps(doc.to_dict(), ensure_ascii=False, default=str) + "\n" for doc in documents)
        return atomic_write_bytes(path, gzip.compress(lines.encode("utf-8")))

    def update_bm25(self, index: Optional[str] = None):
        index = index or self.index
        documents = [doc for doc in self.indexes.get(index, {}).values() if doc.content_type == "text"]
        self._sparse[index] = _IndexedDocuments(
            documents, self.bm25_tokenization_regex, self.k1, self.b, self.query_batch_size
        )
        self.bm25[index] = self._sparse[index]  # marks the index as BM25-ready for Haystack's own checks

    def query(
        self,
        query: Optional[str],
        filters: Optional[FilterType] = None,
        top_k: int = 10,
        custom_query: Optional[str] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        all_terms_must_match: bool = False,
        scale_score: bool = True,
    ) -> List[Document]:
        if query is None:
            return []
        return self.query_batch(
            [query], filters, top_k, custom_query, index, headers, all_terms_must_match, scale_score
        )[0]

    def query_batch(
        self,
        queries: List[str],
        filters: Optional[Union[FilterType, List[Optional[FilterType]]]] = None,
        top_k: int = 10,
        custom_query: Optional[str] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        all_terms_must_match: bool = False,
        scale_score: bool = True,
    ) -> List[List[Document]]:
        index = index or self.index
        if index not in self._sparse:
            raise DocumentStoreError(f"No BM25 index for {index!r}: write documents first")
        if custom_query or all_terms_must_match or headers:
            raise NotImplementedError("SparseBM25DocumentStore supports plain BM25 queries only")
        indexed = self._sparse[index]
        per_query = per_query_filters(filters, len(queries))
        allowed = {}
        for f in per_query:
            key = repr(f)
            if f and key not in allowed:
                keep = {doc.id for doc in self.get_all_documents(index=index, filters=f)}
                allowed[key] = np.array([doc_id in keep for doc_id in indexed.ids])
        masks = [allowed[repr(f)] if f else None for f in per_query]
        documents = self.indexes[index]
        results: List[List[Document]] = []
        for rows, scores in indexed.bm25.search(queries, top_k, allowed=masks):
            hits = []
            for row, score in zip(rows, scores):
                doc = copy.copy(documents[indexed.ids[row]])
                doc.score = float(expit(score / 8)) if scale_score else float(score)
                hits.append(doc)
            results.append(hits)
        return results

    def score_documents(self, query: str, ids: List[str], index: Optional[str] = None) -> np.ndarray:
        """Raw BM25 scores of ``query`` for the documents ``ids`` (ranking a fixed candidate set);
        unknown ids raise ``KeyError`` naming them."""
        indexed = self._sparse.get(index or self.index)
        if indexed is None:
            raise DocumentStoreError(f"No BM25 index for {index or self.index!r}: write documents first")
        missing = [doc_id for doc_id in ids if doc_id not in indexed.row_of]
        if missing:
            raise KeyError(f"Documents not in the BM25 index: {missing[:5]}")
        return indexed.bm25.scores([query], [indexed.row_of[doc_id] for doc_id in ids])[0]
