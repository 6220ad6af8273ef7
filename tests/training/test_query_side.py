"""Query-side tuning (frozen_passages): the passage tower stays fixed and every training sentence is a candidate."""

import random

import pytest
import torch
from conftest import make_records, make_tiny_bert
from test_engine import config  # the same small CPU settings

from haystack_dcsr.core.model.dcsr_model import DCSRModel
from haystack_dcsr.training.config import TrainConfig
from haystack_dcsr.training.data import Passage
from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.losses.qp import QPLoss
from haystack_dcsr.training.samples import SampleBuilder
from haystack_dcsr.training.sentence_index import FrozenSentenceIndex, training_passages


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("query_side_bert"), max_length=128)


def weights(module):
    return {k: v.clone() for k, v in module.state_dict().items()}


def test_query_side_tuning_trains_the_query_tower_alone_against_every_training_sentence(bert, tmp_path):
    records = make_records(24)
    trainer = Trainer(
        config(bert, tmp_path, max_steps=60, lr=3e-3, warmup_steps=5, pooling="mean", frozen_passages=True),
        records=records,
        dev_records=records,
    )
    passages = training_passages(records)
    assert len(passages) == 24
    assert len(trainer.index) == sum(len(trainer.builder.sentences(p)) for p in passages) == 72
    frozen, query = weights(trainer.passage.model), weights(trainer.query.model)
    before = trainer.validate()
    history = trainer.train(resume=False)
    after = trainer.validate()

    assert sum(h["loss"] for h in history[-10:]) < 0.7 * sum(h["loss"] for h in history[:10])
    assert after["accuracy"] > before["accuracy"] + 0.3
    assert all(torch.equal(frozen[k], v) for k, v in trainer.passage.model.state_dict().items())
    assert any(not torch.equal(query[k], v) for k, v in trainer.query.model.state_dict().items())
    # what it saves serves: the passage tower is the one it started from, byte for byte in its vectors
    saved = DCSRModel.from_pretrained(str(tmp_path / "run" / "last"))
    units = [trainer.builder.sentences(p) for p in passages]
    assert torch.allclose(torch.from_numpy(saved.passage_tower.encode(units)), trainer.index.vectors, atol=1e-5)


def test_targets_mask_the_other_answer_sentences_and_answer_bearing_rows_but_never_the_positive(bert, tmp_path):
    records = make_records(8)
    record = records[0]
    city = record.answers[0]
    elsewhere = Passage(title="elsewhere", text=f"Many people visit {city}. The weather is mild.", passage_id="x")
    record.hard_negatives.append(elsewhere)
    # the gold passage holds the answer twice: its second answer sentence is masked, not pushed away
    record.positives[0] = Passage(
        title=record.positives[0].title,
        text=record.positives[0].text + f" {city} is also its largest city.",
        passage_id=record.positives[0].passage_id,
    )
    builder = SampleBuilder(seed=0)
    tower = Trainer(config(bert, tmp_path, pooling="mean", frozen_passages=True), records=records).passage
    index = FrozenSentenceIndex(training_passages(records), builder, tower, mask_top=10_000)
    sample = builder.sample(record, random.Random(0))
    scores = torch.randn(1, index.vectors.shape[1]) @ index.vectors.T
    positives, mask = index.targets([sample], scores)

    (positive,) = torch.nonzero(positives[0]).flatten().tolist()
    assert index.keys[positive] == sample.positive.key and not mask[0, positive]
    answer_rows = {index.row[k] for k in sample.positive_keys} - {positive}
    assert len(answer_rows) == 1 and all(mask[0, r] for r in answer_rows)
    assert mask[0, index.row["x#0"]] and not mask[0, index.row["x#1"]]  # the answer-bearing row elsewhere
    assert int(mask.sum()) == 2

    none_checked = FrozenSentenceIndex(training_passages(records), builder, tower, mask_top=0)
    _, mask = none_checked.targets([sample], scores)
    assert not mask[0, none_checked.row["x#0"]] and int(mask.sum()) == 1

    # the passage target: every row of the gold passage is a positive, none of them masked
    by_passage = FrozenSentenceIndex(training_passages(records), builder, tower, mask_top=10_000, target="passage")
    positives, mask = by_passage.targets([sample], scores)
    gold = by_passage.rows_of[record.positives[0].key]
    assert torch.nonzero(positives[0]).flatten().tolist() == list(gold) and len(gold) == 4
    assert torch.nonzero(mask[0]).flatten().tolist() == [by_passage.row["x#0"]]


def test_the_marginal_loss_is_cross_entropy_for_one_positive_and_sums_the_mass_of_several():
    qp = QPLoss(temperature=0.5)
    questions, candidates = torch.randn(3, 8), torch.randn(10, 8)
    single = torch.zeros(3, 10, dtype=torch.bool)
    single[torch.arange(3), torch.tensor([1, 4, 7])] = True
    mask = torch.zeros(3, 10, dtype=torch.bool)
    mask[0, 9] = True
    expected = qp(questions, candidates, torch.tensor([1, 4, 7]), mask)
    assert torch.allclose(qp.marginal(qp.logits(questions, candidates), single, mask), expected)
    several = single.clone()
    several[:, 2] = True
    probabilities = (questions @ candidates.T / 0.5).masked_fill(mask, float("-inf")).softmax(1)
    mass = (probabilities * several).sum(1)
    assert torch.allclose(qp.marginal(qp.logits(questions, candidates), several, mask), -mass.log().mean())


def test_frozen_passages_rejects_settings_that_train_the_passage_side(bert, tmp_path):
    with pytest.raises(ValueError, match="grad_cache_chunk"):
        TrainConfig(base_model=bert, frozen_passages=True, grad_cache_chunk=2)
    with pytest.raises(ValueError, match="frozen_target"):
        TrainConfig(base_model=bert, frozen_passages=True, frozen_target="paragraph")
    with pytest.raises(ValueError, match="frozen_mask_top"):
        TrainConfig(base_model=bert, frozen_passages=True, frozen_mask_top=-1)
