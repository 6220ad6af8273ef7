"""The shipped YAML pipelines and Haystack's evaluation, with the real offline MiniLM (integration)."""

from pathlib import Path

import pytest
from conftest import QUESTIONS
from haystack import Pipeline
from haystack.document_stores import FAISSDocumentStore
from haystack.pipelines import DocumentSearchPipeline
from haystack.schema import Answer, Label, MultiLabel
from tiny_models import make_tiny_cross_encoder

import haystack_dcsr  # noqa: F401  (registers the nodes for YAML)
from haystack_dcsr import DCSRRetriever, SentencePreprocessor
from haystack_dcsr.core.model.cross_encoder import CrossEncoder
from haystack_dcsr.core.model.int8 import Int8Linear
from haystack_dcsr.core.ranking.fusion import fuse
from haystack_dcsr.core.ranking.metrics import top_k_accuracy
from haystack_dcsr.haystack1.evaluation import eval_result_hit_ranks

PIPELINES = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "data" / "demo"
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory, request):
    from conftest import CORPUS
    from haystack.schema import Document

    corpus = [Document(content=text, meta={"title": title}) for title, text in CORPUS]
    path = tmp_path_factory.mktemp("minilm")
    store = FAISSDocumentStore(
        sql_url=f"sqlite:///{path}/s.db", embedding_dim=384, faiss_index_factory_str="Flat", progress_bar=False
    )
    retriever = DCSRRetriever(document_store=store, progress_bar=False)
    store.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    store.update_embeddings(retriever)
    return store, retriever, {doc.meta["title"]: doc.id for doc in corpus}


def test_the_right_passage_is_ranked_first_for_each_question(minilm_index):
    store, retriever, ids = minilm_index
    results = retriever.retrieve_batch([q for q, _ in QUESTIONS], top_k=3)
    assert [docs[0].id for docs in results] == [ids[title] for _, title in QUESTIONS]
    assert all(docs[0].score > docs[1].score for docs in results)


def test_yaml_pipelines_index_and_answer(tmp_path, monkeypatch, tiny_bert, int8_on_any_cpu):
    monkeypatch.setenv("DOCUMENTSTORE_PARAMS_SQL_URL", f"sqlite:///{tmp_path}/yaml.db")
    indexing = Pipeline.load_from_yaml(PIPELINES / "indexing.haystack-pipeline.yml", pipeline_name="indexing")
    files = sorted(DEMO.glob("*.txt"))
    indexing.run(file_paths=files, meta=[{"name": f.stem} for f in files])
    store = indexing.get_document_store()
    assert store.get_embedding_count() == store.get_document_count() > 30
    store.save(tmp_path / "dcsr.faiss")

    monkeypatch.delenv("DOCUMENTSTORE_PARAMS_SQL_URL")
    monkeypatch.setenv("DOCUMENTSTORE_PARAMS_FAISS_INDEX_PATH", str(tmp_path / "dcsr.faiss"))
    monkeypatch.setenv("READER_PARAMS_MODEL_NAME_OR_PATH", tiny_bert)  # offline stand-in for a QA model
    monkeypatch.setenv("READER_PARAMS_USE_GPU", "False")
    search = Pipeline.load_from_yaml(PIPELINES / "query.haystack-pipeline.yml", pipeline_name="search")
    top = search.run(query="When was the Fresnel lens invented?", params={"Retriever": {"top_k": 3}})["documents"]
    assert top[0].meta["name"] == "lighthouses" and "1822" in top[0].meta["dcsr_sentences"][0]["text"]

    qa = Pipeline.load_from_yaml(PIPELINES / "query.haystack-pipeline.yml", pipeline_name="query")
    output = qa.run(query="Who decoded the waggle dance?", params={"Retriever": {"top_k": 2}, "Reader": {"top_k": 3}})
    assert 1 <= len(output["answers"]) <= 3
    assert {a.document_ids[0] for a in output["answers"]} <= {d.id for d in output["documents"]}

    cross_encoder = make_tiny_cross_encoder(tmp_path / "cross_encoder")  # a train-cross-encoder directory's shape
    monkeypatch.setenv("RANKER_PARAMS_MODEL", cross_encoder)
    monkeypatch.setenv("RANKER_PARAMS_USE_GPU", "False")
    rerank = Pipeline.load_from_yaml(PIPELINES / "query.haystack-pipeline.yml", pipeline_name="rerank")
    query = "When was the Fresnel lens invented?"
    retrieved = search.run(query=query, params={"Retriever": {"top_k": 6}})["documents"]
    reranked = rerank.run(query=query, params={"Retriever": {"top_k": 6}, "Ranker": {"top_k": 4}})["documents"]
    logits = CrossEncoder(cross_encoder, device="cpu").score_pairs([(query, d.content) for d in retrieved])
    blended = fuse([[(d.id, float(s)) for d, s in zip(retrieved, logits)], [(d.id, d.score) for d in retrieved]])
    assert [(d.id, pytest.approx(d.score, abs=1e-5)) for d in reranked] == blended[:4]

    monkeypatch.setenv("RANKER_PARAMS_QUANTIZE", "int8")  # the CPU's int8 scorer, chosen in YAML
    int8 = Pipeline.load_from_yaml(PIPELINES / "query.haystack-pipeline.yml", pipeline_name="rerank")
    assert any(isinstance(m, Int8Linear) for m in int8.get_node("Ranker").scorer.model.modules())


def test_pipeline_eval_reports_recall_and_feeds_our_metrics(minilm_index):
    from conftest import CORPUS
    from haystack.schema import Document

    store, retriever, ids = minilm_index
    gold = {title: Document(content=text, id=ids[title]) for title, text in CORPUS}
    labels = [
        MultiLabel(
            labels=[
                Label(
                    query=q,
                    answer=Answer(answer=title),
                    document=gold[title],
                    is_correct_answer=True,
                    is_correct_document=True,
                    origin="gold-label",
                )
            ]
        )
        for q, title in QUESTIONS
    ]
    result = DocumentSearchPipeline(retriever).eval(labels=labels, params={"Retriever": {"top_k": 2}})
    metrics = result.calculate_metrics(document_scope="document_id")["Retriever"]
    assert metrics["recall_single_hit"] == pytest.approx(1.0)
    assert metrics["mrr"] == pytest.approx(1.0)
    assert len(result["Retriever"]) == 2 * len(QUESTIONS)
    # the same result through DPR-style answer matching: "Banana" is not a token of "Bananas ..."
    ranks = eval_result_hit_ranks(result, "Retriever")
    assert ranks == {q: (0 if title == "Banana" else 1) for q, title in QUESTIONS}
    assert top_k_accuracy(list(ranks.values()), [1]) == {1: 0.8}
