"""The core Milvus sentence index on a real Milvus server (``tests/support/milvus_server.py`` starts one on loopback, or
``MILVUS_URI`` names one): it ranks as the exact index does under the one driver, writes passages whole, and
refuses what it cannot honour by name."""

import uuid

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus is not installed (make installs it)")

from milvus_server import shared_uri  # noqa: E402

from haystack_dcsr.core.indexes.milvus_index import MilvusSentenceIndex, _hits  # noqa: E402
from haystack_dcsr.core.ranking.passage_ranking import passage_parts, rank_passages  # noqa: E402
from haystack_dcsr.core.text.sentence_units import SUPPORT, sentence_parts  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
DIM = 384


class Unit:
    def __init__(self, doc_id, content, meta):
        self.id, self.content, self.meta = doc_id, content, meta


def units_of(model, passages):
    """Sentence units of ``{passage_id: (text, meta)}`` split as the model splits them."""
    splitter = model.splitter()
    out = []
    for pid, (text, meta) in passages.items():
        out.extend(Unit(*parts) for parts in sentence_parts(pid, text, meta, splitter.spans(text)))
    return out


def new_index(dim, **kwargs):
    return MilvusSentenceIndex(shared_uri(), f"dcsr_core_{uuid.uuid4().hex[:8]}", dim, **kwargs)


@pytest.fixture(scope="module")
def model():
    from haystack_dcsr import DCSRModel

    return DCSRModel.from_pretrained(MODEL, use_gpu=False)


def written(model, index, passages, new=False):
    """Write passages with their DCSR vectors (each passage encoded whole), as an indexing pipeline does."""
    units = units_of(model, passages)
    groups = {}
    for unit in units:
        groups.setdefault(unit.meta["dcsr"]["passage_id"], []).append(unit.content)
    vectors = model.encode_passages(list(groups.values()))
    index.write(units, vectors, new=new)
    return units


@pytest.mark.parametrize("preset", ["flat", "hnsw"])
def test_the_core_milvus_index_holds_the_index_contract(model, preset):
    """The core Milvus index holds the contract every engine is held to (``index_contract``): the core's ranking
    under the driver, with a passage dropped as well; and serves the passage's text and meta."""
    from corpus import CORPUS
    from index_contract import QUESTION, holds_the_contract

    index = new_index(DIM, preset=preset)
    units = written(model, index, {title: (text, {"title": title}) for title, text in CORPUS})
    assert index.count() == index.count(embedded=True) == len(units)
    holds_the_contract(index, model, lambda: index.delete(ids=["Paris#1"]))
    ranked = rank_passages(index, model.encode_queries([QUESTION]), model.temperature, 3000, 5)[0]
    top = passage_parts(ranked[0])
    assert top.content == dict(CORPUS)[top.id] and top.meta["title"] == top.id and top.meta[SUPPORT]


def test_a_rewrite_replaces_the_whole_passage_and_filters_read_the_meta(model):
    index = new_index(DIM)
    long = "Alpha one is here. Alpha two is here. Alpha three is here. Alpha four is here."
    written(model, index, {"x": (long, {"year": 1889}), "y": ("Beta one is here. Beta two is here.", {"year": 79})})
    assert index.count('passage_id == "x"') == 4
    written(model, index, {"x": ("Alpha one is here.", {"year": 1961})})
    assert sorted(row.id for row in index.sentences('passage_id == "x"')) == ["x#0"]  # no ghost rows
    query = model.encode_queries(["Alpha three"])
    ranked = rank_passages(index, query, model.temperature, 100, 5)[0]
    assert [passage_parts(p).content for p in ranked if p.ref.passage_id == "x"] == ["Alpha one is here."]
    newer = rank_passages(index, query, model.temperature, 100, 5, filters=['meta["year"] > 1000'])[0]
    assert [p.ref.passage_id for p in newer] == ["x"]
    # a passage whose sentences come in two calls (a caller's batches): half-written in between, never served
    units = units_of(model, {"z": (long, {})})
    vectors = model.encode_passages([[u.content for u in units]])
    index.write(units[:2], vectors[:2])
    assert "z" not in [p.ref.passage_id for p in rank_passages(index, query, model.temperature, 100, 5)[0]]
    index.write(units[2:], vectors[2:])
    assert index.count('passage_id == "z"') == 4
    whole = [p for p in rank_passages(index, query, model.temperature, 100, 5)[0] if p.ref.passage_id == "z"]
    assert [passage_parts(p).content for p in whole] == [long]
    index.write(units, vectors)  # written again, the same version: no duplicate rows
    assert index.count() == 1 + 2 + 4


class RequestRecorder:
    """A client whose query, delete, upsert and insert requests are recorded with the expression they name rows by."""

    def __init__(self, client):
        self.client, self.requests = client, []

    def __getattr__(self, name):
        method = getattr(self.client, name)
        if name not in ("query", "delete", "upsert", "insert"):
            return method

        def recorded(*args, **kwargs):
            if kwargs.get("limit") != 1:  # (not the one-row catch-up read after a delete: ``_settle``)
                self.requests.append((name, kwargs.get("filter", "")))
            return method(*args, **kwargs)

        return recorded


def test_a_write_names_what_it_replaces_by_primary_key_only(model):
    """A write costs the same whatever the collection holds: it reads the written passages' heads and deletes
    their surplus sentences by primary key, and upserts; no request scans rows by an expression over
    ``passage_id`` or a JSON field (which made each write slower as the collection grew). Re-writes shorter,
    longer and of the same version leave exactly the new version's rows."""
    index = new_index(DIM)
    long = "Alpha one is here. Alpha two is here. Alpha three is here. Alpha four is here."
    written(model, index, {"x": (long, {}), "y": ("Beta one is here. Beta two is here.", {})})
    recorder = RequestRecorder(index.client)
    index._client = recorder
    written(model, index, {"x": ("Alpha one is here. Alpha two.", {}), "y": (long, {}), "w": ("New one.", {})})
    kinds = [kind for kind, _ in recorder.requests]
    assert kinds.count("upsert") == 1 and kinds.count("delete") == 1
    assert all(expression.startswith("id in [") for kind, expression in recorder.requests if kind != "upsert")
    assert sorted(row.id for row in index.sentences('passage_id == "x"')) == ["x#0", "x#1"]
    assert index.count('passage_id == "y"') == 4 and index.count() == 2 + 4 + 1
    recorder.requests.clear()
    written(model, index, {"w": ("New one.", {})})  # the same version again: nothing to delete
    assert [kind for kind, _ in recorder.requests] == ["query", "upsert"]


def test_a_write_of_new_passages_inserts_and_stored_ids_see_every_sentence(model):
    """A load that skips stored passages (the stores' ``skip`` / ``fail``) asks ``stored_ids`` for every sentence id,
    then writes what is left with ``new=True``: inserts alone, no head read and no delete (an upsert deletes each
    key, which the server checks against every segment). A passage whose head was deleted directly still has
    stored sentences, so ``stored_ids`` names them and the load skips it: nothing is stored twice."""
    index = new_index(DIM)
    written(model, index, {"x": ("Alpha one is here. Alpha two is here. Alpha three.", {}), "y": ("Beta one.", {})})
    index.delete(ids=["x#0"])  # x keeps x#1 and x#2, never served
    assert index.stored_ids(["x#0", "x#1", "x#2", "y#0", "z#0", "z#1"]) == {"x#1", "x#2", "y#0"}
    again = units_of(model, {"x": ("Alpha one is here. Alpha two is here. Alpha three.", {}), "v": ("Nu one.", {})})
    left, stored = index.unstored_passages(again)
    assert [unit.id for unit in left] == ["v#0"] and stored == {"x#1", "x#2"}  # x is skipped, not stored twice
    recorder = RequestRecorder(index.client)
    index._client = recorder
    units = written(model, index, {"z": ("Gamma one is here. Gamma two is here.", {}), "w": ("Delta one.", {})}, True)
    assert len(units) == 3 and [kind for kind, _ in recorder.requests] == ["insert"]
    assert sorted(row.id for row in index.sentences()) == ["w#0", "x#1", "x#2", "y#0", "z#0", "z#1"]
    assert index.count() == 6  # each inserted key once
    query = model.encode_queries(["Where is gamma two?"])
    (ranked,) = rank_passages(index, query, model.temperature, 3000, 2)
    assert ranked[0].ref.passage_id == "z" and [s.id for s in ranked[0].sentences] == ["z#0", "z#1"]


def test_what_milvus_cannot_honour_is_refused_by_name(model):
    with pytest.raises(ValueError, match="metric must be one of IP, COSINE"):
        new_index(8, metric="L2")
    with pytest.raises(ValueError, match="Unknown Milvus preset 'ivf'"):
        new_index(8, preset="ivf")
    index = new_index(8)
    with pytest.raises(ValueError, match="holds 8-dimensional vectors, not 16"):
        MilvusSentenceIndex(shared_uri(), index.collection, 16)
    with pytest.raises(ValueError, match="compares vectors by IP, not COSINE"):
        MilvusSentenceIndex(shared_uri(), index.collection, 8, metric="COSINE")
    with pytest.raises(ValueError, match="dimension 4 but Milvus collection"):
        index.search(np.ones((1, 4), np.float32), 10)


def test_a_full_read_pages_through_every_segment():
    """Rows in several sealed segments: the server's pages in id order may be short while rows remain (it
    stops merging once one segment runs out; 111, 112, 74, 2, 1 rows for pages of 40 over three segments were
    seen), so a listing that stopped at a short page lost rows. Every row is read, each once."""
    import random

    index = new_index(4)
    ids = [f"p{i:03d}" for i in range(300)]
    random.Random(0).shuffle(ids)
    for start in range(0, 300, 100):  # three writes, each flushed into a segment of its own
        chunk = ids[start : start + 100]
        units = [Unit(*parts) for pid in chunk for parts in sentence_parts(pid, "One sentence.", {}, [(0, 13)])]
        index.write(units, np.ones((len(units), 4), dtype=np.float32))
        index.client.flush(index.collection)
    read = [row.id for row in index.sentences(batch=40)]
    assert len(read) == len(set(read)) == 300 and set(read) == {f"{pid}#0" for pid in ids}
    assert index.count() == 300
    index.drop()


@pytest.mark.parametrize("rows", [50, 3000])
def test_after_a_load_every_row_is_under_the_built_index(rows):
    """Rows just written sit in a growing segment, which Milvus scans instead of searching the HNSW graph (so a
    collection measured straight after its load answers at a scan's cost): none of them is indexed yet.
    ``wait_until_indexed`` seals them and returns once the index covers every one; fewer rows than Milvus
    builds a graph for (1,024) are marked indexed all the same, so the wait ends for a small collection too."""
    index = new_index(4, preset="hnsw")
    units = [Unit(*parts) for i in range(rows) for parts in sentence_parts(f"p{i}", "One sentence.", {}, [(0, 13)])]
    index.write(units, np.random.default_rng(0).normal(size=(rows, 4)).astype(np.float32))
    assert index.count() == rows
    assert index.client.describe_index(index.collection, "vector")["indexed_rows"] == 0
    assert index.wait_until_indexed(timeout=120) == {"total_rows": rows, "indexed_rows": rows}
    state = index.client.describe_index(index.collection, "vector")
    assert (state["indexed_rows"], state["pending_index_rows"]) == (rows, 0)
    index.drop()


class CallCounter:
    """The index's client with its ``search`` and ``query`` calls counted (each is one request to the server)."""

    def __init__(self, client):
        self.client, self.calls = client, []

    def __getattr__(self, name):
        method = getattr(self.client, name)
        if name not in ("search", "query"):
            return method

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_hits_read_as_columns_equal_hits_read_row_by_row(model):
    """A search's hits are read from pymilvus's result columns (its per-hit dicts cost ~5 ms for 1,000 hits); the
    plain rows (another pymilvus, or the result materialized) give the same passages, versions, positions and
    scores."""
    index = new_index(model.dim)
    written(
        model, index, {f"p{i}": (f"Passage {i} starts here. It goes on about {i}. And ends.", {}) for i in range(12)}
    )
    query = model.encode_queries(["Where does passage 3 go on?"])
    found = index.client.search(
        index.collection, data=query.tolist(), limit=30, output_fields=["position"], filter="embedded == true"
    )[0]
    columns = _hits(found)
    assert not found.has_materialized  # read from the columns: pymilvus built no per-hit dict
    rows = _hits([dict(row) for row in found])
    assert len(columns.scores) == 30 and list(columns.passages) == list(rows.passages)
    assert [ref.passage_id for ref in columns.passages] == list(
        dict.fromkeys(r["entity"]["position"]["passage_id"] for r in found)
    )
    assert np.array_equal(columns.scores, rows.scores) and np.array_equal(columns.passage_keys, rows.passage_keys)
    assert np.array_equal(columns.sentence_indices, rows.sentence_indices)
    assert all(ref.version and ref.count == 3 for ref in columns.passages)
    index.drop()


def test_a_query_batch_costs_one_search_and_one_read(model):
    """Several queries ranked together: one search request and one read of every winning passage, however
    many queries and passages; on a new connection and after this process deleted, one Strong read before it
    (``Session``: the read catches up with the server once)."""
    from corpus import CORPUS

    writer = new_index(DIM)
    written(model, writer, {title: (text, {}) for title, text in CORPUS})
    index = MilvusSentenceIndex(shared_uri(), writer.collection)  # a reader on a connection of its own
    questions = model.encode_queries(["When was the Eiffel Tower completed?", "Where is Berlin?", "Who wrote it?"])
    counter = CallCounter(index.client)
    index._client = counter
    rank_passages(index, questions, model.temperature, 3000, 5)
    assert counter.calls == ["query", "search", "query"]  # a new connection catches up once (a Strong read)
    counter.calls.clear()
    ranked = rank_passages(index, questions, model.temperature, 3000, 5)
    assert counter.calls == ["search", "query"] and all(len(r) == 5 for r in ranked)
    index.delete(expression=f'passage_id == "{CORPUS[0][0]}"')  # the whole passage: no hit names it
    counter.calls.clear()
    ranked = rank_passages(index, questions, model.temperature, 3000, 5)
    assert CORPUS[0][0] not in {p.ref.passage_id for r in ranked for p in r}
    assert counter.calls == ["query", "search", "query"]  # the delete's one wait (a Strong read), then as before
    counter.calls.clear()
    rank_passages(index, questions, model.temperature, 3000, 5)
    assert counter.calls == ["search", "query"]


def test_a_passage_a_read_leaves_out_is_read_once_more_before_it_is_given_up(model):
    """A Milvus 2.3 server under concurrent writes once left rows out of a read by id that the next read
    returned: a passage whole in every state must not be dropped for that. The first read here leaves one
    row out of the winning passage; the second returns it, and the passage is served."""
    from corpus import CORPUS

    index = new_index(DIM)
    written(model, index, {title: (text, {}) for title, text in CORPUS})
    question = model.encode_queries(["When was the Eiffel Tower completed?"])
    expected = [p.ref for p in rank_passages(index, question, model.temperature, 3000, 5)[0]]
    read_by_id = index.sentences
    reads = []

    def first_read_short(*args, **kwargs):
        rows = list(read_by_id(*args, **kwargs))
        reads.append(len(rows))
        return rows[1:] if len(reads) == 1 else rows

    index.sentences = first_read_short
    ranked = rank_passages(index, question, model.temperature, 3000, 5)[0]
    assert [p.ref for p in ranked] == expected and len(reads) == 2
