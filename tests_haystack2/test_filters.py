"""Filters mean what they say on the 2.x stores too: the same matrix as the 1.x suite (in 2.x syntax)
on InMemory, Qdrant and pgvector (through the driver and in the database), each compared with a plain Python
evaluation; an unknown operator is an error."""

import pytest
from haystack import Document
from test_components import indexing

from haystack_dcsr.haystack2 import DCSRRetriever

YEARS = {"p79": 79, "p600": 600, "p850": 850, "p1889": 1889, "p1961": 1961}
KINDS = {"p79": "volcano", "p600": "empire", "p850": "empire", "p1889": "tower", "p1961": "wall"}
TEXT = "Something happened in the year {year}. It is remembered as a {kind}. People still talk about it."


def cmp(field, operator, value):
    return {"field": f"meta.{field}", "operator": operator, "value": value}


MATRIX = [
    (cmp("year", ">", 1000), lambda y, k: y > 1000),
    (cmp("year", ">=", 850), lambda y, k: y >= 850),
    (cmp("year", "<", 600), lambda y, k: y < 600),
    ({"operator": "AND", "conditions": [cmp("year", "<=", 600), cmp("year", ">", 10)]}, lambda y, k: 10 < y <= 600),
    (cmp("year", "!=", 79), lambda y, k: y != 79),
    (cmp("year", "in", [600, 1889]), lambda y, k: y in (600, 1889)),
    (cmp("year", "not in", [600, 1889]), lambda y, k: y not in (600, 1889)),
    (
        {"operator": "OR", "conditions": [cmp("kind", "==", "wall"), cmp("year", "<", 100)]},
        lambda y, k: k == "wall" or y < 100,
    ),
    ({"operator": "NOT", "conditions": [cmp("year", ">", 800)]}, lambda y, k: not y > 800),
]


@pytest.fixture(scope="module", params=["memory", "qdrant", "pgvector", "pgvector ranking in the database"])
def retriever(request):
    if request.param == "memory":
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        store = InMemoryDocumentStore()
    elif request.param.startswith("pgvector"):
        from test_components import pgvector_store

        store = pgvector_store()
    else:
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        store = QdrantDocumentStore(
            location=":memory:", embedding_dim=384, similarity="cosine", progress_bar=False, recreate_index=True
        )
    passages = [
        Document(id=pid, content=TEXT.format(year=year, kind=KINDS[pid]), meta={"year": year, "kind": KINDS[pid]})
        for pid, year in YEARS.items()
    ]
    indexing(store).run({"split": {"documents": passages}})
    in_database = request.param.endswith("database")
    return DCSRRetriever(document_store=store, model="all-MiniLM-L6-v2", top_k=10, rank_in_database=in_database)


@pytest.mark.parametrize("filters, reference", MATRIX, ids=[str(f) for f, _ in MATRIX])
def test_each_2x_store_returns_what_python_evaluation_keeps(retriever, filters, reference):
    expected = {pid for pid, year in YEARS.items() if reference(year, KINDS[pid])}
    found = {doc.id for doc in retriever.run(query="the year it happened", filters=filters)["documents"]}
    assert found == expected


def test_an_unknown_operator_is_an_error_on_every_2x_store(retriever):
    from haystack_dcsr.core.indexes.filters import FilterError  # the one checker refuses it before any store

    with pytest.raises(FilterError, match="[Uu]nknown .*regex|regex.*not supported|[Uu]nknown operator"):
        retriever.run(query="the year", filters=cmp("year", "regex", "^1"))
