"""SparseBM25DocumentStore: an embedded BM25 store fast enough to mine hard negatives at scale.

Haystack's ``InMemoryDocumentStore(use_bm25=True)`` scores one query at a time through
``rank_bm25`` (~125 ms a query over SQuAD's 21k paragraphs), so mining 88k training questions
takes hours. This store keeps the same interface (``BM25Retriever`` works on it unchanged) but
holds the corpus as a sparse BM25 weight matrix: a batch of queries is one sparse product and a
top-k partition. Scores follow Lucene/Elasticsearch BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - df +
0.5) / (df + 0.5))), so it is a stand-in for ``ElasticsearchDocumentStore`` when no server runs.
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
from scipy import sparse
from scipy.special import expit

from haystack_dcsr.core.atomic_files import atomic_write_bytes

logger = logging.getLogger(__name__)


class _SparseIndex:
    """BM25 weights of one index: (documents x terms) CSR, and its vocabulary."""

    def __init__(self, documents: List[Document], tokenize, k1: float, b: float):
        self.ids = [doc.id for doc in documents]
        self.vocabulary: Dict[str, int] = {}
        rows, cols = [], []
        lengths = np.zeros(len(documents), dtype=np.float64)
        for row, doc in enumerate(documents):
            tokens = tokenize(doc.content.lower())
            lengths[row] = len(tokens)
            for token in tokens:
                rows.append(row)
                cols.append(self.vocabulary.setdefault(token, len(self.vocabulary)))
        shape = (len(documents), max(len(self.vocabulary), 1))
        tf = sparse.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=shape)
        tf.sum_duplicates()
        df = np.bincount(tf.indices, minlength=shape[1])
        idf = np.log1p((len(documents) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9)) if len(documents) else lengths
        row_of_entry = np.repeat(np.arange(shape[0]), np.diff(tf.indptr))
        weights = idf[tf.indices] * tf.data * (k1 + 1) / (tf.data + norm[row_of_entry])
        self.weights_t = sparse.csr_matrix((weights.astype(np.float32), tf.indices, tf.indptr), shape=shape).T.tocsr()
        self.row_of = {doc_id: row for row, doc_id in enumerate(self.ids)}

    def query_matrix(self, queries: List[str], tokenize) -> sparse.csr_matrix:
        rows, cols = [], []
        for row, query in enumerate(queries):
            for token in tokenize(query.lower()):
                col = self.vocabulary.get(token)
                if col is not None:
                    rows.append(row)
                    cols.append(col)
        data = np.ones(len(rows), dtype=np.float32)
        return sparse.csr_matrix((data, (rows, cols)), shape=(len(queries), self.weights_t.shape[0]))


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` highest ``scores``, best first, ties by lower index, as an exact order.

    ``np.argpartition`` alone leaves *which* of several tied scores at the k-th place get in to
    its selection algorithm, and numpy picks that algorithm by CPU (AVX-512 or not): the same corpus
    then mined different BM25 negatives on two machines (a question with few matching terms ties
    dozens of passages at the cut). Partitioning gives only the k-th value; membership is decided
    here, so the result is the same everywhere.
    """
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)[: k - len(above)]
    top = np.concatenate([above, tied])
    return top[np.lexsort((top, -scores[top]))]


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
        bm25_tokenization_regex: str = r"(?u)\b\w\w+\b",
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
        self._sparse: Dict[str, _SparseIndex] = {}
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
        self._sparse[index] = _SparseIndex(documents, self.bm25_tokenization_regex, self.k1, self.b)
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
        bm25 = self._sparse[index]
        per_query = filters if isinstance(filters, list) else [filters] * len(queries)
        allowed = {}
        for f in per_query:
            key = repr(f)
            if f and key not in allowed:
                keep = {doc.id for doc in self.get_all_documents(index=index, filters=f)}
                allowed[key] = np.array([doc_id in keep for doc_id in bm25.ids])
        documents = self.indexes[index]
        results: List[List[Document]] = []
        for start in range(0, len(queries), self.query_batch_size):
            chunk = queries[start : start + self.query_batch_size]
            scores = (bm25.query_matrix(chunk, self.bm25_tokenization_regex) @ bm25.weights_t).toarray()
            for row, row_scores in enumerate(scores):
                f = per_query[start + row]
                if f:
                    row_scores = np.where(allowed[repr(f)], row_scores, -np.inf)
                top = top_indices(row_scores, top_k)
                hits = []
                for i in top:
                    if not np.isfinite(row_scores[i]):
                        continue
                    doc = copy.copy(documents[bm25.ids[i]])
                    doc.score = float(expit(row_scores[i] / 8)) if scale_score else float(row_scores[i])
                    hits.append(doc)
                results.append(hits)
        return results

    def score_documents(self, query: str, ids: List[str], index: Optional[str] = None) -> np.ndarray:
        """Raw BM25 scores of ``query`` for the documents ``ids`` (ranking a fixed candidate set);
        unknown ids raise ``KeyError`` naming them."""
        bm25 = self._sparse.get(index or self.index)
        if bm25 is None:
            raise DocumentStoreError(f"No BM25 index for {index or self.index!r}: write documents first")
        missing = [doc_id for doc_id in ids if doc_id not in bm25.row_of]
        if missing:
            raise KeyError(f"Documents not in the BM25 index: {missing[:5]}")
        weights = bm25.weights_t[:, [bm25.row_of[doc_id] for doc_id in ids]]
        return (bm25.query_matrix([query], self.bm25_tokenization_regex) @ weights).toarray()[0]
