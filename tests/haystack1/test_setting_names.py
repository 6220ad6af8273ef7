"""One name per setting: the core, the model directory and the trainer say ``max_query_length`` /
``max_passage_length``; the 1.x nodes take DPR's ``max_seq_len_query`` / ``max_seq_len_passage`` and map them in
one place; old names keep working with a DeprecationWarning; ``QueryEncoder.save`` writes a model directory."""

import dataclasses
import inspect
import json
import warnings

import pytest

from haystack_dcsr import DCSRRetriever, QueryEncoder
from haystack_dcsr.core.model.model_settings import DCSRSettings
from haystack_dcsr.training.config import TrainConfig


def test_the_core_model_directory_and_trainer_share_the_length_names():
    core = {f.name for f in dataclasses.fields(DCSRSettings)}
    trainer = {f.name for f in dataclasses.fields(TrainConfig)}
    assert {"max_query_length", "max_passage_length"} <= core & trainer
    assert not {"max_query_len", "max_passage_len"} & trainer


def test_the_nodes_take_dpr_names_and_no_name_means_another_length():
    retriever = inspect.signature(DCSRRetriever.__init__).parameters
    encoder = inspect.signature(QueryEncoder.__init__).parameters
    assert {"max_seq_len_query", "max_seq_len_passage"} <= set(retriever) and "max_seq_len_query" in encoder
    assert "max_seq_len_passage" not in encoder  # a query encoder has no passage length


def test_old_names_still_work_with_a_deprecation_warning(tiny_bert, tmp_path):
    with pytest.warns(DeprecationWarning, match="DCSRRetriever: max_seq_len is now called max_seq_len_passage"):
        retriever = DCSRRetriever(query_model=tiny_bert, max_seq_len=48, progress_bar=False)
    assert retriever.model.settings.max_passage_length == 48
    with pytest.warns(DeprecationWarning, match="QueryEncoder: max_seq_len is now called max_seq_len_query"):
        encoder = QueryEncoder(tiny_bert, max_seq_len=16)
    assert encoder.settings.max_query_length == 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        assert DCSRRetriever(query_model=tiny_bert, max_seq_len_query=20).model.settings.max_query_length == 20
    with pytest.raises(ValueError, match="give max_seq_len_passage \\(max_seq_len is its old name\\), not both"):
        DCSRRetriever(query_model=tiny_bert, max_seq_len=48, max_seq_len_passage=48)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("max_query_len: 32\nmax_passage_len: 128\n")
    with pytest.warns(DeprecationWarning, match="max_query_len is now called max_query_length"):
        config = TrainConfig.from_yaml(recipe, ["max_passage_len=96"])
    assert (config.max_query_length, config.max_passage_length) == (32, 96)


def test_query_encoder_save_writes_a_model_directory(tiny_bert, tmp_path):
    encoder = QueryEncoder(tiny_bert, max_seq_len_query=24)
    encoder.save(tmp_path / "saved")
    manifest = json.loads((tmp_path / "saved" / "dcsr_model.json").read_text())
    assert manifest["max_query_length"] == 24 and manifest["query"] == "query_encoder"
    assert not (tmp_path / "saved" / "dcsr_encoder.json").exists()
    again = QueryEncoder(str(tmp_path / "saved"))
    assert again.settings == encoder.settings
    assert (again.encode(["who wrote it?"]) == encoder.encode(["who wrote it?"])).all()


def test_old_constructor_names_of_the_configs_work_with_a_deprecation_warning(tmp_path):
    """Code written for the old names (``TrainConfig(max_passage_len=...)``, ``EncoderConfig(temperature=...)``)
    keeps working, as recipes and command lines with them do; both names at once is an error."""
    from haystack_dcsr.core.model.models import EncoderConfig, legacy_temperature

    with pytest.warns(DeprecationWarning, match="TrainConfig: max_passage_len is now called max_passage_length"):
        config = TrainConfig(max_passage_len=128, max_query_len=32)
    assert (config.max_passage_length, config.max_query_length) == (128, 32)
    with pytest.raises(ValueError, match="give max_passage_length \\(max_passage_len is its old name\\), not both"):
        TrainConfig(max_passage_len=128, max_passage_length=64)
    with pytest.warns(DeprecationWarning, match="EncoderConfig: temperature is now a setting of the model directory"):
        encoder = EncoderConfig(pooling="mean", normalize=True, temperature=0.1)
    encoder.save(tmp_path)
    assert legacy_temperature(str(tmp_path), normalize=True) == 0.1  # a tower outside a model directory reads it
    assert encoder == EncoderConfig(pooling="mean", normalize=True)  # the config itself is unchanged
