"""Nothing lost, nothing wrong: re-written, partly indexed and deleted passages, on every store kind.

Each test reproduces a way the store and the retriever used to disagree (numbers follow the
"nothing lost" issue). The property test at the end runs random sequences of the store's public
operations and checks, after every step, that documents, vectors and what the retriever returns
agree with a simple model of what was written.
"""

import random

import pytest
from haystack.document_stores import FAISSDocumentStore, InMemoryDocumentStore
from haystack.schema import Document

from haystack_dcsr import DCSRRetriever, SentencePreprocessor
from haystack_dcsr.haystack1.engine.sentence_map import IndexOutOfSyncError

PRE = SentencePreprocessor(progress_bar=False)
STORE_KINDS = ["faiss-flat", "faiss-hnsw", "memory", "qdrant", "milvus"]
TEXTS = {
    "x4": "Alpha one is here. Alpha two is here. Alpha three is here. Alpha four is here.",
    "x2": "Beta one is here. Beta two is here.",
    "x3": "Gamma one is here. Gamma two is here. Gamma three is here.",
    "x1": "Delta stands alone.",
}


def make_store(kind, tmp_path, name="store"):
    if kind == "memory":
        return InMemoryDocumentStore(embedding_dim=32, similarity="dot_product", progress_bar=False)
    if kind == "qdrant":
        return qdrant_store(tmp_path, name)
    if kind == "milvus":
        return milvus_store(name)
    sql_url = f"sqlite:///{tmp_path / name}.db"
    factory = {"faiss-flat": "Flat", "faiss-hnsw": "HNSW32"}[kind]
    return FAISSDocumentStore(sql_url=sql_url, embedding_dim=32, faiss_index_factory_str=factory, progress_bar=False)


def milvus_store(name, dim=32, **kwargs):
    """A new collection on the real Milvus server (``milvus_server.shared_uri``)."""
    import uuid

    pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")
    from milvus_server import shared_uri

    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

    index = f"dcsr_{name}_{uuid.uuid4().hex[:8]}"
    return MilvusDocumentStore(uri=shared_uri(), index=index, embedding_dim=dim, progress_bar=False, **kwargs)


def qdrant_store(tmp_path, name, dim=32):
    """In-process Qdrant (qdrant-client's local mode), or the server at QDRANT_URL."""
    import os
    import uuid

    qdrant = pytest.importorskip("qdrant_haystack", reason="qdrant-haystack is not installed (make installs it)")
    url = os.environ.get("QDRANT_URL")
    location = {"url": url} if url else {"location": ":memory:"}
    return qdrant.QdrantDocumentStore(
        **location,
        index=f"dcsr_{name}_{uuid.uuid4().hex[:8]}",
        embedding_dim=dim,
        similarity="dot_product",
        recreate_index=True,
        progress_bar=False,
    )


def write(store, passages, mode="overwrite"):
    store.write_documents(PRE.process(passages)["documents"], duplicate_documents=mode)


@pytest.fixture
def base_corpus(corpus):
    return corpus[:3]


def everything(retriever, store):
    """All passages the retriever can return (a query that reaches every sentence)."""
    results = retriever.retrieve("is here", top_k=50, document_store=store)
    return {doc.id: doc.content for doc in results}


class Ranking(list):
    """(id, content, HasAns) in rank order; equal when ids and texts match and scores agree to 1e-5
    (stores sum the same softmax terms in different orders)."""

    def __eq__(self, other):
        return len(self) == len(other) and all(a[:2] == b[:2] and abs(a[2] - b[2]) <= 1e-5 for a, b in zip(self, other))


def ranked(retriever, store, query="Alpha three is here"):
    return Ranking((d.id, d.content, d.score) for d in retriever.retrieve(query, top_k=50, document_store=store))


def make_retriever(tiny_bert, store):
    return DCSRRetriever(
        document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500, passage_cache_size=100
    )


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_1_overwriting_a_passage_with_fewer_sentences_keeps_every_vector(kind, tmp_path, tiny_bert, base_corpus):
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, base_corpus + [Document(TEXTS["x4"], id="x")])
    store.update_embeddings(retriever)
    write(store, [Document(TEXTS["x2"], id="x")], "overwrite")
    store.update_embeddings(retriever)
    # the write deleted the old version's x#2, x#3: the store holds exactly the current sentences
    assert store.get_embedding_count() == store.get_document_count() == 9 + 2
    assert sorted(d.id for d in store.get_all_documents() if d.id.startswith("x#")) == ["x#0", "x#1"]
    found = everything(retriever, store)
    assert found == {**{d.id: d.content for d in base_corpus}, "x": TEXTS["x2"]}
    assert all(
        "Alpha" not in s["text"] for d in retriever.retrieve("Alpha four", top_k=50) for s in d.meta["dcsr_sentences"]
    )
    # the same answers as a store that only ever held the new version
    fresh = make_store(kind, tmp_path, "fresh")
    write(fresh, base_corpus + [Document(TEXTS["x2"], id="x")])
    fresh.update_embeddings(retriever)
    assert ranked(retriever, store, "Beta two") == ranked(retriever, fresh, "Beta two")


@pytest.mark.parametrize("kind", STORE_KINDS)
@pytest.mark.parametrize("update_existing", [True, False])
def test_3_skip_with_a_longer_new_version_keeps_the_stored_passage(
    kind, update_existing, tmp_path, tiny_bert, base_corpus
):
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, base_corpus + [Document(TEXTS["x2"], id="y")])
    store.update_embeddings(retriever)
    write(store, [Document(TEXTS["x4"], id="y")], "skip")  # y#2, y#3 of the skipped version: deleted at once
    assert sorted(d.id for d in store.get_all_documents() if d.id.startswith("y#")) == ["y#0", "y#1"]
    store.update_embeddings(retriever, update_existing_embeddings=update_existing)
    found = everything(retriever, store)
    assert found["y"] == TEXTS["x2"] and len(found) == 4
    assert all(
        s["sentence_index"] < 2
        for d in retriever.retrieve("Alpha four is here", top_k=50)
        if d.id == "y"
        for s in d.meta["dcsr_sentences"]
    )


def test_4_two_different_passages_with_one_id_in_a_batch_are_refused():
    with pytest.raises(ValueError, match="'d'.*two different passages"):
        PRE.process([Document("One. Two.", id="d"), Document("Three.", id="d")])
    same = PRE.process([Document("One. Two.", id="d"), Document("One. Two.", id="d")])
    assert [doc.id for doc in same["documents"]] == ["d#0", "d#1"] and len(same["passages"]) == 1


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_5_a_partly_built_index_answers_and_resumes_exactly(kind, tmp_path, tiny_bert, base_corpus, monkeypatch):
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    passages = base_corpus + [Document(TEXTS[k], id=k) for k in ("x4", "x3")]
    write(store, passages)
    real, calls = retriever.embed_documents, []

    def flaky(documents):
        calls.append(len(documents))
        if len(calls) == 3:  # Haystack's one-document probe, one batch of 4, then the crash
            raise Interrupt()
        return real(documents)

    monkeypatch.setattr(retriever, "embed_documents", flaky)
    with pytest.raises(Interrupt):
        store.update_embeddings(retriever, batch_size=4)
    monkeypatch.setattr(retriever, "embed_documents", real)
    embedded = [
        d
        for d in store.get_all_documents(return_embedding=True)
        if d.embedding is not None or d.meta.get("vector_id") is not None
    ]
    if kind != "qdrant":  # qdrant-haystack writes random vectors for documents it has no embedding for
        assert 0 < len(embedded) < 16
    found = everything(retriever, store)  # no exception: partly indexed passages answer from what has vectors
    expected = {d.id: d.content for d in passages}
    assert found and all(expected[pid] == content for pid, content in found.items())
    store.update_embeddings(retriever, update_existing_embeddings=False, batch_size=4)
    fresh = make_store(kind, tmp_path, "fresh")
    write(fresh, passages)
    fresh.update_embeddings(retriever)
    assert everything(retriever, store) == expected
    assert ranked(retriever, store) == ranked(retriever, fresh)


def test_6_a_faiss_flat_index_desynchronised_by_delete_is_refused_then_repaired(tmp_path, tiny_bert, corpus):
    store = make_store("faiss-flat", tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, corpus)
    store.update_embeddings(retriever)
    retriever.retrieve("Paris")  # the retriever has mapped the index
    store.delete_documents(ids=[f"{corpus[1].id}#{i}" for i in range(3)])  # Haystack compacts FAISS, not SQL
    with pytest.raises(IndexOutOfSyncError, match=r"update_embeddings\(retriever\)"):
        retriever.retrieve("Paris")
    store.update_embeddings(retriever)
    assert set(everything(retriever, store)) == {d.id for d in corpus} - {corpus[1].id}


@pytest.mark.parametrize("kind", ["faiss-flat", "memory", "milvus"])
def test_delete_passages_keeps_the_other_vectors_right_without_re_embedding(kind, tmp_path, tiny_bert, corpus):
    store, fresh = make_store(kind, tmp_path), make_store(kind, tmp_path, "fresh")
    retriever = make_retriever(tiny_bert, store)
    write(store, corpus + [Document(TEXTS["x4"], id="x")])
    store.update_embeddings(retriever)
    write(store, [Document(TEXTS["x2"], id="x")])  # deletes x#2, x#3 of the old version
    store.update_embeddings(retriever)
    before = store.get_embedding_count()
    assert retriever.delete_passages([corpus[0].id, corpus[2].id, "x"]) == 3 + 3 + 2
    assert store.get_document_count() == store.get_embedding_count() == before - 8
    write(fresh, [corpus[1], corpus[3], corpus[4]])
    fresh.update_embeddings(retriever)
    for query in ["largest planet", "Fleming", "Berlin Wall"]:
        assert ranked(retriever, store, query) == ranked(retriever, fresh, query)


@pytest.mark.parametrize("kind", ["faiss-flat", "memory"])
def test_7_top_k_must_be_a_positive_integer(kind, tmp_path, tiny_bert, corpus):
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, corpus)
    store.update_embeddings(retriever)
    assert len(retriever.retrieve("Paris", top_k=2)) == 2
    for bad in (0, -1, -3, 2.5):
        with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, "):
            retriever.retrieve("Paris", top_k=bad)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, "):
        retriever.retrieve_batch(["Paris"], top_k=0)


def test_an_index_rebuilt_by_another_retriever_is_noticed(tmp_path, tiny_bert, corpus):
    store = make_store("faiss-flat", tmp_path)
    serving, other = make_retriever(tiny_bert, store), make_retriever(tiny_bert, store)
    write(store, corpus)
    store.update_embeddings(serving)
    assert set(everything(serving, store)) == {d.id for d in corpus}
    renamed = [Document(d.content, id=f"v2-{d.id}", meta=d.meta) for d in corpus]
    store.delete_documents()  # everything (FAISS reset), then as many vectors again, for other sentences
    write(store, renamed)
    store.update_embeddings(other)
    assert store.get_embedding_count() == 15
    fresh = make_store("faiss-flat", tmp_path, "fresh")
    write(fresh, renamed)
    fresh.update_embeddings(other)
    assert ranked(serving, store, "Fleming") == ranked(other, fresh, "Fleming")
    assert set(everything(serving, store)) == {d.id for d in renamed}


def test_a_passage_re_written_through_the_store_is_served_as_it_reads_by_every_retriever(tmp_path, tiny_bert, corpus):
    """A passage re-written (more sentences) keeps its old vector ids until it is re-embedded: the write tells every
    retriever's map of the store (``passage_writes.vector_ids_changed``), so one that did not write serves the
    passage as it now reads, not its old version's vector ids pointing at rows of the new one (left out before)."""
    store = make_store("faiss-flat", tmp_path)
    serving, writer = make_retriever(tiny_bert, store), make_retriever(tiny_bert, store)
    write(store, corpus)
    store.update_embeddings(writer)
    assert set(everything(serving, store)) == {d.id for d in corpus}  # serving's map built
    changed = Document(corpus[1].content + " A new last sentence is here.", id=corpus[1].id, meta=corpus[1].meta)
    writer.document_store.write_documents(PRE.process([changed])["documents"], duplicate_documents="overwrite")
    assert everything(serving, store)[changed.id] == changed.content


# ---- property test -------------------------------------------------------------------------------

VERSIONS = [
    "One is first. One is second.",
    "Two is first. Two is second. Two is third. Two is fourth.",
    "Three is alone.",
    "Four a. Four b. Four c.",
]


class Model:
    """What the store should serve: each passage's current text, and whether its vectors are fresh."""

    def __init__(self):
        self.text = {}
        self.fresh = {}

    def write(self, pid, text, mode):
        if pid in self.text and mode == "skip":
            return
        if pid not in self.text or self.text[pid] != text:
            self.fresh[pid] = False
        self.text[pid] = text


def check(model, store, retriever, kind):
    found = everything(retriever, store)  # every returned passage is exactly its current text
    assert all(model.text[pid] == content for pid, content in found.items()), found
    assert {pid for pid, fresh in model.fresh.items() if fresh} <= set(found)
    # exactly the current sentences are stored: no rows of earlier versions (counts and filters agree)
    sentences = sum(len(PRE.process([Document(text, id=pid)])["documents"]) for pid, text in model.text.items())
    assert store.get_document_count() == sentences
    if kind != "memory":
        assert store.get_embedding_count() <= store.get_document_count()


@pytest.mark.parametrize("kind", ["faiss-flat", "memory", "milvus"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_sequences_of_store_operations_never_serve_a_wrong_passage(kind, seed, tmp_path, tiny_bert):
    rng = random.Random(seed)
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    model = Model()
    for step in range(14):
        operation = rng.choice(["write", "write", "update", "update_new", "delete", "reload"])
        if operation == "write":
            pid, mode = rng.choice("pqrs"), rng.choice(["overwrite", "skip"])
            text = rng.choice(VERSIONS)
            write(store, [Document(text, id=pid)], mode)
            model.write(pid, text, mode)
        elif operation == "update":
            store.update_embeddings(retriever)
            model.fresh = {pid: True for pid in model.text}
        elif operation == "update_new":
            store.update_embeddings(retriever, update_existing_embeddings=False)
        elif operation == "delete" and model.text:
            pid = rng.choice(sorted(model.text))
            retriever.delete_passages([pid])
            del model.text[pid], model.fresh[pid]
        elif (
            operation == "reload"
            and kind.startswith("faiss")
            and store.get_document_count() == store.get_embedding_count()
        ):
            store.save(str(tmp_path / f"i{step}.faiss"))
            store = FAISSDocumentStore.load(str(tmp_path / f"i{step}.faiss"))
            retriever = make_retriever(tiny_bert, store)
        check(model, store, retriever, kind)
    store.update_embeddings(retriever)
    model.fresh = {pid: True for pid in model.text}
    check(model, store, retriever, kind)
    assert set(everything(retriever, store)) == set(model.text)


@pytest.mark.parametrize("kind", ["memory", "qdrant", "milvus"])
def test_a_dropped_passage_is_ranked_as_if_never_indexed(kind, tmp_path, tiny_bert, base_corpus):
    """A passage that lost a sentence (deleted with the store's own delete_documents) cannot be rebuilt: it
    is left out and HasAns recomputed without its sentences, the rule of the 2.x retriever too
    (``hasans_without``), so the answer equals that of a store that never held it. (On FAISS such a delete
    renumbers the vectors, which the retriever refuses outright: test_index_map.py.)"""
    store = make_store(kind, tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, base_corpus + [Document(TEXTS["x3"], id="x")])
    store.update_embeddings(retriever)
    store.delete_documents(ids=["x#1"])
    fresh = make_store(kind, tmp_path, "fresh")
    write(fresh, base_corpus)
    fresh.update_embeddings(retriever)
    for query in ("Gamma two is here", "Alpha three is here", "Fleming"):
        got = ranked(retriever, store, query)
        assert "x" not in [pid for pid, _, _ in got]
        assert got == ranked(retriever, fresh, query)
