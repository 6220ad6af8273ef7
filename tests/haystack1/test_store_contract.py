"""The store contract (``store_contract``) on every Haystack 1.x store DCSR serves: FAISS (SQLite), InMemory and
Milvus (a real server)."""

import pytest
from haystack.schema import Document
from store_contract import CASES, load
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever


class Engine1:
    syntax = "1.x"

    def __init__(self, store, retriever):
        self.store, self.retriever = store, retriever
        self.store_delete = lambda filters: store.delete_documents(filters=filters)

    def write(self, passages):
        write(self.store, [Document(id=pid, content=text, meta=meta) for pid, (text, meta) in passages.items()])
        self.store.update_embeddings(self.retriever, update_existing_embeddings=False)

    def passages(self):
        return {d.id: d.content for d in self.retriever.retrieve("passage", top_k=100)}

    def search(self, filters):
        return [d.id for d in self.retriever.retrieve("passage", top_k=100, filters=filters)]

    def delete(self, filters):
        self.retriever.delete_passages(filters=filters)


@pytest.fixture(scope="module", params=["faiss-flat", "memory", "milvus"])
def engine(request, tmp_path_factory, tiny_bert):
    store = make_store(request.param, tmp_path_factory.mktemp("contract"))
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    engine = Engine1(store, retriever)
    load(engine)
    return engine


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_every_1x_store_keeps_the_contract(engine, case):
    case(engine)
