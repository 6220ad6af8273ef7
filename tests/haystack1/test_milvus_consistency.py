"""What the default consistency (``Session``) guarantees, on a Milvus server with Milvus's own configuration
(200 ms time tick; the other Milvus tests shorten it): a process reads its own writes and deletes at once, a
process that has not written does not wait for the time tick, and another process's write is seen within about
a tick. ``Eventually`` is the control: the same read-your-writes check catches it missing a write."""

import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")

from milvus_server import MilvusServer  # noqa: E402

from haystack_dcsr.core.indexes.milvus_index import MilvusSentenceIndex  # noqa: E402
from haystack_dcsr.core.ranking.passage_ranking import rank_passages  # noqa: E402
from haystack_dcsr.core.text.sentence_units import sentence_parts  # noqa: E402

DIM = 8
ROUNDS = 12


class Unit:
    def __init__(self, doc_id, content, meta):
        self.id, self.content, self.meta = doc_id, content, meta


@pytest.fixture(scope="module")
def default_server(tmp_path_factory):
    server = MilvusServer(tmp_path_factory.mktemp("milvus-default"), config={}).start()
    yield server
    server.stop()


def passage(passage_id, text):
    """A passage's sentence units (sentences end at '. ') and one vector per sentence pointing at axis 0."""
    spans, start = [], 0
    for piece in text.split(". "):
        spans.append((start, start + len(piece)))
        start += len(piece) + 2
    units = [Unit(*parts) for parts in sentence_parts(passage_id, text, {}, spans)]
    vectors = np.tile(np.eye(DIM, dtype=np.float32)[0], (len(units), 1))
    return units, vectors


def served(index, query):
    ranked = rank_passages(index, query, 1.0, 100, 5)[0]
    return {p.ref.passage_id: " ".join(s.content for s in p.sentences) for p in ranked}


def rounds_that_missed_a_write(index):
    """Re-write one passage ROUNDS times, each time searching, reading, counting and listing at once after the
    write returned; the rounds where any of them did not show the write (then a delete) just made."""
    query = np.eye(DIM, dtype=np.float32)[:1]
    missed = []
    for n in range(ROUNDS):
        text = f"Version {n} here. It has {n % 3 + 2} sentences" + ". More" * (n % 3)
        index.write(*passage("p", text))
        listed = {row.content for row in index.sentences()}
        if served(index, query).get("p") != " ".join(u.content for u in passage("p", text)[0]):
            missed.append(n)
        elif index.count() != n % 3 + 2 or f"Version {n} here" not in listed:
            missed.append(n)
    index.delete(ids=[f"p#{i}" for i in range(4)])
    if served(index, query) or index.count():
        missed.append("delete")
    return missed


def test_the_default_level_reads_its_own_writes_on_a_default_server(default_server):
    index = MilvusSentenceIndex(default_server.uri, f"rw_{uuid.uuid4().hex[:8]}", DIM)
    assert index.consistency_level == "Session"
    assert rounds_that_missed_a_write(index) == []


def test_the_check_catches_a_level_that_does_not_wait_for_writes(default_server):
    index = MilvusSentenceIndex(default_server.uri, f"ev_{uuid.uuid4().hex[:8]}", DIM, consistency_level="Eventually")
    assert rounds_that_missed_a_write(index)  # the server applies a write within a tick: reads at once miss it


def test_a_reader_does_not_wait_for_the_time_tick_and_sees_other_writers_within_one(default_server):
    name = f"rd_{uuid.uuid4().hex[:8]}"
    index = MilvusSentenceIndex(default_server.uri, name, DIM)
    strong = MilvusSentenceIndex(default_server.uri, name, DIM, consistency_level="Strong")
    query = np.eye(DIM, dtype=np.float32)[:1]
    # another process writes a passage (this one never writes to the collection)
    writer = (
        "import sys, numpy as np; sys.path[:0] = ['tests/support', 'tests/haystack1'];"
        "from test_milvus_consistency import passage;"
        "from haystack_dcsr.core.indexes.milvus_index import MilvusSentenceIndex;"
        f"index = MilvusSentenceIndex({default_server.uri!r}, {name!r}, {DIM});"
        "index.write(*passage('other', 'Written elsewhere. Seen here'))"
    )
    subprocess.run([sys.executable, "-c", writer], check=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    deadline, seen_after = time.monotonic() + 5, None
    started = time.monotonic()
    while time.monotonic() < deadline:
        if "other" in served(index, query):
            seen_after = time.monotonic() - started
            break
        time.sleep(0.02)
    assert seen_after is not None and seen_after < 2.0, seen_after
    timings = {"Session": [], "Strong": []}
    for _ in range(8):  # taking turns, so that the machine's load falls on both alike
        for level, reader in (("Session", index), ("Strong", strong)):
            began = time.perf_counter()
            assert "other" in served(reader, query)
            timings[level].append(time.perf_counter() - began)
    # Strong waits for the next time tick (up to 200 ms) on every search and read; Session waits for nothing
    assert statistics.median(timings["Session"]) < statistics.median(timings["Strong"]) / 2, timings


def test_the_wait_after_a_load_returns_once_the_query_node_serves_the_sealed_segments(default_server):
    """A sealed, indexed segment is not yet a served one: the query node keeps answering from the growing
    segment (searched by brute force) until its coordinator next updates the collection's target, 10-15 s after
    the seal with Milvus's defaults. ``wait_until_indexed`` returns only once every sealed segment holding rows is
    loaded, so a collection is served, and measured, as it will stay."""
    index = MilvusSentenceIndex(default_server.uri, f"load_{uuid.uuid4().hex[:8]}", DIM)
    for n in range(3):
        index.write(*passage(f"p{n}", "One sentence here. And another one"))
    assert served(index, np.eye(DIM, dtype=np.float32)[:1])  # the collection is loaded and answering
    index.wait_until_indexed(timeout=120)
    sealed = {
        s.segment_id for s in index.client.list_persistent_segments(index.collection) if str(s.state) == "Flushed"
    }
    loaded = {s.segment_id for s in index.client.list_loaded_segments(index.collection) if str(s.state) == "Sealed"}
    assert sealed and sealed <= loaded, (sealed, loaded)
    index.drop()
