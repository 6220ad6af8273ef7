"""Findings of a fault battery against the Milvus path, each on the real server: an empty ``$or`` selects
nothing (it deleted every row), hostile ids page through every full read (pymilvus's iterator wrote them into
its next expression unquoted), one passage over a field's limit is refused before anything else is touched (the
whole call's passages were lost), ``$ne`` / mixed ``$in`` / null mean what they mean on every other store, a
passage given twice in one write keeps its last version, a collection of another layout is refused by name (it
answered ``[]``), and ``timeout`` bounds calls to a hung server."""

import os

import pytest
from haystack.schema import Document
from test_store_consistency import milvus_store, write

from haystack_dcsr import DCSRRetriever
from haystack_dcsr.core.indexes.filters import FilterError
from haystack_dcsr.haystack1.filters import matcher


def tenants(n=10):
    return [Document(content=f"Passage {i} is about topic {i}. It has a second sentence.", id=f"t{i}",
                     meta={"tenant": f"tenant{i % 2}", "year": 1900 + i, **({"extra": "y"} if i % 3 else {})})
            for i in range(n)]  # fmt: skip


@pytest.fixture
def store(tiny_bert):
    store = milvus_store("battery")
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False)
    write(store, tenants())
    store.update_embeddings(retriever)
    return store, retriever


def passages(store, filters=None):
    return sorted({d.id.split("#")[0] for d in store.get_all_documents(filters=filters)})


@pytest.mark.parametrize("empty", [{"$or": []}, {"$and": []}, {"$not": []}, {"$not": {}}, {"$and": [{"$or": []}]}])
def test_an_empty_logical_clause_is_refused_everywhere_and_deletes_nothing(store, empty):
    """``$or``/``$and``/``$not`` over no conditions: refused by name on a search, a listing and a delete (it
    deleted all 10 passages when an empty ``$and`` read as "every row"), as on every store (``matcher``)."""
    store, retriever = store
    with pytest.raises(FilterError, match="an empty clause"):
        retriever.retrieve("topic", filters=empty)
    with pytest.raises(FilterError, match="an empty clause"):
        store.get_all_documents(filters=empty)
    with pytest.raises(FilterError, match="an empty clause"):
        store.delete_documents(filters=empty)
    with pytest.raises(FilterError, match="names no field"):
        store.delete_documents(filters={})
    assert len(passages(store)) == 10
    with pytest.raises(FilterError, match="an empty clause"):
        matcher(empty)  # the same on every store


def test_ids_with_quotes_page_through_every_full_read(store, tiny_bert):
    store, retriever = store
    hostile = ['~" or id != "" or id == "', 'zz"last', "back\\slash", "new\nline"]
    write(store, [Document(content=f"Hostile passage {i}. Second sentence.", id=pid, meta={"tenant": "evil"})
                  for i, pid in enumerate(hostile)])  # fmt: skip
    store.update_embeddings(retriever)
    assert passages(store) == sorted([f"t{i}" for i in range(10)] + hostile)
    assert passages(store, {"tenant": "evil"}) == sorted(hostile)  # nobody else's rows, and the listing ends
    assert passages(store, {"tenant": "tenant0"}) == [f"t{i}" for i in range(0, 10, 2)]
    retriever.delete_passages(passage_ids=[hostile[0]])
    assert passages(store, {"tenant": "evil"}) == sorted(hostile[1:])


def test_one_passage_over_a_field_limit_is_refused_before_anything_is_touched(store):
    store, retriever = store
    before = {d.id: d.content for d in store.get_all_documents()}
    rewritten = [Document(content=d.content.replace("topic", "subject"), id=d.id, meta=d.meta) for d in tenants()]
    too_long = Document(content="x" * 70_000 + ".", id="huge")
    with pytest.raises(ValueError, match="content is 70001 bytes, more than the 65535"):
        write(store, rewritten + [too_long])
    big_meta = Document(content="Short. Passage.", id="bigmeta", meta={"blob": "m" * 70_000})
    with pytest.raises(ValueError, match="meta is .* bytes of JSON, more than the 65536"):
        write(store, rewritten + [big_meta])
    assert {d.id: d.content for d in store.get_all_documents()} == before  # 0 of 10 were lost
    write(store, rewritten)  # without the offending passage the same call goes through
    assert all("subject" in d.content or "second" in d.content for d in store.get_all_documents())


def test_filters_mean_on_milvus_what_they_mean_everywhere(store):
    store, _ = store
    metas = {f"t{i}": d.meta for i, d in enumerate(tenants())}
    for filters in (
        {"extra": {"$ne": "x"}},  # passages without the field are not "not equal"
        {"extra": {"$nin": ["x"]}},
        {"year": {"$in": [1903, "1905"]}},  # a mixed list: each kind compared with its own
        {"year": {"$nin": [1903, "x"]}},
        {"year": {"$in": []}},
        {"year": {"$nin": []}},
        {"$or": [{"tenant": "tenant0"}, {"year": {"$gte": 1907}}]},
    ):
        expected = sorted(pid for pid, meta in metas.items() if matcher(filters)(meta))
        assert passages(store, filters) == expected, filters
    for filters in ({"kind": None}, {"kind": {"$in": [None, "a"]}}):
        with pytest.raises(FilterError, match="compares field 'kind' with null"):
            store.get_all_documents(filters=filters)


def test_a_passage_given_twice_in_one_write_keeps_its_last_version(store):
    """Two preprocessed versions of one passage in one ``write_documents`` call: the last wins, as on FAISS."""
    from test_store_consistency import PRE

    store, _ = store
    first = PRE.process([Document(content="First text. One.", id="twice")])["documents"]
    last = PRE.process([Document(content="Last text. Two. Three.", id="twice")])["documents"]
    store.write_documents(first + last, duplicate_documents="overwrite")
    stored = sorted((d for d in store.get_all_documents() if d.id.startswith("twice#")), key=lambda d: d.id)
    assert [d.content for d in stored] == ["Last text.", "Two.", "Three."]


def test_a_collection_of_another_layout_is_refused_by_name():
    from milvus_server import shared_uri
    from pymilvus import DataType, MilvusClient

    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

    client = MilvusClient(uri=shared_uri())
    name = f"foreign_{os.getpid()}"
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=128)
    schema.add_field("text", DataType.VARCHAR, max_length=1000)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=32)
    index = client.prepare_index_params()
    index.add_index(field_name="vector", metric_type="IP", index_type="FLAT", params={})
    client.create_collection(name, schema=schema, index_params=index)  # milvus-haystack's shape
    with pytest.raises(ValueError, match=f"collection '{name}' has the fields id, text, vector.*lacks passage_id"):
        MilvusDocumentStore(uri=shared_uri(), index=name, embedding_dim=32)
    client.drop_collection(name)
