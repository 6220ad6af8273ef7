"""DCSRRetriever mechanics on a tiny random BERT: storage, filters, persistence, bad input."""

import numpy as np
import pytest
from haystack.document_stores import FAISSDocumentStore, InMemoryDocumentStore
from haystack.schema import Document
from tiny_models import MINILM

from haystack_dcsr import DCSRRetriever, QueryEncoder, SentencePreprocessor


def sentences_of(corpus):
    return SentencePreprocessor(progress_bar=False).process(corpus)["documents"]


def faiss_store(tmp_path, dim=32, factory="Flat", name="store"):
    return FAISSDocumentStore(
        sql_url=f"sqlite:///{tmp_path / name}.db",
        embedding_dim=dim,
        faiss_index_factory_str=factory,
        progress_bar=False,
    )


def index(store, retriever, corpus, batch_size=None):
    retriever.document_store = store
    store.write_documents(sentences_of(corpus))
    store.update_embeddings(retriever, batch_size=batch_size)


@pytest.fixture
def retriever(tiny_bert):
    return DCSRRetriever(query_model=tiny_bert, progress_bar=False, top_n_sentences=50)


def ranking(documents):
    return [(d.id, round(d.score, 6)) for d in documents]


def test_returns_passages_with_hasans_and_supporting_sentences(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    retriever.document_store = store
    index(store, retriever, corpus)
    assert store.get_embedding_count() == 15
    results = retriever.retrieve("Who discovered penicillin?", top_k=5)
    assert sorted(d.id for d in results) == sorted(d.id for d in corpus)
    assert {d.content for d in results} == {d.content for d in corpus}
    scores = [d.score for d in results]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    for doc in results:
        support = doc.meta["dcsr_sentences"]
        assert len(support) == 3 and doc.meta["title"]
        assert all(s["text"] in doc.content for s in support)
        # HasAns is exactly 1 - prod(1 - p) of the supporting sentences
        assert doc.score == pytest.approx(1 - np.prod([1 - s["probability"] for s in support]))
    assert sum(s["probability"] for d in results for s in d.meta["dcsr_sentences"]) == pytest.approx(1.0)


def test_faiss_and_in_memory_stores_rank_identically(tmp_path, retriever, corpus):
    faiss = faiss_store(tmp_path)
    memory = InMemoryDocumentStore(embedding_dim=32, similarity="dot_product", progress_bar=False)
    for store in (faiss, memory):
        index(store, retriever, corpus)
    for query in ["largest planet", "capital of Germany"]:
        a = retriever.retrieve(query, document_store=faiss)
        b = retriever.retrieve(query, document_store=memory)
        assert [d.id for d in a] == [d.id for d in b]
        assert [d.score for d in a] == pytest.approx([d.score for d in b], rel=1e-4)


def test_update_embeddings_batches_that_split_passages_give_the_same_vectors(tmp_path, retriever, corpus):
    whole, split = faiss_store(tmp_path, name="whole"), faiss_store(tmp_path, name="split")
    index(whole, retriever, corpus)
    index(split, retriever, corpus, batch_size=2)  # every batch boundary cuts a passage
    for query in ["bananas", "Fleming"]:
        a, b = retriever.retrieve(query, document_store=whole), retriever.retrieve(query, document_store=split)
        assert [d.id for d in a] == [d.id for d in b]
        assert [d.score for d in a] == pytest.approx([d.score for d in b], rel=1e-4)


def test_a_retriever_without_a_store_indexes_when_passages_are_not_split(tmp_path, tiny_bert, corpus):
    reference, bare = faiss_store(tmp_path, name="reference"), faiss_store(tmp_path, name="bare")
    index(reference, DCSRRetriever(query_model=tiny_bert, progress_bar=False), corpus)
    lone = DCSRRetriever(query_model=tiny_bert, progress_bar=False)  # no document_store
    bare.write_documents(sentences_of(corpus))
    bare.update_embeddings(lone)  # Haystack probes the size with one sentence first
    stored = {d.id: d.embedding for d in reference.get_all_documents(return_embedding=True)}
    for doc in bare.get_all_documents(return_embedding=True):
        assert doc.embedding == pytest.approx(stored[doc.id], abs=1e-5)
    other = faiss_store(tmp_path, name="other")
    other.write_documents(sentences_of(corpus))
    with pytest.raises(ValueError, match="no document store to read them from"):
        other.update_embeddings(DCSRRetriever(query_model=tiny_bert, progress_bar=False), batch_size=2)


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "IVF2,Flat"])
def test_filters_are_honoured_on_faiss_index_types(tmp_path, retriever, corpus, factory):
    store = faiss_store(tmp_path, factory=factory)
    if factory.startswith("IVF"):
        retriever.document_store = store
        store.write_documents(sentences_of(corpus))
        store.train_index(embeddings=np.random.default_rng(0).normal(size=(64, 32)).astype("float32"))
        store.update_embeddings(retriever)
    else:
        index(store, retriever, corpus)
    results = retriever.retrieve("capital city", top_k=5, filters={"title": ["Paris", "Banana"]}, document_store=store)
    assert sorted(d.meta["title"] for d in results) == ["Banana", "Paris"]
    assert retriever.retrieve("x", filters={"title": ["Nowhere"]}, document_store=store) == []


def test_filters_per_query_in_retrieve_batch(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    index(store, retriever, corpus)
    out = retriever.retrieve_batch(["a", "b"], filters=[{"title": ["Jupiter"]}, None], top_k=5, document_store=store)
    assert [d.meta["title"] for d in out[0]] == ["Jupiter"] and len(out[1]) == 5
    single = [retriever.retrieve(q, top_k=5, document_store=store) for q in ["c", "d"]]
    assert [ranking(r) for r in retriever.retrieve_batch(["c", "d"], top_k=5, document_store=store)] == [
        ranking(r) for r in single
    ]


def test_saved_store_and_retriever_give_identical_rankings(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    retriever.document_store = store
    index(store, retriever, corpus)
    queries = ["first antibiotic", "Berlin Wall", "gas giant"]
    before = [ranking(retriever.retrieve(q, top_k=5)) for q in queries]
    store.save(tmp_path / "index.faiss")
    retriever.save(tmp_path / "retriever")
    loaded_store = FAISSDocumentStore.load(tmp_path / "index.faiss")
    loaded = DCSRRetriever.load(tmp_path / "retriever", document_store=loaded_store, progress_bar=False)
    assert [ranking(loaded.retrieve(q, top_k=5)) for q in queries] == before


def test_a_saved_retriever_is_a_model_directory_and_older_saves_still_load(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    retriever.document_store = store
    index(store, retriever, corpus)
    queries = ["first antibiotic", "gas giant"]
    before = [ranking(retriever.retrieve(q, top_k=5)) for q in queries]
    saved = tmp_path / "retriever"
    retriever.save(saved)
    assert (saved / "dcsr_model.json").is_file() and not list(saved.glob("*/dcsr_encoder.json"))  # one copy
    as_model = DCSRRetriever(model=str(saved), document_store=store, progress_bar=False)
    assert [ranking(as_model.retrieve(q, top_k=5)) for q in queries] == before
    (saved / "dcsr_model.json").unlink()  # as retrievers were saved before: each tower with its own settings
    retriever.query_encoder.tower.save(saved / "query_encoder")
    retriever.passage_encoder.save(saved / "passage_encoder")
    older = DCSRRetriever.load(saved, document_store=store, progress_bar=False)
    assert [ranking(older.retrieve(q, top_k=5)) for q in queries] == before


def test_new_documents_after_a_query_are_found(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    retriever.document_store = store
    index(store, retriever, corpus[:2])
    assert len(retriever.retrieve("anything", top_k=10)) == 2
    store.write_documents(sentences_of(corpus[2:]))
    store.update_embeddings(retriever, update_existing_embeddings=False)
    assert len(retriever.retrieve("anything", top_k=10)) == 5


def test_run_indexing_embeds_before_writing(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    output, _ = retriever.run_indexing(sentences_of(corpus))
    store.write_documents(output["documents"])
    assert store.get_embedding_count() == 15
    assert len(retriever.retrieve("planet", document_store=store, top_k=3)) == 3


def test_query_encoder_node_can_be_passed_in(tiny_bert, tmp_path, corpus):
    encoder = QueryEncoder(tiny_bert, progress_bar=False)
    retriever = DCSRRetriever(query_encoder=encoder, passage_model=tiny_bert, progress_bar=False)
    assert retriever.query_encoder is encoder
    output, _ = encoder.run(query="who?")
    np.testing.assert_allclose(output["query_embedding"], retriever.embed_queries(["who?"])[0])


def test_bad_input_gives_clear_errors_and_keeps_the_store(tmp_path, retriever, corpus):
    store = faiss_store(tmp_path)
    retriever.document_store = store
    index(store, retriever, corpus)
    with pytest.raises(ValueError, match="Query 0 is empty"):
        retriever.retrieve("   ")
    with pytest.raises(ValueError, match="expects 384-dimensional embeddings but the DCSR towers produce 32"):
        DCSRRetriever(document_store=faiss_store(tmp_path, dim=384, name="other"), query_model=retriever.passage_model)
    with pytest.raises(ValueError, match="not a DCSR sentence Document"):
        retriever.embed_documents([Document(content="raw passage")])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        DCSRRetriever(query_model=str(tmp_path / "missing-model"))
    assert store.get_document_count() == 15 and store.get_embedding_count() == 15
    assert len(retriever.retrieve("Fleming", top_k=5)) == 5


def test_empty_store_returns_nothing(tmp_path, retriever):
    store = faiss_store(tmp_path)
    store.update_embeddings(retriever)  # Haystack warns and returns on an empty index
    assert retriever.retrieve("anything", document_store=store) == []
    assert retriever.retrieve("anything", document_store=InMemoryDocumentStore(embedding_dim=32)) == []


def test_huge_and_non_latin_passages_are_indexed_whole(tmp_path, retriever):
    huge = Document(content=" ".join(f"Word{i % 50} appears here." for i in range(1000)), id="huge")  # ~8 windows
    chinese = Document(content="北京是中国的首都。上海是最大的城市。", id="zh")
    store = faiss_store(tmp_path)
    index(store, retriever, [huge, chinese])
    assert store.get_embedding_count() == 1000 + 2
    found = {d.id: d for d in retriever.retrieve("首都", top_k=2, document_store=store)}
    assert found["huge"].content == huge.content and found["zh"].content == chinese.content


def test_passage_cache_serves_repeats_and_is_cleared_when_the_index_changes(tmp_path, tiny_bert, corpus):
    cached = DCSRRetriever(query_model=tiny_bert, progress_bar=False, passage_cache_size=3)
    uncached = DCSRRetriever(query_model=tiny_bert, progress_bar=False, passage_cache_size=0)
    store = faiss_store(tmp_path)
    index(store, cached, corpus[:4])
    for query in ["one", "two", "one"]:
        assert ranking(cached.retrieve(query, document_store=store)) == ranking(
            uncached.retrieve(query, document_store=store)
        )
    search = cached.engine.search_for(store)
    assert len(search._cache) == 3  # bounded
    changed = Document(content="Paris is in France. It changed. Three sentences.", id=corpus[0].id, meta={"title": "P"})
    store.write_documents(sentences_of([changed]), duplicate_documents="overwrite")
    store.update_embeddings(cached)
    assert len(search._cache) == 0
    found = {d.id: d.content for d in cached.retrieve("Paris", top_k=4, document_store=store)}
    assert found[corpus[0].id] == changed.content


@pytest.mark.parametrize("kind", ["faiss", "memory", "qdrant", "milvus"])
def test_every_1x_engine_holds_the_index_contract_and_the_retriever_serves_its_ranking(kind, tmp_path):
    """Each 1.x engine's sentence index holds the contract every engine is held to (``index_contract``: the core's
    ranking under the one driver, a passage whose sentence was deleted through the store left out), as the core's
    and the 2.x suite's engines do; the retriever serves that ranking as Documents. FAISS Flat renumbers its vectors
    on a direct delete (refused by name), so its contract runs without one."""
    from corpus import CORPUS, core_ranking
    from index_contract import QUESTION, holds_the_contract
    from test_store_consistency import milvus_store, qdrant_store

    from haystack_dcsr import DCSRModel

    retriever = DCSRRetriever(model=MINILM, top_k=5, use_gpu=False, progress_bar=False)
    if kind == "faiss":
        store = FAISSDocumentStore(
            sql_url=f"sqlite:///{tmp_path / 'contract.db'}", embedding_dim=384, faiss_index_factory_str="Flat"
        )
    elif kind == "memory":
        store = InMemoryDocumentStore(embedding_dim=384, similarity="dot_product", progress_bar=False)
    elif kind == "qdrant":
        store = qdrant_store(tmp_path, "contract", dim=384)
    else:
        store = milvus_store("contract", dim=384)
    passages = [Document(content=text, id=title, meta={"title": title}) for title, text in CORPUS]
    index(store, retriever, passages, batch_size=64)
    model = DCSRModel.from_pretrained(MINILM, use_gpu=False)
    served = retriever.retrieve(QUESTION, document_store=store)
    expected = core_ranking(model, QUESTION)
    assert [d.id for d in served] == [title for title, _ in expected]
    assert [d.score for d in served] == pytest.approx([score for _, score in expected], rel=1e-4, abs=1e-9)
    delete = None if kind == "faiss" else (lambda: store.delete_documents(ids=["Paris#1"]))
    holds_the_contract(retriever.engine.search_for(store), model, delete)


def test_a_large_in_memory_store_is_named_with_what_to_use_instead(tmp_path, retriever, corpus, caplog, monkeypatch):
    """InMemoryDocumentStore scores every vector in Python per query (50,000 sentences: 6.3 s a query): past the
    threshold the first query says so, once, and again after the store grows."""
    from haystack_dcsr.haystack1.engine import sentence_search

    memory = InMemoryDocumentStore(embedding_dim=32, similarity="dot_product", progress_bar=False)
    index(memory, retriever, corpus)
    monkeypatch.setattr(sentence_search, "IN_MEMORY_SENTENCES_WARNING", 15)  # the corpus has exactly 15
    with caplog.at_level("WARNING", logger=sentence_search.__name__):
        retriever.retrieve("largest planet", document_store=memory)
    assert "InMemoryDocumentStore holds" not in caplog.text  # 15 is not past 15
    monkeypatch.setattr(sentence_search, "IN_MEMORY_SENTENCES_WARNING", 14)
    store = faiss_store(tmp_path)
    index(store, retriever, corpus)  # a FAISS store of the same size: nothing to say
    with caplog.at_level("WARNING", logger=sentence_search.__name__):
        retriever.retrieve("largest planet", document_store=store)
        assert "InMemoryDocumentStore holds" not in caplog.text
        retriever.document_store = memory
        memory.update_embeddings(retriever)  # the store changed: its size is looked at again
        retriever.retrieve("largest planet", document_store=memory)
        retriever.retrieve("capital of Germany", document_store=memory)
    assert caplog.text.count("InMemoryDocumentStore holds 15 sentence vectors") == 1
    assert "Use FAISSDocumentStore" in caplog.text
