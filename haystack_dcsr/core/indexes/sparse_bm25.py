"""BM25 over a corpus held as one sparse weight matrix: a batch of queries is one sparse product.

Framework-free, so the trainer mines BM25 hard negatives without any Haystack, and the Haystack 1.x
``SparseBM25DocumentStore`` serves ``BM25Retriever`` from the same index. Scores follow
Lucene/Elasticsearch BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))), so it stands in
for an Elasticsearch server; ties are broken by corpus order, the same on every CPU.
"""

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import sparse

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # Haystack's and scikit-learn's default: words of two or more characters


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` highest ``scores``, best first, ties by lower index, as an exact order.

    ``np.argpartition`` alone leaves *which* of several tied scores at the k-th place get in to
    its selection algorithm, and numpy picks that algorithm by CPU (AVX-512 or not): the same corpus
    would mine different negatives on two machines (a question with few matching terms ties dozens of
    passages at the cut). Partitioning gives only the k-th value; membership is decided here.
    """
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)[: k - len(above)]
    top = np.concatenate([above, tied])
    return top[np.lexsort((top, -scores[top]))]


class SparseBM25:
    """BM25 weights of a corpus: (terms x documents) CSR, and its vocabulary.

        bm25 = SparseBM25(texts)
        for rows, scores in bm25.search(questions, top_k=30): ...

    :param texts: the documents, in the order their row numbers refer to.
    :param k1, b: BM25 parameters (Elasticsearch defaults).
    :param tokenize: text -> tokens, applied to lowercased text; defaults to ``TOKEN_PATTERN``'s words.
    :param query_batch_size: queries scored together; memory is query_batch_size x documents floats.
    """

    def __init__(
        self,
        texts: Sequence[str],
        k1: float = 1.2,
        b: float = 0.75,
        tokenize: Optional[Callable[[str], List[str]]] = None,
        query_batch_size: int = 512,
    ):
        self.tokenize = tokenize or re.compile(TOKEN_PATTERN).findall
        self.query_batch_size = query_batch_size
        self.vocabulary: Dict[str, int] = {}
        rows, cols = [], []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for row, text in enumerate(texts):
            tokens = self.tokenize(text.lower())
            lengths[row] = len(tokens)
            for token in tokens:
                rows.append(row)
                cols.append(self.vocabulary.setdefault(token, len(self.vocabulary)))
        shape = (len(texts), max(len(self.vocabulary), 1))
        tf = sparse.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=shape)
        tf.sum_duplicates()
        df = np.bincount(tf.indices, minlength=shape[1])
        idf = np.log1p((len(texts) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9)) if len(texts) else lengths
        row_of_entry = np.repeat(np.arange(shape[0]), np.diff(tf.indptr))
        weights = idf[tf.indices] * tf.data * (k1 + 1) / (tf.data + norm[row_of_entry])
        self.weights_t = sparse.csr_matrix((weights.astype(np.float32), tf.indices, tf.indptr), shape=shape).T.tocsr()

    def __len__(self) -> int:
        return self.weights_t.shape[1]

    def _query_matrix(self, queries: Sequence[str]) -> sparse.csr_matrix:
        rows, cols = [], []
        for row, query in enumerate(queries):
            for token in self.tokenize(query.lower()):
                col = self.vocabulary.get(token)
                if col is not None:
                    rows.append(row)
                    cols.append(col)
        data = np.ones(len(rows), dtype=np.float32)
        return sparse.csr_matrix((data, (rows, cols)), shape=(len(queries), self.weights_t.shape[0]))

    def scores(self, queries: Sequence[str], rows: Optional[Sequence[int]] = None) -> np.ndarray:
        """Raw BM25 scores (queries x documents), or of the documents ``rows`` only (a candidate set)."""
        weights = self.weights_t if rows is None else self.weights_t[:, list(rows)]
        return (self._query_matrix(queries) @ weights).toarray()

    def search(
        self, queries: Sequence[str], top_k: int, allowed: Optional[Sequence[Optional[np.ndarray]]] = None
    ) -> List[Tuple[np.ndarray, np.ndarray]]:
        """Per query, its best ``top_k`` document rows and their raw scores, best first; ``allowed`` (one
        boolean mask over the documents per query, or None) restricts a query to the masked rows."""
        results = []
        for start in range(0, len(queries), self.query_batch_size):
            chunk = queries[start : start + self.query_batch_size]
            for offset, row_scores in enumerate(self.scores(chunk)):
                mask = allowed[start + offset] if allowed is not None else None
                if mask is not None:
                    row_scores = np.where(mask, row_scores, -np.inf)
                top = top_indices(row_scores, top_k)
                top = top[np.isfinite(row_scores[top])]
                results.append((top, row_scores[top]))
        return results
