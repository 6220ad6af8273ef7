"""``DCSRMilvusDocumentStore`` on the real Milvus server: it serves what the exact store serves, with Haystack 2.x
filters meaning what ``InMemoryDocumentStore`` means, presets, write policies and ``delete_passages``; and its
collection is the 1.x ``MilvusDocumentStore``'s, so each Haystack serves what the other wrote (the 1.x side runs
in the 1.x environment, ``.venv``, as a child process: the two Haystacks cannot share one)."""

import json
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from test_components import MODEL, indexing, serves_what_the_exact_store_serves

pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")

from milvus_server import shared_uri  # noqa: E402

from haystack_dcsr.core.indexes.filters import FilterError  # noqa: E402
from haystack_dcsr.haystack2 import DCSRMilvusDocumentStore, DCSRRetriever  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PYTHON_1X = ROOT / ".venv" / "bin" / "python"


def dcsr_milvus(**kwargs) -> DCSRMilvusDocumentStore:
    return DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"dcsr2_{uuid.uuid4().hex[:8]}", **kwargs)


@pytest.fixture
def exact(passages):
    store = InMemoryDocumentStore()
    indexing(store).run({"split": {"documents": passages}})
    return store


@pytest.mark.parametrize("preset", ["flat", "hnsw"])
def test_it_serves_what_the_exact_store_serves_and_filters_as_in_memory_does(preset, exact, passages):
    milvus = dcsr_milvus(index_preset=preset)
    indexing(milvus, policy=DuplicatePolicy.NONE).run({"split": {"documents": passages}})
    assert milvus.count_documents() == exact.count_documents() == 15
    serves_what_the_exact_store_serves(milvus, exact)
    filters = [
        {"field": "meta.kind", "operator": "!=", "value": "city"},
        {"field": "meta.extra", "operator": "!=", "value": "x"},  # no passage has it: 2.x says every one differs
        {"field": "meta.kind", "operator": "not in", "value": ["city"]},
        {"operator": "NOT", "conditions": [{"field": "meta.kind", "operator": "==", "value": "city"}]},
        {
            "operator": "OR",
            "conditions": [
                {"field": "meta.title", "operator": "in", "value": ["Paris", "Penicillin"]},
                {"field": "meta.kind", "operator": "==", "value": "none of them"},
            ],
        },
    ]
    for condition in filters:
        want = sorted(d.id for d in exact.filter_documents(condition))
        assert sorted(d.id for d in milvus.filter_documents(condition)) == want, condition
    stored = {d.id: d for d in milvus.filter_documents()}
    assert {d.id: d.content for d in exact.filter_documents()} == {k: d.content for k, d in stored.items()}
    assert np.allclose(
        stored["Paris#1"].embedding, next(d for d in exact.filter_documents() if d.id == "Paris#1").embedding, atol=1e-5
    )
    with pytest.raises(FilterError, match="meta only"):
        milvus.filter_documents({"field": "content", "operator": "==", "value": "x"})
    with pytest.raises(FilterError, match="numbers only"):  # as Haystack 2.x refuses strings that are not dates
        milvus.filter_documents({"field": "meta.title", "operator": ">=", "value": "T"})
    with pytest.raises(FilterError, match="Haystack 2.x syntax"):
        milvus.filter_documents({"kind": "city"})


def test_policies_refusals_and_delete_passages(passages):
    milvus = dcsr_milvus()
    indexing(milvus).run({"split": {"documents": passages}})
    paris = [d for d in milvus.filter_documents() if d.id.startswith("Paris#")]
    with pytest.raises(DuplicateDocumentError, match="exist already"):
        milvus.write_documents(paris, policy=DuplicatePolicy.FAIL)
    changed = [Document(id="Paris", content="Paris is in France.", meta={"kind": "city"})]
    indexing(milvus, policy=DuplicatePolicy.SKIP).run({"split": {"documents": changed}})
    assert sorted(d.id for d in milvus.filter_documents() if d.id.startswith("Paris#")) == sorted(d.id for d in paris)
    indexing(milvus, policy=DuplicatePolicy.OVERWRITE).run({"split": {"documents": changed}})
    assert [d.content for d in milvus.filter_documents() if d.id.startswith("Paris#")] == ["Paris is in France."]
    before = milvus.count_documents()
    with pytest.raises(ValueError, match="not a DCSR sentence|DCSRSentenceSplitter"):
        milvus.write_documents([Document(id="loose", content="No sentence meta.")])
    half = [paris[0], Document(id=paris[1].id, content=paris[1].content, meta=paris[1].meta)]
    with pytest.raises(ValueError, match="1 of 2 sentence Documents have no embedding"):
        milvus.write_documents(half)
    narrow = [Document(id=d.id, content=d.content, meta=d.meta, embedding=[0.1] * 8) for d in paris]
    with pytest.raises(ValueError, match="8-dimensional vectors for Milvus collection .* holds 384-dimensional"):
        milvus.write_documents(narrow)
    assert milvus.count_documents() == before  # nothing written by any refusal
    assert milvus.delete_passages(passage_ids=["Paris", "nowhere"]) == 1
    city = {"field": "meta.kind", "operator": "==", "value": "city"}
    assert milvus.delete_passages(filters=city) == 3  # Berlin's three sentences
    assert milvus.filter_documents(city) == []
    assert milvus.count_documents() == before - 4
    with pytest.raises(ValueError, match="passage_ids or filters"):
        milvus.delete_passages()


def test_the_store_round_trips_through_a_yaml_pipeline(passages):
    milvus = dcsr_milvus(index_preset="hnsw", consistency_level="Strong")
    indexing(milvus).run({"split": {"documents": passages}})
    pipeline = Pipeline()
    pipeline.add_component("retrieve", DCSRRetriever(document_store=milvus, model=MODEL, top_k=3))
    loaded = Pipeline.loads(pipeline.dumps())
    store = loaded.get_component("retrieve").document_store
    assert isinstance(store, DCSRMilvusDocumentStore)
    assert (store.collection_name, store.index_preset, store.consistency_level) == (
        milvus.collection_name,
        "hnsw",
        "Strong",
    )
    question = "When was the Eiffel Tower completed?"
    got = loaded.run({"retrieve": {"query": question}})["retrieve"]["documents"]
    assert [d.id for d in got] == [
        d.id for d in pipeline.run({"retrieve": {"query": question}})["retrieve"]["documents"]
    ]
    assert got[0].id == "Paris"


def run_1x(script: str) -> dict:
    """Run ``script`` in the Haystack 1.x environment; it prints one JSON line."""
    if not PYTHON_1X.is_file():
        pytest.skip("the Haystack 1.x environment (.venv) is not built: `make setup` builds it")
    done = subprocess.run(
        [str(PYTHON_1X), "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


ONE_X = """
import json, os
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
from haystack.schema import Document
from haystack_dcsr import DCSRRetriever, MilvusDocumentStore, SentencePreprocessor
store = MilvusDocumentStore(uri={uri!r}, index={collection!r}, embedding_dim=384, progress_bar=False)
retriever = DCSRRetriever(document_store=store, query_model={model!r}, top_k=5, progress_bar=False)
if {write!r}:
    passages = [Document(id=t, content=c, meta=m) for t, c, m in {passages!r}]
    store.write_documents(SentencePreprocessor(model={model!r}, progress_bar=False).process(passages)["documents"])
    store.update_embeddings(retriever)
found = retriever.retrieve({question!r})
print(json.dumps([[d.id, d.score, d.content] for d in found]))
"""


def test_one_collection_serves_both_haystacks(passages):
    """A collection written by a 2.x indexing pipeline is served by the 1.x retriever, and one written by the 1.x
    store by the 2.x retriever, each with the other's passages, texts and HasAns."""
    question = "When was the Eiffel Tower completed?"
    rows = [(d.id, d.content, d.meta) for d in passages]
    written_by_2x = dcsr_milvus()
    indexing(written_by_2x).run({"split": {"documents": passages}})
    served_2x = DCSRRetriever(document_store=written_by_2x, model=MODEL, top_k=5).run(query=question)["documents"]
    served_1x = run_1x(
        ONE_X.format(
            uri=shared_uri(),
            collection=written_by_2x.collection_name,
            model=MODEL,
            write=False,
            passages=[],
            question=question,
        )
    )
    assert [row[0] for row in served_1x] == [d.id for d in served_2x] and served_1x[0][0] == "Paris"
    assert [row[1] for row in served_1x] == pytest.approx([d.score for d in served_2x], abs=1e-5)
    assert [row[2] for row in served_1x] == [d.content for d in served_2x]

    collection = f"dcsr1_{uuid.uuid4().hex[:8]}"
    by_1x = run_1x(
        ONE_X.format(uri=shared_uri(), collection=collection, model=MODEL, write=True, passages=rows, question=question)
    )
    store = DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=collection)
    assert store.count_documents() == 15
    served = DCSRRetriever(document_store=store, model=MODEL, top_k=5).run(query=question)["documents"]
    assert [d.id for d in served] == [row[0] for row in by_1x] == [d.id for d in served_2x]
    assert [d.score for d in served] == pytest.approx([row[1] for row in by_1x], abs=1e-5)
    assert [d.content for d in served] == [row[2] for row in by_1x]
    writer = DocumentWriter(document_store=store)  # and 2.x writes into the 1.x collection
    assert writer.run(documents=[])["documents_written"] == 0


def test_the_scaling_out_guides_2x_snippet_runs_as_written():
    from guide_snippets import run_guide_snippet

    run_guide_snippet("# Haystack 2.x:", shared_uri())
