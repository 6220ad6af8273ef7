import random

import pytest
from conftest import make_records

from haystack_dcsr.training.data import Passage, Record
from haystack_dcsr.training.samples import SampleBuilder, batches, make_batch

PASSAGE = Passage(
    title="t",
    text="Intro sentence here. Filler one is here. The answer is Zorbo. After it. Far away sentence.",
    passage_id="p",
)
BM25 = Passage(title="n", text="Negative one. Negative two. Negative three.", passage_id="n")


def record(**kwargs):
    base = dict(question="what is it?", answers=["Zorbo"], positives=[PASSAGE], hard_negatives=[BM25])
    base.update(kwargs)
    return Record(**base)


def test_positive_is_the_answer_sentence_and_in_passage_negative_skips_neighbours():
    builder = SampleBuilder()
    assert builder.answer_sentences(PASSAGE, ["zorbo"]) == [2]
    seen = set()
    for seed in range(30):
        sample = builder.sample(record(), random.Random(seed))
        assert sample.positive.sentence == 2 and sample.positive.passage.key == "p"
        in_passage, bm25 = sample.negatives
        assert in_passage.passage.key == "p" and in_passage.sentence in (0, 4)  # 1 and 3 are adjacent
        assert bm25.passage.key == "n" and bm25.sentence in (0, 1, 2)
        seen.add(in_passage.sentence)
    assert seen == {0, 4}


def test_in_passage_fallback_is_a_bm25_sentence():
    short = Passage(title="s", text="Only Zorbo here. Next to it.", passage_id="s")
    sample = SampleBuilder().sample(record(positives=[short]), random.Random(0))
    assert [n.passage.key for n in sample.negatives] == ["n", "n"]


def test_recipes_and_dpr_mode():
    rng = random.Random(0)
    assert [n.passage.key for n in SampleBuilder(negatives="+2 BM25 random").sample(record(), rng).negatives] == [
        "n",
        "n",
    ]
    assert len(SampleBuilder(negatives="+1 BM25 random").sample(record(), rng).negatives) == 1
    dpr = SampleBuilder(level="passage", negatives="dpr").sample(record(), rng)
    assert dpr.positive.sentence is None and [n.key for n in dpr.negatives] == ["n"]
    with pytest.raises(ValueError, match="negatives must be one of"):
        SampleBuilder(negatives="+3 magic")
    with pytest.raises(ValueError, match="in-passage negatives need level='sentence'"):
        SampleBuilder(level="passage", negatives="+1 in-passage +1 BM25 random")


def test_answers_straddling_sentences_are_counted_and_skipped():
    builder = SampleBuilder()
    groups = builder.epoch([record(answers=["here. The answer"]), record()], epoch=0)
    assert len(groups) == 1 and builder.skipped_no_answer_sentence == 1


def test_duplicate_positives_are_masked_not_pushed_away():
    a, b = record(question="q1"), record(question="q2")  # same passage, same answer sentence
    builder = SampleBuilder(negatives="+1 BM25 random")
    samples = [builder.sample(a, random.Random(0)), builder.sample(b, random.Random(1))]
    batch = make_batch(samples)
    assert batch.positives.tolist() == [0, 0]  # one shared candidate, encoded once
    assert not batch.mask.any()  # a question's own positive is never masked
    other = Passage(title="x", text="Zorbo again. Nothing else.", passage_id="x")
    c = builder.sample(record(question="q3", positives=[other]), random.Random(2))
    c = type(c)(c.question, c.positive, c.negatives, c.positive_keys | {"p#2"})  # q3 also accepts p#2
    batch = make_batch([samples[0], c])
    assert batch.mask[1, batch.positives[0]] and not batch.mask[0].any()
    assert not make_batch([samples[0], c], mask_false_negatives=False).mask.any()


def test_epochs_resample_and_keep_meqs_with_their_question():
    meq = Record(
        question="what is it not?", answers=["Other"], positives=[Passage("m", "It is Other here. Filler.", "m")]
    )
    records = [
        record(question=f"q{i}", positive_questions=[f"para {i}", f"alt {i}"], negative_questions=[meq])
        for i in range(6)
    ]
    builder = SampleBuilder()
    e0, e1 = builder.epoch(records, 0), builder.epoch(records, 1)
    assert all(len(g) == 2 and g[1].question == "what is it not?" for g in e0)
    assert all(g[0].meq == "what is it not?" and g[0].paraphrase.split()[1] == g[0].question[1:] for g in e0)
    assert [(g[0].question, g[0].paraphrase) for g in e0] != [(g[0].question, g[0].paraphrase) for g in e1]
    assert builder.epoch(records, 0)[0][0].paraphrase == e0[0][0].paraphrase  # deterministic
    packed = batches(e0, batch_size=4)
    assert [len(b) for b in packed] == [4, 4, 4]


def test_synthetic_records_give_one_sample_each():
    groups = SampleBuilder().epoch(make_records(12), 0)
    assert len(groups) == 12


def test_meq_oversample_repeats_only_records_with_an_meq_with_fresh_draws():
    meqs = [
        Record(
            question=f"what is it not {i}?",
            answers=["Other"],
            positives=[Passage("m", "It is Other here. Filler.", "m")],
        )
        for i in range(4)
    ]
    with_meq = record(question="q-meq", positive_questions=["para a", "para b", "para c"], negative_questions=meqs)
    plain = record(question="q-plain")
    groups = SampleBuilder(meq_oversample=5, seed=3).epoch([with_meq, plain], 0)
    firsts = [g[0] for g in groups]
    assert sorted(s.question for s in firsts).count("q-meq") == 5
    assert [s.question for s in firsts].count("q-plain") == 1
    assert len({(s.paraphrase, s.meq) for s in firsts if s.question == "q-meq"}) > 1  # re-drawn per copy
    assert SampleBuilder(seed=3).epoch([with_meq, plain], 0) == SampleBuilder(meq_oversample=1, seed=3).epoch(
        [with_meq, plain], 0
    )
    with pytest.raises(ValueError, match="meq_oversample"):
        SampleBuilder(meq_oversample=0)
