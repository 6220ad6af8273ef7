"""Re-writing a passage leaves exactly its new sentences in the store.

Stores write sentence Documents one by one, so writing a new version of a passage with fewer
sentences (``overwrite``) keeps the old tail, and a version with more sentences written under
``skip`` adds a tail to the old version. Such rows are never served (sentence #0 decides which
version is current, see ``sentence_units``), but ``get_all_documents``, ``get_document_count`` and
filters would still see them. ``keep_passages_whole(store)`` wraps the store's ``write_documents``
so that, in the same write, every sentence of a written passage at or past its current sentence
count is deleted (with ``passage_deletion``, which keeps a FAISS index's vector ids right).

FAISS HNSW indexes cannot remove vectors: there a stale sentence that already has a vector stays
(never served) until the next full ``update_embeddings``, which first deletes every stale row from
SQL (the index is reset right after, so no vector id is left pointing at the wrong sentence).

Both wrapped methods first remove FAISS vectors that an interrupted write left past the last id SQL names
(``passage_deletion.trim_orphan_vectors``), so re-running a write that failed halfway (a full disk, an exception)
completes the store with rows and vectors agreeing.

The searches that map this store's vector ids (every retriever's, ``watch``) are told when a write through the
store changes what a vector id stands for: a full ``update_embeddings`` (the index is reset), a delete (FAISS
renumbers), a passage re-written under its old vector ids. A FAISS store is written by one process, so these are
all the ways its ids change; new vectors at the end only extend the maps.
"""

import functools
import logging
import weakref
from typing import Dict, List, Optional

from haystack_dcsr.core.indexes.filters import check_delete_filters
from haystack_dcsr.core.text.sentence_units import META, head_id, position, sentence_id
from haystack_dcsr.haystack1.engine.passage_deletion import (
    delete_rows_only,
    delete_sentences,
    removes_vectors,
    trim_orphan_vectors,
)
from haystack_dcsr.haystack1.engine.sentence_docs import SPLITTER
from haystack_dcsr.haystack1.engine.sql_rows import fetch_documents, is_sql_store, stale_sentence_ids

logger = logging.getLogger(__name__)

_ATTRIBUTE = "_dcsr_keeps_passages_whole"
_WATCHERS = "_dcsr_vector_maps"
DELETES = ("delete_documents", "delete_all_documents", "delete_index")
FILTERED_DELETES = {"delete_documents": 2, "delete_all_documents": 1}  # the position of Haystack's ``filters``


def watch(document_store, search) -> None:
    """Tell ``search`` (its ``invalidate``) whenever a write through ``document_store`` renumbers or re-assigns
    vector ids."""
    watchers = getattr(document_store, _WATCHERS, None)
    if watchers is None:
        watchers = weakref.WeakSet()
        setattr(document_store, _WATCHERS, watchers)
    watchers.add(search)


def vector_ids_changed(document_store) -> None:
    """Every search watching ``document_store`` rebuilds its map before its next query."""
    for search in list(getattr(document_store, _WATCHERS, ())):
        search.invalidate()


def keep_passages_whole(document_store, store_guard) -> None:
    """Install the pruning write on this store instance (once); it runs as one write of ``store_guard``."""
    if getattr(document_store, _ATTRIBUTE, False):
        return
    write = document_store.write_documents

    @functools.wraps(write)
    def write_documents(documents, index: Optional[str] = None, *args, **kwargs):
        with store_guard.writing():
            trim_orphan_vectors(document_store, index)
            return write_and_prune(document_store, write, documents, index, *args, **kwargs)

    update = getattr(document_store, "update_embeddings", None)
    if update is not None and is_sql_store(document_store):

        @functools.wraps(update)
        def update_embeddings(retriever, index: Optional[str] = None, update_existing_embeddings: bool = True, **kw):
            with store_guard.writing():
                trim_orphan_vectors(document_store, index)
                if update_existing_embeddings and not kw.get("filters"):  # Haystack resets the index first
                    delete_rows_only(document_store, stale_sentence_ids(document_store, index or document_store.index))
                    vector_ids_changed(document_store)
                return update(retriever, index, update_existing_embeddings, **kw)

        document_store.update_embeddings = update_embeddings
    for name in DELETES:
        if getattr(document_store, name, None) is not None:
            delete = getattr(document_store, name)
            setattr(document_store, name, _telling_watchers(document_store, store_guard, delete))
    document_store.write_documents = write_documents
    setattr(document_store, _ATTRIBUTE, True)


def _telling_watchers(document_store, store_guard, delete):
    """``delete`` that tells the watching searches, in the same write (no query runs in between)."""

    @functools.wraps(delete)
    def deleting(*args, **kwargs):
        where = FILTERED_DELETES.get(delete.__name__)
        if where is not None:  # refused before anything is deleted: ``{}`` or an empty $and would delete all
            check_delete_filters(kwargs["filters"] if "filters" in kwargs else (args[where : where + 1] or [None])[0])
        with store_guard.writing():
            try:
                return delete(*args, **kwargs)
            finally:
                vector_ids_changed(document_store)

    return deleting


def write_and_prune(document_store, write, documents, index: Optional[str] = None, *args, **kwargs):
    index = index or document_store.index
    written: Dict[str, int] = {}  # passage id -> sentences written for it
    for doc in documents:
        info = getattr(doc, "meta", None) and doc.meta.get(META)
        if isinstance(info, dict):
            where = position(doc, SPLITTER)
            written[where.passage_id] = max(written.get(where.passage_id, 0), where.index + 1)
    if not written:
        return write(documents, index, *args, **kwargs)
    before = _sentence_counts(document_store, list(written), index)
    result = write(documents, index, *args, **kwargs)
    if before:  # passages re-written: their rows now name other versions under the same vector ids
        vector_ids_changed(document_store)
    after = _sentence_counts(document_store, list(written), index)
    candidates: List[str] = [
        sentence_id(pid, k) for pid, count in after.items() for k in range(count, max(before.get(pid, 0), written[pid]))
    ]
    stale = fetch_documents(document_store, candidates, index)
    if removes_vectors(document_store, index):
        delete_sentences(document_store, [doc.id for doc in stale], index)
    else:
        kept = [doc.id for doc in stale if doc.meta.get("vector_id") is not None]
        delete_sentences(document_store, [doc.id for doc in stale if doc.meta.get("vector_id") is None], index)
        if kept:
            logger.warning(
                "This FAISS index type cannot remove vectors: %d sentence(s) of earlier passage versions stay in the "
                "store (never served) until the next store.update_embeddings(retriever): %s",
                len(kept),
                ", ".join(kept[:5]),
            )
    return result


def _sentence_counts(document_store, passage_ids: List[str], index: str) -> Dict[str, int]:
    """Each passage's current sentence count, read from its sentence #0."""
    heads = fetch_documents(document_store, [head_id(pid) for pid in passage_ids], index)
    return {position(doc).passage_id: position(doc).count for doc in heads if (doc.meta or {}).get(META)}
