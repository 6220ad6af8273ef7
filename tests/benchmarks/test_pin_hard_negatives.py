import json

import pytest
from benchmark_scripts import load_benchmark

pin = load_benchmark("pin_hard_negatives").pin

CORPUS = [{"title": "T", "text": f"passage {i}", "passage_id": f"p{i}"} for i in range(6)]


def _record(question, negatives):
    return {
        "question": question,
        "answers": ["x"],
        "positive_ctxs": [{"title": "T", "text": "x here", "passage_id": "gold"}],
        "negative_ctxs": [],
        "hard_negative_ctxs": [CORPUS[i] for i in negatives],
    }


@pytest.fixture
def files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in CORPUS))
    records = tmp_path / "train.jsonl"
    records.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [_record("why?", [0, 1]), _record("dd", [2, 3])])
    )
    return records, corpus


def test_pins_only_the_named_question_and_copies_the_rest_byte_for_byte(files):
    records, corpus = files
    records.chmod(0o644)
    before = records.read_text().splitlines(keepends=True)
    assert pin(records, {"dd": ["p5", "p4"]}, corpus, records) == 1  # in place
    after = records.read_text().splitlines(keepends=True)
    assert after[0] == before[0]
    assert records.stat().st_mode & 0o777 == 0o644  # the replaced file keeps its mode
    assert [p["passage_id"] for p in json.loads(after[1])["hard_negative_ctxs"]] == ["p5", "p4"]
    assert json.loads(after[1])["hard_negative_ctxs"][0] == CORPUS[5]
    # pinning what is already there writes the same bytes: the recorded file format is kept
    assert pin(records, {"dd": ["p5", "p4"]}, corpus, records) == 1
    assert records.read_text().splitlines(keepends=True) == after


@pytest.mark.parametrize(
    "pins, message", [({"dd": ["p1", "nope"]}, "passage ids not in .*nope"), ({"who?": ["p1"]}, "questions not in")]
)
def test_bad_pins_name_the_problem_and_leave_the_file_as_it_was(files, pins, message):
    records, corpus = files
    before = records.read_bytes()
    with pytest.raises(ValueError, match=message):
        pin(records, pins, corpus, records)
    assert records.read_bytes() == before
    assert sorted(p.name for p in records.parent.iterdir()) == ["corpus.jsonl", "train.jsonl"]  # no temp left
