"""One retriever shared by threads, and batches with per-query filters, on every store kind.

Filters separate tenants or access rights: a batched query must never receive a passage outside
its own filter, and a query answered from several threads must get what it gets alone.
"""

import threading

import pytest
from haystack import Pipeline
from test_store_consistency import STORE_KINDS, make_store, write

from haystack_dcsr import DCSRRetriever

QUERIES = [
    "When was the Eiffel Tower completed?",
    "Which wall divided Berlin?",
    "Where do bananas grow?",
    "What is the largest planet?",
    "Who discovered penicillin?",
    "What is a gas giant?",
]


def title_filter(*titles):
    return {"title": list(titles)}


PER_QUERY = [
    title_filter("Paris"),
    title_filter("Berlin", "Banana"),
    title_filter("Jupiter"),
    title_filter("Penicillin", "Paris"),
    None,
    title_filter("Banana"),
]


@pytest.fixture(params=STORE_KINDS)
def indexed(request, tmp_path, tiny_bert, corpus):
    store = make_store(request.param, tmp_path)
    retriever = DCSRRetriever(
        document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500, top_k=3
    )
    write(store, corpus)
    store.update_embeddings(retriever)
    return store, retriever


def view(results):
    return [[(d.id, d.meta["title"], round(d.score, 5)) for d in docs] for docs in results]


def allowed(query_filter, title):
    return query_filter is None or title in query_filter["title"]


@pytest.mark.parametrize("how", ["retrieve_batch", "pipeline"])
@pytest.mark.parametrize("shared", [True, False])
def test_batched_filters_keep_every_query_inside_its_own_filter(indexed, how, shared):
    store, retriever = indexed
    filters = [title_filter("Berlin", "Jupiter")] * len(QUERIES) if shared else PER_QUERY
    one_by_one = [retriever.retrieve(q, filters=f) for q, f in zip(QUERIES, filters)]
    if how == "retrieve_batch":
        batched = retriever.retrieve_batch(QUERIES, filters=filters[0] if shared else filters)
    else:
        pipeline = Pipeline()
        pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
        output = pipeline.run_batch(
            queries=QUERIES, params={"Retriever": {"filters": filters[0] if shared else filters}}
        )
        batched = output["documents"]
    assert view(batched) == view(one_by_one)
    for query_filter, docs in zip(filters, batched):
        assert docs and all(allowed(query_filter, d.meta["title"]) for d in docs)
    # and every passage really is the one the store holds under that id
    by_id = {d.id: d.content for docs in retriever.retrieve_batch(QUERIES, top_k=5) for d in docs}
    assert all(by_id[d.id] == d.content for docs in batched for d in docs)


def test_a_filter_list_of_the_wrong_length_is_refused_before_any_query_is_encoded(indexed, monkeypatch):
    store, retriever = indexed
    before = view(retriever.retrieve_batch(QUERIES, filters=PER_QUERY))
    encoded = []
    monkeypatch.setattr(retriever, "embed_queries", lambda queries: encoded.append(queries))
    with pytest.raises(ValueError, match=f"Got {len(PER_QUERY) - 1} filters for {len(QUERIES)} queries"):
        retriever.retrieve_batch(QUERIES, filters=PER_QUERY[:-1])
    assert encoded == []
    monkeypatch.undo()
    assert view(retriever.retrieve_batch(QUERIES, filters=PER_QUERY)) == before


def test_one_retriever_shared_by_threads_answers_as_it_does_alone(indexed):
    store, retriever = indexed
    work = [(QUERIES[i % 6], PER_QUERY[(i * 5) % 6]) for i in range(48)]
    expected = {i: view([retriever.retrieve(q, filters=f)]) for i, (q, f) in enumerate(work)}
    retriever.refresh()  # threads start from a cold map and cache, and race to build them
    got, errors = {}, []
    barrier = threading.Barrier(8)

    def worker(offset):
        barrier.wait()
        try:
            for i in range(offset, len(work), 8):
                query, query_filter = work[i]
                if i % 3 == 0:
                    got[i] = view(retriever.retrieve_batch([query, query], filters=[query_filter, query_filter]))[:1]
                else:
                    got[i] = view([retriever.retrieve(query, filters=query_filter)])
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(offset,)) for offset in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert got == expected
