import gzip
import json

import pytest

from haystack_dcsr.training.cli import main
from haystack_dcsr.training.data import (
    DataError,
    Passage,
    Record,
    answerless_negatives,
    load_records,
    squad_to_records,
    write_records,
)


def write(path, records, jsonl=True):
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        path.write_text(json.dumps(records))
    return path


GOOD = {
    "question": "who?",
    "answers": ["Ada"],
    "positive_ctxs": [{"title": "t", "text": "Ada wrote it."}],
    "hard_negative_ctxs": [{"title": "n", "text": "Bob did not.", "passage_id": "n1"}],
    "positive_questions": ["who did?"],
    "hard_negative_questions": [
        {"question": "who not?", "answers": ["Bob"], "positive_ctxs": [{"text": "Bob did not."}]}
    ],
}


def test_records_load_from_json_and_jsonl_with_meq_fields(tmp_path):
    for jsonl in (True, False):
        report = load_records(write(tmp_path / ("a.jsonl" if jsonl else "a.json"), [GOOD], jsonl))
        (record,) = report.records
        assert record.positive_questions == ["who did?"]
        assert record.negative_questions[0].question == "who not?" and record.negative_questions[0].answers == ["Bob"]
        assert record.hard_negatives[0].key == "n1"


def test_malformed_records_name_the_file_and_record(tmp_path):
    bad = dict(GOOD, positive_ctxs=[])
    with pytest.raises(DataError, match=r"b.jsonl: line 2: 'positive_ctxs' must hold at least one passage"):
        load_records(write(tmp_path / "b.jsonl", [GOOD, bad]))
    # blank lines count: the error names the line an editor shows
    (tmp_path / "gaps.jsonl").write_text(
        "\n".join([json.dumps(GOOD), "", "", json.dumps(GOOD), "", "", json.dumps(bad)])
    )
    with pytest.raises(DataError, match=r"gaps.jsonl: line 7: 'positive_ctxs' must hold at least one passage"):
        load_records(tmp_path / "gaps.jsonl")
    with pytest.raises(DataError, match=r"b.json: record 1 of the list: 'positive_ctxs'"):
        load_records(write(tmp_path / "b.json", [GOOD, bad], False))
    with pytest.raises(DataError, match=r"line 1: negative_questions\[0\]: 'question' must be a non-empty string"):
        load_records(write(tmp_path / "c.jsonl", [dict(GOOD, negative_questions=[{"answers": []}])]))
    (tmp_path / "d.jsonl").write_text('{"question": "x"\n')
    with pytest.raises(DataError, match="d.jsonl: line 1 is not valid JSON"):
        load_records(tmp_path / "d.jsonl")
    with pytest.raises(DataError, match="no such file"):
        load_records(tmp_path / "missing.jsonl")


def test_records_whose_positive_lacks_the_answer_are_set_aside(tmp_path, caplog):
    stray = dict(GOOD, answers=["Zed"])
    report = load_records(write(tmp_path / "e.jsonl", [GOOD, stray, GOOD]))
    assert len(report.records) == 2 and report.without_answer_in_positive == [1]
    assert "1 set aside because no positive passage contains an answer" in caplog.text


def test_squad_conversion_round_trips(tmp_path):
    squad = {
        "version": "1.1",
        "data": [
            {
                "title": "T",
                "paragraphs": [
                    {
                        "context": "Ada Lovelace wrote the first program.",
                        "qas": [
                            {
                                "id": "1",
                                "question": "Who wrote the first program?",
                                "answers": [
                                    {"text": "Ada Lovelace", "answer_start": 0},
                                    {"text": "Ada Lovelace", "answer_start": 0},
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "s.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(squad, handle)
    records, passages = squad_to_records(path, id_prefix="dev-")
    assert records[0].answers == ["Ada Lovelace"] and passages[0].passage_id == "dev-0-0"
    write_records(records, tmp_path / "out.jsonl")
    assert load_records(tmp_path / "out.jsonl").records[0].question == "Who wrote the first program?"
    main(["convert-squad", str(path), str(tmp_path / "cli.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl")])
    assert json.loads((tmp_path / "corpus.jsonl").read_text())["passage_id"] == "0-0"


def test_hard_negatives_skip_positives_and_answer_passages_in_rank_order():
    gold = Passage("A", "Ada Lovelace wrote it.", "gold")
    ranked = [
        gold,
        Passage("B", "Written by ada  LOVELACE, they say.", "b"),  # the answer, normalised
        Passage("C", "Babbage built the engine.", "c"),
        Passage("D", "Lovelace alone is not the answer.", "d"),
        Passage("E", "Another passage.", "e"),
    ]
    record = Record(question="who wrote it?", answers=["Ada Lovelace"], positives=[gold])
    cache = {}
    assert [p.key for p in answerless_negatives(record, ranked, keep=2, normalized=cache)] == ["c", "d"]
    assert set(cache) == {"gold", "b", "c", "d"}  # stops reading once it has enough
    assert [p.key for p in answerless_negatives(record, ranked, keep=10, normalized=cache)] == ["c", "d", "e"]


def test_every_dcsr_train_argument_says_what_it_is():
    import argparse

    from haystack_dcsr.training.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()
    ]
    assert not silent, silent
    assert {choice.dest for choice in commands._choices_actions} >= {"mine-bm25", "train", "publish"}
