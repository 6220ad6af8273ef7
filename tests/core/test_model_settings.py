"""One owner per setting: ``dcsr_model.json`` owns the model's settings, a node parameter overrides one by
``model_setting``, and a tower's own ``dcsr_encoder.json`` that says otherwise is named, not obeyed."""

import json

from tiny_models import make_tiny_bert

from haystack_dcsr import DCSRModel
from haystack_dcsr.core.dcsr_model import MODEL_FILE, DCSRSettings, model_setting


def test_a_node_parameter_wins_only_when_given():
    settings = DCSRSettings(temperature=0.05, pooling="mean", normalize=True)
    assert model_setting(None, settings, "temperature") == 0.05
    assert model_setting(0.5, settings, "temperature") == 0.5
    assert model_setting(None, settings, "pooling") == "mean"


def test_the_manifest_wins_over_a_tower_file_that_disagrees_and_says_so(tmp_path, caplog):
    tower = make_tiny_bert(tmp_path / "base", pooling="mean", normalize=True, temperature=0.05)
    DCSRModel.from_pretrained(tower, use_gpu=False).save_pretrained(tmp_path / "m")
    own = tmp_path / "m" / "query_encoder" / "dcsr_encoder.json"
    edited = {**json.loads(own.read_text()), "temperature": 0.5}
    own.write_text(json.dumps(edited))  # a hand edit, or a tower copied from another run
    with caplog.at_level("WARNING"):
        model = DCSRModel.from_pretrained(str(tmp_path / "m"), use_gpu=False)
    assert model.temperature == 0.05 and model.query_tower.config.temperature == 0.05
    assert "query tower's dcsr_encoder.json says temperature 0.5 (model: 0.05); dcsr_model.json wins" in caplog.text
    caplog.clear()
    manifest = json.loads((tmp_path / "m" / MODEL_FILE).read_text())
    (tmp_path / "m" / MODEL_FILE).write_text(json.dumps({**manifest, "temperature": 0.5}))  # now they agree
    with caplog.at_level("WARNING"):
        assert DCSRModel.from_pretrained(str(tmp_path / "m"), use_gpu=False).temperature == 0.5
    assert "dcsr_model.json wins" not in caplog.text
