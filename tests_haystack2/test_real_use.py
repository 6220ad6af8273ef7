"""Haystack 2.x under real use: readers with a writer on one DCSRRetriever (InMemory, Qdrant, pgvector both ways),
deletes made through the store directly (bypassing DCSR), and YAML pipelines over a Qdrant store persisted on disk,
loaded in fresh processes."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from tiny_models import make_tiny_bert

from haystack_dcsr.haystack2 import DCSRDocumentEmbedder, DCSRRetriever, DCSRSentenceSplitter

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["capital city landmark", "fruit grows tropical", "planet storm giant", "antibiotic discovered"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny2"), pooling="mean")


def passage(pid, sentences, **meta):
    return Document(id=pid, content=" ".join(sentences), meta={"title": pid, **meta})


BASE = [
    passage("paris", ["Paris is a capital city.", "Its landmark is a tower.", "The river is the Seine."], tenant="a"),
    passage("berlin", ["Berlin is a capital city.", "Its landmark is a gate."], tenant="a"),
    passage("banana", ["Bananas are a fruit.", "They grow in tropical places.", "Monkeys eat them."], tenant="b"),
    passage("jupiter", ["Jupiter is a planet.", "It is a gas giant.", "Its storm is red."], tenant="b"),
]


def indexing(store, model):
    pipeline = Pipeline()
    pipeline.add_component("split", DCSRSentenceSplitter(model=model))
    pipeline.add_component("embed", DCSRDocumentEmbedder(model=model))
    pipeline.add_component("write", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
    pipeline.connect("split.documents", "embed.documents")
    pipeline.connect("embed.documents", "write.documents")
    return pipeline


def new_store(kind, tmp_path, name):
    if kind == "memory":
        return InMemoryDocumentStore(embedding_similarity_function="dot_product")
    if kind.startswith("pgvector"):
        from test_components import pgvector_store

        return pgvector_store(embedding_dimension=32)
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(":memory:", index=name, embedding_dim=32, similarity="dot_product", recreate_index=True)


def answer(retriever, query):
    return tuple((d.id, d.content, round(d.score, 4)) for d in retriever.run(query=query, top_k=4)["documents"])


def snapshot(retriever):
    """Each query's answer (each query is its own call, so each may see another state)."""
    return tuple(answer(retriever, query) for query in QUERIES)


def operations(model):
    """The writer's calls, each one write or one delete: new passages, a passage re-written shorter and longer,
    a passage deleted (its sentences through the store), a tenant deleted by filter."""

    def write(documents):
        return lambda store: indexing(store, model).run({"split": {"documents": documents}})

    def delete_passage(pid):
        def delete(store):
            ids = [d.id for d in store.filter_documents() if d.id.split("#")[0] == pid]
            if ids:  # (the second round finds it gone already)
                store.delete_documents(ids)

        return delete

    return [
        write([passage("penicillin", ["Penicillin is an antibiotic.", "Fleming discovered it."], tenant="c")]),
        write([passage("paris", ["Paris is a capital city."], tenant="a")]),  # shorter
        write(
            [
                passage(
                    "paris",
                    ["Paris is a capital city.", "Its landmark is a tower.", "A river.", "Museums."],
                    tenant="a",
                )
            ]
        ),  # longer  # fmt: skip
        delete_passage("berlin"),
        write([passage("mars", ["Mars is a planet.", "Its storm is dust."], tenant="b")]),
        lambda store: store.delete_by_filter({"field": "meta.tenant", "operator": "==", "value": "b"}),
    ]


@pytest.mark.parametrize("kind", ["memory", "qdrant", "pgvector", "pgvector ranking in the database"])
def test_readers_with_a_writer_answer_for_a_state_the_store_passed_through(kind, model, tmp_path):
    """Four reader threads query while a writer applies the operations: every answer equals the single-threaded
    answer of the same store kind after some prefix of the operations, or is an error that says what changed."""
    if kind == "qdrant":
        pytest.importorskip("haystack_integrations.document_stores.qdrant")
    ops = operations(model)
    reference = new_store(kind, tmp_path, "reference")
    indexing(reference, model).run({"split": {"documents": BASE}})
    in_database = kind.endswith("database")  # (the same ranking path as the live store's)
    reference_retriever = DCSRRetriever(document_store=reference, model=model, top_k=4, rank_in_database=in_database)
    states = [snapshot(reference_retriever)]
    for op in ops:
        op(reference)
        states.append(snapshot(reference_retriever))
    assert len(set(states)) >= 5  # the operations change the answers

    store = new_store(kind, tmp_path, "live")
    indexing(store, model).run({"split": {"documents": BASE}})
    retriever = DCSRRetriever(document_store=store, model=model, top_k=4, rank_in_database=in_database)
    stop, seen, failures = threading.Event(), [], []

    def read():
        while not stop.is_set():
            for number, query in enumerate(QUERIES):
                try:
                    seen.append((number, answer(retriever, query)))
                except Exception as error:  # noqa: BLE001 - recorded for the assertion
                    failures.append(f"{type(error).__name__}: {error}")
                    time.sleep(0.01)

    readers = [threading.Thread(target=read, daemon=True) for _ in range(4)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(2):  # the same operations twice: the second round re-writes what the first wrote
            for op in ops:
                op(store)
                time.sleep(0.05)
    finally:
        stop.set()
    for reader in readers:
        reader.join(timeout=120)
    assert not any(reader.is_alive() for reader in readers)
    assert failures == []
    assert len(seen) > 40
    for op in ops:  # the second round's states, computed on the reference store as well
        op(reference)
        states.append(snapshot(reference_retriever))
    explained = {(number, state[number]) for state in states for number in range(len(QUERIES))}
    unexplained = [item for item in seen if item not in explained]
    assert unexplained == []


def test_deletes_through_the_store_never_serve_a_partial_or_wrong_passage(model):
    """A sentence deleted directly leaves its passage incomplete: DCSR stops serving that passage (never its other
    sentences as if they were the passage); a tenant deleted by filter is gone; the rest is served whole."""
    store = InMemoryDocumentStore(embedding_similarity_function="dot_product")
    indexing(store, model).run({"split": {"documents": BASE}})
    retriever = DCSRRetriever(document_store=store, model=model, top_k=10)
    texts = {p.id: p.content for p in BASE}

    def served():
        found = retriever.run(query="a capital city or a planet or a fruit")["documents"]
        assert all(d.content == texts[d.id] for d in found)  # every passage served is whole, as written
        return {d.id for d in found}

    assert served() == set(texts)
    store.delete_documents(["paris#1"])  # one sentence of a three-sentence passage
    assert served() == set(texts) - {"paris"}
    store.delete_by_filter({"field": "meta.tenant", "operator": "==", "value": "b"})
    assert served() == {"berlin"}
    indexing(store, model).run({"split": {"documents": [BASE[0]]}})  # re-writing the passage serves it again
    assert served() == {"berlin", "paris"}


INDEX_YAML_CODE = """
import sys
sys.path[:0] = [sys.argv[4], sys.argv[4] + "/../tests/support"]  # this file, and tiny_models it imports
from haystack import Pipeline
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_dcsr.haystack2 import DCSRRetriever
from test_real_use import indexing
path, model, folder = sys.argv[1], sys.argv[2], sys.argv[3]
store = QdrantDocumentStore(path=path, index="dcsr", embedding_dim=32, similarity="dot_product")
open(folder + "/indexing.yml", "w").write(indexing(store, model).dumps())
query = Pipeline()
query.add_component("retriever", DCSRRetriever(document_store=store, model=model, top_k=3))
open(folder + "/query.yml", "w").write(query.dumps())
"""

RUN_YAML_CODE = """
import json, sys
from haystack import Document, Pipeline
import haystack_dcsr.haystack2  # allow-lists its components for Haystack 3's YAML loader (see its docstring)
kind, folder = sys.argv[1], sys.argv[2]
pipeline = Pipeline.loads(open(f"{folder}/{kind}.yml").read())
if kind == "indexing":
    passages = [Document(**p) for p in json.loads(sys.argv[3])]
    print(json.dumps(pipeline.run({"split": {"documents": passages}})["write"]))
else:
    found = pipeline.run({"retriever": {"query": sys.argv[3]}})["retriever"]["documents"]
    print(json.dumps([[d.id, d.content, round(d.score, 4)] for d in found]))
"""


def test_yaml_pipelines_over_a_persisted_qdrant_store_in_fresh_processes(model, tmp_path):
    pytest.importorskip("haystack_integrations.document_stores.qdrant")

    def python(code, *args):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None

    python(INDEX_YAML_CODE, str(tmp_path / "qdrant"), model, str(tmp_path), str(Path(__file__).parent))
    documents = json.dumps([{"id": p.id, "content": p.content, "meta": p.meta} for p in BASE])
    assert python(RUN_YAML_CODE, "indexing", str(tmp_path), documents) == {"documents_written": 11}
    answer = python(RUN_YAML_CODE, "query", str(tmp_path), "planet storm giant")
    texts = {p.id: p.content for p in BASE}
    assert len(answer) == 3 and all(content == texts[pid] for pid, content, _ in answer)
    # two query processes at once over the same persisted store: qdrant-client's local mode locks its folder for
    # one process (its documented limit: "use Qdrant server instead"), so one answers and the other gets that
    # error, at once and by name; two processes at once need a Qdrant server (QDRANT_URL), where both answer
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RUN_YAML_CODE, "query", str(tmp_path), "planet storm giant"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    answered = [json.loads(out.strip().splitlines()[-1]) for (out, _), p in zip(outputs, procs) if p.returncode == 0]
    refused = [err for (_, err), p in zip(outputs, procs) if p.returncode != 0]
    assert answered and all(a == answer for a in answered)
    assert all("already accessed by another instance of Qdrant client" in err for err in refused)
