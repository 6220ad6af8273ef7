"""cross_encoder_int8.py's variants: smoothing alone changes no score, and each variant quantises exactly
the linear layers it names (the rest stay fp32), so its recorded readings are of the model it describes."""

import numpy as np
import torch
from benchmark_scripts import load_benchmark
from tiny_models import make_tiny_cross_encoder

from haystack_dcsr.core.model.cross_encoder import CrossEncoder

ROWS = [
    ("Who won Super Bowl 50?", "Denver won Super Bowl 50."),
    ("Where was it played?", "In Santa Clara."),
    ("Who is the king?", "The cat sat on the mat."),
    ("What year?", "In 1999 it rained."),
]


def test_smoothing_moves_scale_from_inputs_to_weights_without_changing_outputs():
    int8 = load_benchmark("cross_encoder_int8")
    torch.manual_seed(0)
    linear = torch.nn.Linear(8, 4)
    x = torch.randn(3, 8) * torch.tensor([1, 1, 50, 1, 1, 1, 0.1, 1.0])  # two outlier channels
    smoothed = int8.SmoothedLinear(linear, torch.rand(8) * 10 + 0.1)
    assert torch.allclose(smoothed(x), linear(x), atol=1e-4)
    assert not torch.equal(smoothed.linear.weight, linear.weight)  # the layer given is left as it was


def test_variants_quantise_only_the_layers_they_name(tmp_path):
    int8 = load_benchmark("cross_encoder_int8")
    # weights drawn wide enough that the logits differ by units (the default init gives logits 5e-5 apart)
    scorer = CrossEncoder(make_tiny_cross_encoder(tmp_path / "ce", initializer_range=0.5), device="cpu")
    fp32 = scorer.model
    linears = {n for n, m in fp32.named_modules() if isinstance(m, torch.nn.Linear)}
    attention = int8.stock_dynamic_int8(fp32, lambda name: ".attention." in name)
    dynamic = {n for n, m in attention.named_modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)}
    assert dynamic == {n for n in linears if ".attention." in n} and dynamic
    assert all(isinstance(fp32.get_submodule(n), torch.nn.Linear) for n in linears)  # the fp32 model untouched

    maxima = int8.input_maxima(scorer, ROWS)
    assert set(maxima) == linears and all(m.shape == (fp32.get_submodule(n).in_features,) for n, m in maxima.items())
    smoothed = int8.stock_dynamic_int8(fp32, lambda name: True, maxima)
    assert sum(isinstance(m, int8.SmoothedLinear) for m in smoothed.modules()) == len(linears)
    reference = scorer.score_pairs(ROWS)
    spread = np.ptp(reference)
    scorer.model = smoothed
    error = np.abs(scorer.score_pairs(ROWS) - reference).max()
    assert spread > 1.0 and 0 < error < 0.2 * spread  # int8 of a tiny model: within a fifth of the logits' range
