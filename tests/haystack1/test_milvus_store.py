"""The Haystack 1.x ``MilvusDocumentStore`` on a real Milvus server: a saved pipeline that points at the server
answers the same from another process (the data stays in the server), and what the store cannot honour is
refused by name before anything is written. (Consistency, filters and threads: the store matrices in
test_store_consistency.py, test_filters.py and test_concurrency_and_filters.py run on it too.)"""

import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Pipeline
from haystack.errors import DuplicateDocumentError
from haystack.schema import Document
from test_store_consistency import milvus_store, write

from haystack_dcsr import DCSRRetriever, save_pipeline

QUESTION = "When was the Eiffel Tower completed?"


@pytest.fixture
def indexed(tiny_bert, corpus):
    store = milvus_store("store")
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False)
    write(store, corpus)
    store.update_embeddings(retriever)
    return store, retriever


def test_a_saved_pipeline_answers_the_same_from_another_process(indexed, tmp_path):
    store, retriever = indexed
    pipeline = Pipeline()
    pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
    path = save_pipeline(pipeline, tmp_path / "served" / "query.yml")
    assert "type: MilvusDocumentStore" in path.read_text() and not list((tmp_path / "served").glob("*.files/*/*"))
    expected = [(d.id, round(d.score, 6)) for d in pipeline.run(query=QUESTION)["documents"]]
    script = (
        "import sys; from haystack_dcsr import load_pipeline\n"
        f"p = load_pipeline({str(path)!r})\n"
        f"print([(d.id, round(d.score, 6)) for d in p.run(query={QUESTION!r})['documents']])"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", script], cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(expected)
    assert len(expected) == 5 and store.get_document_count() == store.get_embedding_count() == 15


def test_what_the_store_cannot_honour_is_refused_by_name(indexed, tiny_bert, tiny_bert_mean):
    store, retriever = indexed
    before = store.get_document_count()
    with pytest.raises(ValueError, match="not a DCSR sentence Document.*SentencePreprocessor"):
        store.write_documents([Document(content="A plain passage.", id="plain")])
    write(store, [Document(content="The capital of France is Paris. It is big.", id="x")])
    with pytest.raises(DuplicateDocumentError, match="exist already"):
        write(store, [Document(content="The capital of France is Paris. It is big.", id="x")], "fail")
    assert store.get_document_count() == before + 2
    with pytest.raises(ValueError, match="similarity must be one of dot_product, cosine"):
        milvus_store("bad", similarity="l2")
    cosine = milvus_store("cosine", similarity="cosine")
    with pytest.raises(ValueError, match="not normalised.*similarity='dot_product'"):
        DCSRRetriever(document_store=cosine, query_model=tiny_bert, progress_bar=False)
    DCSRRetriever(document_store=cosine, query_model=tiny_bert_mean, progress_bar=False)  # normalised: fine
    with pytest.raises(NotImplementedError, match="keeps no labels"):
        store.write_labels([])
    store.update_embeddings(retriever, update_existing_embeddings=False)
    store.update_document_meta("x#0", {"topic": "capitals"})  # its vector stays
    assert store.get_document_by_id("x#0").meta["topic"] == "capitals"
    assert store.get_embedding_count() == store.get_document_count() == before + 2
    assert [d.id for d in retriever.retrieve("capital", filters={"topic": "capitals"})] == ["x"]


def test_a_wrong_uri_fails_at_construction_naming_it():
    from haystack_dcsr.core.indexes.milvus_index import MilvusUnavailableError
    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore

    with pytest.raises(MilvusUnavailableError, match="127.0.0.1:9"):
        MilvusDocumentStore(uri="http://127.0.0.1:9", timeout=3)


def test_the_module_keeps_pymilvus_out_of_plain_imports():
    code = "import haystack_dcsr, sys; print('pymilvus' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent)
    assert done.stdout.strip() == "False"


def test_the_scaling_out_guides_1x_snippet_runs_as_written():
    from guide_snippets import run_guide_snippet
    from milvus_server import shared_uri

    run_guide_snippet("# Haystack 1.x", shared_uri())
