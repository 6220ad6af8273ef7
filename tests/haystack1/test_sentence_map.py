"""The vector map built from SQL rows as columns (``SentenceRows``): which vectors are hits, which
passage version each names, and the memory a scan of many rows costs (no Python object a row)."""

import tracemalloc

import numpy as np

from haystack_dcsr.core.text.sentence_units import PassageRef, SentencePosition
from haystack_dcsr.haystack1.engine.sentence_map import SentenceMap, SentenceRows


def at(passage_id: str, index: int, count: int, version: str) -> SentencePosition:
    return SentencePosition(passage_id, index, count, 0, 1, "", "", version)


def columns(rows, unplaced=()) -> SentenceRows:
    built = SentenceRows()
    for vector_id, where in rows:
        built.add(vector_id, where)
    return built.finish(unplaced)


def no_heads(passage_ids):
    raise AssertionError(f"no head should be read, asked for {passage_ids}")


def test_current_sentences_map_to_their_passage_and_stale_or_foreign_rows_do_not():
    rows = [
        (0, at("a", 0, 2, "v2")),
        (1, at("a", 1, 2, "v2")),
        (2, at("a", 2, 3, "v1")),  # the tail of an older, longer version of "a": stale
        (3, at("b", 1, 2, "w")),  # "b"'s sentence #0 is not among these rows: read from the store
        (4, None),  # a row that is no DCSR sentence
        (5, at("c", 0, 1, "x")),
        (5, at("c", 0, 1, "x2")),  # the same vector id twice: the last row counts
    ]
    asked = []

    def read_heads(passage_ids):
        asked.extend(passage_ids)
        return {"b": at("b", 0, 2, "w")}

    built = SentenceMap.empty().with_rows(columns(rows, unplaced=[4, 6]), read_heads, ntotal=8)
    assert asked == ["b"]
    assert built.vector_passage.tolist() == [0, 0, -1, 1, -1, 2, -1, -1]
    assert built.vector_sentence[:4].tolist() == [0, 1, 2, 1]
    assert built.passages == [PassageRef("a", 2, "v2"), PassageRef("b", 2, "w"), PassageRef("c", 1, "x2")]
    assert built.keys == {"a": 0, "b": 1, "c": 2} and built.ntotal == 8 and built.mapped == 4
    assert built.sentence_id_at(1) == "a#1" and built.sentence_id_at(2) is None


def test_a_new_version_gets_a_new_key_and_the_old_vectors_stop_being_hits():
    first = SentenceMap.empty().with_rows(
        columns([(0, at("a", 0, 2, "v1")), (1, at("a", 1, 2, "v1")), (2, at("b", 0, 1, "w"))]), no_heads, 3
    )
    # "a" re-written with one sentence: its new vector is appended, its old vectors stay in FAISS
    second = first.with_rows(columns([(3, at("a", 0, 1, "v2"))]), no_heads, 4)
    assert second.vector_passage.tolist() == [-1, -1, 1, 2]
    assert second.passages[2] == PassageRef("a", 1, "v2") and second.keys == {"a": 2, "b": 1}
    assert first.vector_passage.tolist() == [0, 0, 1]  # a map is never changed in place
    # an unchanged passage seen again keeps its key
    third = second.with_rows(columns([(4, at("b", 0, 1, "w"))]), no_heads, 5)
    assert third.vector_passage.tolist() == [-1, -1, 1, 2, 1] and len(third.passages) == 3


def test_mapping_many_rows_holds_a_few_bytes_a_row_not_an_object():
    """200,000 sentence rows of 40,000 passages: reading them and building the map peaks under 150 bytes a
    row, the map's own passage table (one entry a passage) included. A row read as objects (a row tuple,
    its document id and its decoded position) costs more than that before any map exists."""
    n, per_passage = 200_000, 5
    positions = [
        at(f"passage-{i // per_passage:06d}", i % per_passage, per_passage, f"{i // per_passage:016x}")
        for i in range(n)
    ]  # built before measuring: the SQL driver hands over one row at a time, not a list
    tracemalloc.start()
    rows = SentenceRows()
    for vector_id, where in enumerate(positions):
        rows.add(vector_id, where)
    rows.finish()
    built = SentenceMap.empty().with_rows(rows, no_heads, n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert built.mapped == n and len(built.passages) == n // per_passage
    assert np.array_equal(built.vector_sentence, np.arange(n) % per_passage)
    assert peak / n < 150, f"{peak / n:.0f} bytes a row"
