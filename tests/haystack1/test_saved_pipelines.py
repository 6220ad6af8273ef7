"""Saved pipelines that answer elsewhere: the shipped hybrid saved and reloaded from another working
directory answers the same ranking; the shipped indexing YAML runs twice in one folder; the saved
pipeline keeps its name; a store the YAML would lose is refused at save time."""

from pathlib import Path

import pytest
from haystack import Pipeline
from haystack.document_stores import InMemoryDocumentStore
from haystack.errors import PipelineConfigError

from haystack_dcsr import DCSRRetriever, SentencePreprocessor, load_pipeline, save_pipeline

PIPELINES = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "data" / "demo"
QUESTIONS = ["Who discovered penicillin?", "Which wall divided Berlin?", "Where do bananas grow?"]


def shipped(name: str, tiny_bert: str, folder: Path) -> Path:
    """A shipped YAML with the tiny test model in place of MiniLM (and its dimension), written to ``folder``."""
    text = (
        (PIPELINES / f"{name}.haystack-pipeline.yml")
        .read_text()
        .replace("embedding_dim: 384", "embedding_dim: 32")
        .replace("query_model: sentence-transformers/all-MiniLM-L6-v2", f"query_model: {tiny_bert}")
        .replace("document_store: SentenceStore", f"document_store: SentenceStore\n      query_model: {tiny_bert}")
    )
    (folder / f"{name}.yml").write_text(text)
    return folder / f"{name}.yml"


def ranking(pipeline):
    runs = [pipeline.run(query=q, params={"Hybrid": {"top_k_join": 5}})["documents"] for q in QUESTIONS]
    return [[(d.id, round(d.score, 5)) for d in docs] for docs in runs]


def test_a_saved_hybrid_answers_the_same_from_another_working_directory(tmp_path, tiny_bert, corpus, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pipeline = load_pipeline(shipped("hybrid", tiny_bert, tmp_path), pipeline_name="search")
    pipeline.get_node("BM25").document_store.write_documents(corpus)
    sentences = pipeline.get_node("DCSR").document_store
    sentences.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    sentences.update_embeddings(pipeline.get_node("DCSR"))
    before = ranking(pipeline)
    saved = save_pipeline(pipeline, tmp_path / "served" / "hybrid.yml")
    assert "name: search" in saved.read_text()  # the name it was loaded under, not Haystack's "query"
    assert len(list((tmp_path / "served").glob("hybrid.files/*/PassageStore.jsonl.gz"))) == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    again = load_pipeline(tmp_path / "served" / "hybrid.yml")
    assert ranking(again) == before
    assert list(elsewhere.iterdir()) == []  # no empty database left behind in the working directory


def test_the_shipped_indexing_yaml_runs_twice_in_one_folder(tmp_path, tiny_bert, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = shipped("indexing", tiny_bert, tmp_path)
    files = sorted(DEMO.glob("*.txt"))
    counts = []
    for _ in range(2):
        indexing = load_pipeline(path, pipeline_name="indexing")
        indexing.run(file_paths=files, meta=[{"name": f.stem} for f in files])
        store = indexing.get_document_store()
        counts.append((store.get_document_count(), store.get_embedding_count()))
    assert counts[0] == counts[1] and counts[0][0] == counts[0][1] > 30


def test_a_store_the_yaml_would_lose_is_refused_before_anything_is_written(tmp_path, tiny_bert, corpus):
    store = InMemoryDocumentStore(embedding_dim=32)
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False)
    store.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    pipeline = Pipeline()
    pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
    with pytest.raises(PipelineConfigError, match="InMemoryDocumentStore's 15 documents live in this process only"):
        save_pipeline(pipeline, tmp_path / "q.yml")
    assert list(tmp_path.iterdir()) == []


def test_the_shipped_bm25_rerank_and_indexing_pipelines_round_trip_from_another_folder(
    tmp_path, tiny_bert, corpus, monkeypatch
):
    """Relative model paths (as a user writes them) are saved so that another folder finds them."""
    from tiny_models import make_tiny_cross_encoder

    monkeypatch.chdir(tmp_path)
    make_tiny_cross_encoder(tmp_path / "ce", initializer_range=0.5)
    monkeypatch.setenv("RANKER_PARAMS_MODEL", "ce")  # relative to this working directory
    text = (PIPELINES / "hybrid.haystack-pipeline.yml").read_text().replace("quantize: int8", "# quantize: int8")
    (tmp_path / "hybrid.yml").write_text(text)
    rerank = load_pipeline(tmp_path / "hybrid.yml", pipeline_name="bm25_rerank")
    rerank.get_node("BM25").document_store.write_documents(corpus)
    params = {"BM25": {"top_k": 5}, "Ranker": {"top_k": 3}}
    before = [
        (d.id, round(d.score, 5)) for d in rerank.run(query="Who discovered penicillin?", params=params)["documents"]
    ]
    save_pipeline(rerank, tmp_path / "served" / "rerank.yml")
    monkeypatch.delenv("RANKER_PARAMS_MODEL")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    again = load_pipeline(tmp_path / "served" / "rerank.yml")
    after = [
        (d.id, round(d.score, 5)) for d in again.run(query="Who discovered penicillin?", params=params)["documents"]
    ]
    assert after == before

    monkeypatch.chdir(tmp_path)
    indexing = load_pipeline(shipped("indexing", tiny_bert, tmp_path), pipeline_name="indexing")
    files = sorted(DEMO.glob("*.txt"))
    indexing.run(file_paths=files, meta=[{"name": f.stem} for f in files])
    count = indexing.get_document_store().get_document_count()
    question = "When was the Fresnel lens invented?"
    expected = [(d.id, round(d.score, 5)) for d in indexing.get_node("Retriever").retrieve(question, top_k=3)]
    save_pipeline(indexing, tmp_path / "served" / "indexing.yml")
    monkeypatch.chdir(elsewhere)
    reloaded = load_pipeline(tmp_path / "served" / "indexing.yml")
    store = reloaded.get_document_store()
    assert store.get_document_count() == store.get_embedding_count() == count > 30
    assert [(d.id, round(d.score, 5)) for d in reloaded.get_node("Retriever").retrieve(question, top_k=3)] == expected
