"""Doors a hostile file or a default could open: code shipped with a model, a server reachable from
the network, model paths outside the model directory, YAML that expands without bound, fusion
weights that turn every score into NaN."""

import dataclasses
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from haystack.errors import PipelineConfigError
from test_errors import YAML
from tiny_models import make_tiny_cross_encoder

from haystack_dcsr import HybridJoin, load_pipeline
from haystack_dcsr.core.model.dcsr_model import DCSRSettings, ModelFiles
from haystack_dcsr.core.ranking.fusion import fuse

ROOT = Path(__file__).resolve().parents[2]


def test_a_cross_encoder_directory_with_remote_code_never_runs_it(tmp_path):
    """A config whose model type transformers does not know, with an ``auto_map``, makes transformers
    ask on the terminal whether to run the folder's code; the cross-encoder never asks and refuses."""
    model = Path(make_tiny_cross_encoder(tmp_path / "ce"))
    marker = tmp_path / "ran"
    (model / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\n"
        "from transformers import BertForSequenceClassification as EvilModel\n"
        "from transformers import BertConfig as EvilConfig\n"
    )
    config = json.loads((model / "config.json").read_text())
    config["model_type"] = "evil-bert"
    config["auto_map"] = {
        "AutoConfig": "evil.EvilConfig",
        "AutoModelForSequenceClassification": "evil.EvilModel",
    }
    (model / "config.json").write_text(json.dumps(config))
    code = (
        "from haystack_dcsr.core.model.cross_encoder import CrossEncoder\n"
        f"ce = CrossEncoder({str(model)!r})\n"
        "print('SCORES', len(ce.score_pairs([('q', 'a'), ('q', 'b')])))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input="y\ny\n",  # what a user might answer at transformers' prompt
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )
    assert not marker.exists()
    assert result.returncode != 0 and "trust_remote_code" in result.stderr


def test_serve_binds_loopback_unless_told_otherwise():
    """The default; the launcher's run (test_serve.py) prints the host it binds."""
    from haystack_dcsr.haystack1.serve import build_parser

    assert build_parser().parse_args(["--pipeline", "p.yml"]).host == "127.0.0.1"
    assert build_parser().parse_args(["--pipeline", "p.yml", "--host", "0.0.0.0"]).host == "0.0.0.0"


@pytest.mark.parametrize("where", ["../elsewhere", "/tmp", "query_encoder/../../elsewhere"])
def test_model_directory_tower_paths_stay_inside_it(tmp_path, tiny_bert, where):
    outside = tmp_path / "elsewhere"
    shutil.copytree(tiny_bert, outside)
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model / "query_encoder")
    (model / "dcsr_model.json").write_text(json.dumps({"query": where, "passage": None}))
    with pytest.raises(ValueError, match="tower folder .* (must be a relative path|points outside)"):
        ModelFiles.locate(str(model))
    settings = dataclasses.asdict(DCSRSettings())  # a whole manifest: every setting that changes the model
    (model / "dcsr_model.json").write_text(json.dumps({"query": "query_encoder", "passage": None, **settings}))
    assert ModelFiles.locate(str(model)).query_dir == str(model / "query_encoder")


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, tiny_bert):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    bomb += [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]" for i in range(8)]
    text = YAML.format(model=tiny_bert, params="top_k: 5").replace(
        "version: ignore", "version: ignore\n" + "\n".join(bomb)
    )
    path = tmp_path / "bomb.yml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(PipelineConfigError, match="anchors and aliases .* are not allowed"):
        load_pipeline(path)
    assert time.perf_counter() - started < 2
    path.write_text("x" * 1_000_001)
    with pytest.raises(PipelineConfigError, match="larger than a pipeline file may be"):
        load_pipeline(path)
    path.write_text("- a list\n")
    with pytest.raises(PipelineConfigError, match="is a mapping"):
        load_pipeline(path)


@pytest.mark.parametrize("weights", [[float("nan"), 1.0], [float("inf"), 1.0], [0, 0], [-1, 2], [True, 1], []])
def test_fusion_weights_that_would_make_scores_nan_or_meaningless_are_refused(weights):
    with pytest.raises(ValueError, match="weights must be finite numbers >= 0 with a sum > 0"):
        HybridJoin(weights=weights)
    with pytest.raises(ValueError, match="weights must be finite numbers >= 0 with a sum > 0"):
        fuse([[("a", 1.0)], [("b", 2.0)]], weights=weights)


def test_one_zero_weight_is_a_choice_not_an_error():
    assert [pid for pid, _ in fuse([[("a", 1.0), ("b", 0.5)], [("b", 3.0), ("a", 1.0)]], weights=[0, 1])] == ["b", "a"]
