"""Bad input gets an error that names the parameter, file or path and says what to do; nothing
already stored is touched. (Item 8 of the "nothing lost" issue.)"""

import gzip
import json

import pytest
from conftest import make_records, make_tiny_bert
from haystack.errors import PipelineConfigError
from haystack.schema import Document
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever, SentencePreprocessor, load_pipeline
from haystack_dcsr.training import cli
from haystack_dcsr.training.checkpoints import CheckpointError
from haystack_dcsr.training.config import ConfigError, TrainConfig
from haystack_dcsr.training.data import DataError, load_records
from haystack_dcsr.training.engine import Trainer


@pytest.mark.parametrize("kind", ["faiss-flat", "memory"])
def test_querying_with_towers_of_another_dimension_names_both(kind, tmp_path, tiny_bert, corpus):
    store = make_store(kind, tmp_path)
    write(store, corpus)
    store.update_embeddings(DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False))
    narrow = DCSRRetriever(query_model=make_tiny_bert(tmp_path / "narrow", hidden_size=16), progress_bar=False)
    with pytest.raises(ValueError, match="expects 32-dimensional embeddings but the DCSR towers produce 16"):
        narrow.retrieve("Paris", document_store=store)
    assert store.get_embedding_count() == 15


def test_an_empty_model_directory_is_named_as_not_a_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="the directory has no config.json, so it is not a Hugging Face model directory"):
        DCSRRetriever(query_model=str(tmp_path / "empty"))


def test_model_code_is_never_run_or_asked_about(tmp_path, tiny_bert, monkeypatch):
    import shutil

    custom = tmp_path / "custom"
    shutil.copytree(tiny_bert, custom)
    config = json.loads((custom / "config.json").read_text())
    config.pop("model_type")
    config["auto_map"] = {"AutoConfig": "configuration.EvilConfig", "AutoModel": "modeling.EvilModel"}
    (custom / "config.json").write_text(json.dumps(config))
    (custom / "modeling.py").write_text("raise SystemExit('custom code ran')\n")
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("asked on the terminal whether to run model code"))
    with pytest.raises(OSError, match="Could not load model"):
        DCSRRetriever(query_model=str(custom))


@pytest.mark.parametrize(
    "name, content", [("bad.jsonl", b"\xff\xfe{not utf-8}\n"), ("bad.jsonl.gz", b"plain text, not gzip\n")]
)
def test_unreadable_training_files_are_named(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=f"{name}: cannot be read as .*UTF-8 text"):
        load_records(path)


def test_truncated_gzip_is_named(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(json.dumps(make_records(4)[0].to_json()).encode() * 50)[:60])
    with pytest.raises(DataError, match="cut.jsonl.gz: cannot be read as gzip-compressed UTF-8 text"):
        load_records(path)


def test_config_values_of_the_wrong_type_name_the_field(capsys):
    with pytest.raises(ConfigError, match=r"batch_size must be an integer, got 'abc' \(str\)"):
        TrainConfig.from_yaml(None, ["batch_size=abc"])
    with pytest.raises(ConfigError, match="lr must be a number"):
        TrainConfig.from_yaml(None, ["lr=fast"])
    assert TrainConfig.from_yaml(None, ["lr=1e-5", "negatives=[+1 BM25 random]"]).lr == 1e-5
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", "--set", "batch_size=abc"])
    assert stop.value.code == 2 and "error: batch_size must be an integer" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["truncate", "wrong_keys"])
def test_a_corrupted_checkpoint_is_named_with_what_to_do(tmp_path, tiny_bert, damage):
    import torch

    config = TrainConfig(
        base_model=tiny_bert,
        output_dir=str(tmp_path / "run"),
        batch_size=8,
        max_steps=2,
        checkpoint_every=1,
        log_every=0,
        max_passage_length=64,
        precision="fp32",
        warmup_steps=0,
    )
    Trainer(config, records=make_records(16)).train(resume=False)
    state = tmp_path / "run" / "checkpoint-0000002" / "state.pt"  # the newest (keep_checkpoints=1)
    assert [p.name for p in (tmp_path / "run").glob("checkpoint*")] == ["checkpoint-0000002"]
    if damage == "truncate":
        state.write_bytes(state.read_bytes()[:1000])
    else:
        torch.save({"model": {}}, state)
    with pytest.raises(CheckpointError, match=f"{state}: damaged: its SHA-256 differs.*--no-resume"):
        Trainer(config, records=make_records(16)).train()
    (state.parent / "checksums.sha256").unlink()  # a checkpoint from before checksums: the load error names it
    with pytest.raises(CheckpointError, match=f"Checkpoint {state} cannot be resumed.*--no-resume"):
        Trainer(config, records=make_records(16)).train()


YAML = """version: ignore
components:
  - name: Store
    type: InMemoryDocumentStore
    params: {{embedding_dim: 32}}
  - name: Retriever
    type: DCSRRetriever
    params: {{document_store: Store, query_model: {model}, {params}}}
pipelines:
  - name: query
    nodes:
      - {{name: Retriever, inputs: [Query]}}
"""


@pytest.mark.parametrize(
    "params, message",
    [
        (
            "top_n_sentence: 10",
            r"component 'Retriever' \(DCSRRetriever\) has no parameter 'top_n_sentence' "
            r"\(did you mean 'top_n_sentences'\?\)",
        ),
        ("top_k: ten", r"component 'Retriever' \(DCSRRetriever\), parameter 'top_k': 'ten' is not of type 'integer'"),
        (
            "temperature: -1",
            r"Failed loading pipeline component 'Retriever': ValueError: DCSRRetriever: temperature "
            r"must be a number > 0, or null, got -1",
        ),
        # pooling is a Literal: Haystack's schema names the choices
        ("pooling: max", r"parameter 'pooling': 'max' is not one of \['marker', 'mean', 'cls'\]"),
    ],
)
def test_yaml_mistakes_name_the_component_and_parameter_at_load_time(tmp_path, tiny_bert, params, message):
    path = tmp_path / "p.yml"
    path.write_text(YAML.format(model=tiny_bert, params=params))
    with pytest.raises(PipelineConfigError, match=message):
        load_pipeline(path)
    path.write_text(YAML.format(model=tiny_bert, params="top_k: 3"))
    assert load_pipeline(path).get_node("Retriever").top_k == 3


def test_bad_values_are_refused_at_construction(tiny_bert):
    for bad in [
        dict(top_n_sentences=0),
        dict(temperature=0),
        dict(max_seq_len_passage=3),
        dict(batch_size=0),
        dict(passage_cache_size=-1),
        dict(top_k=True),
    ]:
        with pytest.raises(ValueError, match=f"DCSRRetriever: {next(iter(bad))} must be"):
            DCSRRetriever(query_model=tiny_bert, **bad)


def test_bad_input_to_the_preprocessor_changes_nothing_stored(tmp_path, corpus):
    store = make_store("faiss-flat", tmp_path)
    write(store, corpus)
    with pytest.raises(ValueError, match="used by two different passages"):
        write(store, [Document("New text.", id=corpus[0].id), Document("Other text.", id=corpus[0].id)])
    assert store.get_document_count() == 15
    assert SentencePreprocessor.passages_from_sentences(store.get_all_documents())[0].content in {
        d.content for d in corpus
    }
