"""The store contract (``store_contract``) on every Haystack 2.x store DCSR serves: InMemory, DCSR's Milvus store
(a real server) and pgvector (a real PostgreSQL, both ranking paths)."""

import pytest
from haystack import Document
from haystack.core.errors import PipelineRuntimeError
from store_contract import CASES, load
from test_components import MODEL, indexing, pgvector_store

from haystack_dcsr.haystack2 import DCSRRetriever


class Engine2:
    syntax = "2.x"
    store_delete = None  # 2.x stores delete by ids; DCSR's delete_passages is the filtered delete

    def __init__(self, store, rank_in_database=False):
        self.store = store
        self.retriever = DCSRRetriever(document_store=store, model=MODEL, top_k=100, rank_in_database=rank_in_database)

    def write(self, passages):
        documents = [Document(id=pid, content=text, meta=meta) for pid, (text, meta) in passages.items()]
        try:
            indexing(self.store).run({"split": {"documents": documents}})
        except PipelineRuntimeError as error:  # Haystack wraps a component's error: the component's own is the answer
            raise error.__cause__ from None

    def passages(self):
        return {d.id: d.content for d in self.retriever.run(query="passage")["documents"]}

    def search(self, filters):
        return [d.id for d in self.retriever.run(query="passage", filters=filters)["documents"]]

    def delete(self, filters):
        self.retriever.delete_passages(filters=filters)


def milvus():
    pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")
    import uuid

    from milvus_server import shared_uri

    from haystack_dcsr.haystack2 import DCSRMilvusDocumentStore

    return DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"contract_{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="module", params=["memory", "milvus", "pgvector", "pgvector ranking in the database"])
def engine(request):
    if request.param == "memory":
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        store = InMemoryDocumentStore()
    elif request.param == "milvus":
        store = milvus()
    else:
        store = pgvector_store()
    engine = Engine2(store, rank_in_database=request.param.endswith("database"))
    load(engine)
    return engine


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_every_2x_store_keeps_the_contract(engine, case):
    case(engine)
