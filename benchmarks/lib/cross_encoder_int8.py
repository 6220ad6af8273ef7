"""Does int8 make the reranker cheaper without changing what it prefers?

Why: on 2 CPU cores the mpnet reranker scores ~3 pairs a second, which caps how deep it can rerank.
This CPU has AVX512-VNNI, so int8 matmuls should run 2-4x faster than fp32. A reranker earns its place
on fine distinctions (which of two near-identical questions a passage answers), so the test is the
contrast reading itself: the dev contrast pairs (``evaluation.dev_contrast_pairs``) scored in fp32 and by each int8
variant in one run, with speed, logit agreement and the preference flips against fp32 (paired McNemar).
The variants: PyTorch's stock dynamic int8 ``nn.Linear`` (weights per output channel, activations one
scale a batch) over every layer, over every layer with SmoothQuant's input smoothing, and over subsets;
then what ``CrossEncoder(quantize="int8")`` serves (``haystack_dcsr/core/model/int8.py``: a scale per token,
compiled), whose compile time is reported apart from its speed.

    python benchmarks/speed.py reranker runs/cross_encoder_mpnet_100/last
    # -> benchmarks/results/cross_encoder_int8.json (every variant but the eager one; recorded before it was added)
    python benchmarks/speed.py reranker runs/cross_encoder_mpnet_100/last --only "per-token int8, eager" \
        'per-token int8, compiled (quantize="int8")' --out benchmarks/results/cross_encoder_int8_eager.json
"""

import argparse
import copy
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

from evaluation import dev_contrast_pairs, train_contrast_pairs  # noqa: E402
from significance import mcnemar_exact  # noqa: E402

from haystack_dcsr.core.model.cross_encoder import CrossEncoder  # noqa: E402
from haystack_dcsr.core.model.int8 import instruction_sets, int8_linear_layers, quantized, replace_linear_layers  # noqa: E402
from haystack_dcsr.training.cli import read_corpus  # noqa: E402

Build = Callable[[torch.nn.Module, Dict[str, torch.Tensor]], torch.nn.Module]  # (fp32 model, input maxima)


def feed_forward_output(name: str) -> bool:
    return name.endswith("output.dense") and ".attention." not in name


VARIANTS: Dict[str, Build] = {
    "stock dynamic int8, every linear layer": lambda model, maxima: stock_dynamic_int8(model, lambda name: True),
    # SmoothQuant's alpha: its default 0.5, and 0.8, more of each outlier's scale moved into the weights
    "stock dynamic int8, every linear layer, inputs smoothed (alpha 0.5)": (
        lambda model, maxima: stock_dynamic_int8(model, lambda name: True, maxima, 0.5)
    ),
    "stock dynamic int8, every linear layer, inputs smoothed (alpha 0.8)": (
        lambda model, maxima: stock_dynamic_int8(model, lambda name: True, maxima, 0.8)
    ),
    "stock dynamic int8, all but the feed-forward output": (
        lambda model, maxima: stock_dynamic_int8(model, lambda name: not feed_forward_output(name))
    ),
    "stock dynamic int8, attention only": (
        lambda model, maxima: stock_dynamic_int8(model, lambda name: ".attention." in name)
    ),
    "per-token int8, eager": lambda model, maxima: int8_linear_layers(model),
    'per-token int8, compiled (quantize="int8")': lambda model, maxima: quantized(model, "int8", torch.device("cpu")),
    # what quantize="int8" served before it checked for saturation: 8-bit weights whatever the CPU (on one
    # without VNNI its int8 matmul may saturate; int8_isa.sh reads the two side by side there)
    "per-token int8, compiled, 8-bit weights always": (
        lambda model, maxima: torch.compile(int8_linear_layers(model, 127), dynamic=True)
    ),
}


class SmoothedLinear(torch.nn.Module):
    """SmoothQuant (Xiao et al., 2023): input channel j divided by s_j and the weight's column j multiplied
    by it, so one outlier channel no longer sets the scale that every activation is quantised with."""

    def __init__(self, linear: torch.nn.Linear, scale: torch.Tensor):
        super().__init__()
        self.linear = copy.deepcopy(linear)
        with torch.no_grad():
            self.linear.weight.mul_(scale)
        self.register_buffer("inv_scale", 1.0 / scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inv_scale)


def input_maxima(scorer: CrossEncoder, rows: List[Tuple[str, str]]) -> Dict[str, torch.Tensor]:
    """Each linear layer's largest |input| per channel over ``rows`` (calibration: training pairs)."""
    maxima: Dict[str, torch.Tensor] = {}

    def record(name: str):
        def hook(module, inputs, output):
            seen = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0)
            maxima[name] = torch.maximum(maxima[name], seen) if name in maxima else seen

        return hook

    linears = [(n, m) for n, m in scorer.model.named_modules() if isinstance(m, torch.nn.Linear)]
    hooks = [module.register_forward_hook(record(name)) for name, module in linears]
    scorer.score_pairs(rows)
    for hook in hooks:
        hook.remove()
    return maxima


def stock_dynamic_int8(
    model: torch.nn.Module, keep: Callable[[str], bool], maxima=None, alpha: float = 0.5
) -> torch.nn.Module:
    """A copy of ``model`` whose linear layers named by ``keep`` are ``quantize_dynamic``'s, their inputs
    first smoothed with ``alpha`` where ``maxima`` (each layer's input maxima) are given."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and keep(n)]
    if maxima is None:
        model = copy.deepcopy(model)
    else:

        def smoothed(name: str, linear: torch.nn.Linear) -> SmoothedLinear:
            weight_max = linear.weight.detach().abs().amax(0).clamp(min=1e-5)
            scale = (maxima[name].clamp(min=1e-5) ** alpha / weight_max ** (1 - alpha)).clamp(min=1e-5)
            return SmoothedLinear(linear, scale)

        model = replace_linear_layers(model, smoothed, keep)
        names = [f"{name}.linear" for name in names]
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice, once per layer
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {name: per_channel_dynamic_qconfig for name in names})


def scored_rows(pair) -> List[Tuple[str, str]]:
    """q' with its own gold, q' with q's gold, q with its own, q with q''s: the two preferences' scores."""
    q, gold, edited, own, _ = pair
    return [(edited, own), (edited, gold), (q, gold), (q, own)]


def timed_scores(scorer: CrossEncoder, pairs: List[Tuple[str, str]]) -> Tuple[np.ndarray, float]:
    start = time.perf_counter()
    scores = scorer.score_pairs(pairs)
    return scores, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a train-cross-encoder directory")
    parser.add_argument("--contrast-set", type=Path, default=ROOT / "data/meq_dev")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data/corpus.jsonl")
    parser.add_argument("--train-file", type=Path, default=ROOT / "data/squad_train_meq.jsonl")
    parser.add_argument("--calibration-pairs", type=int, default=32, help="training MEQ pairs (x4 rows)")
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/cross_encoder_int8.json")
    args = parser.parse_args()
    texts = {p.key: p.text for p in read_corpus(str(args.corpus))}
    pairs = dev_contrast_pairs(args.contrast_set, texts)
    rows = [row for pair in pairs for row in scored_rows(pair)]
    calibration = [
        row for pair in train_contrast_pairs(args.train_file, args.calibration_pairs, 1) for row in scored_rows(pair)
    ]
    scorer = CrossEncoder(args.model, device="cpu")
    fp32 = scorer.model
    reference, seconds = timed_scores(scorer, rows)

    def reading(scores: np.ndarray) -> Dict[str, List[bool]]:
        s = scores.reshape(len(pairs), 4)
        return {"meq": (s[:, 0] > s[:, 1]).tolist(), "q": (s[:, 2] > s[:, 3]).tolist()}

    base = reading(reference)
    result = {
        "command": " ".join(sys.argv),
        "threads": torch.get_num_threads(),
        "quantized_engine": torch.backends.quantized.engine,
        "instruction_sets": instruction_sets(),
        "pairs": len(pairs),
        "scored": len(rows),
        "variants": {"fp32": {"pairs_per_s": len(rows) / seconds, **{k: float(np.mean(v)) for k, v in base.items()}}},
    }
    print("fp32", json.dumps(result["variants"]["fp32"]), flush=True)
    maxima = input_maxima(scorer, calibration)
    ratios = sorted(((float(v.max() / v.median()), n) for n, v in maxima.items()), reverse=True)
    result["largest input outliers (max / median channel)"] = {n: round(r, 1) for r, n in ratios[:6]}
    variants = {name: VARIANTS[name] for name in args.only or VARIANTS}
    for name, build in variants.items():
        scorer.model = build(fp32, maxima)
        _, first_call = timed_scores(scorer, calibration[:64])  # a compiled variant compiles here
        scores, seconds = timed_scores(scorer, rows)
        won = reading(scores)
        result["variants"][name] = {
            "first_64_calibration_rows_s": first_call,
            "pairs_per_s": len(rows) / seconds,
            **{k: float(np.mean(v)) for k, v in won.items()},
            "pearson": float(pearsonr(reference, scores)[0]),
            "spearman": float(spearmanr(reference, scores)[0]),
            "max_abs_logit_change": float(np.abs(reference - scores).max()),
            "preferences_changed": int(sum(a != b for k in base for a, b in zip(base[k], won[k]))),
            "paired_vs_fp32": {k: mcnemar_exact(base[k], won[k]) for k in base},
        }
        print(name, json.dumps(result["variants"][name]), flush=True)
    scorer.model = fp32  # fp32 again last: the speed ratios are read against the mean of both fp32 runs
    _, seconds = timed_scores(scorer, rows)
    result["variants"]["fp32"]["pairs_per_s_again"] = len(rows) / seconds
    fp32_speed = (result["variants"]["fp32"]["pairs_per_s"] + len(rows) / seconds) / 2
    for name in variants:
        result["variants"][name]["speed_vs_fp32"] = result["variants"][name]["pairs_per_s"] / fp32_speed
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: round(v.get("speed_vs_fp32", 1.0), 2) for k, v in result["variants"].items()}))


if __name__ == "__main__":
    main()
