"""DCSR over a real vector engine through its Haystack 1.x store: Qdrant (qdrant-haystack), in-process
here, or the server at QDRANT_URL. It must rank exactly as FAISS Flat does."""

import pytest
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever

pytestmark = pytest.mark.qdrant
QUERIES = ["Who discovered penicillin?", "largest planet", "capital of Germany", "Where do bananas grow?"]


@pytest.fixture
def pair(tmp_path, tiny_bert, corpus):
    faiss, qdrant = make_store("faiss-flat", tmp_path), make_store("qdrant", tmp_path)
    retriever = DCSRRetriever(query_model=tiny_bert, progress_bar=False, top_n_sentences=3000)
    for store in (faiss, qdrant):
        retriever.document_store = store
        write(store, corpus)
        store.update_embeddings(retriever, batch_size=4)  # batches cut passages: siblings read from Qdrant
    return faiss, qdrant, retriever


def view(results):
    return [[(d.id, d.content, round(d.score, 4)) for d in docs] for docs in results]


@pytest.mark.parametrize("filters", [None, {"title": ["Paris", "Jupiter", "Banana"]}])
def test_qdrant_ranks_exactly_as_faiss_flat(pair, filters):
    faiss, qdrant, retriever = pair
    expected = retriever.retrieve_batch(QUERIES, filters=filters, top_k=5, document_store=faiss)
    assert view(retriever.retrieve_batch(QUERIES, filters=filters, top_k=5, document_store=qdrant)) == view(expected)
    assert [
        [s["text"] for s in d.meta["dcsr_sentences"]] for d in retriever.retrieve(QUERIES[0], document_store=qdrant)
    ] == [[s["text"] for s in d.meta["dcsr_sentences"]] for d in retriever.retrieve(QUERIES[0], document_store=faiss)]


def test_deleting_passages_on_qdrant(pair, corpus):
    faiss, qdrant, retriever = pair
    for store in (faiss, qdrant):
        assert retriever.delete_passages([corpus[4].id], document_store=store) == 3
        assert store.get_document_count() == 12
    assert view(retriever.retrieve_batch(QUERIES, document_store=qdrant)) == view(
        retriever.retrieve_batch(QUERIES, document_store=faiss)
    )
