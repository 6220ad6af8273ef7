"""DCSRModel: one directory owns both towers and the settings every stage must agree on."""

import json

import numpy as np
import pytest
from haystack.schema import Document
from tiny_models import make_tiny_bert

from haystack_dcsr import DCSRModel, DCSRRetriever, QueryEncoder, SentencePreprocessor
from haystack_dcsr.core.model.dcsr_model import ModelFiles
from haystack_dcsr.core.model.model_settings import MODEL_FILE, DCSRSettings, write_manifest

PASSAGES = [
    ["Paris is the capital of France.", "The Eiffel Tower was completed in 1889."],
    ["Bananas are edible fruit.", "They grow in tropical regions.", "Monkeys like them."],
]


@pytest.fixture(scope="module")
def two_towers(tmp_path_factory):
    """A trainer output as written before DCSRModel: two different towers, no dcsr_model.json."""
    root = tmp_path_factory.mktemp("trainer_output")
    make_tiny_bert(root / "query_encoder", seed=1)
    make_tiny_bert(root / "passage_encoder", seed=2)
    return root


def test_a_saved_model_reloads_with_its_settings_and_identical_vectors(tmp_path, two_towers):
    model = DCSRModel.from_pretrained(str(two_towers), use_gpu=False)
    model.settings.min_words = 3  # a splitter setting the towers know nothing about
    model.save_pretrained(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / MODEL_FILE).read_text())
    assert manifest["passage"] == "passage_encoder" and manifest["format_version"] == 1 and manifest["min_words"] == 3
    again = DCSRModel.from_pretrained(str(tmp_path / "m"), use_gpu=False)
    assert again.settings == model.settings
    assert np.array_equal(again.encode_passages(PASSAGES), model.encode_passages(PASSAGES))
    assert np.array_equal(again.encode_queries(["who built it?"]), model.encode_queries(["who built it?"]))
    assert again.splitter().min_words == 3


def test_old_layouts_load(tmp_path, tiny_bert, two_towers):
    single = ModelFiles.locate(tiny_bert)
    assert single.query_dir == single.passage_dir == tiny_bert and single.settings.pooling == "marker"
    trained = ModelFiles.locate(str(two_towers))
    assert trained.query_dir.endswith("query_encoder") and trained.passage_dir.endswith("passage_encoder")
    minilm = ModelFiles.locate("all-MiniLM-L6-v2")  # sentence-transformers layout
    assert (minilm.settings.pooling, minilm.settings.normalize, minilm.settings.temperature) == ("mean", True, 0.05)


def test_shared_towers_are_saved_once(tmp_path, tiny_bert):
    DCSRModel.from_pretrained(tiny_bert, use_gpu=False).save_pretrained(tmp_path / "m")
    assert not (tmp_path / "m" / "passage_encoder").exists()
    files = ModelFiles.locate(str(tmp_path / "m"))
    assert files.passage_dir == files.query_dir


def test_bad_manifests_are_refused_by_name(tmp_path, tiny_bert):
    DCSRModel.from_pretrained(tiny_bert, use_gpu=False).save_pretrained(tmp_path / "m")
    manifest = tmp_path / "m" / MODEL_FILE
    state = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**state, "format_version": 99}))
    with pytest.raises(ValueError, match="format version 99"):
        ModelFiles.locate(str(tmp_path / "m"))
    manifest.write_text(json.dumps({**state, "poolng": "mean"}))
    with pytest.raises(ValueError, match="poolng"):
        ModelFiles.locate(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="pooling"):
        DCSRSettings(pooling="max")


def test_towers_that_disagree_are_refused(tmp_path):
    make_tiny_bert(tmp_path / "query_encoder", pooling="marker")
    make_tiny_bert(tmp_path / "passage_encoder", pooling="mean")
    with pytest.raises(ValueError, match="disagree on pooling"):
        ModelFiles.locate(str(tmp_path))


def test_nodes_take_the_model_and_its_settings(tmp_path, two_towers):
    model = DCSRModel.from_pretrained(str(two_towers), use_gpu=False)
    model.settings.level = "passage"  # a passage-level model: the preprocessor must not split
    model.settings.temperature = 0.5
    model.save_pretrained(tmp_path / "m")
    sentences = SentencePreprocessor(model=str(tmp_path / "m"), progress_bar=False).process(
        [Document(content=" ".join(PASSAGES[1]))]
    )["documents"]
    assert len(sentences) == 1
    with pytest.raises(ValueError, match="split_sentences come"):
        SentencePreprocessor(model=str(tmp_path / "m"), split_sentences=False)
    retriever = DCSRRetriever(model=str(tmp_path / "m"), use_gpu=False, progress_bar=False)
    assert retriever.hasans_temperature == 0.5 and retriever.passage_encoder.config.level == "passage"
    assert retriever.passage_model.endswith("passage_encoder")
    assert np.array_equal(
        retriever.embed_queries(["who?"]), QueryEncoder(str(tmp_path / "m"), use_gpu=False).encode(["who?"])
    )
    with pytest.raises(ValueError, match="either model or query_model"):
        DCSRRetriever(model=str(tmp_path / "m"), passage_model=str(two_towers / "passage_encoder"))


def test_the_trainer_manifest_marks_a_model_directory(tmp_path, two_towers):
    settings = ModelFiles.locate(str(two_towers)).settings
    write_manifest(two_towers, settings)
    assert ModelFiles.locate(str(two_towers)).settings == settings
    (two_towers / MODEL_FILE).unlink()
