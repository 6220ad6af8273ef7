"""Filters mean what they say on every store kind: numbers compare as numbers, an unknown operator
is an error, and FAISS, InMemory and Qdrant return what a plain Python evaluation says."""

import pytest
from haystack.schema import Document
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever
from haystack_dcsr.core.indexes.filters import FilterError, check_filters

YEARS = {"p79": 79, "p600": 600, "p850": 850, "p1889": 1889, "p1961": 1961}
KINDS = {"p79": "volcano", "p600": "empire", "p850": "empire", "p1889": "tower", "p1961": "wall"}
TEXT = "Something happened in the year {year}. It is remembered as a {kind}. People still talk about it."

NUMERIC_RANGES = ("QdrantDocumentStore", "MilvusDocumentStore")  # $gt & co. on numbers only: refused by name

# filter -> the reference: which passages a plain Python evaluation on typed values keeps
MATRIX = [
    ({"year": {"$gt": 1000}}, lambda y, k: y > 1000),
    ({"year": {"$gte": 850}}, lambda y, k: y >= 850),
    ({"year": {"$lt": 600}}, lambda y, k: y < 600),
    ({"year": {"$lte": 600, "$gt": 10}}, lambda y, k: 10 < y <= 600),
    ({"year": {"$ne": 79}}, lambda y, k: y != 79),
    ({"year": [600, 1889]}, lambda y, k: y in (600, 1889)),
    ({"year": {"$nin": [600, 1889]}}, lambda y, k: y not in (600, 1889)),
    ({"kind": "empire", "year": {"$gt": 700}}, lambda y, k: k == "empire" and y > 700),
    ({"$or": {"kind": "wall", "year": {"$lt": 100}}}, lambda y, k: k == "wall" or y < 100),
    ({"$not": {"year": {"$gt": 800}}}, lambda y, k: not y > 800),
    ({"kind": {"$gte": "tower"}}, lambda y, k: k >= "tower"),
]


@pytest.fixture(scope="module", params=["faiss-flat", "memory", "qdrant", "milvus"])
def indexed(request, tmp_path_factory, tiny_bert):
    store = make_store(request.param, tmp_path_factory.mktemp("filters"))
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    passages = [
        Document(id=pid, content=TEXT.format(year=year, kind=KINDS[pid]), meta={"year": year, "kind": KINDS[pid]})
        for pid, year in YEARS.items()
    ]
    write(store, passages)
    store.update_embeddings(retriever)
    return retriever


@pytest.mark.parametrize("filters, reference", MATRIX, ids=[str(f) for f, _ in MATRIX])
def test_each_store_returns_what_python_evaluation_keeps(indexed, filters, reference):
    store = type(indexed.document_store).__name__
    if store in NUMERIC_RANGES and "$gte" in str(filters) and "tower" in str(filters):
        with pytest.raises(FilterError, match=f"{store} compares \\$gte on numbers only"):
            indexed.retrieve("the year it happened", filters=filters)
        return
    expected = {pid for pid, year in YEARS.items() if reference(year, KINDS[pid])}
    found = {doc.id for doc in indexed.retrieve("the year it happened", filters=filters, top_k=10)}
    assert found == expected


@pytest.mark.parametrize(
    "filters, named",
    [
        ({"year": {"$regex": "^1"}}, "$regex"),
        ({"$xor": {"year": 79}}, "$xor"),
        ({"year": {}}, "no operator"),
        ({"year": {"$gt": [1, 2]}}, "$gt takes a number"),
        ({"year": {"$in": 79}}, "$in takes a list"),
    ],
)
def test_an_operator_no_store_reads_is_an_error_naming_it(indexed, filters, named):
    with pytest.raises(FilterError, match=named.replace("$", r"\$")):
        indexed.retrieve("the year", filters=filters)


def test_comparing_a_number_with_a_string_is_an_error_not_everything(indexed):
    numbers_only = type(indexed.document_store).__name__ in NUMERIC_RANGES
    with pytest.raises(FilterError, match="numbers only" if numbers_only else "different kinds"):
        indexed.retrieve("the year", filters={"year": {"$gt": "abc"}})


def test_check_filters_accepts_haystack_syntax():
    check_filters({"$and": [{"a": 1}, {"$or": {"b": [1, 2], "c": {"$ne": "x"}}}], "d": {"$gte": 2020}})
    check_filters(None)
