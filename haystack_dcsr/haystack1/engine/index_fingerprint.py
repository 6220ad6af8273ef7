"""What ties a saved vector map to the FAISS index and the SQL rows it was saved with.

A load compares the fingerprint with what it opened (``check_fingerprint``), so the files of two
different saves -- an older index file beside a newer database, say -- are never served together.
"""

from pathlib import Path

import numpy as np

from haystack_dcsr.haystack1.engine.sentence_map import Fingerprint, IndexOutOfSyncError
from haystack_dcsr.haystack1.engine.sql_rows import vector_row_count

PROBES = 8


def fingerprint_of(document_store, index: str, sentence_map, faiss_bytes: int = 0) -> Fingerprint:
    faiss_index = document_store.faiss_indexes[index]
    probes = sentence_map.probe_ids(PROBES)
    return Fingerprint(
        ntotal=int(faiss_index.ntotal),
        faiss_bytes=faiss_bytes,
        sql_vector_rows=vector_row_count(document_store, index),
        probe_ids=probes,
        probe_vectors=vectors_at(faiss_index, probes),
    )


def vectors_at(faiss_index, vector_ids) -> np.ndarray:
    """The stored (decoded) vectors of ``vector_ids``; an empty array where the index type cannot
    give them back."""
    import faiss

    if not len(vector_ids):
        return np.zeros((0, faiss_index.d), dtype=np.float32)
    try:
        return np.stack([faiss_index.reconstruct(int(i)) for i in vector_ids]).astype(np.float32)
    except RuntimeError:
        try:  # IVF indexes give vectors back once they keep a direct map
            faiss.extract_index_ivf(faiss_index).make_direct_map()
            return np.stack([faiss_index.reconstruct(int(i)) for i in vector_ids]).astype(np.float32)
        except RuntimeError:
            return np.zeros((0, faiss_index.d), dtype=np.float32)


def check_fingerprint(document_store, index: str, saved, sql_matches: bool, path: Path) -> bool:
    """Is ``saved`` (a map with a fingerprint) usable with the index and the SQL rows this store
    opened? True: use it. False: the map belongs to neither (ignore it, read SQL). Raises
    ``IndexOutOfSyncError`` when the map matches one side and not the other: then the FAISS index and
    the database come from different saves, and no answer would be right."""
    fingerprint = saved.fingerprint
    faiss_index = document_store.faiss_indexes[index]
    same_vectors = faiss_index.ntotal >= fingerprint.ntotal and (
        len(fingerprint.probe_vectors) == 0
        or np.array_equal(vectors_at(faiss_index, fingerprint.probe_ids), fingerprint.probe_vectors)
    )
    if faiss_index.ntotal == fingerprint.ntotal:  # vectors added since the load: SQL has grown with them
        sql_matches = sql_matches and vector_row_count(document_store, index) == fingerprint.sql_vector_rows
    if same_vectors and sql_matches:
        return True
    if not same_vectors and not sql_matches:
        return False
    index_file = getattr(document_store, "_component_config", {}).get("params", {}).get("faiss_index_path")
    if same_vectors:
        raise IndexOutOfSyncError(
            f"The SQL database of FAISSDocumentStore index {index!r} is not the one saved with the FAISS index "
            f"{index_file} and its vector map {path}: SQL has {vector_row_count(document_store, index)} rows with "
            f"vectors, the save had {fingerprint.sql_vector_rows}, or they name other sentences. Nothing was "
            "returned. Open the database saved with this index (save_faiss_store / save_pipeline keep a copy "
            "beside it), or rebuild the vectors with store.update_embeddings(retriever)."
        )
    raise IndexOutOfSyncError(
        f"The FAISS index {index_file} of index {index!r} holds other vectors than the ones saved with its vector "
        f"map {path} and this database: the index file comes from another save. Nothing was returned. Restore the "
        "index file saved with them, or rebuild the vectors with store.update_embeddings(retriever)."
    )
