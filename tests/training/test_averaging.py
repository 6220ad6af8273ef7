"""``average-checkpoints``: the mean of each weight, the first directory's other files, a model that
loads, and mismatches refused before anything is written."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from tiny_models import make_tiny_bert, make_tiny_cross_encoder

from haystack_dcsr.core.model.cross_encoder import CrossEncoder
from haystack_dcsr.training.averaging import CheckpointMismatch, average_checkpoints
from haystack_dcsr.training.cli import main as cli


def test_every_weight_is_the_mean_and_the_result_loads_as_a_reranker(tmp_path):
    parents = [make_tiny_cross_encoder(tmp_path / f"m{seed}", seed=seed) for seed in (0, 1, 2)]
    out = average_checkpoints(parents, tmp_path / "soup")
    weights = [load_file(f"{p}/model.safetensors") for p in parents]
    mean = load_file(out / "model.safetensors")
    assert set(mean) == set(weights[0])
    for key, value in mean.items():
        expected = (
            torch.stack([w[key].float() for w in weights]).mean(0) if value.is_floating_point() else weights[0][key]
        )
        assert torch.allclose(value.float(), expected.float(), atol=1e-6), key
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "m0").iterdir())
    assert (out / "config.json").read_text() == (tmp_path / "m0" / "config.json").read_text()
    pairs = [("Who wrote Hamlet?", "Shakespeare wrote Hamlet."), ("Who wrote Hamlet?", "Paris is in France.")]
    scores = [CrossEncoder(str(d)).score_pairs(pairs) for d in (*parents, out)]
    assert scores[-1].shape == (2,) and np.isfinite(scores[-1]).all()
    assert not any(np.allclose(scores[-1], s) for s in scores[:-1])  # a new model, not a copy of a parent


def test_a_dcsr_model_directory_averages_both_towers(tmp_path):
    dirs = []
    for seed in (0, 1):
        root = tmp_path / f"dcsr{seed}"
        make_tiny_bert(root / "query_encoder", seed=seed)
        make_tiny_bert(root / "passage_encoder", seed=seed + 10)
        (root / "README.md").write_text(f"card {seed}")
        dirs.append(root)
    out = average_checkpoints(dirs, tmp_path / "soup")
    assert (out / "README.md").read_text() == "card 0"
    for tower, seeds in (("query_encoder", (0, 1)), ("passage_encoder", (10, 11))):
        a, b = (load_file(d / tower / "model.safetensors") for d in dirs)
        mean = load_file(out / tower / "model.safetensors")
        key = next(k for k in mean if k.endswith("word_embeddings.weight"))
        assert torch.allclose(mean[key], (a[key] + b[key]) / 2, atol=1e-6), seeds


def test_mismatched_checkpoints_are_refused_and_nothing_is_written(tmp_path):
    small = make_tiny_cross_encoder(tmp_path / "small", hidden_size=32)
    large = make_tiny_cross_encoder(tmp_path / "large", hidden_size=64)
    with pytest.raises(CheckpointMismatch, match="bert.embeddings"):
        average_checkpoints([small, large], tmp_path / "soup")
    with pytest.raises(CheckpointMismatch, match="at least two"):
        average_checkpoints([small], tmp_path / "soup")
    assert not (tmp_path / "soup").exists() and not (tmp_path / "soup.partial").exists()
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError, match="overwrites nothing"):
        average_checkpoints([small, small], tmp_path / "taken")


def test_the_cli_writes_the_average_and_reports_a_mismatch_as_an_error(tmp_path, capsys):
    a = make_tiny_cross_encoder(tmp_path / "a", seed=0)
    b = make_tiny_cross_encoder(tmp_path / "b", seed=1)
    cli(["average-checkpoints", a, b, "--out", str(tmp_path / "soup")])
    assert "averaged 2 checkpoints" in capsys.readouterr().out
    assert (tmp_path / "soup" / "model.safetensors").is_file()
    c = make_tiny_cross_encoder(tmp_path / "c", hidden_size=64)
    with pytest.raises(SystemExit) as stopped:
        cli(["average-checkpoints", a, c, "--out", str(tmp_path / "bad")])
    assert stopped.value.code == 2 and "differ" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_integer_buffers_must_agree_and_the_error_names_the_tensor(tmp_path):
    from safetensors.torch import save_file

    for name, ids in (("a", [0, 1, 2]), ("b", [0, 1, 2]), ("c", [0, 2, 1])):
        (tmp_path / name).mkdir()
        weights = {"w": torch.full((2,), float(ord(name))), "ids": torch.tensor(ids)}
        save_file(weights, str(tmp_path / name / "model.safetensors"))
    out = average_checkpoints([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    averaged = load_file(out / "model.safetensors")
    assert averaged["w"].tolist() == [97.5, 97.5] and averaged["ids"].tolist() == [0, 1, 2]
    with pytest.raises(CheckpointMismatch, match=r"integer tensor ids differs"):
        average_checkpoints([tmp_path / "a", tmp_path / "c"], tmp_path / "ac")
    assert not (tmp_path / "ac").exists()
