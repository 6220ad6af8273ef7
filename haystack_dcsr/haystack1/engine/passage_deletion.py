"""Deleting passages from a DCSR store without leaving vector ids that point at other sentences.

A passage is several sentence Documents (stale ones of earlier versions included, see
``sentence_units``), so it is deleted by passage id. On a ``FAISSDocumentStore`` Haystack's
``delete_documents`` removes vectors with FAISS's ``remove_ids``, which for every index type but
IVF shifts all later vectors down while SQL keeps their old ids: from then on those ids name other
sentences' vectors (the retriever refuses such an index until ``update_embeddings``). Here the
removal is followed by the same shift in SQL: each remaining id moves down by the number of
removed ids below it, exactly what ``remove_ids`` did to the vectors, so no re-embedding is needed.
"""

from typing import Any, Dict, List, Optional

import numpy as np
from haystack.document_stores.base import BaseDocumentStore

from haystack_dcsr.core.text.sentence_units import parse_sentence_id
from haystack_dcsr.haystack1.engine.sql_rows import (
    fetch_documents,
    highest_vector_id,
    is_sql_store,
    sentence_ids_of,
    store_lock,
    vector_rows,
)


def delete_passages(document_store: BaseDocumentStore, passage_ids: List[str], index: Optional[str] = None) -> int:
    """Delete every sentence Document of ``passage_ids``; returns how many were deleted."""
    index = index or document_store.index
    wanted = set(passage_ids)
    if is_sql_store(document_store):
        ids = sentence_ids_of(document_store, index, passage_ids)
    else:
        ids = [
            doc.id
            for doc in document_store.get_all_documents_generator(index=index, return_embedding=False)
            if _passage_of(doc.id) in wanted
        ]
    delete_sentences(document_store, ids, index)
    return len(ids)


def passages_matching(
    document_store: BaseDocumentStore, filters: Dict[str, Any], index: Optional[str] = None
) -> List[str]:
    """The ids of the passages whose sentence Documents match ``filters`` (each sentence carries its passage's
    meta, so a passage matches whole or not at all), evaluated as DCSR evaluates filters on every store (numbers
    as numbers; ``filters.matcher``)."""
    from haystack_dcsr.haystack1.filters import matcher

    match = matcher(filters)
    documents = document_store.get_all_documents_generator(index=index, return_embedding=False)
    return sorted({_passage_of(doc.id) for doc in documents if match(doc.meta)} - {None})


def delete_sentences(document_store: BaseDocumentStore, ids: List[str], index: Optional[str] = None) -> None:
    """Delete sentence Documents by id; on a FAISS index the remaining vector ids are shifted with
    the vectors (see the module docstring)."""
    if not ids:
        return
    from haystack.document_stores import FAISSDocumentStore

    index = index or document_store.index
    if isinstance(document_store, FAISSDocumentStore) and index in document_store.faiss_indexes:
        _delete_from_faiss(document_store, index, ids)
    else:
        document_store.delete_documents(index=index, ids=ids)


def removes_vectors(document_store: BaseDocumentStore, index: Optional[str] = None) -> bool:
    """Can this store delete a sentence that has a vector? (Not a FAISS HNSW index.)"""
    import faiss
    from haystack.document_stores import FAISSDocumentStore

    faiss_index = getattr(document_store, "faiss_indexes", {}).get(index or document_store.index)
    if not isinstance(document_store, FAISSDocumentStore) or faiss_index is None:
        return True
    return not isinstance(faiss.downcast_index(faiss_index), faiss.IndexHNSW)


def trim_orphan_vectors(document_store: BaseDocumentStore, index: Optional[str] = None) -> int:
    """Remove the FAISS vectors past the highest vector id SQL holds: what a write or ``update_embeddings``
    interrupted between adding vectors to FAISS and committing their ids to SQL leaves behind. Haystack numbers
    new vectors from the index's size, so without this a re-run would number them past the orphans and the ids
    would point at the wrong vectors. Returns how many went. Only where vector ids are positions that a removal
    at the end leaves as they are (Flat, SQ): HNSW cannot remove vectors (it keeps replaced ones by design, and
    DCSR's vector map skips every unnamed one), and IVF ids are not positions."""
    import faiss

    index = index or document_store.index
    faiss_index = getattr(document_store, "faiss_indexes", {}).get(index)
    if faiss_index is None or not isinstance(
        faiss.downcast_index(faiss_index), (faiss.IndexFlat, faiss.IndexScalarQuantizer)
    ):
        return 0
    keep = highest_vector_id(document_store, index) + 1
    orphans = faiss_index.ntotal - keep
    if orphans > 0:
        faiss_index.remove_ids(faiss.IDSelectorRange(keep, faiss_index.ntotal))
    return max(orphans, 0)


def delete_rows_only(document_store: BaseDocumentStore, ids: List[str], index: Optional[str] = None) -> None:
    """Delete SQL rows and leave the FAISS index alone: only right just before the index is reset."""
    from haystack.document_stores.sql import SQLDocumentStore

    if ids:
        with store_lock(document_store):
            SQLDocumentStore.delete_documents(document_store, index=index or document_store.index, ids=ids)


def _delete_from_faiss(document_store, index: str, ids: List[str]) -> None:
    import faiss
    from haystack.document_stores.sql import SQLDocumentStore

    faiss_index = document_store.faiss_indexes[index]
    with store_lock(document_store):
        removed = np.array(
            sorted(
                int(doc.meta["vector_id"])
                for doc in fetch_documents(document_store, ids, index)
                if doc.meta.get("vector_id") is not None
            ),
            dtype=np.int64,
        )
        shifts = len(removed) > 0 and not isinstance(faiss.downcast_index(faiss_index), faiss.IndexIVF)
        later = []
        if shifts:
            gone = set(removed.tolist())
            later = [
                row
                for row in vector_rows(document_store, index, range(int(removed[0]) + 1, faiss_index.ntotal))
                if row.vector_id not in gone
            ]
        if len(removed):
            try:
                faiss_index.remove_ids(removed)
            except RuntimeError as error:
                raise ValueError(
                    f"This FAISS index type ({type(faiss.downcast_index(faiss_index)).__name__}) "
                    f"cannot remove vectors, "
                    "so nothing was deleted. Delete with store.delete_documents(ids=...) on a store you then re-embed "
                    "with store.update_embeddings(retriever), or use a Flat or IVF index."
                ) from error
        SQLDocumentStore.delete_documents(document_store, index=index, ids=ids)
        if later:
            old = np.array([row.vector_id for row in later], dtype=np.int64)
            new = old - np.searchsorted(removed, old)
            # two passes: the (index, vector_id) pair is unique, and new ids are old ids of other rows
            document_store.update_vector_ids({row.doc_id: f"~{n}" for row, n in zip(later, new)}, index=index)
            document_store.update_vector_ids({row.doc_id: str(n) for row, n in zip(later, new)}, index=index)


def _passage_of(doc_id: str) -> Optional[str]:
    try:
        return parse_sentence_id(doc_id)[0]
    except ValueError:
        return None
