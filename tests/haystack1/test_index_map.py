"""The FAISS vector map saved beside the index: loaded instead of a full SQL scan, extended with
new vectors only, and never out of step with the store (counts of documents, vectors and map
entries agree after add, delete, save/load and an interrupted update)."""

import numpy as np
import pytest
from haystack.document_stores import FAISSDocumentStore
from haystack.schema import Document
from test_store_consistency import TEXTS, everything, make_store, ranked, write

import haystack_dcsr.haystack1.engine.sentence_search as sentence_search
from haystack_dcsr import DCSRRetriever, load_faiss_store, save_faiss_store


def make_retriever(tiny_bert, store):
    return DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)


def sql_vector_rows(store):
    return sum(1 for d in store.get_all_documents() if d.meta.get("vector_id") is not None)


def the_map(retriever, store):
    return retriever.engine.search_for(store).current_map()


@pytest.fixture
def scans(monkeypatch):
    """Records each SQL read of the map's rows: None for a full scan, else how many vector ids."""
    calls = []
    real = sentence_search.vector_columns

    def spy(document_store, index, vector_ids=None):
        ids = None if vector_ids is None else list(vector_ids)
        calls.append(None if ids is None else len(ids))
        return real(document_store, index, ids)

    monkeypatch.setattr(sentence_search, "vector_columns", spy)
    return calls


def test_a_saved_map_replaces_the_full_scan_after_load_and_grows_incrementally(tmp_path, tiny_bert, corpus, scans):
    store = make_store("faiss-flat", tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, corpus)
    store.update_embeddings(retriever)
    expected = ranked(retriever, store, "Fleming")
    path = tmp_path / "index.faiss"
    with pytest.warns(DeprecationWarning, match="save_index_map is deprecated: save with save_faiss_store"):
        saved = retriever.save_index_map(path)  # the old store.save + save_index_map: the whole set, crash-safe
    assert saved.name == "index.faiss.dcsr-map.npz" and saved.is_file()
    assert {p.name for p in tmp_path.glob("index.*")} >= {"index.faiss", "index.json", "index.db", "index.faiss.sha256"}
    scans.clear()
    loaded = load_faiss_store(path)
    fresh = make_retriever(tiny_bert, loaded)
    assert ranked(fresh, loaded, "Fleming") == expected
    assert None not in scans  # no full scan: the saved map was used
    # incremental: two new passages, then only their new vector ids are read
    scans.clear()
    write(loaded, [Document(TEXTS["x4"], id="x"), Document(TEXTS["x2"], id="y")])
    loaded.update_embeddings(fresh, update_existing_embeddings=False)
    found = everything(fresh, loaded)
    assert found["x"] == TEXTS["x4"] and found["y"] == TEXTS["x2"] and len(found) == 7
    assert None not in scans and 6 in scans
    assert the_map(fresh, loaded).mapped == sql_vector_rows(loaded) == loaded.get_embedding_count() == 21


def other_index_with_first_map(tmp_path, tiny_bert, corpus, text=lambda t: t):
    """Two stores over the same passages under other ids (their text changed by ``text``), each saved; the second's
    save given the first's vector map. Returns (the other store, its passages, the other save's index path)."""
    first, other = make_store("faiss-flat", tmp_path, "first"), make_store("faiss-flat", tmp_path, "other")
    retriever = make_retriever(tiny_bert, first)
    write(first, corpus)
    first.update_embeddings(retriever)
    renamed = [Document(text(d.content), id=f"v2-{d.id}", meta=d.meta) for d in corpus]
    write(other, renamed)  # as many vectors, other sentences behind each vector id
    other.update_embeddings(make_retriever(tiny_bert, other))
    save_faiss_store(other, tmp_path / "other" / "index.faiss")
    save_faiss_store(first, tmp_path / "first" / "index.faiss")
    (tmp_path / "first" / "index.faiss.dcsr-map.npz").replace(tmp_path / "other" / "index.faiss.dcsr-map.npz")
    return other, renamed, tmp_path / "other" / "index.faiss"


def serves_its_own_passages_with_the_map_ignored(index_path, other, renamed, tiny_bert, scans):
    """The save at ``index_path`` (the ``other`` store's, with a foreign map) loads, its map is ignored (a full SQL
    scan), and it serves ``other``'s passages and ranking."""
    loaded = load_faiss_store(index_path)
    scans.clear()
    reader = make_retriever(tiny_bert, loaded)
    assert set(everything(reader, loaded)) == {d.id for d in renamed}
    assert None in scans
    assert ranked(reader, loaded, "Fleming") == ranked(make_retriever(tiny_bert, other), other, "Fleming")


def test_a_map_from_another_save_is_never_used(tmp_path, tiny_bert, corpus, scans, caplog):
    """The same vectors under other sentence ids: a map from another save beside an index and a database would
    pair vectors with the wrong sentences. The save's checksums cover the map, a cache of SQL: the retriever names it
    damaged, ignores it and maps the index from SQL, serving the store's own passages."""
    other, renamed, index_path = other_index_with_first_map(tmp_path, tiny_bert, corpus)
    serves_its_own_passages_with_the_map_ignored(index_path, other, renamed, tiny_bert, scans)
    assert "index.faiss.dcsr-map.npz: damaged" in caplog.text


def test_a_map_that_does_not_describe_the_rows_is_ignored(tmp_path, tiny_bert, corpus, scans, caplog):
    """A save of an older version, whose checksums did not cover the map: a map that does not describe the SQL rows
    (probed) is ignored with a warning and the map rebuilt from SQL, which then serves the store's own passages."""
    other, renamed, index_path = other_index_with_first_map(tmp_path, tiny_bert, corpus, lambda t: t.replace(".", "!"))
    listing = index_path.parent / "index.faiss.sha256"
    listing.write_text("".join(line for line in listing.read_text().splitlines(True) if "dcsr-map" not in line))
    serves_its_own_passages_with_the_map_ignored(index_path, other, renamed, tiny_bert, scans)
    assert "does not describe this index" in caplog.text


class Interrupt(Exception):
    pass


def test_an_update_interrupted_between_faiss_and_sql_leaves_everything_consistent(
    tmp_path, tiny_bert, corpus, monkeypatch
):
    store = make_store("faiss-flat", tmp_path)
    retriever = make_retriever(tiny_bert, store)
    write(store, corpus[:3])
    store.update_embeddings(retriever)
    assert the_map(retriever, store).mapped == 9
    write(store, corpus[3:])
    real, calls = store.update_vector_ids, []

    def crash_on_second_batch(vector_id_map, index=None):
        calls.append(len(vector_id_map))
        if len(calls) == 2:
            raise Interrupt()  # FAISS already holds this batch's vectors; SQL never learns their ids
        return real(vector_id_map, index=index)

    monkeypatch.setattr(store, "update_vector_ids", crash_on_second_batch)
    with pytest.raises(Interrupt):
        store.update_embeddings(retriever, update_existing_embeddings=False, batch_size=3)
    monkeypatch.setattr(store, "update_vector_ids", real)
    assert store.get_embedding_count() == 15 and sql_vector_rows(store) == 12  # 3 orphan vectors in FAISS
    found = everything(retriever, store)
    assert all(found[d.id] == d.content for d in corpus if d.id in found) and len(found) >= 4
    assert the_map(retriever, store).mapped == sql_vector_rows(store) == 12
    store.update_embeddings(retriever, update_existing_embeddings=False)
    assert set(everything(retriever, store)) == {d.id for d in corpus}
    assert the_map(retriever, store).mapped == sql_vector_rows(store) == 15


def test_counts_agree_after_add_delete_save_and_load(tmp_path, tiny_bert, corpus):
    store = make_store("faiss-flat", tmp_path)
    retriever = make_retriever(tiny_bert, store)

    def agree(s, r):
        assert s.get_document_count() == s.get_embedding_count() == sql_vector_rows(s) == the_map(r, s).mapped

    write(store, corpus)
    store.update_embeddings(retriever)
    agree(store, retriever)
    retriever.delete_passages([corpus[0].id])
    agree(store, retriever)
    write(store, [Document(TEXTS["x3"], id="z")])
    store.update_embeddings(retriever, update_existing_embeddings=False)
    agree(store, retriever)
    save_faiss_store(store, tmp_path / "i.faiss", search=retriever.engine.search_for(store))  # the retriever's map
    loaded = load_faiss_store(tmp_path / "i.faiss")
    reloaded = make_retriever(tiny_bert, loaded)
    agree(loaded, reloaded)
    assert np.array_equal(the_map(reloaded, loaded).vector_passage, the_map(retriever, store).vector_passage)
    assert ranked(reloaded, loaded, "Gamma two") == ranked(retriever, store, "Gamma two")


@pytest.mark.parametrize("preset", ["compact", "million", "fast"])
def test_index_presets_build_train_and_rank_like_the_exact_index(tmp_path, tiny_bert, corpus, preset):
    from haystack_dcsr import INDEX_PRESETS

    settings = INDEX_PRESETS[preset]
    exact = make_store("faiss-flat", tmp_path, "exact")
    store = FAISSDocumentStore(
        sql_url=f"sqlite:///{tmp_path / 'preset.db'}", embedding_dim=32, progress_bar=False, **settings.store_params
    )
    retriever = DCSRRetriever(
        document_store=store, query_model=tiny_bert, progress_bar=False, **settings.retriever_params
    )
    for s in (store, exact):
        write(s, corpus)
    assert retriever.train_index() == (15 if settings.needs_training(32) else 0)
    store.update_embeddings(retriever)
    exact.update_embeddings(retriever)
    for query in ["Fleming", "largest planet", "Berlin Wall"]:
        got, want = ranked(retriever, store, query), ranked(retriever, exact, query)
        assert sorted((pid, text) for pid, text, _ in got) == sorted((pid, text) for pid, text, _ in want)

        if preset == "fast":  # HNSW over exact vectors, efSearch above the corpus size: the exact ranking
            assert got == want  # (coded vectors of a random 32-d model: no ranking claim; the next test makes one)


@pytest.mark.integration
@pytest.mark.parametrize("preset", ["compact", "million"])
def test_coded_presets_keep_the_exact_top_passage_with_a_real_model(tmp_path, corpus, preset):
    """With all-MiniLM-L6-v2 (the shipped model), the coded presets (SQ, PQ) return the exact index's first
    passage for each test question, and its HasAns within 0.05: a ranking claim, over top_k=1 of 5 passages."""
    from conftest import MINILM, QUESTIONS

    from haystack_dcsr import INDEX_PRESETS

    settings = INDEX_PRESETS[preset]
    stores = {
        "exact": FAISSDocumentStore(sql_url=f"sqlite:///{tmp_path / 'e.db'}", embedding_dim=384, progress_bar=False),
        preset: FAISSDocumentStore(
            sql_url=f"sqlite:///{tmp_path / 'p.db'}", embedding_dim=384, progress_bar=False, **settings.store_params
        ),
    }
    retriever = DCSRRetriever(document_store=stores[preset], query_model=MINILM, progress_bar=False,
                              **settings.retriever_params)  # fmt: skip
    for store in stores.values():
        write(store, corpus)
    retriever.train_index()
    for store in stores.values():
        store.update_embeddings(retriever)
    for question, title in QUESTIONS:
        best = {k: retriever.retrieve(question, top_k=1, document_store=s)[0] for k, s in stores.items()}
        assert best[preset].id == best["exact"].id and best["exact"].meta["title"] == title, (question, best)
        assert abs(best[preset].score - best["exact"].score) < 0.05
