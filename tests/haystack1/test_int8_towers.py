"""quantize="int8" for DCSR's towers: encoding runs the compiled int8 copy and stays close to fp32, the
trainer's differentiable path and ``save`` keep the fp32 model, a retriever indexes and answers with it,
and bad settings are refused at construction."""

import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from test_store_consistency import make_store
from tiny_models import make_tiny_bert

from haystack_dcsr import DCSRRetriever, SentencePreprocessor
from haystack_dcsr.core.model.encoder import PassageTower, QueryTower
from haystack_dcsr.core.model.int8 import Int8Linear

PASSAGES = [
    ["Paris is the capital of France.", "It lies on the Seine."],
    ["Berlin is the capital of Germany.", "The Spree runs through it.", "It has many museums."],
    ["Jupiter is the largest planet.", "It is a gas giant."],
]
needs_compiler = pytest.mark.skipif(
    not (shutil.which("g++") or shutil.which("clang++")), reason="torch.compile needs a C++ compiler"
)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), pooling="mean", normalize=True, temperature=0.05)


@pytest.fixture(scope="module")
def int8_retriever(bert, tmp_path_factory, int8_on_any_cpu):
    """This module's one compiled int8 model: a retriever's two towers, compiled once and shared by its tests
    (each compile costs tens of seconds on a machine that has not compiled it before)."""
    store = make_store("faiss-flat", tmp_path_factory.mktemp("int8_store"), name="int8")
    return DCSRRetriever(document_store=store, query_model=bert, progress_bar=False, quantize="int8")


@needs_compiler
def test_int8_towers_encode_as_fp32_does_and_keep_the_fp32_model_for_training_and_saving(
    bert, tmp_path, int8_retriever
):
    fp32, int8 = PassageTower(bert, device="cpu"), int8_retriever.model.passage_tower
    assert int8.device.type == "cpu"  # no device given: int8's is the CPU
    assert any(isinstance(m, Int8Linear) for m in int8.inference_model.modules())
    assert not any(isinstance(m, Int8Linear) for m in int8.model.modules())
    expected, got = fp32.encode(PASSAGES), int8.encode(PASSAGES)
    assert got.shape == expected.shape == (7, 32)
    assert (np.sum(got * expected, axis=1) > 0.99).all()  # unit vectors: their cosines
    assert not np.array_equal(got, expected)  # the int8 copy did the encoding
    windows = int8.text_windows(["Paris is the capital of France."])
    assert torch.equal(int8.forward(windows), fp32.forward(windows))  # the trainer's path is fp32
    int8.save(tmp_path / "saved")
    saved, loaded = load_file(tmp_path / "saved" / "model.safetensors"), fp32.model.state_dict()
    assert all(torch.equal(saved[name], loaded[name]) for name in saved)
    queries = ["capital of germany", "largest planet"]
    q32, q8 = QueryTower(bert, device="cpu").encode(queries), int8_retriever.model.query_tower.encode(queries)
    assert any(isinstance(m, Int8Linear) for m in int8_retriever.model.query_tower.inference_model.modules())
    assert (np.sum(q32 * q8, axis=1) > 0.99).all()


@needs_compiler
def test_an_int8_retriever_indexes_and_answers_as_the_fp32_one(bert, tmp_path, corpus, int8_retriever):
    answers = {}
    fp32 = DCSRRetriever(document_store=make_store("faiss-flat", tmp_path), query_model=bert, progress_bar=False)
    for mode, retriever in ((None, fp32), ("int8", int8_retriever)):
        store = retriever.document_store
        store.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
        store.update_embeddings(retriever)
        answers[mode] = [d.id for d in retriever.retrieve("Who discovered penicillin?", top_k=3)]
        assert retriever.passage_encoder.device.type == retriever.query_encoder.tower.device.type == "cpu"
    assert int8_retriever.passage_encoder is int8_retriever.model.passage_tower  # the compiled copy indexed
    assert answers["int8"][0] == answers[None][0]


def test_bad_int8_settings_are_refused_at_construction(bert):
    with pytest.raises(ValueError, match="DCSRRetriever: quantize must be 'int8', or null, got 'int4'"):
        DCSRRetriever(query_model=bert, quantize="int4")
    with pytest.raises(ValueError, match="quantize='int8' replaces precision='fp16': give one of them"):
        QueryTower(bert, precision="fp16", quantize="int8")
    with pytest.raises(ValueError, match="quantize='int8' is for CPU inference; on cuda"):
        QueryTower(bert, device="cuda", quantize="int8")
