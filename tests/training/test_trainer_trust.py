"""What users of sentence-transformers / Tevatron trainers expect: best/ at every validation, retrieval
validation, the CLI listing every field, checkpoint retention, a warning for a missing TensorBoard."""

import json
import logging
import sys

import numpy as np
import pytest
from conftest import make_records, make_tiny_bert
from test_engine import config  # the same small CPU settings

from haystack_dcsr.core.ranking.hasans import score_passages
from haystack_dcsr.training.cli import main as cli
from haystack_dcsr.training.config import TrainConfig
from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.samples import SampleBuilder
from haystack_dcsr.training.validation import RetrievalValidation


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("trust_bert"), max_length=128)


def dev_lines(run):
    return [r for r in map(json.loads, (run / "log.jsonl").read_text().splitlines()) if "dev_mrr@10" in r]


def test_a_run_shorter_than_an_epoch_writes_best_chosen_by_retrieval(bert, tmp_path):
    records = make_records(24)  # 3 steps an epoch
    Trainer(config(bert, tmp_path, max_steps=2), records=records, dev_records=records).train(resume=False)
    run = tmp_path / "run"
    assert (run / "best" / "dcsr_model.json").is_file() and (run / "best" / "query_encoder").is_dir()
    (line,) = dev_lines(run)
    assert line["step"] == 2 and 0 <= line["dev_recall@1"] <= line["dev_recall@5"] <= line["dev_recall@20"] <= 1
    assert line["dev_retrieval_questions"] == 24 and line["dev_retrieval_passages"] == 24


def test_best_is_rechosen_at_every_validation(bert, tmp_path):
    records = make_records(24)
    trainer = Trainer(
        config(bert, tmp_path, max_steps=5, validate_every=2, lr=3e-3), records=records, dev_records=records
    )
    trainer.train(resume=False)
    lines = dev_lines(tmp_path / "run")
    assert [line["step"] for line in lines] == [2, 3, 4, 5]  # every 2 steps, the epoch end (3), the end (5)
    best = max(line["dev_mrr@10"] for line in lines)
    assert trainer.state["best_metric"] == "mrr@10" and trainer.state["best"] == pytest.approx(-best)


def test_retrieval_validation_equals_ranking_the_slice_by_hand(bert, tmp_path):
    records = make_records(12)
    trainer = Trainer(config(bert, tmp_path, max_steps=1), records=records, dev_records=records)
    trainer.model.eval()  # as the engine does: no dropout
    builder = SampleBuilder()
    validation = RetrievalValidation(records, builder, size=20)
    got = validation(trainer.query, trainer.passage, temperature=1.0)
    passages = validation.passages
    assert len(passages) == 12  # every gold passage; the negatives are other records' golds here
    vectors = [trainer.passage.encode([builder.sentences(p)]) for p in passages]
    ranks = []
    questions = trainer.query.encode([r.question for r in records])
    for record, question in zip(records, questions):
        scores = score_passages(question, vectors, 1.0)
        gold = next(i for i, p in enumerate(passages) if p.key == record.positives[0].key)
        ranks.append(1 + int(np.sum(scores > scores[gold])))
    ranks = np.array(ranks)
    # a random tiny BERT scores all passages within ~1e-6 of each other, so float noise between torch's
    # batched product and numpy's can swap neighbours: one rank step of one question at most
    assert got["recall@20"] == np.mean(ranks <= 20) == 1.0 and got["retrieval_questions"] == 12
    assert got["recall@5"] == pytest.approx(np.mean(ranks <= 5), abs=1 / 12 + 1e-9)
    assert got["mrr@10"] == pytest.approx(np.mean(np.where(ranks <= 10, 1 / ranks, 0)), abs=0.01)


def test_only_the_newest_checkpoints_are_kept_and_resume_reads_the_newest(bert, tmp_path):
    records = make_records(32)
    Trainer(config(bert, tmp_path, max_steps=3, checkpoint_every=1, keep_checkpoints=2), records=records).train(
        resume=False
    )
    run = tmp_path / "run"
    assert sorted(p.name for p in run.glob("checkpoint*")) == ["checkpoint-0000002", "checkpoint-0000003"]
    resumed = Trainer(config(bert, tmp_path, max_steps=4, checkpoint_every=1, keep_checkpoints=2), records=records)
    history = resumed.train()
    assert [h["step"] for h in history] == [1, 2, 3, 4]  # 1-3 from the checkpoint's history, then step 4
    assert sorted(p.name for p in run.glob("checkpoint*")) == ["checkpoint-0000003", "checkpoint-0000004"]


def test_train_help_lists_every_field_with_its_default_and_help(capsys):
    with pytest.raises(SystemExit):
        cli(["train", "--help"])
    text = capsys.readouterr().out
    for field in TrainConfig.__dataclass_fields__.values():
        default = field.default_factory() if callable(field.default_factory) else field.default
        assert f"  {field.name} (" in text and f"default {default!r})" in text, field.name
        assert field.metadata["help"] and field.metadata["help"] in text


def test_a_missing_tensorboard_warns_when_asked_for(bert, tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if not installed
    records = make_records(16)
    with caplog.at_level(logging.WARNING):
        Trainer(config(bert, tmp_path, max_steps=1, tensorboard=True), records=records)
    assert 'pip install "haystack-dcsr[tensorboard]"' in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        trainer = Trainer(config(bert, tmp_path, max_steps=1), records=records)  # null: when installed, quietly
    assert trainer._writer is None and "TensorBoard" not in caplog.text


def test_every_shipped_recipe_parses_and_the_marker_one_uses_the_marker_recipe():
    from pathlib import Path

    from haystack_dcsr.training.build_model import load_recipe

    folder = Path(__file__).resolve().parents[2] / "trainer" / "configs"
    recipes = sorted(path for path in folder.glob("*.yaml") if path.name not in ("build_model.yaml", "studies.yaml"))
    configs = {path.stem: TrainConfig.from_yaml(path) for path in recipes}
    for budget in ("cpu", "gpu"):  # build-model's recipe: its training config and both budgets read
        recipe = load_recipe(folder / "build_model.yaml", budget)
        for stage in ("first", "hard"):
            settings = [f"{key}={value}" for key, value in recipe["budgets"][budget][stage].items()]
            TrainConfig.from_yaml(recipe["train_config"], settings)
    from haystack_dcsr.training.recipes import set_arguments, settings

    for study in ("cpu_dcsr", "cpu_marker", "contrast_stage", "dcsr_size", "gpu_check"):  # the studies' deltas
        values = set_arguments(settings(folder / "studies.yaml", study))[1::2]
        TrainConfig.from_yaml(folder / "squad_dcsr_qq.yaml", values)
    assert {"squad_dcsr", "squad_dcsr_qq", "squad_dpr", "squad_dcsr_marker"} <= set(configs)
    assert configs["squad_dcsr"].resolved_pooling == "mean"  # what measured best at the README's budgets
    marker = configs["squad_dcsr_marker"]
    assert (marker.resolved_pooling, marker.marker_init, marker.marker_lr) == ("marker", "mean", 1e-3)
