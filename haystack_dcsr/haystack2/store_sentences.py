"""The base of the adapters that make a Haystack 2.x store a sentence index for the ranking driver
(``core.ranking.passage_ranking.SentenceIndex``): reads of passages, deletes of whole passages and the store's guard.
Each store's search lives in its adapter (``haystack2.stores``, ``haystack2.pgvector``)."""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from haystack import Document

from haystack_dcsr.core.ranking.parameters import check_passages_or_filters
from haystack_dcsr.core.ranking.passage_ranking import SentenceHits
from haystack_dcsr.core.storage.store_guard import guard
from haystack_dcsr.core.text.sentence_units import META, PassageRef, current_sentences, position
from haystack_dcsr.haystack2.filters import checked

PASSAGE_FIELD = f"meta.{META}.passage_id"
READ_CHUNK = 1_000  # ids per read: keeps an "in" filter small for every engine
SPLITTER = "DCSRSentenceSplitter"


class StoreSentences:
    """Search and read over one 2.x store; subclasses say how the store searches (``_search_one``).

    A ``GuardedIndex``: the driver holds the read side of the store's guard (``core.storage.store_guard``, whose
    write side wraps the store's own write and delete methods) across a query's search and reads, so they see the store
    between two writes, never inside one (the stores are not safe under concurrent use), and one state. Writes by
    other processes (a server) are not guarded: there the passage versions keep a partial passage out."""

    def __init__(self, document_store):
        self.document_store = document_store
        self._guard = guard(document_store)

    @property
    def similarity(self) -> str:
        """How the store compares vectors: ``dot_product`` or ``cosine`` (Haystack's names)."""
        return getattr(self.document_store, "embedding_similarity_function", None) or self.document_store.similarity

    def reading(self):
        """The read side of the store's guard: held by the driver across a batch of queries."""
        return self._guard.reading()

    def search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]]) -> List[SentenceHits]:
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
            matching = self._matching(checked(filters))
            passage_ids = list(dict.fromkeys(position(doc, SPLITTER).passage_id for doc in matching))
        ids = [doc.id for doc in self._sentences_of(list(passage_ids))]
        if ids:
            self.document_store.delete_documents(ids)  # the store's own write guard holds queries off meanwhile
        return len(ids)

    def _matching(self, filters: Dict[str, Any]) -> List[Document]:
        """The sentences whose meta matches ``filters``."""
        return self.document_store.filter_documents(filters)

    def _sentences_of(self, passage_ids: List[str]) -> List[Document]:
        return self._filter_in(PASSAGE_FIELD, passage_ids)

    def _filter_in(self, field: str, values: List[str]) -> List[Document]:
        found: List[Document] = []
        for start in range(0, len(values), READ_CHUNK):
            chunk = values[start : start + READ_CHUNK]
            found.extend(self.document_store.filter_documents({"field": field, "operator": "in", "value": chunk}))
        return found
