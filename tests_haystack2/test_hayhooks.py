"""A DCSR query pipeline served by a real Hayhooks server process on 127.0.0.1 (``DCSRPipelineWrapper``) over a
Milvus collection the test indexes: answers equal the in-process pipeline's, for concurrent clients too; a request
the pipeline refuses is a 422 naming the fault, never a 500."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from haystack import Pipeline
from test_components import MODEL, indexing

pytest.importorskip("hayhooks", reason="hayhooks is not installed (make installs it)")
pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")

from milvus_server import free_port, shared_uri  # noqa: E402

from haystack_dcsr.haystack2 import DCSRMilvusDocumentStore, DCSRRetriever  # noqa: E402

QUESTIONS = ["When was the Eiffel Tower completed?", "Who discovered penicillin?", "What is the capital of Germany?"]


def post(port: int, body: dict):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/dcsr/run",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def ranked(documents):
    return [(d["id"], round(d["score"], 5), d["content"]) for d in documents]


@pytest.fixture(scope="module")
def served(tmp_path_factory, passages_module):
    store = DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"hayhooks_{uuid.uuid4().hex[:8]}")
    indexing(store).run({"split": {"documents": passages_module}})
    pipeline = Pipeline()
    pipeline.add_component("retrieve", DCSRRetriever(document_store=store, model=MODEL, top_k=3))
    folder = tmp_path_factory.mktemp("hayhooks") / "pipelines" / "dcsr"
    folder.mkdir(parents=True)
    (folder / "pipeline.yml").write_text(pipeline.dumps())
    (folder / "pipeline_wrapper.py").write_text(
        "from haystack_dcsr.haystack2.serving import DCSRPipelineWrapper\n\n\n"
        "class PipelineWrapper(DCSRPipelineWrapper):\n    pass\n"
    )
    port = free_port()
    hayhooks = Path(sys.executable).parent / "hayhooks"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    process = subprocess.Popen(
        [str(hayhooks), "run", "--host", "127.0.0.1", "--port", str(port), "--pipelines-dir", str(folder.parent)],
        cwd=folder.parent.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read().decode()[-3000:]
            try:
                if post(port, {"query": QUESTIONS[0]})[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("hayhooks did not serve the pipeline in time")
        expected = {
            q: ranked(d.to_dict() for d in pipeline.run({"retrieve": {"query": q}})["retrieve"]["documents"])
            for q in QUESTIONS
        }
        yield port, expected
    finally:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def passages_module():
    from corpus import CORPUS
    from haystack import Document

    return [
        Document(id=t, content=c, meta={"title": t, "kind": "city" if t in ("Paris", "Berlin") else "other"})
        for t, c in CORPUS
    ]


def test_hayhooks_answers_as_the_pipeline_in_process_for_concurrent_clients(served):
    port, expected = served
    for question in QUESTIONS:
        status, body = post(port, {"query": question})
        assert status == 200 and ranked(body["result"]) == expected[question]
        assert body["result"][0]["meta"]["dcsr_sentences"]  # the supporting sentences are served
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda q: (q, post(port, {"query": q})), QUESTIONS * 4))
    assert all(status == 200 and ranked(body["result"]) == expected[q] for q, (status, body) in answers)
    status, body = post(
        port, {"query": QUESTIONS[1], "top_k": 2, "filters": {"field": "meta.kind", "operator": "==", "value": "city"}}
    )
    assert status == 200 and {d["id"] for d in body["result"]} == {"Paris", "Berlin"}


def test_bad_requests_are_answered_422_naming_the_fault(served):
    port, _ = served
    status, body = post(port, {"query": QUESTIONS[0], "top_k": 0})
    assert status == 422 and "top_k" in json.dumps(body)
    status, body = post(port, {"query": QUESTIONS[0], "filters": {"kind": "city"}})
    assert status == 422 and "Haystack 2.x syntax" in json.dumps(body)
    status, body = post(port, {"top_k": 3})
    assert status == 422 and "query" in json.dumps(body)
    status, body = post(port, {"query": QUESTIONS[0]})
    assert status == 200  # and the server still answers
