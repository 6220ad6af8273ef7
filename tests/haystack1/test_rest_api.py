"""``python -m haystack_dcsr.serve`` for real: a server process on 127.0.0.1 over a folder written by
``save_pipeline``, concurrent clients, malformed bodies, kill -9 and a restart from the same folder, and the
delete route (off by default; when on, each deletion is saved before it is acknowledged)."""

import contextlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from corpus import QUESTIONS
from rest_server import Server, answers_in_process, ranked, saved_folder

pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tiny_bert):
    return saved_folder(tmp_path_factory.mktemp("rest") / "site", tiny_bert)


@pytest.fixture(scope="module")
def expected(folder):
    return answers_in_process(folder)


@pytest.fixture(scope="module")
def server(folder):
    server = Server(folder).start()
    yield server
    server.stop()


def test_health_routes_and_haystack_shapes(server, expected):
    import haystack

    assert server.get("/initialized") == (200, True)
    assert server.get("/hs_version") == (200, {"hs_version": haystack.__version__})
    status, body = server.post("/query", {"query": QUESTIONS[0][0], "params": {"Retriever": {"top_k": 2}}})
    assert status == 200 and set(body) == {"query", "answers", "documents"}
    assert body["query"] == QUESTIONS[0][0] and body["answers"] == []
    assert ranked(body["documents"]) == expected[QUESTIONS[0][0]][:2]
    document = body["documents"][0]
    assert {"content", "content_type", "id", "meta", "score", "embedding"} <= set(document)
    assert document["embedding"] is None and document["meta"]["dcsr_sentences"]
    status, found = server.post("/documents/get_by_filters", {"filters": {"title": ["Paris"]}})
    assert status == 200 and found and {d["meta"]["title"] for d in found} == {"Paris"}


def test_concurrent_clients_get_the_in_process_answers(server, expected):
    """8 client threads x 10 queries at once: every answer equals the pipeline's own in this process."""
    questions = [q for q, _ in QUESTIONS] * 16

    def ask(question):
        status, body = server.post("/query", {"query": question})
        return question, status, ranked(body["documents"])

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, questions))
    assert len(results) == 80
    assert [(q, s, r) for q, s, r in results if s != 200 or r != expected[q]] == []


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"query": "x", "params": {"Retriever": {"top_kk": 3}}}, 422, "params.Retriever.top_kk: node 'Retriever' "
         "(DCSRRetriever) takes no parameter 'top_kk' (did you mean 'top_k'?)"),
        ({"query": "x", "params": {"Retriver": {"top_k": 3}}}, 422, "params.Retriver: no node or parameter "
         "'Retriver' in this pipeline (nodes: Retriever) (did you mean 'Retriever'?)"),
        ({"query": "x", "params": {"Retriever": {"filters": "title"}}}, 422, "params.Retriever.filters: filters must "
         "be a dict (Haystack 1.x syntax), got str"),
        ({"query": "x", "params": {"Retriever": {"filters": ["title"]}}}, 422, "params.Retriever.filters: filters "
         "must be a dict (Haystack 1.x syntax), got list"),
        ({"query": "x", "params": {"filters": {"year": {"$regex": "19"}}}}, 422, "params.filters: filters.year: "
         "unknown comparison operator '$regex' for field 'year'"),
        ({"query": "x", "params": {"Retriever": {"filters": {"year": {"$gt": "abc"}}}}}, 422, "compare values of "
         "different kinds"),
        ({"query": "x", "params": {"Reader": {"top_k": 3}}}, 422, "params.Reader: no node or parameter 'Reader' in "
         "this pipeline (nodes: Retriever)"),
        ({"query": 123}, 422, "query: expected a non-empty string, got int 123"),
        ({"query": ""}, 422, "query: expected a non-empty string"),
        ({"params": {}}, 422, "request body: 'query' is required"),
        ({"query": "x", "top_k": 3}, 422, "request body: unknown field 'top_k'"),
        ([{"query": "x"}], 422, "request body: expected a JSON object with query, params, debug, got list"),
        ({"query": "x", "params": "Retriever"}, 422, "params: expected an object of node names or parameters"),
        ({"query": "x", "params": {"Retriever": {"top_k": "ten"}}}, 422, ""),
    ],
)  # fmt: skip
def test_a_bad_request_gets_a_4xx_naming_the_fault_never_a_traceback(server, body, status, message):
    got, answer = server.post("/query", body)
    assert got == status, answer
    assert isinstance(answer, dict) and len(answer["errors"]) == 1, answer
    assert message in answer["errors"][0] and "Traceback" not in answer["errors"][0]
    assert "did you mean 'headers'" not in answer["errors"][0]  # no guess at a name merely absent


def test_a_body_that_is_not_json_is_a_400(server):
    status, answer = server.post("/query", None, raw=b"{query: x")
    assert status == 400 and answer["errors"][0].startswith("request body: not valid JSON")
    status, answer = server.post("/documents/get_by_filters", {"filters": {"year": {"$in": 1901}}})
    assert status == 422 and "$in takes a list, got 1901" in answer["errors"][0]


def test_writes_are_off_by_default_and_say_how_to_turn_them_on(server):
    status, answer = server.post("/documents/delete_by_filters", {"filters": {"title": ["Paris"]}})
    assert status == 403 and "--allow-writes" in answer["errors"][0]
    assert server.post("/query", {"query": QUESTIONS[0][0]})[0] == 200


def test_deep_and_large_bodies_are_refused_as_json_errors(server):
    """200,000 nested brackets (Python's parser recurses) and a body past the limit: a JSON 4xx each, and the
    server answers the next query."""
    status, answer = server.post("/query", None, raw=b"[" * 200_000 + b"]" * 200_000)
    assert status == 400 and answer["errors"] == ["request body: nested deeper than 32 levels"]
    deep = {"query": "x", "params": {"filters": {"$and": [{"$or": [{"$and": []}]}] * 1}}}
    for _ in range(20):
        deep = {"query": "x", "params": {"filters": {"$and": [deep["params"]["filters"]]}}}
    status, answer = server.post("/query", deep)
    assert status == 400 and "nested deeper than 32 levels" in answer["errors"][0]
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.putrequest("POST", "/query")  # 5 MB announced, a few bytes sent: refused before it is read
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(5 << 20))
    connection.endheaders(b'{"query": "')
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 413 and answer["errors"] == ["request body: 5242880 bytes, more than the 1048576 allowed"]
    assert server.post("/query", {"query": QUESTIONS[0][0]})[0] == 200


def test_get_by_filters_evaluates_filters_as_query_does(server):
    """A SQL store alone compares meta as JSON text and answers a comparison of kinds with ``[]``: the route
    evaluates filters as retrieval does, numbers as numbers, and refuses what ``/query`` refuses."""
    status, answer = server.post("/documents/get_by_filters", {"filters": {"year": {"$lt": "x"}}})
    assert status == 422 and "compare values of different kinds" in answer["errors"][0]
    query_status, _ = server.post("/query", {"query": "x", "params": {"filters": {"year": {"$lt": "x"}}}})
    assert query_status == status
    status, documents = server.post("/documents/get_by_filters", {"filters": {"year": {"$gte": 1902}}})
    assert status == 200 and documents and all(d["meta"]["year"] >= 1902 for d in documents)
    years = {d["meta"]["year"] for d in server.post("/documents/get_by_filters", {})[1]}
    assert {y for y in years if y >= 1902} == {d["meta"]["year"] for d in documents}
    assert min(years) < 1902


def test_a_killed_server_restarts_from_its_folder_and_answers_the_same(folder, expected):
    server = Server(folder).start()
    try:
        with ThreadPoolExecutor(4) as pool:  # killed while clients are asking
            pending = [pool.submit(server.post, "/query", {"query": q}) for q, _ in QUESTIONS * 4]
            time.sleep(0.2)
            server.kill()
            outcomes = []
            for future in pending:
                try:
                    outcomes.append(future.result())
                except OSError:  # the connection died with the server: a clear error, no wrong answer
                    outcomes.append(None)
        assert all(o is None or o[0] == 200 for o in outcomes)
        server.start()
        assert {q: ranked(server.post("/query", {"query": q})[1]["documents"]) for q, _ in QUESTIONS} == expected
    finally:
        server.stop()


# run in the server's process before it starts: at the point DCSR_KILL_POINT names, the next deletion leaves a progress
# marker (a line in DCSR_KILL_MARKER) and waits there to be killed
KILL_HOOK = """
import os, time
from haystack_dcsr.haystack1 import pipelines

point, marker = os.environ["DCSR_KILL_POINT"], os.environ["DCSR_KILL_MARKER"]


def reached(where):
    if where == point:
        with open(marker, "a") as out:
            out.write(where + "\\n")
        time.sleep(600)


save = pipelines.save_pipeline


def save_pipeline(*args, **kwargs):
    reached("deleted, not saved")
    saved = save(*args, **kwargs)
    reached("saved, not answered")
    return saved


replace = os.replace


def hooked_replace(source, target, *args, **kwargs):
    name = os.path.basename(str(target))
    if name.endswith(".yml"):
        reached("before the YAML")
    replace(source, target, *args, **kwargs)
    if name.endswith(".faiss"):
        reached("index file renamed")


pipelines.save_pipeline, os.replace = save_pipeline, hooked_replace
"""
# where a kill lands while the server deletes "Berlin", and whether the restarted server still serves it
KILL_POINTS = [
    ("deleted, not saved", True),
    ("index file renamed", True),  # the new generation half-written
    ("before the YAML", True),  # every file of the new generation in place, the YAML not yet
    ("saved, not answered", False),  # the client got no answer, but the deletion was saved
]


def test_an_acknowledged_delete_survives_kill_9(tmp_path, tiny_bert):
    """With --allow-writes each deletion is saved (crash-safe) before the route answers: killed right after, the
    restart serves the deletion, as a pipeline loaded in-process from the same folder does."""
    path = saved_folder(tmp_path / "site", tiny_bert)
    server = Server(path, "--allow-writes").start()
    try:
        assert server.post("/documents/delete_by_filters", {"filters": {"title": ["Paris"]}}) == (200, True)
        assert server.post("/documents/delete_by_filters", {})[0] == 422  # deleting everything needs a filter
        server.kill()
        server.start()
        served = {q: ranked(server.post("/query", {"query": q})[1]["documents"]) for q, _ in QUESTIONS}
        assert "Paris" not in {title for answer in served.values() for title, _ in answer}
        assert served == answers_in_process(path)
    finally:
        server.stop()


def delete_berlin(server):
    """Ask the server to delete "Berlin"; the connection dies with the server killed meanwhile."""
    with contextlib.suppress(OSError):
        server.post("/documents/delete_by_filters", {"filters": {"title": ["Berlin"]}})


def test_a_delete_killed_at_each_point_of_its_save_leaves_the_folder_as_before_or_after(tmp_path, tiny_bert):
    """The server is killed with SIGKILL while it deletes "Berlin", at each point in turn (a progress marker the
    server's process leaves confirms where the kill landed): after the deletion and before the save, with the new
    generation's index file renamed into place, with every file but the YAML in place, and after the save before
    the answer. Each restart serves the folder as a pipeline loaded in-process does: Berlin whole until the YAML
    names the new generation, gone after."""
    path = saved_folder(tmp_path / "site", tiny_bert)
    marker = tmp_path / "marker"
    server = Server(path, "--allow-writes")

    def serves_the_folder(berlin_served: bool, point: str) -> None:
        served = {q: ranked(server.post("/query", {"query": q})[1]["documents"]) for q, _ in QUESTIONS}
        titles = {title for answer in served.values() for title, _ in answer}
        assert ("Berlin" in titles) == berlin_served, point
        assert served == answers_in_process(path), point

    try:
        landed = None  # (point, whether Berlin is served after a kill there) of the previous round
        for point, berlin_served in KILL_POINTS:
            server.start(hook=KILL_HOOK, env={"DCSR_KILL_POINT": point, "DCSR_KILL_MARKER": str(marker)})
            if landed:  # the restart after the previous kill, checked before this round's delete
                serves_the_folder(landed[1], landed[0])
            asking = threading.Thread(target=delete_berlin, args=(server,))
            asking.start()
            deadline = time.monotonic() + 60
            while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
                time.sleep(0.05)
            server.kill()
            asking.join(timeout=60)
            assert marker.read_text() == f"{point}\n", point  # the kill landed where the marker says
            marker.unlink()
            landed = (point, berlin_served)
        server.start()
        serves_the_folder(landed[1], landed[0])
    finally:
        server.stop()
