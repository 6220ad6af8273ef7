"""quantize="int8": per-token int8 linear layers match fp32 where one token is an outlier, every linear
layer is converted and the fp32 model kept, the compiled scorer scores as fp32 does, and bad settings
are refused before anything is scored."""

import json
import os
import platform
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from tiny_models import make_tiny_cross_encoder

from haystack_dcsr.core.model import int8
from haystack_dcsr.core.model.cross_encoder import CrossEncoder
from haystack_dcsr.core.model.int8 import ISA_CAPS, Int8Linear, instruction_sets, int8_linear_layers, quantized

QUESTION = "what is the capital of france?"
TEXTS = ["Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome.", "Madrid is in Spain."]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """Weights drawn wide (std 0.5): at BERT's 0.02 a random model's logits differ by ~1e-5 across texts,
    below any int8 rounding, where a trained reranker's differ by whole units."""
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("cross_encoder"), initializer_range=0.5)


def test_a_scale_per_token_keeps_the_other_tokens_exact_beside_an_outlier():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    x = torch.randn(2, 5, 64)
    x[0, 0, 3] = 500.0  # one token with one huge activation, as in mpnet's feed-forward outputs
    with torch.no_grad():
        expected, got = linear(x), Int8Linear(linear)(x)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    others = torch.ones(2, 5, dtype=torch.bool)
    others[0, 0] = False
    error = (got - expected)[others].abs().max() / expected[others].abs().max()
    assert error < 0.02  # one batch-wide scale (500 / 127: ~4 a level) would round |x| < 4 to a level or two
    assert torch.allclose(got[0, 0], expected[0, 0], rtol=0.05, atol=1.0)


def test_every_linear_layer_is_converted_and_the_fp32_model_kept(model_dir):
    fp32 = CrossEncoder(model_dir, device="cpu").model
    names = {n for n, m in fp32.named_modules() if isinstance(m, torch.nn.Linear)}
    converted = int8_linear_layers(fp32)
    assert {n for n, m in converted.named_modules() if isinstance(m, Int8Linear)} == names
    assert not any(isinstance(m, torch.nn.Linear) for m in converted.modules())
    assert all(isinstance(fp32.get_submodule(n), torch.nn.Linear) for n in names)


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("clang++")), reason="torch.compile needs a C++ compiler")
def test_the_compiled_int8_scorer_scores_as_fp32_does_from_concurrent_first_calls(model_dir, int8_on_any_cpu):
    pairs = [(QUESTION, t) for t in TEXTS] * 3  # 12 pairs: batches of 5, 5 and 2 of different lengths
    reference = CrossEncoder(model_dir, device="cpu").score_pairs(pairs)
    int8 = CrossEncoder(model_dir, quantize="int8", batch_size=5)  # no device: int8's is the CPU
    assert int8.device.type == "cpu"
    assert sum(isinstance(m, Int8Linear) for m in int8.model.modules()) > 0
    with ThreadPoolExecutor(2) as pool:  # a served pipeline's first two queries arrive during compilation
        results = list(pool.map(int8.score_pairs, [pairs, pairs[::-1]]))
    for got in (results[0], results[1][::-1]):
        assert np.abs(got - reference).max() < 0.1 * (reference.max() - reference.min())
        assert np.argsort(-got[:4]).tolist() == np.argsort(-reference[:4]).tolist()


def test_bad_settings_are_refused_before_scoring(model_dir, monkeypatch, int8_on_any_cpu):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    with pytest.raises(ValueError, match="quantize must be None or one of \\('int8',\\), got 'int4'"):
        quantized(model, "int4", torch.device("cpu"))
    with pytest.raises(ValueError, match="quantize='int8' is for CPU inference; on cuda"):
        CrossEncoder(model_dir, device="cuda", quantize="int8")  # refused before moving to a GPU
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs a C.. compiler, none found"):
        quantized(model, "int8", torch.device("cpu"))


def test_the_1x_ranker_serves_int8_on_the_cpu_and_refuses_unknown_modes(model_dir, caplog, int8_on_any_cpu):
    import logging
    import time

    from haystack.schema import Document

    from haystack_dcsr import CrossEncoderRanker

    with caplog.at_level(logging.WARNING, logger="haystack_dcsr.core.model.int8"):
        ranker = CrossEncoderRanker(model=model_dir, quantize="int8")  # use_gpu stays True: int8 is the CPU's
    # compiled when the node loads, for single inputs and for batches, and said so
    said = caplog.text
    assert said.count("compiling the int8 model") == 2 and "compiled for single inputs in" in said
    assert "compiled for batches in" in said
    caplog.clear()
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="haystack_dcsr.core.model.int8"):
        for n in (1, 3, 7):  # any first query size: no compile left
            ranker.predict("q", [Document(content=f"passage {i}", id=str(i), score=1.0) for i in range(n)])
    assert "compiling" not in caplog.text and time.perf_counter() - started < 5
    assert ranker.scorer.device.type == "cpu"
    assert any(isinstance(m, Int8Linear) for m in ranker.scorer.model.modules())
    with pytest.raises(ValueError, match="CrossEncoderRanker: quantize must be 'int8', or null, got 'fp8'"):
        CrossEncoderRanker(model=model_dir, quantize="fp8")


def test_instruction_sets_record_the_caps_a_run_was_given(monkeypatch):
    for cap in ISA_CAPS:
        monkeypatch.delenv(cap, raising=False)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    recorded = instruction_sets()
    assert recorded["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert recorded["MKL_ENABLE_INSTRUCTIONS"] is None and recorded["ATEN_CPU_CAPABILITY"] is None
    assert recorded["pytorch_capability"] == torch.backends.cpu.get_cpu_capability()


EXACTNESS_CHECK = """
import json, torch
from haystack_dcsr.core.model import int8
levels = int8.weight_levels_for_this_cpu()
torch.manual_seed(0)
weights = torch.randint(-levels, levels + 1, (256, 64), dtype=torch.int8)
weights[:, 0], weights[:, 1] = levels, -levels  # the worst cases: every weight at the top of its range
inputs = torch.randint(-128, 128, (8, 256), dtype=torch.int8)
inputs[0], inputs[1] = 127, -128  # and every input
exact = torch.equal(torch._int_mm(inputs, weights), inputs.int() @ weights.int())
print(json.dumps({
    "saturates": int8.int8_matmul_saturates(), "dot_products": int8.has_int8_dot_products(),
    "levels": levels, "exact": exact, "slowdown": int8.int8_slowdown_reason(),
}))
"""


def test_on_any_cpu_the_weights_chosen_keep_the_int8_matmul_exact_and_int8_runs_only_where_it_pays():
    """A property of every CPU, whatever its oneDNN does: the weight range chosen for this process's
    matmul keeps even the worst case exact, and int8 is served only with dot-product instructions and a
    matmul that does not saturate. oneDNN's ISA cap stands in for CPUs without VNNI (on x86 only: the cap
    is an x86 setting; elsewhere it is ignored and the property still holds). oneDNN reads its cap once
    a process, so each cap is a process of its own; the three run side by side."""
    caps = [None, "AVX2", "AVX512_CORE"]
    probes = []
    for cap in caps:
        env = {k: v for k, v in os.environ.items() if k != "ONEDNN_MAX_CPU_ISA"}
        if cap is not None:
            env["ONEDNN_MAX_CPU_ISA"] = cap
        probes.append(
            subprocess.Popen([sys.executable, "-c", EXACTNESS_CHECK], env=env, stdout=subprocess.PIPE, text=True)
        )
    for cap, probe in zip(caps, probes):
        out, _ = probe.communicate(timeout=300)
        assert probe.returncode == 0, (cap, out)
        found = json.loads(out.splitlines()[-1])
        assert found["exact"], (cap, found)
        assert found["levels"] == (63 if found["saturates"] else 127), (cap, found)
        assert (found["slowdown"] is None) == (found["dot_products"] and not found["saturates"]), (cap, found)
        if cap is not None and platform.machine() in ("x86_64", "AMD64"):
            assert not found["dot_products"] and found["slowdown"] is not None, (cap, found)  # the cap leaves VNNI out


def test_where_int8_does_not_pay_fp32_is_served_with_a_warning_saying_why(model_dir, monkeypatch, caplog):
    monkeypatch.delenv(int8.FORCE_INT8, raising=False)
    monkeypatch.setattr(int8, "int8_slowdown_reason", lambda: "this CPU has no int8 dot-product instructions")
    with caplog.at_level("WARNING", logger="haystack_dcsr.core.model.int8"):
        scorer = CrossEncoder(model_dir, quantize="int8")
    assert "quantize='int8' ignored, serving fp32: this CPU has no int8 dot-product instructions" in caplog.text
    assert f"{int8.FORCE_INT8}=1" in caplog.text
    assert scorer.quantize is None and scorer.device.type == "cpu"
    assert not any(isinstance(m, Int8Linear) for m in scorer.model.modules())
    reference = CrossEncoder(model_dir, device="cpu").score_pairs([(QUESTION, t) for t in TEXTS])
    assert np.allclose(scorer.score_pairs([(QUESTION, t) for t in TEXTS]), reference, atol=1e-6)
    with pytest.raises(ValueError, match="quantize='int8' is for CPU inference; on cuda"):
        CrossEncoder(model_dir, device="cuda", quantize="int8")  # a GPU is still refused, not quietly served fp32
    monkeypatch.setenv(int8.FORCE_INT8, "1")  # forced: int8 all the same
    assert int8.quantized(torch.nn.Sequential(torch.nn.Linear(8, 8)), "int8", torch.device("cpu")) is not None


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("clang++")), reason="quantized() needs a C++ compiler")
def test_a_saturating_cpu_forced_to_int8_gets_7_bit_weights(model_dir, monkeypatch, caplog):
    monkeypatch.setattr(int8, "int8_matmul_saturates", lambda: True)
    monkeypatch.setenv(int8.FORCE_INT8, "1")
    fp32 = CrossEncoder(model_dir, device="cpu").model
    with caplog.at_level("WARNING"):
        served = int8.quantized(fp32, "int8", torch.device("cpu"))
    layers = [m for m in served.modules() if isinstance(m, Int8Linear)]
    assert layers and max(int(m.weight_t.abs().max()) for m in layers) == 63
    assert "saturates (no VNNI)" in caplog.text
    with pytest.raises(ValueError, match="weight_levels must be in 1..127"):
        Int8Linear(torch.nn.Linear(4, 4), weight_levels=128)


def test_non_finite_int8_outputs_are_refused_not_ranked():
    class Broken(torch.nn.Module):
        def forward(self, x):
            return (x * float("nan"),)

    guarded = int8.FiniteOutputs(Broken(), "int8")
    with pytest.raises(RuntimeError, match="quantize='int8' produced non-finite outputs on this CPU"):
        guarded(torch.ones(2, 3))
    fine = int8.FiniteOutputs(torch.nn.Identity(), "int8")
    assert torch.equal(fine(torch.ones(2, 3)), torch.ones(2, 3))
    assert int8.FiniteOutputs(torch.nn.Linear(3, 2), "int8").in_features == 3  # callers read e.g. ``config``
