"""The Haystack 1.x sentence engine behind ``DCSRRetriever``: what a retriever keeps per document store.

One ``SentenceSearch`` per (store, index) with its vector map and passage cache (``sentence_search``), which
the retriever hands to the core's ranking driver, and the store maintenance a retriever offers: forgetting what
it read, saving the vector map, deleting passages.
"""

import threading
from typing import Dict, List, Mapping, Optional

from haystack.document_stores.base import BaseDocumentStore

from haystack_dcsr.core.storage.store_guard import guard
from haystack_dcsr.haystack1.engine.passage_deletion import delete_passages
from haystack_dcsr.haystack1.engine.passage_writes import keep_passages_whole, vector_ids_changed
from haystack_dcsr.haystack1.engine.sentence_search import FaissSentenceSearch, SentenceSearch, sentence_search_for
from haystack_dcsr.haystack1.engine.sql_rows import refuse_server_database


class SentenceEngine:
    """The searches of one retriever, one per (store, index), safe to share between threads.

    :param cache_size: assembled passages each search keeps (LRU) between queries.
    :param search_params: FAISS search settings applied per query (``check_search_params``).
    """

    def __init__(self, cache_size: int, search_params: Optional[Mapping[str, float]]):
        self.cache_size = cache_size
        self.search_params = search_params
        self._searches: Dict[tuple, SentenceSearch] = {}
        self._lock = threading.Lock()

    def search_for(self, store: BaseDocumentStore, index: Optional[str] = None) -> SentenceSearch:
        attach(store)
        key = (id(store), index or store.index)
        with self._lock:
            if key not in self._searches:
                self._searches[key] = sentence_search_for(store, index, self.cache_size, self.search_params)
            return self._searches[key]

    def note_embedding(self) -> None:
        """New vectors were written: each search extends its map by the new rows when it next runs."""
        with self._lock:
            for search in self._searches.values():
                search.note_embedding()

    def refresh(self) -> None:
        """Forget every vector map and cached passage (the FAISS index was changed by hand)."""
        with self._lock:
            for search in self._searches.values():
                search.invalidate()

    def delete_passages(self, store: BaseDocumentStore, index: Optional[str], passage_ids: List[str]) -> int:
        """Every sentence Document of each passage, under the store's write guard; an index already out of
        sync is refused before anything is deleted."""
        search = self.search_for(store, index)
        with guard(store).writing():
            if isinstance(search, FaissSentenceSearch):
                search.current_map()
            deleted = delete_passages(store, passage_ids, index)
            vector_ids_changed(store)  # FAISS renumbered: every retriever's map of this store
            self.refresh()
        return deleted


def attach(document_store: BaseDocumentStore) -> None:
    """What a store gains by serving a DCSRRetriever: its writes wait for queries and the reverse
    (``store_guard``), and a re-written passage leaves no sentences of its old version behind
    (``passage_writes``). A FAISS store over a database server is refused (``sql_rows.refuse_server_database``)."""
    refuse_server_database(document_store)
    keep_passages_whole(document_store, guard(document_store))
