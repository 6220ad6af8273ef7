"""MEQ-centred batches (training/schedule.py): pairs together, enough of them, nothing lost."""

import pytest
from conftest import make_records
from test_samples import PASSAGE, record

from haystack_dcsr.training.data import Passage, Record
from haystack_dcsr.training.samples import SampleBuilder, batches
from haystack_dcsr.training.schedule import epoch_batches, meq_centred


def paired_records(n_pairs: int, n_plain: int):
    """``n_pairs`` MEQ pairs (each question is the other's MEQ, as build-meq-augmentation writes them)."""
    other = Passage("o", "Intro here. The answer is Quux. Closing words.", "o")
    records = []
    for i in range(n_pairs):
        q = dict(question=f"who is {i}?", answers=["Zorbo"], positives=[PASSAGE])
        q_prime = dict(question=f"who is not {i}?", answers=["Quux"], positives=[other])
        records.append(record(**q, negative_questions=[Record(**q_prime)]))
        records.append(record(**q_prime, negative_questions=[Record(**q)]))
    return records + [record(question=f"plain {i}?") for i in range(n_plain)]


def test_every_batch_holds_its_pairs_whole_and_the_other_questions_pass_once():
    records = paired_records(n_pairs=6, n_plain=60)
    scheduled = meq_centred(SampleBuilder(seed=1), records, epoch=0, batch_size=8, meq_per_batch=2)
    assert len(scheduled) == 60 // 4 and all(len(batch) == 8 for batch in scheduled)
    plain = [s.question for batch in scheduled for s in batch if s.question.startswith("plain")]
    assert sorted(plain) == sorted(f"plain {i}?" for i in range(60))  # each once
    for batch in scheduled:
        asked = [s.question for s in batch]
        carriers = [s for s in batch if s.meq is not None]
        assert len(carriers) == 2 and len(set(asked)) == 8  # two pairs, no question twice
        assert all(s.meq in asked for s in carriers)  # q and its MEQ in the same batch


def test_meq_groups_are_used_without_repeats_before_a_fresh_pass():
    records = paired_records(n_pairs=5, n_plain=80)
    scheduled = meq_centred(SampleBuilder(seed=2), records, epoch=0, batch_size=6, meq_per_batch=1)
    carriers = [s.question for batch in scheduled for s in batch if s.meq is not None]
    assert len(carriers) == 20  # 80 others / 4 a batch = 20 batches, one MEQ group each
    # 10 MEQ records: carriers 1-10 and 11-20 are two passes, each using every record once, in new orders
    every = {r.question for r in records if r.negative_questions}
    assert set(carriers[:10]) == set(carriers[10:]) == every and carriers[:10] != carriers[10:]


def test_schedule_is_seeded_and_the_default_is_the_plain_shuffle():
    records = paired_records(n_pairs=4, n_plain=40)
    first = meq_centred(SampleBuilder(seed=5), records, 0, 8, 2)
    assert first == meq_centred(SampleBuilder(seed=5), records, 0, 8, 2)
    assert first != meq_centred(SampleBuilder(seed=5), records, 1, 8, 2)
    plain = make_records(16)
    assert epoch_batches(SampleBuilder(seed=5), plain, 0, 4) == batches(SampleBuilder(seed=5).epoch(plain, 0), 4)


def test_meq_centred_batches_say_what_is_wrong():
    with pytest.raises(ValueError, match="leave no room"):
        meq_centred(SampleBuilder(), paired_records(2, 10), 0, batch_size=4, meq_per_batch=2)
    with pytest.raises(ValueError, match="needs training records with MEQs"):
        meq_centred(SampleBuilder(), make_records(12), 0, batch_size=8, meq_per_batch=2)


def test_trainer_trains_on_meq_centred_batches_and_its_qq_off_control_sees_the_same_ones(tmp_path):
    from conftest import make_tiny_bert
    from test_engine import config

    from haystack_dcsr.training.engine import Trainer

    bert = make_tiny_bert(tmp_path / "bert", max_length=128)
    records = paired_records(n_pairs=4, n_plain=24)
    runs = {}
    for qq_form in ("infonce", None):
        settings = dict(batch_size=8, meq_per_batch=2, max_steps=3, qq_form=qq_form)
        trainer = Trainer(config(bert, tmp_path / str(qq_form), **settings), records=records)
        runs[qq_form] = trainer.train(resume=False)
        assert trainer.steps_per_epoch == 24 // 4
    assert [h["meq_questions"] for h in runs["infonce"]] == [h["meq_questions"] for h in runs[None]] == [2.0] * 3
    assert all("qq" in h for h in runs["infonce"]) and not any("qq" in h for h in runs[None])
    with pytest.raises(ValueError, match="meq_per_batch and meq_oversample"):
        config(bert, tmp_path, meq_per_batch=1, meq_oversample=3)


def test_a_contrast_stage_trains_on_the_meq_records_alone_and_says_when_there_are_none(tmp_path):
    from conftest import make_tiny_bert
    from test_engine import config

    from haystack_dcsr.training.engine import Trainer

    bert = make_tiny_bert(tmp_path / "bert", max_length=128)
    records = paired_records(n_pairs=4, n_plain=24)
    trainer = Trainer(config(bert, tmp_path / "stage", batch_size=8, meq_records_only=True), records=records)
    assert [r.question for r in trainer.records] == [r.question for r in records[:8]]
    asked = [s.question for batch in trainer.epoch_batches(0) for s in batch]
    assert trainer.steps_per_epoch == 2 and len(asked) == 16  # each of the 8 questions with its MEQ beside it
    assert not any(q.startswith("plain") for q in asked)
    plain = make_records(12)
    with pytest.raises(ValueError, match="none of the 12 training records carries an MEQ"):
        Trainer(config(bert, tmp_path / "none", batch_size=8, meq_records_only=True), records=plain)
    assert len(plain) == 12  # the caller's list is left whole
    with pytest.raises(ValueError, match="meq_records_only leaves no other questions"):
        config(bert, tmp_path, batch_size=8, meq_per_batch=2, meq_records_only=True)
