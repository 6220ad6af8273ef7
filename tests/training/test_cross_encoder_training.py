"""``train-cross-encoder``: MEQ golds as the first negatives both ways, answer-bearing negatives dropped,
batches with their MEQ share, a run that learns and writes a directory both rerankers load, the CLI."""

import json
import random

import pytest
from conftest import make_records, with_meqs
from tiny_models import MINILM

from haystack_dcsr.core.model.cross_encoder import CrossEncoder
from haystack_dcsr.training.cli import main as cli
from haystack_dcsr.training.config import CrossEncoderConfig
from haystack_dcsr.training.cross_encoder import batches, record_groups, train_cross_encoder
from haystack_dcsr.training.data import DataError, Passage, write_records


def test_the_meq_gold_is_the_first_negative_both_ways_and_answers_are_never_negatives():
    records = with_meqs(make_records(8))
    leak = Passage(title="x", text=f"Some say {records[0].answers[0]} is lovely.", passage_id="leak")
    records[0].hard_negatives = [leak] + records[0].hard_negatives
    plain, meq = record_groups(records, negatives=3, rng=random.Random(0))
    by_question = {g.question: g for g in plain + meq}
    q, edited = by_question[records[0].question], by_question[records[1].question]
    assert q.negatives[0] == records[1].positives[0].text and edited.negatives[0] == records[0].positives[0].text
    assert leak.text not in q.negatives and len(q.negatives) == 3
    assert all(records[0].answers[0] not in text for text in q.negatives)
    # records 0, 2, 4, 6 carry an MEQ (their MEQs 1, 3, 5, 7 are MEQ groups too, with the other gold
    # first); 1, 3, 5, 7 are also questions of their own, plain groups with BM25 negatives only
    assert len(meq) == 8 and [g.question for g in plain] == [records[i].question for i in (1, 3, 5, 7)]


def test_batches_hold_their_meq_share_and_pass_the_plain_questions_once():
    records = with_meqs(make_records(24), every=6)  # 4 records with an MEQ: 8 MEQ groups, 20 plain
    partner = {}
    for record in records:
        for edited in record.negative_questions:
            partner[record.question], partner[edited.question] = edited.positives[0].text, record.positives[0].text
    config = CrossEncoderConfig(questions_per_batch=4, meq_share=0.5, negatives=2, seed=1)
    stream = batches(records, config)
    first_pass = [next(stream) for _ in range(10)]  # 20 plain groups, two a batch
    assert all(g.negatives[0] == partner[g.question] for b in first_pass for g in b[2:])
    plain = [g.question for b in first_pass for g in b[:2]]
    assert len(plain) == len(set(plain)) == 20 and not set(plain) & {
        r.question for r in records if r.negative_questions
    }
    with pytest.raises(DataError, match="no MEQ groups"):
        next(batches(make_records(8), config))


def test_a_short_run_learns_and_writes_a_directory_both_rerankers_load(tmp_path):
    records = with_meqs(make_records(24), every=3)
    write_records(records, tmp_path / "train.jsonl")
    config = CrossEncoderConfig(
        train_file=str(tmp_path / "train.jsonl"),
        output_dir=str(tmp_path / "run"),
        model=MINILM,  # a random tiny BERT stays at chance: matching across the pair needs pretrained attention
        max_steps=40,
        questions_per_batch=6,
        negatives=2,
        max_length=96,
        log_every=5,
        save_every=20,
    )
    last = train_cross_encoder(config, device="cpu")
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in log] == list(range(5, 41, 5))
    assert log[-1]["loss"] < 0.5 * log[0]["loss"]
    scorer = CrossEncoder(str(last), device="cpu")
    assert scorer.max_length == 96  # the training length travels with the tokenizer
    hits = 0
    for record in records:
        negatives = [p.text for p in record.hard_negatives]
        logits = scorer.score_pairs([(record.question, t) for t in [record.positives[0].text, *negatives]])
        hits += int(logits.argmax() == 0)
    assert hits >= 0.8 * len(records)
    saved = CrossEncoderConfig.from_yaml(tmp_path / "run" / "cross_encoder_config.yaml")
    assert saved == config


def test_bad_data_fails_before_an_earlier_run_is_touched(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").write_text("earlier run\n")
    write_records(make_records(8), tmp_path / "plain.jsonl")  # no MEQs, but meq_share 0.5 asks for them
    config = CrossEncoderConfig(train_file=str(tmp_path / "plain.jsonl"), output_dir=str(run), model=MINILM)
    with pytest.raises(DataError, match=r"plain.jsonl: no MEQ groups .* for meq_share=0.5: set meq_share=0"):
        train_cross_encoder(config, device="cpu")
    with pytest.raises(DataError, match="no such file"):
        train_cross_encoder(CrossEncoderConfig(train_file=str(tmp_path / "nope.jsonl"), output_dir=str(run)))
    assert sorted(p.name for p in run.iterdir()) == ["log.jsonl"] and (run / "log.jsonl").read_text() == "earlier run\n"


def test_cli_lists_the_fields_and_names_an_unknown_one(capsys):
    with pytest.raises(SystemExit):
        cli(["train-cross-encoder", "--help"])
    text = capsys.readouterr().out
    for field in CrossEncoderConfig.__dataclass_fields__.values():
        assert f"  {field.name} (" in text and field.metadata["help"] in text, field.name
    with pytest.raises(SystemExit) as exit_info:
        cli(["train-cross-encoder", "--set", "meq_shar=0.5"])
    assert exit_info.value.code == 2
    assert "Unknown config keys: meq_shar (see python -m haystack_dcsr.training train-cross-encoder --help)" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        cli(["train-cross-encoder", "--set", "meq_share=1.5"])
    assert "meq_share must be within [0, 1], got 1.5" in capsys.readouterr().err
