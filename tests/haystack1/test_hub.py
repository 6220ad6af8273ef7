"""Models that travel: hub names read their own settings like folders (a local stand-in for the hub
cache, offline), sentence-transformers loads saved towers with the right pooling or refuses
clearly, trained runs carry a model card, and publishing goes through the hub API (mocked)."""

import json
import shutil

import numpy as np
import pytest
from conftest import make_records, make_tiny_bert

from haystack_dcsr import QueryEncoder
from haystack_dcsr.training import cli
from haystack_dcsr.training.config import TrainConfig
from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.model_card import model_card

QUESTIONS = ["who discovered penicillin?", "what is the largest planet?"]


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An offline Hugging Face cache: put(repo_id, directory) makes a snapshot of it."""
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    def put(repo_id, directory):
        repo = cache / f"models--{repo_id.replace('/', '--')}"
        shutil.copytree(directory, repo / "snapshots" / "0123456789abcdef")
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text("0123456789abcdef")
        return repo_id

    return put


def test_a_hub_name_reads_the_towers_own_dcsr_settings(tmp_path, hub_cache):
    local = make_tiny_bert(tmp_path / "tiny", pooling="mean", normalize=True, temperature=0.05)
    name = hub_cache("someone/tiny-dcsr", local)
    from_hub, from_folder = QueryEncoder(name, progress_bar=False), QueryEncoder(local, progress_bar=False)
    config = from_hub.tower.config
    assert (config.pooling, config.normalize, from_hub.temperature) == ("mean", True, 0.05)
    np.testing.assert_allclose(from_hub.encode(QUESTIONS), from_folder.encode(QUESTIONS), rtol=1e-5, atol=1e-6)


def test_a_hub_name_in_sentence_transformers_layout_reads_its_pooling(tmp_path, hub_cache):
    local = tmp_path / "st"
    make_tiny_bert(local, pooling="cls")
    (local / "dcsr_encoder.json").unlink()  # only sentence-transformers' own files say how it pools
    (local / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ]
        )
    )
    (local / "1_Pooling").mkdir()
    (local / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    encoder = QueryEncoder(hub_cache("someone/tiny-cos", local), progress_bar=False)
    assert (encoder.tower.config.pooling, encoder.tower.config.normalize, encoder.temperature) == ("cls", True, 0.05)


def test_a_hub_name_that_is_not_cached_offline_is_a_clear_error(hub_cache):
    with pytest.raises(OSError, match="'nobody/missing': it is no local directory, and the Hugging Face hub could not"):
        QueryEncoder("nobody/missing")


def test_sentence_transformers_loads_a_mean_tower_with_the_same_vectors(tmp_path, tiny_bert_mean):
    from sentence_transformers import SentenceTransformer

    encoder = QueryEncoder(tiny_bert_mean, progress_bar=False)
    encoder.save(tmp_path / "model")  # a model directory; its tower folder is what sentence-transformers reads
    saved = QueryEncoder(str(tmp_path / "model"), progress_bar=False)
    st = SentenceTransformer(str(tmp_path / "model" / "query_encoder"), device="cpu")
    np.testing.assert_allclose(st.encode(QUESTIONS), saved.encode(QUESTIONS), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(st.encode(QUESTIONS), axis=1), 1.0, rtol=1e-5)


def test_sentence_transformers_refuses_a_marker_tower_clearly(tmp_path, tiny_bert):
    from sentence_transformers import SentenceTransformer

    QueryEncoder(tiny_bert, progress_bar=False).save(tmp_path / "model")
    with pytest.raises(ValueError, match="cannot be loaded by sentence-transformers: it pools at DCSR's <sent> marker"):
        SentenceTransformer(str(tmp_path / "model" / "query_encoder"), device="cpu")


@pytest.mark.parametrize("saved_as", ["haystack_dcsr.hub.", "haystack_dcsr.core.hub."])
def test_a_marker_tower_is_refused_alike_under_every_path_directories_were_saved_with(tmp_path, tiny_bert, saved_as):
    """Directories name the stable ``haystack_dcsr.hub.NotSentenceTransformers``; those saved between the core's two
    moves name ``haystack_dcsr.core.hub.NotSentenceTransformers``: both load into the same clear refusal."""
    from sentence_transformers import SentenceTransformer

    QueryEncoder(tiny_bert, progress_bar=False).save(tmp_path / "model")
    modules = tmp_path / "model" / "query_encoder" / "modules.json"
    assert "haystack_dcsr.hub.NotSentenceTransformers" in modules.read_text()
    modules.write_text(modules.read_text().replace("haystack_dcsr.hub.", saved_as))
    with pytest.raises(ValueError, match="cannot be loaded by sentence-transformers: it pools at DCSR's <sent> marker"):
        SentenceTransformer(str(tmp_path / "model" / "query_encoder"), device="cpu")


def test_a_trained_run_has_a_model_card_and_publishes_through_the_hub_api(tmp_path, monkeypatch, capsys):
    from huggingface_hub import HfApi

    model = make_tiny_bert(tmp_path / "base", max_length=128)
    config = TrainConfig(
        base_model=model,
        output_dir=str(tmp_path / "run"),
        batch_size=8,
        max_steps=3,
        checkpoint_every=0,
        log_every=0,
        max_passage_length=64,
        precision="fp32",
        warmup_steps=0,
    )
    Trainer(config, records=make_records(16), dev_records=make_records(8)).train(resume=False)
    card = (tmp_path / "run" / "last" / "README.md").read_text()
    assert f'base_model: "{model}"' in card and "dev in-batch accuracy" in card and "| training steps | 3 |" in card
    assert '| `negatives` | "+1 in-passage +1 BM25 random" |' in card
    calls = []
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: calls.append(("create", repo_id, kw)))
    monkeypatch.setattr(
        HfApi,
        "upload_folder",
        lambda self, **kw: calls.append(("upload", kw["repo_id"], kw["folder_path"], kw["allow_patterns"])),
    )
    last = tmp_path / "run" / "last"
    (last / ".env").write_text("HF_TOKEN=secret")
    (last / "notes.log").write_text("private")
    cli.main(["publish", str(last), "me/dcsr-tiny", "--private"])
    uploaded = calls[1][3]
    assert calls[0] == ("create", "me/dcsr-tiny", {"private": True, "exist_ok": True})
    assert calls[1][:3] == ("upload", "me/dcsr-tiny", str(last))
    assert "dcsr_model.json" in uploaded and "README.md" in uploaded
    assert any(name.endswith("model.safetensors") for name in uploaded)
    assert not any(name.startswith(".env") or name.endswith(".log") for name in uploaded)
    assert "https://huggingface.co/me/dcsr-tiny" in capsys.readouterr().out
    assert 'model="me/dcsr-tiny"' in (last / "README.md").read_text()  # the card's load line names the hub id
    cli.main(["publish", str(last), "me/dcsr-tiny", "--dry-run"])
    listed = capsys.readouterr().out
    assert f"would upload {len(uploaded)} files" in listed and "dcsr_model.json" in listed and ".env" not in listed
    assert len(calls) == 2  # the dry run sent nothing
    for folder, message in ((tmp_path / "run", "is a training run folder"), (tmp_path / "empty", "holds no DCSR")):
        folder.mkdir(exist_ok=True)
        with pytest.raises(SystemExit) as stop:
            cli.main(["publish", str(folder), "me/nothing"])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert len(calls) == 2


def test_publish_offline_is_one_line_error(tmp_path, tiny_bert, monkeypatch, capsys):
    import requests
    from huggingface_hub import HfApi

    def offline(self, *args, **kwargs):
        raise requests.exceptions.ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr(HfApi, "create_repo", offline)
    with pytest.raises(SystemExit) as stop:
        cli.main(["publish", tiny_bert, "me/dcsr-tiny"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "could not upload to the hub as 'me/dcsr-tiny'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_model_card_escapes_what_it_copies(tmp_path):
    card = model_card(
        tmp_path,
        title="<script>alert(1)</script> DCSR",
        base_model="bert\nlicense: mit\npipeline_tag: x",
        recipe={"lr": 2e-5, "note": "a | b"},
        metrics={"top-1": 0.7},
        data="<b>squad</b>",
    )
    import yaml

    front = yaml.safe_load(card.split("---")[1])
    assert set(front) == {"library_name", "base_model", "license", "tags"} and front["license"] == "apache-2.0"
    assert front["base_model"] == "bert\nlicense: mit\npipeline_tag: x"
    assert "<script>" not in card and "&lt;script&gt;" in card and "<b>" not in card
    assert "a \\| b" in card
