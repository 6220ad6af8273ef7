"""Any passage id Haystack accepts round-trips: through the vector map's save and load, through
deletes, on SQLite and on PostgreSQL (whose collation orders punctuation differently), and a
sentence id never stands for another passage."""

import pytest
from haystack.schema import Document
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever, load_faiss_store, save_faiss_store

IDS = {
    "a": "Alpha one is here. Alpha two is here. Alpha three is here.",
    "a#1": "Beta one is here. Beta two is here.",
    "line\nbreak": "Gamma one is here. Gamma two is here.",
    "a b": "Delta one is here. Delta two is here.",
    "a-b": "Epsilon one is here. Epsilon two is here.",
    "ab": "Zeta one is here. Zeta two is here.",
    "Ä/ü:☃": "Eta one is here. Eta two is here.",
    "a#": "Theta one is here. Theta two is here.",
}


def passages():
    return [Document(id=pid, content=text) for pid, text in IDS.items()]


def retriever_for(store, tiny_bert):
    return DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)


def found(retriever):
    return {doc.id: doc.content for doc in retriever.retrieve("is here", top_k=50)}


@pytest.mark.parametrize("kind", ["faiss-flat", "memory", "milvus"])
def test_every_id_round_trips_through_retrieval_save_load_and_delete(kind, tmp_path, tiny_bert):
    store = make_store(kind, tmp_path)
    retriever = retriever_for(store, tiny_bert)
    write(store, passages())
    store.update_embeddings(retriever)
    assert found(retriever) == IDS
    top = [doc.id for doc in retriever.retrieve("Gamma one is here", top_k=3)]
    if kind.startswith("faiss"):
        save_faiss_store(store, tmp_path / "saved" / "index.faiss")
        store = load_faiss_store(tmp_path / "saved" / "index.faiss")
        retriever = retriever_for(store, tiny_bert)
        assert found(retriever) == IDS  # the newline id is still there after the map's round trip
        assert [doc.id for doc in retriever.retrieve("Gamma one is here", top_k=3)] == top
    # deleting "a" deletes its three sentences only, never those of "a#1", "a#", "a b" or "ab"
    assert retriever.delete_passages(["a"]) == 3
    assert found(retriever) == {pid: text for pid, text in IDS.items() if pid != "a"}
    assert retriever.delete_passages(["line\nbreak", "a#1"]) == 4
    assert set(found(retriever)) == set(IDS) - {"a", "line\nbreak", "a#1"}
    assert store.get_document_count() == 2 * (len(IDS) - 3)


def test_delete_passages_is_refused_on_hnsw_and_deletes_nothing(tmp_path, tiny_bert):
    """HNSW cannot remove vectors: delete_passages says so and what to do, before any row or vector goes."""
    store = make_store("faiss-hnsw", tmp_path)
    retriever = retriever_for(store, tiny_bert)
    write(store, passages())
    store.update_embeddings(retriever)
    before = (store.get_document_count(), store.faiss_indexes["document"].ntotal, found(retriever))
    with pytest.raises(ValueError, match=r"This FAISS index type \(IndexHNSWFlat\) cannot remove vectors, so nothing"):
        retriever.delete_passages(["a"])
    assert (store.get_document_count(), store.faiss_indexes["document"].ntotal, found(retriever)) == before
