import numpy as np
import pytest
import torch

from haystack_dcsr.core.model.dcsr_model import DCSRSettings, ModelFiles
from haystack_dcsr.core.model.encoder import PassageTower, QueryTower, plan_windows
from haystack_dcsr.core.model.models import CONFIG_NAME, EncoderConfig, load_tower, resolve_model_path


@pytest.fixture(scope="module")
def marker_encoder(tiny_bert):
    return PassageTower(tiny_bert)


def test_marker_is_added_once_and_marks_every_sentence(marker_encoder):
    assert marker_encoder.tokenizer.convert_ids_to_tokens(marker_encoder.marker_id) == "<sent>"
    windows, n = marker_encoder.windows([["One short sentence.", "Another one."]])
    ids = windows[0].input_ids
    assert (
        n == 2 and ids[0] == marker_encoder.tokenizer.cls_token_id and ids[-1] == marker_encoder.tokenizer.sep_token_id
    )
    assert ids.count(marker_encoder.marker_id) == 2
    assert [ids[start] for _, start, _ in windows[0].segments] == [marker_encoder.marker_id] * 2


def test_sentence_vectors_are_contextual(marker_encoder):
    a = marker_encoder.encode([["Paris is in France.", "It has museums."]])
    b = marker_encoder.encode([["Berlin is in Germany.", "It has museums."]])
    assert a.shape == (2, 32)
    assert np.abs(a[1] - b[1]).max() > 1e-4  # same sentence, other neighbour, other vector


def test_every_sentence_of_a_long_passage_gets_a_vector(marker_encoder):
    sentences = [f"Sentence number {i} talks about topic {i % 7}." for i in range(120)]
    windows, n = marker_encoder.windows([sentences])
    assert n == 120 and len(windows) > 10
    assert all(len(w.input_ids) <= marker_encoder.config.max_length for w in windows)
    owned = sorted(row for w in windows for row, _, _ in w.segments)
    assert owned == list(range(120))
    vectors = marker_encoder.encode([sentences, ["A short one."]])
    assert vectors.shape == (121, 32) and np.isfinite(vectors).all()


def test_a_sentence_longer_than_a_window_is_truncated_not_dropped(marker_encoder):
    giant = " ".join(["word"] * 10_000)
    windows, n = marker_encoder.windows([[giant, "Tail."]])
    assert n == 2 and all(len(w.input_ids) <= 64 for w in windows)
    assert marker_encoder.encode([[giant, "Tail."]]).shape == (2, 32)


def test_windowed_vectors_equal_unwindowed_when_the_passage_fits(tiny_bert):
    short = PassageTower(tiny_bert)
    roomy = PassageTower(tiny_bert, max_length=512)
    sentences = ["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta iota."]
    np.testing.assert_allclose(short.encode([sentences]), roomy.encode([sentences]), atol=1e-5)


def test_plan_windows_partitions_and_respects_budget():
    rng = np.random.default_rng(0)
    for _ in range(200):
        costs = list(rng.integers(1, 40, size=rng.integers(1, 60)))
        budget = int(rng.integers(40, 200))
        plans = plan_windows(costs, budget)
        owned = [j for _, _, a, b in plans for j in range(a, b)]
        assert owned == list(range(len(costs)))
        for start, end, own_start, own_end in plans:
            assert start <= own_start < own_end <= end
            assert sum(costs[start:end]) <= budget


def test_mean_pooling_is_the_mean_of_the_sentence_tokens(tiny_bert_mean):
    encoder = PassageTower(tiny_bert_mean, precision="fp32")
    assert encoder.marker_id is None
    windows, _ = encoder.windows([["Alpha beta.", "Gamma delta epsilon."]])
    (row0, s0, e0), (row1, s1, e1) = windows[0].segments
    with torch.no_grad():
        ids = torch.tensor([windows[0].input_ids], device=encoder.device)
        hidden = encoder.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
    expected = torch.nn.functional.normalize(hidden[s1:e1].mean(0), dim=0).cpu().numpy()
    atol = 1e-5 if encoder.device.type == "cpu" else 1e-4  # GPU kernels differ with batch shape at ~2e-5
    np.testing.assert_allclose(encoder.encode([["Alpha beta.", "Gamma delta epsilon."]])[1], expected, atol=atol)
    assert (s0, e1) == (1, len(windows[0].input_ids) - 1)


def test_forward_is_differentiable(marker_encoder):
    windows, n = marker_encoder.windows([["One.", "Two."]])
    marker_encoder.model.train()
    vectors = marker_encoder.forward(windows, n)
    vectors.sum().backward()
    assert marker_encoder.model.get_input_embeddings().weight.grad is not None
    marker_encoder.model.zero_grad()
    marker_encoder.model.eval()


def test_query_tower_reads_the_marker_after_cls(tiny_bert):
    tower = QueryTower(tiny_bert)
    (window,) = tower.windows(["who wrote hamlet?"])
    assert window.input_ids[1] == tower.marker_id and window.segments == [(0, 1, 2)]
    with pytest.raises(ValueError, match="Query 1 is empty"):
        tower.windows(["fine", "   "])


def test_query_mean_pooling_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    tower = QueryTower("all-MiniLM-L6-v2")
    reference = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
    queries = ["what is the capital of france?", "who discovered penicillin"]
    np.testing.assert_allclose(tower.encode(queries), reference.encode(queries), atol=1e-5)


def test_saved_tower_loads_with_its_marker_and_config(tmp_path, marker_encoder):
    marker_encoder.save(tmp_path / "tower")
    assert (tmp_path / "tower" / CONFIG_NAME).is_file() and (tmp_path / "tower" / "model.safetensors").is_file()
    tokenizer, model, config = load_tower(str(tmp_path / "tower"))
    assert config == marker_encoder.config
    assert len(tokenizer) == len(marker_encoder.tokenizer) == model.get_input_embeddings().weight.shape[0]
    again = PassageTower(str(tmp_path / "tower"))
    sentences = [["Alpha.", "Beta gamma."]]
    np.testing.assert_allclose(again.encode(sentences), marker_encoder.encode(sentences), atol=1e-6)


def test_sentence_transformers_layout_is_inferred():
    _, _, config = load_tower("all-MiniLM-L6-v2")
    assert (config.pooling, config.normalize) == ("mean", True)
    assert ModelFiles.locate("all-MiniLM-L6-v2").settings.temperature == 0.05  # the model's, by its geometry


def test_unknown_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model_path(str(tmp_path / "no-such-model"))
    with pytest.raises(OSError, match="Could not load model"):
        load_tower(str(tmp_path))  # exists, but holds no model


def test_bad_encoder_config_values_are_rejected():
    with pytest.raises(ValueError, match="pooling"):
        EncoderConfig(pooling="max")
    with pytest.raises(ValueError, match="temperature"):
        DCSRSettings(temperature=0)


def test_passage_level_tower_reads_each_passage_as_one_text(tiny_bert):
    tower = PassageTower(tiny_bert, pooling="cls", level="passage", device="cpu")
    texts = ["Paris is the capital of France. It is large.", "Berlin is in Germany."]
    vectors = tower.encode([[t] for t in texts])
    expected = tower.encode_texts(texts)
    assert vectors.shape == (2, tower.dim)
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    with pytest.raises(ValueError, match="split_sentences=False"):
        tower.encode([["Paris is the capital.", "It is large."]])
