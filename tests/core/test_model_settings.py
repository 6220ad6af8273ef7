"""One owner per setting: ``dcsr_model.json`` owns the model's settings and is their only copy (a tower
folder of a model directory carries none and reads it when given alone), a node parameter overrides one
by ``model_setting``, and an older tower's own ``dcsr_encoder.json`` that says otherwise is named, not obeyed."""

import json

import pytest
from tiny_models import make_tiny_bert

from haystack_dcsr import DCSRModel
from haystack_dcsr.core.model.dcsr_model import ModelFiles
from haystack_dcsr.core.model.encoder import PassageTower, QueryTower
from haystack_dcsr.core.model.model_settings import MODEL_FILE, DCSRSettings, model_setting
from haystack_dcsr.core.model.models import CONFIG_NAME


def test_a_node_parameter_wins_only_when_given():
    settings = DCSRSettings(temperature=0.05, pooling="mean", normalize=True)
    assert model_setting(None, settings, "temperature") == 0.05
    assert model_setting(0.5, settings, "temperature") == 0.5
    assert model_setting(None, settings, "pooling") == "mean"
    given = settings.given(temperature=None, max_query_length=32, pooling=None)
    assert (given.temperature, given.max_query_length, given.pooling) == (0.05, 32, "mean")


def _saved_model(tmp_path):
    tower = make_tiny_bert(tmp_path / "base", pooling="mean", normalize=True, temperature=0.05)
    DCSRModel.from_pretrained(tower, use_gpu=False).save_pretrained(tmp_path / "m")
    return tmp_path / "m"


def test_the_manifest_is_the_only_copy_and_a_tower_given_alone_reads_it(tmp_path):
    model_dir = _saved_model(tmp_path)
    assert not (model_dir / "query_encoder" / CONFIG_NAME).exists()  # no second copy that could disagree
    manifest = json.loads((model_dir / MODEL_FILE).read_text())
    (model_dir / MODEL_FILE).write_text(json.dumps({**manifest, "temperature": 0.5, "max_query_length": 20}))
    alone = ModelFiles.locate(str(model_dir / "query_encoder"))  # e.g. QueryEncoder("m/query_encoder")
    assert (alone.settings.temperature, alone.settings.max_query_length, alone.settings.pooling) == (0.5, 20, "mean")
    tower = DCSRModel.from_pretrained(str(model_dir / "query_encoder"), use_gpu=False).query_tower
    assert (tower.config.max_length, tower.config.normalize) == (20, True)  # temperature: the model's, above
    # the towers themselves read it too, each in its role (one folder serves both sides here)
    query, passage = (
        QueryTower(str(model_dir / "query_encoder"), use_gpu=False),
        PassageTower(str(model_dir / "query_encoder"), use_gpu=False),
    )
    assert (query.config.max_length, passage.config.max_length) == (20, manifest["max_passage_length"])
    assert passage.config.pooling == "mean" and not hasattr(query.config, "temperature")  # one owner: the model


def test_an_older_tower_file_that_disagrees_is_named_and_the_manifest_wins(tmp_path, caplog):
    model_dir = _saved_model(tmp_path)
    own = model_dir / "query_encoder" / CONFIG_NAME  # as towers were saved before, then edited by hand
    own.write_text(json.dumps({"pooling": "mean", "normalize": True, "max_length": 64, "temperature": 0.5}))
    with caplog.at_level("WARNING"):
        model = DCSRModel.from_pretrained(str(model_dir), use_gpu=False)
    assert model.temperature == 0.05
    assert "query tower's dcsr_encoder.json says temperature 0.5 (model: 0.05); dcsr_model.json wins" in caplog.text
    caplog.clear()
    manifest = json.loads((model_dir / MODEL_FILE).read_text())
    (model_dir / MODEL_FILE).write_text(json.dumps({**manifest, "temperature": 0.5}))  # now they agree
    with caplog.at_level("WARNING"):
        assert DCSRModel.from_pretrained(str(model_dir), use_gpu=False).temperature == 0.5
    assert "dcsr_model.json wins" not in caplog.text


def test_a_passage_tower_from_another_model_must_encode_alike_and_keeps_the_query_sides_temperature(tmp_path):
    query = make_tiny_bert(tmp_path / "q", pooling="mean", normalize=True, temperature=0.05)
    other = make_tiny_bert(tmp_path / "p", pooling="mean", normalize=True, temperature=0.5)
    paired = ModelFiles.locate(query, passage=other)
    assert (paired.query_dir, paired.passage_dir, paired.settings.temperature) == (query, other, 0.05)
    marker = make_tiny_bert(tmp_path / "m", pooling="marker")
    with pytest.raises(ValueError, match=r"query model .* and the passage model .* disagree on pooling \('mean' vs"):
        ModelFiles.locate(query, passage=marker)
