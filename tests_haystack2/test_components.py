"""The Haystack 2.x components: indexing, HasAns retrieval, filters, re-writes, stores, serialisation, hybrid."""

import numpy as np
import pytest
from conftest import QUESTIONS
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_dcsr import DCSRModel
from haystack_dcsr.core.ranking.fusion import fuse
from haystack_dcsr.core.ranking.hasans import hasans_scores
from haystack_dcsr.core.text.sentence_units import PassageRef, position
from haystack_dcsr.haystack2 import DCSRDocumentEmbedder, DCSRHybridJoiner, DCSRRetriever, DCSRSentenceSplitter

MODEL = "all-MiniLM-L6-v2"


def indexing(store, model=MODEL, policy=DuplicatePolicy.OVERWRITE, quantize=None):
    pipeline = Pipeline()
    pipeline.add_component("split", DCSRSentenceSplitter(model=model))
    pipeline.add_component("embed", DCSRDocumentEmbedder(model=model, quantize=quantize))
    pipeline.add_component("write", DocumentWriter(document_store=store, policy=policy))
    pipeline.connect("split.documents", "embed.documents")
    pipeline.connect("embed.documents", "write.documents")
    return pipeline


@pytest.fixture
def store(passages):
    store = InMemoryDocumentStore()
    indexing(store).run({"split": {"documents": passages}})
    return store


def test_sentences_are_stored_with_vectors_of_their_whole_passage(store, passages):
    sentences = store.filter_documents()
    assert len(sentences) == 15 and {d.id for d in sentences} >= {"Paris#0", "Paris#2", "Penicillin#1"}
    model = DCSRModel.from_pretrained(MODEL, use_gpu=False)
    paris = sorted((d for d in sentences if d.id.startswith("Paris#")), key=lambda d: d.id)
    expected = model.encode_passages([[d.content for d in paris]])
    assert np.allclose(np.array([d.embedding for d in paris]), expected, atol=1e-5)
    alone = model.encode_passages([[paris[1].content]])[0]  # the same sentence without its neighbours
    assert not np.allclose(paris[1].embedding, alone, atol=1e-3)


def test_retriever_ranks_passages_by_hasans_and_rebuilds_them_exactly(store, passages):
    retriever = DCSRRetriever(document_store=store, model=MODEL, top_k=3)
    for question, title in QUESTIONS:
        found = retriever.run(query=question)["documents"]
        assert found[0].id == title and found[0].content == next(p.content for p in passages if p.id == title)
        assert [d.score for d in found] == sorted((d.score for d in found), reverse=True)
        assert all(0 < d.score <= 1 for d in found) and found[0].meta["title"] == title
    # scores equal HasAns computed by hand from every sentence's dot product with the query
    model = DCSRModel.from_pretrained(MODEL, use_gpu=False)
    sentences = store.filter_documents()
    query = model.encode_queries([QUESTIONS[0][0]])[0]
    scores = np.array([np.dot(d.embedding, query) for d in sentences])
    keys = np.array(
        [["Paris", "Berlin", "Banana", "Jupiter", "Penicillin"].index(d.id.split("#")[0]) for d in sentences]
    )
    expected = hasans_scores(scores, keys, temperature=0.05)
    found = retriever.run(query=QUESTIONS[0][0], top_k=5)["documents"]
    assert [d.score for d in found] == pytest.approx(list(expected.hasans), abs=1e-5)
    support = found[0].meta["dcsr_sentences"]
    assert (
        len(support) == 3
        and max(support, key=lambda s: s["score"])["text"] == "The Eiffel Tower was completed in 1889."
    )


def test_filters_apply_to_the_passages_meta(store):
    retriever = DCSRRetriever(
        document_store=store, model=MODEL, top_k=5, filters={"field": "meta.kind", "operator": "==", "value": "other"}
    )
    found = retriever.run(query="When was the Eiffel Tower completed?")["documents"]
    assert {d.id for d in found} == {"Banana", "Jupiter", "Penicillin"}
    city = retriever.run(
        query="Where do bananas grow?", filters={"field": "meta.kind", "operator": "==", "value": "city"}
    )
    assert {d.id for d in city["documents"]} == {"Paris", "Berlin"}


def test_a_rewritten_passage_shows_only_its_current_sentences(store):
    """OVERWRITE with fewer sentences leaves the old tail in the store: it is never counted or shown."""
    indexing(store).run(
        {
            "split": {
                "documents": [
                    Document(
                        id="Paris", content="Paris is the capital of France.", meta={"title": "Paris", "kind": "city"}
                    )
                ]
            }
        }
    )
    assert store.count_documents() == 15  # Paris#1 and Paris#2 of the old version are still there
    retriever = DCSRRetriever(document_store=store, model=MODEL, top_k=5)
    found = {d.id: d for d in retriever.run(query="When was the Eiffel Tower completed?")["documents"]}
    assert found["Paris"].content == "Paris is the capital of France."
    assert [s["sentence_index"] for s in found["Paris"].meta["dcsr_sentences"]] == [0]


def test_embedder_refuses_a_passage_missing_sentences(store):
    sentences = DCSRSentenceSplitter(model=MODEL).run([Document(id="x", content="One. Two. Three.")])["documents"]
    with pytest.raises(ValueError, match="'x' has 3 sentences but 2"):
        DCSRDocumentEmbedder(model=MODEL).run(sentences[:2])
    with pytest.raises(ValueError, match="not a DCSR sentence"):
        DCSRDocumentEmbedder(model=MODEL).run([Document(id="plain", content="No layout.")])


def test_bad_parameters_are_refused_at_construction(store):
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, "):
        DCSRRetriever(document_store=store, model=MODEL, top_k=0)
    with pytest.raises(TypeError, match="does not support dict"):
        DCSRRetriever(document_store={}, model=MODEL)
    with pytest.raises(FileNotFoundError):
        DCSRRetriever(document_store=store, model="./no/such/model")


def test_pipeline_survives_yaml_round_trip(store):
    pipeline = Pipeline()
    pipeline.add_component("dcsr", DCSRRetriever(document_store=store, model=MODEL, top_k=2, top_n_sentences=50))
    text = pipeline.dumps()
    assert "haystack_dcsr.haystack2.retriever.DCSRRetriever" in text and "top_n_sentences: 50" in text
    again = Pipeline.loads(text)
    retriever = again.get_component("dcsr")
    assert (retriever.top_k, retriever.top_n_sentences) == (2, 50)
    indexer = Pipeline.loads(indexing(InMemoryDocumentStore()).dumps())
    assert indexer.get_component("split").model == MODEL


def test_hybrid_pipeline_fuses_bm25_and_hasans(store, passages):
    passage_store = InMemoryDocumentStore()
    passage_store.write_documents(passages)
    pipeline = Pipeline()
    pipeline.add_component("dcsr", DCSRRetriever(document_store=store, model=MODEL, top_k=5))
    pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=passage_store, top_k=5))
    pipeline.add_component("join", DCSRHybridJoiner(weights=[0.5, 0.5], top_k=3))
    pipeline.connect("dcsr.documents", "join.documents")
    pipeline.connect("bm25.documents", "join.documents")
    question = "Which wall divided Berlin?"
    output = pipeline.run(
        {"dcsr": {"query": question}, "bm25": {"query": question}}, include_outputs_from={"dcsr", "bm25"}
    )
    dcsr, bm25 = output["dcsr"]["documents"], output["bm25"]["documents"]
    ranked = [[(d.id, d.score) for d in dcsr], [(d.id, d.score) for d in bm25]]
    expected = fuse(ranked, [0.5, 0.5], 3)  # both lists min-max scaled: the default
    assert [(d.id, pytest.approx(d.score)) for d in output["join"]["documents"]] == expected
    assert output["join"]["documents"][0].id == "Berlin"
    kept = DCSRHybridJoiner.from_dict(DCSRHybridJoiner(weights=[0.5, 0.5], top_k=3, scale_hasans=False).to_dict())
    assert kept.scale_hasans is False
    got = kept.run(documents=[bm25, dcsr])["documents"]  # any arrival order: DCSR's list is put first
    assert [(d.id, pytest.approx(d.score)) for d in got] == fuse(ranked, [0.5, 0.5], 3, scaled=[False, True])


def serves_what_the_exact_store_serves(document_store, exact_store, **settings) -> DCSRRetriever:
    """A retriever over ``document_store`` (with ``settings``) returns the exact store's passages, texts and HasAns
    (1e-4) for every question, and honours a filter on the passages' meta; returned for further checks."""
    exact = DCSRRetriever(document_store=exact_store, model=MODEL, top_k=5)
    engine = DCSRRetriever(document_store=document_store, model=MODEL, top_k=5, **settings)
    for question, title in QUESTIONS:
        want = exact.run(query=question)["documents"]
        got = engine.run(query=question)["documents"]
        assert [d.id for d in got] == [d.id for d in want] and got[0].id == title
        assert [d.score for d in got] == pytest.approx([d.score for d in want], abs=1e-4)
        assert [d.content for d in got] == [d.content for d in want]
    only = engine.run(
        query="Who discovered penicillin?", filters={"field": "meta.kind", "operator": "==", "value": "city"}
    )["documents"]
    assert {d.id for d in only} == {"Paris", "Berlin"}
    return engine


def test_qdrant_gives_the_same_passages_as_the_exact_store(store, passages):
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    qdrant = QdrantDocumentStore(
        location=":memory:", embedding_dim=384, similarity="cosine", progress_bar=False, recreate_index=True
    )
    indexing(qdrant).run({"split": {"documents": passages}})
    engine = serves_what_the_exact_store_serves(qdrant, store)
    restored = Pipeline.loads(Pipeline().dumps())  # the store itself serialises through the retriever
    assert (
        restored is not None and DCSRRetriever.from_dict(engine.to_dict()).document_store.to_dict() == qdrant.to_dict()
    )


def test_splitter_drops_repeats_and_refuses_two_passages_sharing_an_id():
    splitter = DCSRSentenceSplitter(model=MODEL)
    same = Document(id="p", content="One sentence. Another one.")
    assert [d.id for d in splitter.run([same, same])["documents"]] == ["p#0", "p#1"]
    with pytest.raises(ValueError, match="'p' is used by two different passages.*Nothing was split"):
        splitter.run([same, Document(id="p", content="Something else.")])


def test_cross_encoder_ranker_orders_by_its_logits_blends_and_round_trips(store, tmp_path):
    from tiny_models import make_tiny_cross_encoder

    from haystack_dcsr.core.model.cross_encoder import CrossEncoder
    from haystack_dcsr.haystack2 import DCSRCrossEncoderRanker

    model = make_tiny_cross_encoder(tmp_path / "cross_encoder")
    question = "Which wall divided Berlin?"
    pipeline = Pipeline()
    pipeline.add_component("dcsr", DCSRRetriever(document_store=store, model=MODEL, top_k=4))
    pipeline.add_component("rank", DCSRCrossEncoderRanker(model=model, top_k=3, device="cpu"))
    pipeline.connect("dcsr.documents", "rank.documents")
    again = Pipeline.loads(pipeline.dumps())  # the ranker's settings survive YAML
    output = again.run({"dcsr": {"query": question}, "rank": {"query": question}}, include_outputs_from={"dcsr"})
    retrieved, ranked = output["dcsr"]["documents"], output["rank"]["documents"]
    logits = CrossEncoder(model, device="cpu").score_pairs([(question, d.content) for d in retrieved])
    assert [d.id for d in ranked] == [retrieved[i].id for i in np.argsort(-logits, kind="stable")[:3]]
    assert [d.score for d in ranked] == pytest.approx(sorted(1 / (1 + np.exp(-logits)), reverse=True)[:3], abs=1e-5)
    assert ranked[0].meta == retrieved[[d.id for d in retrieved].index(ranked[0].id)].meta

    blended = DCSRCrossEncoderRanker(model=model, first_stage_weight=0.5, device="cpu")
    got = blended.run(query=question, documents=retrieved)["documents"]
    expected = fuse([[(d.id, float(s)) for d, s in zip(retrieved, logits)], [(d.id, d.score) for d in retrieved]])
    assert [(d.id, pytest.approx(d.score, abs=1e-5)) for d in got] == expected
    with pytest.raises(ValueError, match="first_stage_weight must be within"):
        DCSRCrossEncoderRanker(model=model, first_stage_weight=1.5)
    with pytest.raises(ValueError, match="needs every passage.s incoming score.*set first_stage_weight=0"):
        blended.run(query=question, documents=[Document(content="no score")])


def test_cross_encoder_ranker_int8_round_trips_and_runs_on_the_cpu(tmp_path, monkeypatch):
    from tiny_models import make_tiny_cross_encoder

    from haystack_dcsr.core.model.int8 import FORCE_INT8, Int8Linear

    monkeypatch.setenv(FORCE_INT8, "1")  # the int8 path itself, on any CPU (where it does not pay it serves fp32)
    from haystack_dcsr.haystack2 import DCSRCrossEncoderRanker

    model = make_tiny_cross_encoder(tmp_path / "cross_encoder")
    ranker = DCSRCrossEncoderRanker(model=model, quantize="int8")
    again = DCSRCrossEncoderRanker.from_dict(ranker.to_dict())
    assert again.quantize == "int8" and again.device is None
    again.warm_up()  # builds the scorer; compilation waits for the first query
    assert again._scorer.device.type == "cpu"
    assert any(isinstance(m, Int8Linear) for m in again._scorer.model.modules())
    with pytest.raises(ValueError, match="quantize must be 'int8', or null, got 'int4'"):
        DCSRCrossEncoderRanker(model=model, quantize="int4")
    with pytest.raises(ValueError, match="quantize='int8' runs on the CPU, got device='cuda'"):
        DCSRCrossEncoderRanker(model=model, quantize="int8", device="cuda")


def test_int8_embedder_and_retriever_round_trip_and_find_what_fp32_finds(store, passages, monkeypatch):
    from haystack_dcsr.core.model.int8 import FORCE_INT8, Int8Linear

    monkeypatch.setenv(FORCE_INT8, "1")  # the int8 path itself, on any CPU (where it does not pay it serves fp32)
    pipeline = Pipeline.loads(indexing(InMemoryDocumentStore(), quantize="int8").dumps())  # serialised and back
    assert pipeline.get_component("embed").quantize == "int8"
    pipeline.run({"split": {"documents": passages}})
    int8_store = pipeline.get_component("write").document_store
    vectors = {d.id: np.array(d.embedding) for d in int8_store.filter_documents()}
    fp32 = {d.id: np.array(d.embedding) for d in store.filter_documents()}
    cosines = [v @ fp32[k] / np.linalg.norm(v) / np.linalg.norm(fp32[k]) for k, v in vectors.items()]
    assert vectors.keys() == fp32.keys() and min(cosines) > 0.98 and max(cosines) < 1 - 1e-7
    retriever = DCSRRetriever(document_store=int8_store, model=MODEL, quantize="int8")
    assert DCSRRetriever.from_dict(retriever.to_dict()).quantize == "int8"
    for question, title in QUESTIONS:
        assert retriever.run(query=question)["documents"][0].id == title
    assert any(isinstance(m, Int8Linear) for m in retriever._embedder._model.query_tower.inference_model.modules())
    with pytest.raises(ValueError, match="DCSRRetriever: quantize='int8' runs on the CPU, got device='cuda'"):
        DCSRRetriever(document_store=int8_store, model=MODEL, quantize="int8", device="cuda")
    with pytest.raises(ValueError, match="DCSRDocumentEmbedder: quantize must be 'int8', or null, got 'int4'"):
        DCSRDocumentEmbedder(model=MODEL, quantize="int4")


def test_text_embedder_and_embedding_retriever_serve_what_dcsr_retriever_serves(store):
    """The integrations' split (a text embedder beside a retriever taking ``query_embedding``) and the
    one-component ``DCSRRetriever`` return the same passages, scores and support; both round-trip YAML."""
    from haystack_dcsr.haystack2 import DCSREmbeddingRetriever, DCSRTextEmbedder

    pipeline = Pipeline()
    pipeline.add_component("embed", DCSRTextEmbedder(model=MODEL))
    pipeline.add_component("retrieve", DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=3))
    pipeline.connect("embed.embedding", "retrieve.query_embedding")
    pipeline = Pipeline.loads(pipeline.dumps())
    one = DCSRRetriever(document_store=store, model=MODEL, top_k=3)
    for question, title in QUESTIONS:
        split = pipeline.run({"embed": {"text": question}})["retrieve"]["documents"]
        whole = one.run(query=question)["documents"]
        assert split[0].id == title
        assert [(d.id, d.score, d.meta["dcsr_sentences"]) for d in split] == [
            (d.id, d.score, d.meta["dcsr_sentences"]) for d in whole
        ]
    with pytest.raises(ValueError, match=r"DCSREmbeddingRetriever: top_k must be an integer in \[1, "):
        DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=0)
    with pytest.raises(TypeError, match="DCSRTextEmbedder embeds one string"):
        DCSRTextEmbedder(model=MODEL).run(text=["two", "strings"])


def milvus_store(**index):
    """A new collection on the real Milvus server (``milvus_server.shared_uri``), through milvus-haystack."""
    import uuid

    milvus = pytest.importorskip("milvus_haystack", reason="milvus-haystack is not installed (make installs it)")
    from milvus_server import shared_uri

    return milvus.MilvusDocumentStore(
        collection_name=f"dcsr_{uuid.uuid4().hex[:8]}",
        connection_args={"uri": shared_uri()},
        consistency_level="Strong",
        index_params={"index_type": "FLAT", "metric_type": "IP", "params": {}, **index},
    )


def pgvector_store(**settings):
    """A new table on the tests' PostgreSQL + pgvector server (``postgres.pgvector_url``), through
    pgvector-haystack; inner product unless ``settings`` say otherwise."""
    import os
    import uuid

    pgvector = pytest.importorskip(
        "haystack_integrations.document_stores.pgvector", reason="pgvector-haystack is not installed (make installs it)"
    )
    from haystack.utils import Secret
    from postgres import pgvector_database

    os.environ["DCSR_PGVECTOR_URL"] = pgvector_database()  # an env var secret: the store serialises
    table = settings.pop("table_name", f"dcsr_{uuid.uuid4().hex[:8]}")  # index names are the schema's: one per table
    settings = {
        "embedding_dimension": 384,
        "vector_function": "inner_product",
        "keyword_index_name": f"{table}_keywords",
        "hnsw_index_name": f"{table}_hnsw",
        **settings,
    }
    return pgvector.PgvectorDocumentStore(
        connection_string=Secret.from_env_var("DCSR_PGVECTOR_URL"), table_name=table, **settings
    )


@pytest.mark.parametrize("kind", ["memory", "qdrant", "milvus-haystack", "dcsr-milvus", "pgvector"])
def test_every_2x_engine_holds_the_index_contract_and_the_retriever_serves_its_ranking(kind, passages):
    """Each 2.x engine's sentence index holds the contract every engine is held to (``index_contract``: the core's
    ranking under the one driver; one sentence of "Paris" deleted through the store itself leaves the passage out,
    HasAns recomputed without it), as the core's and the 1.x suite's engines do; the retriever serves that ranking."""
    from corpus import core_ranking
    from index_contract import QUESTION, holds_the_contract

    from haystack_dcsr.haystack2.stores import sentence_store_for

    if kind == "memory":
        store = InMemoryDocumentStore()
    elif kind == "qdrant":
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        store = QdrantDocumentStore(location=":memory:", embedding_dim=384, similarity="dot_product")
    elif kind == "milvus-haystack":
        store = milvus_store()
    elif kind == "dcsr-milvus":
        import uuid

        from milvus_server import shared_uri

        from haystack_dcsr.haystack2 import DCSRMilvusDocumentStore

        store = DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"contract_{uuid.uuid4().hex[:8]}")
    else:
        store = pgvector_store()
    indexing(store).run({"split": {"documents": passages}})
    model = DCSRModel.from_pretrained(MODEL, use_gpu=False)
    served = DCSRRetriever(document_store=store, model=MODEL, top_k=5).run(query=QUESTION)["documents"]
    expected = core_ranking(model, QUESTION)
    assert [d.id for d in served] == [title for title, _ in expected]
    assert [d.score for d in served] == pytest.approx([score for _, score in expected], rel=1e-4, abs=1e-9)
    holds_the_contract(sentence_store_for(store), model, lambda: store.delete_documents(["Paris#1"]))


def test_milvus_serves_what_the_exact_store_serves_with_filters_and_refuses_l2(store, passages):
    milvus = milvus_store(index_type="HNSW", params={"M": 16, "efConstruction": 64})
    indexing(milvus).run({"split": {"documents": passages}})
    engine = serves_what_the_exact_store_serves(milvus, store)
    # a passage re-written shorter through the store (overwrite) leaves its old tail behind: never served
    indexing(milvus).run({"split": {"documents": [Document(id="Paris", content="Paris is in France.")]}})
    paris = [d for d in engine.run(query="When was the Eiffel Tower completed?")["documents"] if d.id == "Paris"]
    assert [d.content for d in paris] == ["Paris is in France."]
    assert all(s["sentence_index"] == 0 for s in paris[0].meta["dcsr_sentences"])
    with pytest.raises(ValueError, match="uses L2.*metric_type': 'IP'"):
        DCSRRetriever(document_store=milvus_store(metric_type="L2"), model=MODEL)


def test_the_answer_sentence_marker_marks_the_sentence_that_states_the_answer():
    """The 2.x answer-sentence pass: the passage's sentences scored alone, as 1.x mark_answer_sentence=True
    does (tests/haystack1/test_evidence.py, the same passage); the retriever's support stays, the inputs are not
    changed."""
    from haystack_dcsr.core.text.evidence import ANSWER, render_html
    from haystack_dcsr.haystack2 import DCSRAnswerSentenceMarker

    passage = (
        "Movable type was first invented in China around 1040 by Bi Sheng. Clay type was fragile and hard to use. "
        "Later printers in Korea cast type in bronze."
    )
    store = InMemoryDocumentStore()
    indexing(store).run(
        {"split": {"documents": [Document(id="type", content=passage), Document(id="empty", content=" ")]}}
    )
    pipeline = Pipeline()
    pipeline.add_component("retrieve", DCSRRetriever(document_store=store, model=MODEL, top_k=1))
    pipeline.add_component("mark", DCSRAnswerSentenceMarker(model=MODEL))
    pipeline.connect("retrieve.documents", "mark.documents")
    pipeline = Pipeline.loads(pipeline.dumps())
    question = "Who invented movable type?"
    top = pipeline.run({"retrieve": {"query": question}, "mark": {"query": question}})["mark"]["documents"][0]
    assert top.id == "type" and top.meta["dcsr_sentences"]
    assert top.meta[ANSWER]["sentence_index"] == 0 and top.meta[ANSWER]["text"].startswith("Movable type was first")
    assert render_html(question, [top]).count('class="support answer"') == 1
    untouched = Document(id="x", content=passage)
    DCSRAnswerSentenceMarker(model=MODEL).run(query=question, documents=[untouched, Document(id="blank", content="")])
    assert ANSWER not in untouched.meta


def test_filter_policy_replaces_or_merges_the_init_filters_and_settings_have_one_source(store, passages):
    import inspect

    from haystack.document_stores.types import FilterPolicy

    city = {"field": "meta.kind", "operator": "==", "value": "city"}
    other = {"field": "meta.kind", "operator": "==", "value": "other"}
    paris = {"field": "meta.title", "operator": "==", "value": "Paris"}
    question = "Who discovered penicillin?"
    replace = DCSRRetriever(document_store=store, model=MODEL, filters=city, top_k=5)
    merge = DCSRRetriever(document_store=store, model=MODEL, filters=city, top_k=5, filter_policy="merge")
    others = {p.id for p in passages if p.meta["kind"] == "other"}
    assert {d.id for d in replace.run(query=question)["documents"]} == {"Paris", "Berlin"}
    assert {d.id for d in replace.run(query=question, filters=other)["documents"]} == others
    penicillin = {"field": "meta.title", "operator": "==", "value": "Penicillin"}
    assert merge.run(query=question, filters=penicillin)["documents"] == []  # a city AND Penicillin: nothing
    assert [d.id for d in merge.run(query=question, filters=paris)["documents"]] == ["Paris"]
    saved = merge.to_dict()["init_parameters"]
    assert set(saved) == set(inspect.signature(DCSRRetriever.__init__).parameters) - {"self"}
    assert saved["filter_policy"] == "merge" and saved["top_k"] == 5 and saved["filters"] == city
    loaded = DCSRRetriever.from_dict(merge.to_dict())
    assert loaded.filter_policy == FilterPolicy.MERGE and loaded.top_k == 5 and loaded.precision == "auto"
    assert [d.id for d in loaded.run(query=question, filters=paris)["documents"]] == ["Paris"]


@pytest.mark.parametrize("kind", ["memory", "qdrant", "milvus", "dcsr_milvus", "pgvector"])
def test_delete_passages_removes_whole_passages_stale_sentences_included(kind, passages):
    """Through the retriever, as on 1.x: by passage id and by filter, every sentence of each passage goes (an
    older version's tail, left by a re-write through the store, too), nothing else, and rankings follow."""
    if kind == "memory":
        store = InMemoryDocumentStore()
    elif kind == "qdrant":
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        store = QdrantDocumentStore(
            location=":memory:", embedding_dim=384, similarity="dot_product", progress_bar=False
        )
    elif kind == "milvus":
        store = milvus_store()
    elif kind == "pgvector":
        store = pgvector_store()
    else:
        import uuid

        from milvus_server import shared_uri

        from haystack_dcsr.haystack2 import DCSRMilvusDocumentStore

        store = DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"del_{uuid.uuid4().hex[:8]}")
    indexing(store).run({"split": {"documents": passages}})
    shorter = Document(id="Paris", content="Paris is in France.", meta={"title": "Paris", "kind": "city"})
    indexing(store).run({"split": {"documents": [shorter]}})  # the DCSR store re-writes whole; the others keep a tail
    before = store.count_documents()
    paris = {d.id for d in store.filter_documents() if d.id.startswith("Paris#")}
    retriever = DCSRRetriever(document_store=store, model=MODEL, top_k=5)
    assert retriever.delete_passages(passage_ids=["Paris", "nowhere"]) == len(paris)
    assert store.count_documents() == before - len(paris)
    city = {"field": "meta.kind", "operator": "==", "value": "city"}
    assert retriever.delete_passages(filters=city) == 3  # Berlin, the one city left
    served = retriever.run(query="What is the capital of Germany?")["documents"]
    assert {d.id for d in served} == {p.id for p in passages if p.meta["kind"] == "other"}
    assert all(d.meta["kind"] == "other" for d in store.filter_documents())
    with pytest.raises(ValueError, match="passage_ids or filters"):
        retriever.delete_passages()


def test_in_memory_searches_and_reads_a_view_equal_to_the_stores_own_search_and_follows_every_write(passages):
    """On ``InMemoryDocumentStore`` an unfiltered search and the reads of passages run over a view of the store's
    Documents (the store's own ``embedding_retrieval`` builds an array of every embedding per call): the same
    hits, order and scores as the store's search, rebuilt after a write or delete through any instance sharing
    the store's index; filtered searches stay the store's own."""
    from haystack_dcsr.haystack2.stores import InMemorySentences

    index = f"view_{np.random.default_rng().integers(1 << 30)}"
    store, other = InMemoryDocumentStore(index=index), InMemoryDocumentStore(index=index)  # one shared storage
    indexing(store).run({"split": {"documents": passages}})
    sentences = InMemorySentences(store)
    queries = DCSRModel.from_pretrained(MODEL, use_gpu=False).encode_queries([q for q, _ in QUESTIONS])
    asked = []
    store.embedding_retrieval = lambda **kwargs: (
        asked.append(kwargs) or InMemoryDocumentStore.embedding_retrieval(store, **kwargs)
    )

    def hits_equal_the_stores_own(top_n):
        for vector, hits in zip(queries, sentences.search(queries, top_n, None)):
            own = InMemoryDocumentStore.embedding_retrieval(
                store, query_embedding=list(map(float, vector)), top_k=top_n, scale_score=False
            )
            ids = [f"{hits.passages[k].passage_id}#{i}" for k, i in zip(hits.passage_keys, hits.sentence_indices)]
            assert ids == [doc.id for doc in own]
            assert np.allclose(hits.scores, [doc.score for doc in own], rtol=0, atol=1e-12)

    hits_equal_the_stores_own(4)
    hits_equal_the_stores_own(100)  # more than the store holds: every sentence, in the store's order
    assert asked == []  # the store's own search was not asked
    paris = next(p for p in passages if p.id == "Paris")
    rewritten = Document(id="Paris", content="Paris is a city. It is on the Seine.", meta=paris.meta)
    indexing(other).run({"split": {"documents": [rewritten]}})  # written through another instance
    hits_equal_the_stores_own(100)
    read = sentences.read(
        [
            PassageRef(
                "Paris",
                2,
                position(store.filter_documents({"field": "id", "operator": "==", "value": "Paris#0"})[0]).version,
            )
        ],
        {},
    )
    assert [d.content for d in next(iter(read.values()))] == ["Paris is a city.", "It is on the Seine."]
    other.delete_documents(["Berlin#0"])
    hits_equal_the_stores_own(100)
    assert "Berlin#0" not in {d.id for d in sentences._stored([PassageRef("Berlin", 3)])}
    sentences.search(queries[:1], 4, {"field": "meta.kind", "operator": "==", "value": "city"})
    assert len(asked) == 1 and asked[0]["filters"]  # filtered: the store's own search
