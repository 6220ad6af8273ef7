"""Hybrid BM25 + DCSR as a Haystack pipeline: the benchmark's fusion, ids that match across
branches, per-query filters in batches, and the YAML definition."""

from pathlib import Path

import pytest
from evaluation import fuse_rankings
from haystack import Pipeline
from haystack.nodes import BM25Retriever, JoinDocuments
from haystack.schema import Document
from test_store_consistency import make_store

from haystack_dcsr import DCSRRetriever, HybridJoin, SentencePreprocessor, SparseBM25DocumentStore, load_pipeline
from haystack_dcsr.core.ranking.fusion import fuse, reciprocal_rank_fusion

QUERIES = ["Who discovered penicillin?", "capital of Germany", "largest planet gas giant", "Eiffel Tower 1889"]
YAML = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "hybrid.haystack-pipeline.yml"


def test_fuse_scales_only_the_lists_it_is_told_to():
    dense, sparse = [("a", 0.9), ("b", 0.1)], [("b", 12.0), ("c", 3.0)]
    assert fuse([dense, sparse], [0.5, 0.5], scaled=[False, True]) == [("b", 0.55), ("a", 0.45), ("c", 0.0)]
    assert fuse([dense, sparse], [0.5, 0.5]) == [("a", 0.5), ("b", 0.5), ("c", 0.0)]  # a tie keeps first-seen order
    with pytest.raises(ValueError, match="1 weights and 2 scale flags for 2 rankings"):
        fuse([dense, sparse], [1.0])


def test_reciprocal_rank_fusion_is_join_documents_and_gives_ties_one_rank():
    lists = [[("a", 0.9), ("b", 0.5), ("c", 0.1)], [("c", 12.0), ("d", 7.0)], [("b", 3.0), ("a", 2.0), ("e", 1.0)]]
    node = JoinDocuments(join_mode="reciprocal_rank_fusion", weights=[2, 1, 1])
    inputs = [{"documents": [Document(content=p, id=p, score=x) for p, x in ranked]} for ranked in lists]
    joined = node.run(inputs=inputs)
    got = reciprocal_rank_fusion(lists, [2, 1, 1])
    assert [(d.id, round(d.score, 12)) for d in joined[0]["documents"]] == [(p, round(x, 12)) for p, x in got]
    # a = (2/4 * 3 / 61 + 1/4 * 3 / 62) / (3 / 61): weights normalised, ranks 0-based, 61 and the scaling as Haystack
    assert dict(got)["a"] == pytest.approx((1.5 / 61 + 0.75 / 62) * 61 / 3)
    # tied scores share their best rank: listing the gold first buys it nothing
    tied = reciprocal_rank_fusion([[("gold", 1.0), ("x", 1.0), ("y", 0.0)], [("x", 5.0), ("gold", 4.0), ("y", 3.0)]])
    assert [pid for pid, _ in tied] == ["x", "gold", "y"]
    assert dict(tied)["gold"] == pytest.approx((1 / 61 + 1 / 62) * 61 / 2)
    with pytest.raises(ValueError, match="1 weights"):
        reciprocal_rank_fusion(lists, [1.0])


@pytest.fixture
def hybrid(tmp_path, tiny_bert, corpus):
    passage_store = SparseBM25DocumentStore(progress_bar=False)
    sentence_store = make_store("faiss-flat", tmp_path)
    passage_store.write_documents(corpus)
    sentence_store.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    dcsr = DCSRRetriever(document_store=sentence_store, query_model=tiny_bert, progress_bar=False, top_k=100)
    sentence_store.update_embeddings(dcsr)
    bm25 = BM25Retriever(document_store=passage_store, top_k=100, scale_score=False)
    pipeline = Pipeline()
    pipeline.add_node(dcsr, name="DCSR", inputs=["Query"])
    pipeline.add_node(bm25, name="BM25", inputs=["Query"])
    pipeline.add_node(HybridJoin(weights=[0.5, 0.5], top_k_join=4), name="Hybrid", inputs=["DCSR", "BM25"])
    return pipeline, dcsr, bm25


def test_the_pipeline_reproduces_the_benchmark_fusion(hybrid, corpus):
    pipeline, dcsr, bm25 = hybrid
    for query in QUERIES:
        dense = [(d.id, d.score) for d in dcsr.retrieve(query, top_k=100)]
        sparse = [(d.id, d.score) for d in bm25.retrieve(query, top_k=100)]
        expected = fuse_rankings([dense], [sparse])[0][:4]
        got = pipeline.run(query=query)["documents"]
        assert [(d.id, round(d.score, 9)) for d in got] == [(pid, round(s, 9)) for pid, s in expected]
        by_id = {d.id: d.content for d in corpus}
        assert all(d.content == by_id[d.id] for d in got)  # both branches name passages the same way
        assert all(d.meta["dcsr_sentences"] for d in got if d.id in dict(dense))
        assert [len(d.meta["hybrid_scores"]) for d in got] == [2] * len(got)


def test_the_benchmark_rrf_hybrid_is_a_dcsr_pipeline_with_join_documents(hybrid):
    _, dcsr, bm25 = hybrid
    pipeline = Pipeline()
    pipeline.add_node(dcsr, name="DCSR", inputs=["Query"])
    pipeline.add_node(bm25, name="BM25", inputs=["Query"])
    pipeline.add_node(JoinDocuments(join_mode="reciprocal_rank_fusion"), name="RRF", inputs=["DCSR", "BM25"])
    for query in QUERIES:  # untied lists only: on ties the node keeps list order, the benchmark gives them one rank
        dense = [(d.id, d.score) for d in dcsr.retrieve(query, top_k=100)]
        sparse = [(d.id, d.score) for d in bm25.retrieve(query, top_k=100) if d.score > 0]  # BM25's 0s tie
        assert all(len({x for _, x in ranked}) == len(ranked) for ranked in (dense, sparse))
        expected = fuse_rankings([dense], [sparse], mode="rrf")[0]
        got = pipeline.run(query=query, params={"BM25": {"top_k": len(sparse)}})["documents"]
        assert [(d.id, round(d.score, 12)) for d in got] == [(pid, round(x, 12)) for pid, x in expected]


def test_batched_hybrid_queries_stay_inside_their_own_filters(hybrid):
    pipeline, _, _ = hybrid
    filters = [{"title": ["Paris"]}, {"title": ["Berlin", "Banana"]}, {"title": ["Jupiter"]}, None]
    batched = pipeline.run_batch(queries=QUERIES, params={"DCSR": {"filters": filters}, "BM25": {"filters": filters}})
    for query, query_filter, docs in zip(QUERIES, filters, batched["documents"]):
        assert docs and all(query_filter is None or d.meta["title"] in query_filter["title"] for d in docs)
        single = pipeline.run(
            query=query, params={"DCSR": {"filters": query_filter}, "BM25": {"filters": query_filter}}
        )
        assert [d.id for d in single["documents"]] == [d.id for d in docs]


def test_the_bm25_store_refuses_a_filter_list_of_the_wrong_length_as_the_retriever_does(hybrid):
    _, dcsr, bm25 = hybrid
    filters = [{"title": ["Paris"]}, None]
    before = [[d.id for d in docs] for docs in bm25.retrieve_batch(QUERIES[:2], filters=filters)]
    for node in (bm25, dcsr):
        with pytest.raises(ValueError, match=f"Got 2 filters for {len(QUERIES)} queries"):
            node.retrieve_batch(QUERIES, filters=filters)
    assert [[d.id for d in docs] for docs in bm25.retrieve_batch(QUERIES[:2], filters=filters)] == before


def test_the_yaml_hybrid_pipeline_loads_indexes_and_answers(tmp_path, tiny_bert, corpus, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the YAML's SQLite file lands here
    text = (
        YAML.read_text()
        .replace("embedding_dim: 384", "embedding_dim: 32")
        .replace("document_store: SentenceStore", f"document_store: SentenceStore\n      query_model: {tiny_bert}")
    )
    (tmp_path / "hybrid.yml").write_text(text)  # the shipped file, with the tiny test model
    pipeline = load_pipeline(tmp_path / "hybrid.yml", pipeline_name="search")
    pipeline.get_node("BM25").document_store.write_documents(corpus)
    sentences = pipeline.get_node("DCSR").document_store
    sentences.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    sentences.update_embeddings(pipeline.get_node("DCSR"))
    docs = pipeline.run(query="Who discovered penicillin?", params={"Hybrid": {"top_k_join": 3}})["documents"]
    assert len(docs) == 3 and docs[0].meta["title"] == "Penicillin" and docs[0].score > docs[1].score
    assert isinstance(pipeline.get_node("Hybrid"), HybridJoin)


def test_the_yaml_bm25_rerank_pipeline_blends_the_cross_encoder_with_bm25(
    tmp_path, corpus, monkeypatch, int8_on_any_cpu
):
    from tiny_models import make_tiny_cross_encoder

    from haystack_dcsr.core.model.cross_encoder import CrossEncoder
    from haystack_dcsr.core.model.int8 import Int8Linear

    model = make_tiny_cross_encoder(tmp_path / "ce", initializer_range=0.5)  # logits that vary between passages
    monkeypatch.setenv("RANKER_PARAMS_MODEL", model)
    shipped = load_pipeline(YAML, pipeline_name="bm25_rerank")  # no dense store is built for it
    assert any(isinstance(m, Int8Linear) for m in shipped.get_node("Ranker").scorer.model.modules())
    (tmp_path / "fp32.yml").write_text(YAML.read_text().replace("quantize: int8", "# quantize: int8"))
    pipeline = load_pipeline(tmp_path / "fp32.yml", pipeline_name="bm25_rerank")  # the int8 path: test_int8.py
    pipeline.get_node("BM25").document_store.write_documents(corpus)
    query = "Who discovered penicillin?"
    retrieved = pipeline.get_node("BM25").retrieve(query, top_k=5)
    got = pipeline.run(query=query, params={"BM25": {"top_k": 5}, "Ranker": {"top_k": 3}})["documents"]
    logits = CrossEncoder(model, device="cpu").score_pairs([(query, d.content) for d in retrieved])
    blended = fuse([[(d.id, float(x)) for d, x in zip(retrieved, logits)], [(d.id, d.score) for d in retrieved]])
    assert [(d.id, pytest.approx(d.score, abs=1e-5)) for d in got] == blended[:3]
    assert [d.id for d in got] != [d.id for d in retrieved[:3]]  # the cross-encoder moved something


def test_hybrid_join_scales_hasans_unless_told_to_keep_the_probability():
    support = {"dcsr_sentences": [{"text": "x"}]}
    dcsr = [Document("a", id="a", score=0.3, meta=dict(support)), Document("b", id="b", score=0.1, meta=dict(support))]
    bm25 = [Document("b", id="b", score=12.0), Document("c", id="c", score=3.0)]
    # min-max both: a = 0.5 * 1, b = 0.5 * 0 + 0.5 * 1 (tie, a first-seen), c = 0
    assert [(d.id, d.score) for d in HybridJoin(weights=[0.5, 0.5]).join([dcsr, bm25])] == [
        ("a", 0.5),
        ("b", 0.5),
        ("c", 0.0),
    ]
    # HasAns as a probability: BM25's scaled top wins at equal weights
    kept = HybridJoin(weights=[0.5, 0.5], scale_hasans=False).join([dcsr, bm25])
    assert [(d.id, round(d.score, 9)) for d in kept] == [("b", 0.55), ("a", 0.15), ("c", 0.0)]
    assert kept[0].meta["hybrid_scores"] == [0.1, 12.0]


def test_hybrid_join_refuses_bad_settings():
    with pytest.raises(ValueError, match="weights must be finite numbers >= 0"):
        HybridJoin(weights=[-1, 2])
    with pytest.raises(ValueError, match="HybridJoin has 3 weights but 2 inputs"):
        HybridJoin(weights=[1, 1, 1]).join([[Document("a", id="a", score=1.0)], []])


def test_a_faiss_pipeline_survives_the_yaml_round_trip(tmp_path, tiny_bert, corpus, monkeypatch):
    from haystack.errors import PipelineConfigError

    from haystack_dcsr import save_pipeline

    monkeypatch.chdir(tmp_path)
    store = make_store("faiss-flat", tmp_path)
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False)
    store.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    store.update_embeddings(retriever)
    pipeline = Pipeline()
    pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
    expected = [(d.id, round(d.score, 6)) for d in pipeline.run(query="Fleming")["documents"]]
    pipeline.save_to_yaml(tmp_path / "plain.yml")  # Haystack's own: the FAISS index is not saved
    with pytest.raises(PipelineConfigError, match="doesn't match the number of embeddings in FAISS"):
        load_pipeline(tmp_path / "plain.yml")  # Haystack reopens the SQL rows with an empty FAISS index
    save_pipeline(pipeline, tmp_path / "query.yml")
    reloaded = load_pipeline(tmp_path / "query.yml")
    assert [(d.id, round(d.score, 6)) for d in reloaded.run(query="Fleming")["documents"]] == expected
    assert len(list(tmp_path.glob("query.files/*/*.faiss.dcsr-map.npz"))) == 1
