"""DCSR query pipelines served by a real Hayhooks server process on 127.0.0.1, started as the docs say
(``python -m haystack_dcsr.haystack2.serve``): one over a Milvus collection the test indexes, one over pgvector on a
PostgreSQL of the test's own. Answers equal the in-process pipeline's, for concurrent clients too; the serving
contract (``serving_contract``) holds: 422 naming the fault for any bad filter or parameter, 503 with Retry-After
for an engine down or hung, 413 past the body limit, no route that runs posted code, no CORS unless asked."""

import json
import os
import signal
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


def post(port: int, body: dict, pipeline: str = "dcsr"):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/{pipeline}/run",
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


WRAPPER = (
    "from haystack_dcsr.haystack2.serving import DCSRPipelineWrapper\n\n\n"
    "class PipelineWrapper(DCSRPipelineWrapper):\n    pass\n"
)


def deploy(pipelines: Path, name: str, pipeline: Pipeline) -> None:
    folder = pipelines / name
    folder.mkdir(parents=True)
    (folder / "pipeline.yml").write_text(pipeline.dumps())
    (folder / "pipeline_wrapper.py").write_text(WRAPPER)


@pytest.fixture(scope="module")
def served(tmp_path_factory, passages_module):
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    from pgvector_writer import DIM, random_corpus
    from postgres import Cluster, new_database_url, pgvector_binaries

    store = DCSRMilvusDocumentStore(uri=shared_uri(), collection_name=f"hayhooks_{uuid.uuid4().hex[:8]}")
    indexing(store).run({"split": {"documents": passages_module}})
    pipeline = Pipeline()
    pipeline.add_component("retrieve", DCSRRetriever(document_store=store, model=MODEL, top_k=3))
    pipelines = tmp_path_factory.mktemp("hayhooks") / "pipelines"
    deploy(pipelines, "dcsr", pipeline)
    cluster = Cluster(pgvector_binaries())  # the test's own: it hangs it
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "DCSR_PG_SERVED": new_database_url("served", cluster.url),
        "DCSR_PGVECTOR_TIMEOUT_S": "3",
    }
    os.environ["DCSR_PG_SERVED"] = env["DCSR_PG_SERVED"]
    pg_store = PgvectorDocumentStore(
        connection_string=Secret.from_env_var("DCSR_PG_SERVED"),
        embedding_dimension=DIM,
        vector_function="inner_product",
    )
    pg_store.write_documents(random_corpus(20))
    pg_pipeline = Pipeline()
    pg_pipeline.add_component("retrieve", DCSRRetriever(document_store=pg_store, model=MODEL, top_k=3))
    deploy(pipelines, "pg", pg_pipeline)
    port = free_port()
    command = [sys.executable, "-m", "haystack_dcsr.haystack2.serve", "--pipelines-dir", str(pipelines)]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=pipelines.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read().decode()[-3000:]
            try:
                if all(post(port, {"query": QUESTIONS[0]}, name)[0] == 200 for name in ("dcsr", "pg")):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            process.kill()
            raise AssertionError(f"hayhooks did not serve both pipelines in time: {process.stdout.read()[-4000:]!r}")
        expected = {
            q: ranked(d.to_dict() for d in pipeline.run({"retrieve": {"query": q}})["retrieve"]["documents"])
            for q in QUESTIONS
        }
        yield port, expected, cluster
    finally:
        process.kill()
        process.wait(timeout=30)
        cluster.stop()


@pytest.fixture(scope="module")
def passages_module():
    from corpus import CORPUS
    from haystack import Document

    return [
        Document(id=t, content=c, meta={"title": t, "kind": "city" if t in ("Paris", "Berlin") else "other"})
        for t, c in CORPUS
    ]


def test_hayhooks_answers_as_the_pipeline_in_process_for_concurrent_clients(served):
    port, expected, _ = served
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
    port, _, _ = served
    status, body = post(port, {"query": QUESTIONS[0], "top_k": 0})
    assert status == 422 and "top_k" in json.dumps(body)
    status, body = post(port, {"query": QUESTIONS[0], "filters": {"kind": "city"}})
    assert status == 422 and "Haystack 2.x syntax" in json.dumps(body)
    status, body = post(port, {"top_k": 3})
    assert status == 422 and "query" in json.dumps(body)
    status, body = post(port, {"query": QUESTIONS[0]})
    assert status == 200  # and the server still answers


def request(port: int, path: str, data: bytes = None, headers: dict = None, method: str = "POST"):
    """(status, headers, body) of one request; ``data`` may be an iterable of chunks (sent chunked, no length)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=data, headers=headers or {}, encode_chunked=not isinstance(data, bytes))
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_serving_contract_holds_for_hayhooks(served, tmp_path):
    from serving_contract import check_serving_contract

    port, _, cluster = served
    check_serving_contract(
        lambda path, data, headers: request(port, path, data, headers),
        query_path="/pg/run",
        body=lambda **fields: {"query": QUESTIONS[0], **fields},
        syntax="2.x",
        hang=lambda: cluster.signal(signal.SIGSTOP),
        resume=lambda: cluster.signal(signal.SIGCONT),
        hung_within=10,
    )
    marker = tmp_path / "ran"
    wrapper = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('posted code ran')\n"
    status, _, _ = request(
        port,
        "/deploy_files",
        json.dumps({"name": "evil", "files": {"pipeline_wrapper.py": wrapper}, "overwrite": True}).encode(),
        {"Content-Type": "application/json"},
    )
    assert status in (404, 405) and not marker.exists()
    status, headers, _ = request(port, "/status", None, {"Origin": "http://evil.example"}, method="GET")
    assert status == 200 and "access-control-allow-origin" not in {k.lower() for k in headers}


def test_the_server_refuses_to_start_when_a_pipeline_does_not_deploy(tmp_path):
    """Hayhooks skips a pipeline whose deploy fails and serves the rest (a client then meets a 404); the project's
    entry point exits instead, naming the pipeline."""
    folder = tmp_path / "pipelines" / "broken"
    folder.mkdir(parents=True)
    (folder / "pipeline.yml").write_text("components: {retrieve: {type: no.such.Component, init_parameters: {}}}\n")
    (folder / "pipeline_wrapper.py").write_text(WRAPPER)
    command = [sys.executable, "-m", "haystack_dcsr.haystack2.serve", "--pipelines-dir", str(folder.parent)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    done = subprocess.run([*command, "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "pipeline(s) broken of" in output and "not serving without them" in output
