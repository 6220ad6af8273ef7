"""Faults on a real Milvus server: the server process killed with SIGKILL (by its pid) during writes, during
queries, and in the middle of a soak of one writer and several readers, then restarted on the same data folder.

What must hold: a call made while the server is down fails with ``MilvusUnavailableError`` within a bounded time
(no hang, no wrong answer); after the restart every acknowledged write is there, the collection holds exactly
the sentences of whole passages (no partial passage, no ghost rows), and every answer a reader got equals the
single-threaded answer for a state the store passed through, or was that clear error.
"""

import itertools
import json
import os
import random
import signal
import threading
import time
import zlib

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")

from milvus_server import MilvusServer  # noqa: E402

from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex  # noqa: E402
from haystack_dcsr.core.indexes.milvus_index import MilvusSentenceIndex, MilvusUnavailableError  # noqa: E402
from haystack_dcsr.core.ranking.passage_ranking import rank_passages  # noqa: E402
from haystack_dcsr.core.text.sentence_units import position, sentence_parts  # noqa: E402

DIM = 16
TEMPERATURE = 0.5
TOP_K = 5
FAILS_WITHIN = 30.0  # seconds: a call to a dead server must fail by then (the client timeout is 10 s)
READY_WITHIN = 180.0
QUERIES = np.random.default_rng(99).standard_normal((3, DIM)).astype(np.float32)


class Unit:
    def __init__(self, doc_id, content, meta):
        self.id, self.content, self.meta = doc_id, content, meta


def passage(pid: str, count: int, version: int):
    """Passage ``pid``'s sentence units and vectors at ``version`` (deterministic, so any state can be rebuilt)."""
    sentences = [f"Sentence {k} of {pid} in version {version}." for k in range(count)]
    text, spans, start = " ".join(sentences), [], 0
    for sentence in sentences:
        spans.append((start, start + len(sentence)))
        start += len(sentence) + 1
    units = [Unit(*parts) for parts in sentence_parts(pid, text, {}, spans)]
    vectors = np.random.default_rng(zlib.crc32(f"{pid}/{count}/{version}".encode())).standard_normal((count, DIM))
    return units, vectors.astype(np.float32)


def exact_answer(state: dict, temperature: float = TEMPERATURE, top_k: int = TOP_K) -> list:
    """The single-threaded answer of every query for ``state`` ({pid: (count, version)}): the exact index."""
    if not state:
        return [[] for _ in QUERIES]
    pids = sorted(state)
    built = [passage(pid, *state[pid]) for pid in pids]
    index = ExactSentenceIndex(np.concatenate([v for _, v in built]), [len(u) for u, _ in built])
    ranked = rank_passages(index, QUERIES, temperature, len(index), top_k)
    return [[(pids[p.ref], state[pids[p.ref]][1], p.hasans) for p in per_query] for per_query in ranked]


def same(got: list, want: list) -> bool:
    """Equal passages and versions in order, HasAns within 1e-4 (the server sums float32 products)."""
    return len(got) == len(want) and all(
        len(g) == len(w) and all(a[:2] == b[:2] and abs(a[2] - b[2]) <= 1e-4 for a, b in zip(g, w))
        for g, w in zip(got, want)
    )


def served(index: MilvusSentenceIndex, temperature: float = TEMPERATURE, top_k: int = TOP_K) -> list:
    ranked = rank_passages(index, QUERIES, temperature, 3000, top_k)
    return [
        [(p.ref.passage_id, int(p.sentences[0].content.rsplit(" ", 1)[1][:-1]), p.hasans) for p in per]
        for per in ranked
    ]


def once_ready(index: MilvusSentenceIndex, check):
    """``check()`` (reads and assertions) once the restarted server serves the collection, repeated while the server
    answers "unavailable": a restarted server can serve a collection and then briefly not (the killed server's
    sessions expire, and its segments are assigned again), so one successful read is no proof that the next one
    is served. Only unavailability is retried; a wrong answer fails at once."""
    deadline = time.monotonic() + READY_WITHIN
    while True:
        try:
            index.count()
            index.search(QUERIES[:1], 1)
            return check()
        except MilvusUnavailableError:
            if time.monotonic() > deadline:
                raise AssertionError(f"the restarted server did not serve within {READY_WITHIN} s") from None
            time.sleep(0.5)


def stored_passages(index: MilvusSentenceIndex) -> dict:
    rows = {}
    for row in index.sentences():
        rows.setdefault(position(row).passage_id, []).append(position(row))
    return rows


def assert_whole(stored: dict, index: MilvusSentenceIndex) -> dict:
    """Every stored passage is one whole version; the collection holds exactly their sentences. Returns
    {pid: (count, version)}."""
    state = {}
    for pid, where in stored.items():
        assert sorted(w.index for w in where) == list(range(where[0].count)), f"{pid} is partial: {where}"
        assert len({w.version for w in where}) == 1, f"{pid} mixes versions"
        state[pid] = where[0].count
    assert index.count() == sum(state.values())
    return state


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = MilvusServer(tmp_path_factory.mktemp("milvus-faults")).start()
    yield server
    server.stop()


def kill_and_expect_clear_errors(server: MilvusServer, index: MilvusSentenceIndex) -> None:
    server.kill()
    for call in (lambda: index.search(QUERIES, 10), lambda: index.write(*passage("down", 2, 0)), index.count):
        started = time.monotonic()
        with pytest.raises(MilvusUnavailableError, match="did not answer"):
            call()
        assert time.monotonic() - started < FAILS_WITHIN


def pause_in_write(index: MilvusSentenceIndex, point: str, write_number: int):
    """Make a write of ``index`` stop at ``point`` and wait there (a hook on the index object): at the start of write
    ``write_number``, after the server acknowledged the upsert of write ``write_number`` (its version switch), or
    after it acknowledged the delete of the placeholders of the first shrinking write from ``write_number`` on.
    Returns (reached, resume, held): ``reached`` is the progress marker that the write stands there now, ``held``
    the number of the write held."""
    reached, resume, held = threading.Event(), threading.Event(), []
    write, request, writes = index.write, index._request, itertools.count(1)

    def stop_here():
        held.append(number[0])
        reached.set()
        resume.wait(60)

    number = [0]

    def counted_write(*args, **kwargs):
        number[0] = next(writes)
        if point == "before the write" and number[0] == write_number:
            stop_here()
        return write(*args, **kwargs)

    def paused_request(what, *args, **kwargs):
        answer = request(what, *args, **kwargs)
        wanted = "write sentences" if point == "rows upserted" else "delete sentences"
        if point != "before the write" and what == wanted and number[0] >= write_number and not held:
            stop_here()
        return answer

    index.write, index._request = counted_write, paused_request
    return reached, resume, held


@pytest.mark.parametrize(
    "point, write_number", [("before the write", 4), ("placeholders deleted", 7), ("rows upserted", 10)]
)
def test_a_server_killed_during_writes_keeps_every_acknowledged_write(server, point, write_number):
    """One writer re-writes random passages; the server is killed while a write stands at a chosen point (a hook on
    the index leaves the progress marker and holds the write there until the kill landed). Every write the client
    saw acknowledged is stored whole, the interrupted one is whole in its old or new version, or gone."""
    seed = write_number
    rng = random.Random(seed)
    index = MilvusSentenceIndex(server.uri, f"writes_{seed}", DIM, timeout=10)
    reached, resume, held = pause_in_write(index, point, write_number)
    acknowledged, failed, stop = {}, {}, threading.Event()

    def writer():
        for version in itertools.count():
            pid, count = f"p{rng.randrange(12)}", rng.randint(1, 5)
            try:
                index.write(*passage(pid, count, version))
            except MilvusUnavailableError:
                failed[pid] = (count, version)
                return
            acknowledged[pid] = (count, version)
            if stop.is_set():
                return

    thread = threading.Thread(target=writer)
    thread.start()
    assert reached.wait(120), f"the writer never reached {point!r} of write {write_number}"
    assert len(acknowledged) <= held[0] - 1 and not failed  # the kill lands inside the held write
    kill_and_expect_clear_errors(server, index)
    stop.set()
    resume.set()
    thread.join(FAILS_WITHIN)
    assert not thread.is_alive(), "the writer hung on a dead server"
    assert acknowledged, "no write was acknowledged before the kill"
    server.start()
    counts = once_ready(index, lambda: assert_whole(stored_passages(index), index))  # the same object reconnects
    for pid, (count, version) in acknowledged.items():  # the interrupted write may have replaced or removed one
        allowed = [(count, version)] + ([failed[pid], None] if pid in failed else [])
        found = (counts[pid], version_of(index, pid)) if pid in counts else None
        assert found in allowed, f"{pid}: acknowledged {count, version}, stored {found}"
    expected_state = once_ready(index, lambda: {pid: (counts[pid], version_of(index, pid)) for pid in counts})
    assert same(once_ready(index, lambda: served(index)), exact_answer(expected_state))


def version_of(index: MilvusSentenceIndex, pid: str) -> int:
    row = next(index.sentences(ids=[f"{pid}#0"]))
    return int(row.content.rsplit(" ", 1)[1][:-1])


def test_queries_to_a_killed_server_fail_clearly_and_answer_again_after_the_restart(server):
    index = MilvusSentenceIndex(server.uri, "queries", DIM, timeout=10)
    state = {f"q{i}": (1 + i % 4, 0) for i in range(10)}
    for pid, (count, version) in state.items():
        index.write(*passage(pid, count, version))
    expected = exact_answer(state)
    assert same(served(index), expected)
    outcomes, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            started = time.monotonic()
            try:
                outcomes.append(("answer", same(served(index), expected), time.monotonic() - started))
            except MilvusUnavailableError:
                outcomes.append(("error", True, time.monotonic() - started))

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in readers:
        thread.start()
    time.sleep(1.0)
    server.kill()
    time.sleep(3.0)
    stop.set()
    for thread in readers:
        thread.join(FAILS_WITHIN)
    assert not any(thread.is_alive() for thread in readers), "a reader hung on a dead server"
    assert {kind for kind, _, _ in outcomes} == {"answer", "error"}
    assert all(right for _, right, _ in outcomes), "a query answered wrong"
    assert max(seconds for _, _, seconds in outcomes) < FAILS_WITHIN
    server.start()
    assert same(once_ready(index, lambda: served(index)), expected)
    stored = once_ready(index, lambda: assert_whole(stored_passages(index), index))
    assert stored == {pid: count for pid, (count, _) in state.items()}


def test_soak_one_writer_three_readers_and_a_server_kill(server):
    """One writer (new passages, re-writes shorter and longer, retried after the crash) and three readers for
    ``SOAK_SECONDS``, the server killed in the middle and restarted: every answer equals the exact answer for a
    state the store passed through (a passage being re-written may be absent meanwhile), or is a clear error."""
    soak_seconds, rng = 30.0, random.Random(7)
    index = MilvusSentenceIndex(server.uri, "soak", DIM, timeout=10)
    states = [{}]  # states[k]: after k acknowledged writes
    failures, answers, errors = [], [], []
    stop = threading.Event()

    def writer():
        version = 0
        while not stop.is_set():
            pid, count = f"s{rng.randrange(15)}", rng.randint(1, 5)
            while not stop.is_set():
                try:
                    index.write(*passage(pid, count, version))
                    break
                except MilvusUnavailableError:
                    time.sleep(0.5)  # the server is down: write the same passage again once it is back
            else:
                return
            states.append({**states[-1], pid: (count, version)})
            version += 1
            time.sleep(0.05)

    def reader():
        while not stop.is_set():
            before, started = len(states) - 1, time.monotonic()
            try:
                got = served(index)
            except MilvusUnavailableError:
                errors.append(time.monotonic() - started)
                time.sleep(0.2)
                continue
            after = len(states) - 1
            answers.append((before, after, got, time.monotonic() - started))

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(soak_seconds / 3)
    server.kill()
    time.sleep(2.0)
    server.start()
    time.sleep(soak_seconds * 2 / 3)
    stop.set()
    for thread in threads:
        thread.join(FAILS_WITHIN * 2)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    cache = {}
    for before, after, got, _ in answers:
        if not any(same(got, answer) for answer in window_answers(states, before, after + 1, cache)):
            failures.append((before, after, got))
    assert not failures, failures[:2]
    assert errors and max(errors) < FAILS_WITHIN
    assert len(states) > 20 and len(answers) > 50
    final = {pid: count for pid, (count, _) in states[-1].items()}
    assert once_ready(index, lambda: assert_whole(stored_passages(index), index)) == final
    assert same(once_ready(index, lambda: served(index)), exact_answer(states[-1]))


def window_answers(states, first, last, cache):
    """Exact answers for the states first..last and for those states less any passage written in the window (a
    passage being re-written is absent between its delete and its insert)."""
    last = min(last, len(states) - 1)
    written = sorted(
        {pid for k in range(first + 1, last + 1) for pid in states[k] if states[k][pid] != states[k - 1].get(pid)}
    )
    for k in range(first, last + 1):
        for size in range(len(written) + 1):
            for absent in itertools.combinations(written, size):
                key = (k, absent)
                if key not in cache:
                    cache[key] = exact_answer({p: v for p, v in states[k].items() if p not in absent})
                yield cache[key]


def test_timeout_bounds_every_call_to_a_hung_server(server):
    """The server process stopped (SIGSTOP: it holds its connections and answers nothing): a search, a write and
    a read each fail with MilvusUnavailableError within about the timeout (they waited until SIGCONT before), and
    the same index answers again once the server is continued."""
    MilvusSentenceIndex(server.uri, "hung", DIM, timeout=60).write(*passage("before", 2, 0))  # created and loaded
    index = MilvusSentenceIndex(server.uri, "hung", DIM, timeout=2)
    pid = server.server_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        for call in (lambda: index.search(QUERIES, 10), lambda: index.write(*passage("during", 2, 0)), index.count):
            started = time.monotonic()
            with pytest.raises(MilvusUnavailableError, match="did not answer"):
                call()
            assert time.monotonic() - started < 8, "a call to a hung server outlived its timeout"
    finally:
        os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 60
    while True:
        try:
            assert index.count() >= 2
            break
        except MilvusUnavailableError:
            assert time.monotonic() < deadline, "the index did not answer again after SIGCONT"
            time.sleep(1)


def test_waiting_for_the_index_outlasts_a_server_too_busy_to_answer_for_a_while(server):
    """``wait_until_indexed`` after a load: a server that does not answer within the index's timeout for a while (a
    busy server compacting after ~900k passages timed out a 30 s count inside it) is asked again until the wait's
    own timeout; one that stays silent past it fails with MilvusUnavailableError, bounded."""
    MilvusSentenceIndex(server.uri, "patient", DIM, timeout=60).write(*passage("loaded", 3, 0))
    index = MilvusSentenceIndex(server.uri, "patient", DIM, timeout=2)
    pid = server.server_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(MilvusUnavailableError, match="did not answer"):
            index.wait_until_indexed(timeout=3)
        assert time.monotonic() - started < 8, "the wait outlived its timeout"
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(2.0)
    os.kill(pid, signal.SIGSTOP)
    resume = threading.Timer(5.0, os.kill, (pid, signal.SIGCONT))
    resume.start()
    try:
        started = time.monotonic()
        counts = index.wait_until_indexed(timeout=120)
        assert time.monotonic() - started >= 4.5  # it waited through the stop, and did not give up
        assert counts["indexed_rows"] >= 3 and index.count() == 3
    finally:
        resume.join()
        os.kill(pid, signal.SIGCONT)


def rest_query(port: int, question: str):
    """POST /query: (status, JSON body, Retry-After header, seconds taken)."""
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/query",
        data=json.dumps({"query": question}).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read()), None, time.monotonic() - started
    except urllib.error.HTTPError as error:
        body = json.loads(error.read() or b"{}")
        return error.code, body, error.headers.get("Retry-After"), time.monotonic() - started


def test_the_rest_server_answers_503_while_milvus_is_down_or_hung_and_recovers_by_itself(server, tmp_path, tiny_bert):
    """``python -m haystack_dcsr.serve`` over a Milvus store: the server killed with SIGKILL, then restarted on
    the same port, then stopped with SIGSTOP and continued. While it is down or hung every query is a 503 with
    ``Retry-After`` and the engine's message, within the store's timeout and a margin; once it is back the same
    REST process answers the same again, without a restart."""
    from corpus import CORPUS
    from haystack.schema import Document
    from rest_server import Server, search_yaml

    from haystack_dcsr import SentencePreprocessor, load_pipeline

    path = tmp_path / "search.yml"
    milvus = f'{{uri: "{server.uri}", index: rest, embedding_dim: 32, timeout: 5, progress_bar: false}}'
    path.write_text(search_yaml("MilvusDocumentStore", milvus, tiny_bert))
    retriever = load_pipeline(path, pipeline_name="search").get_node("Retriever")
    passages = [Document(content=text, meta={"title": title}) for title, text in CORPUS]
    retriever.document_store.write_documents(SentencePreprocessor(progress_bar=False).process(passages)["documents"])
    retriever.document_store.update_embeddings(retriever)
    question = "When was the Eiffel Tower completed?"
    rest = Server(path).start()
    try:
        status, answer, _, _ = rest_query(rest.port, question)
        assert status == 200 and len(answer["documents"]) == 3

        def outage_then_recovery(begin, end) -> None:
            begin()
            status, body, retry_after, seconds = rest_query(rest.port, question)
            assert (status, retry_after) == (503, "5"), body
            assert "Milvus at" in body["errors"][0] and "did not answer" in body["errors"][0]
            assert seconds < FAILS_WITHIN
            end()  # (a server stopped for longer than its sessions' TTL, 10 s here, may not come back whole)
            deadline = time.monotonic() + READY_WITHIN
            while time.monotonic() < deadline:
                status, body, _, _ = rest_query(rest.port, question)
                if status == 200:
                    break
                assert status == 503, body  # only "not yet" while the server comes back
                time.sleep(1.0)
            assert status == 200 and body["documents"] == answer["documents"]
            assert rest.process.poll() is None  # the same REST process, never restarted

        outage_then_recovery(server.kill, server.start)
        pid = server.server_pid()
        outage_then_recovery(lambda: os.kill(pid, signal.SIGSTOP), lambda: os.kill(pid, signal.SIGCONT))
    finally:
        rest.stop()


SWITCH_STATE = {f"v{i}": (2 + i % 4, 0) for i in range(12)}  # 2-5 sentences each
# a flat softmax and one passage a query: every sentence hit weighs in HasAns, and most passages are never read
SWITCH_TEMPERATURE, SWITCH_TOP_K = 4.0, 1


def switch_served(index):
    return served(index, SWITCH_TEMPERATURE, SWITCH_TOP_K)


def switch_answer(state):
    return exact_answer(state, SWITCH_TEMPERATURE, SWITCH_TOP_K)


def unread_rewrite(before: int, after: int):
    """A passage id, the state with it at ``before`` sentences and the state after its re-write to ``after``, where
    it is in no query's top ``SWITCH_TOP_K`` either side: the driver ranks with its sentences in the softmax but never
    reads it, so only the search's snapshot can keep a half-done version out (the soak's failing case)."""
    for pid in (f"w{i}" for i in range(100)):
        state, new_state = {**SWITCH_STATE, pid: (before, 0)}, {**SWITCH_STATE, pid: (after, 1)}
        if all(pid not in {p for p, _, _ in per} for per in switch_answer(state) + switch_answer(new_state)):
            return pid, state, new_state
    raise AssertionError("no passage id outside every top k")


def hold_between_requests(index: MilvusSentenceIndex, at_hold):
    """Run ``at_hold()`` once, right after the first request of the next write reached the server (the write's
    delete or upsert), before the write makes its next request: what a search sees between a write's requests."""
    request, held = index._request, []

    def held_request(what, *args, **kwargs):
        answer = request(what, *args, **kwargs)
        if what in ("write sentences", "delete sentences") and not held:
            held.append(at_hold())
        return answer

    index._request = held_request
    return held


@pytest.mark.parametrize("change", [(5, 4), (5, 1), (3, 5)], ids=["shrink-by-one", "shrink-to-one", "grow"])
def test_a_version_switch_is_never_seen_half_done(server, change):
    """The replay of the soak's failure (write 207: s8 cut from 5 sentences to 4), deterministic: a search made
    between a re-write's requests, by the writing index (``Session``) and by another client (``Strong``), answers
    exactly the state before the write or the state after it, scores included, never a HasAns computed with some
    of the passage's old sentences in the softmax; after the write the collection holds exactly the new state."""
    before, after = change
    index = MilvusSentenceIndex(server.uri, f"switch_{before}_{after}", DIM, timeout=10)
    pid, state, new_state = unread_rewrite(before, after)
    for name, (count, version) in state.items():
        index.write(*passage(name, count, version))
    other = MilvusSentenceIndex(server.uri, index.collection, DIM, timeout=10, consistency_level="Strong")
    old_answer, new_answer = switch_answer(state), switch_answer(new_state)
    seen = hold_between_requests(index, lambda: (switch_served(index), switch_served(other)))
    index.write(*passage(pid, after, 1))
    assert seen, "the write made no request"
    for got in seen[0]:
        assert same(got, old_answer) or same(got, new_answer), got
    assert assert_whole(stored_passages(index), index) == {pid: count for pid, (count, _) in new_state.items()}
    assert same(switch_served(other), new_answer)


def test_a_shrinking_write_cut_short_between_its_requests_leaves_the_new_version_whole(server):
    """The writer dies after its first request (the server acknowledged it, the client never made the next):
    the passage is one whole version, counts and listings hold no trace of the old one, and searches rank as
    over that state. The rows it left are removed by the next ``wait_until_indexed``."""
    index = MilvusSentenceIndex(server.uri, "switch_cut", DIM, timeout=10)
    state = {**SWITCH_STATE, "s8": (5, 0)}
    for pid, (count, version) in state.items():
        index.write(*passage(pid, count, version))

    def die():
        raise MilvusUnavailableError("the client died between its requests")

    hold_between_requests(index, die)
    with pytest.raises(MilvusUnavailableError, match="died"):
        index.write(*passage("s8", 2, 1))
    reader = MilvusSentenceIndex(server.uri, index.collection, DIM, timeout=10)
    stored = assert_whole(stored_passages(reader), reader)
    assert stored["s8"] in (2, 5)  # one whole version: old (the first request was a delete) or new (an upsert)
    expected = {**state, "s8": (stored["s8"], 0 if stored["s8"] == 5 else 1)}
    assert same(switch_served(reader), switch_answer(expected))
    assert reader.stored_ids([f"s8#{k}" for k in range(5)]) == {f"s8#{k}" for k in range(stored["s8"])}
    reader.wait_until_indexed(timeout=120)
    assert reader.count() == sum(count for count, _ in expected.values())


def test_requests_over_a_thousand_rows_never_split_a_passage(server):
    """A write, a vector update and a delete of 1,203 rows (401 passages of 3 sentences: a passage straddles each
    1,000-row boundary): every request carries whole passages, and the collection serves every passage whole."""
    index = MilvusSentenceIndex(server.uri, "big_requests", DIM, timeout=30)
    built = [passage(f"b{i}", 3, 0) for i in range(401)]
    units = [unit for us, _ in built for unit in us]
    vectors = np.concatenate([v for _, v in built])
    requests = []
    request = index._request

    def recorded(what, method, *args, **kwargs):
        if what in ("write sentences", "write vectors"):
            requests.append([row["id"] for row in args[0]])
        elif what == "delete sentences" and "filter" in kwargs:
            requests.append(json.loads(kwargs["filter"][len("id in ") :]))
        return request(what, method, *args, **kwargs)

    index._request = recorded
    index.write(units, None)
    index.set_vectors(units, list(vectors))
    state = {f"b{i}": (3, 0) for i in range(401)}
    assert same(served(index), exact_answer(state))
    index.delete(ids=[unit.id for unit in units])
    assert len(requests) >= 6 and max(len(r) for r in requests) <= 1_002
    for ids in requests:
        by_passage = {}
        for sid in ids:
            by_passage.setdefault(sid.rpartition("#")[0], set()).add(sid)
        assert all(len(sids) == 3 for sids in by_passage.values()), "a request split a passage"
    assert index.count() == 0
