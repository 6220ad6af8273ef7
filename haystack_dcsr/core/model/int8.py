"""Int8 inference on the CPU, for the reranker and for DCSR's towers: int8 weights per output channel,
int8 activations per token, compiled so that quantising costs less than the int8 matmul saves.

Why this scheme and not PyTorch's ``quantize_dynamic``: that one quantises a whole batch's activations
with one scale, and transformer feed-forward layers carry outlier channels, so every other value is left
a few levels and rankings change. One scale per token keeps them. Run eagerly, the extra passes
(absolute maximum, round, cast, rescale) cost what the int8 matmul saves; compiled (``torch.compile``,
Inductor), they fuse around it. The measurements: ``docs/benchmarks/scale.md``; how to use it:
``docs/guides/int8.md``.

Int8 pays only where the CPU has int8 dot-product instructions (VNNI on x86, ``sdot`` on Arm). Without
them oneDNN either multiplies int8 pairs into 16-bit sums (``vpmaddubsw``, the input shifted to unsigned: two
products of 255 x 127 overflow and the matmul silently saturates) or takes a slower exact path; either way
int8 is slower than fp32 there, by several times. ``int8_slowdown_reason`` says why int8 would not pay on
this CPU, and ``quantized`` then serves fp32 with a warning naming it. ``weight_levels_for_this_cpu`` keeps the int8
matmul exact on any CPU (7-bit weights where this process's matmul saturates) for those who force int8
anyway (``FORCE_INT8``).
"""

import copy
import functools
import logging
import os
import shutil
import time
from typing import Callable, Literal, Optional, get_args

import torch

logger = logging.getLogger(__name__)

Quantize = Literal["int8"]
QUANTIZE_MODES = get_args(Quantize)
# environment caps on the instructions kernels may use: the int8 matmul's (oneDNN), the fp32 matmul's
# (MKL), and the rest of PyTorch's and the code Inductor generates
ISA_CAPS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")
# set to 1 to run int8 even where it does not pay (to measure it there): weights stay exact (weight_levels)
FORCE_INT8 = "HAYSTACK_DCSR_FORCE_INT8"
# oneDNN ISA caps that leave out every int8 dot-product instruction (oneDNN's names)
CAPS_WITHOUT_DOT_PRODUCTS = {"SSE41", "AVX", "AVX2", "AVX512_CORE", "AVX512_MIC", "AVX512_MIC_4OPS"}
# /proc/cpuinfo flags of int8 dot-product instructions: x86's VNNI (AVX512, AVX and AMX forms), Arm's sdot
DOT_PRODUCT_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"}


class Int8Linear(torch.nn.Module):
    """``linear`` with int8 weights (one scale per output channel) and per-token int8 inputs, through
    ``torch._int_mm`` (int8 x int8 -> int32; VNNI instructions where the CPU has them). ``weight_levels``: the
    largest weight; by default the one that keeps this process's matmul exact (``weight_levels_for_this_cpu``)."""

    def __init__(self, linear: torch.nn.Linear, weight_levels: Optional[int] = None):
        super().__init__()
        weight_levels = weight_levels_for_this_cpu() if weight_levels is None else weight_levels
        if not 1 <= weight_levels <= 127:
            raise ValueError(f"weight_levels must be in 1..127 (int8), got {weight_levels}")
        weight = linear.weight.detach().float()
        scale = weight.abs().amax(dim=1).clamp(min=1e-8) / float(weight_levels)
        self.register_buffer("weight_t", torch.round(weight / scale[:, None]).to(torch.int8).t().contiguous())
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).float()
        scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127.0
        quantised = torch.round(rows / scale).to(torch.int8)
        out = torch._int_mm(quantised, self.weight_t).float() * (scale * self.weight_scale)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.out_features).to(x.dtype)


def replace_linear_layers(
    model: torch.nn.Module,
    replace: Callable[[str, torch.nn.Linear], torch.nn.Module],
    keep: Callable[[str], bool] = lambda name: True,
) -> torch.nn.Module:
    """A copy of ``model`` whose ``nn.Linear`` layers named by ``keep`` are ``replace(name, layer)``;
    ``model`` is left as it was (the benchmark compares several replacements against it)."""
    model = copy.deepcopy(model)
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear) and keep(name):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, replace(name, module))
    return model


def int8_linear_layers(model: torch.nn.Module, weight_levels: Optional[int] = None) -> torch.nn.Module:
    """A copy of ``model`` with every ``nn.Linear`` an ``Int8Linear``."""
    return replace_linear_layers(model, lambda name, linear: Int8Linear(linear, weight_levels))


def cpu_flags() -> set:
    """The CPU's feature flags as Linux reports them (empty elsewhere)."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    return {
        flag
        for line in text.splitlines()
        if line.split(":")[0].strip() in ("flags", "Features")
        for flag in line.split(":", 1)[1].split()
    }


def has_int8_dot_products() -> bool:
    """Whether the int8 matmul may use int8 dot-product instructions here: the CPU has them (VNNI, AMX or
    Arm's sdot) and no ``ONEDNN_MAX_CPU_ISA`` cap leaves them out."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or "").upper()
    if cap in CAPS_WITHOUT_DOT_PRODUCTS:
        return False
    return bool(DOT_PRODUCT_FLAGS & cpu_flags()) or bool(getattr(torch.cpu, "_is_vnni_supported", lambda: False)())


def int8_slowdown_reason() -> Optional[str]:
    """Why int8 would be slower than fp32 on this CPU, or None where it pays (int8 dot products, a matmul
    that does not saturate). Without them int8 indexed 13-15x slower than fp32 and answered a query 3.6-5.6x
    slower on an AVX2-only AMD EPYC (``docs/guides/int8.md``)."""
    if int8_matmul_saturates():
        return "this CPU's int8 matmul saturates: it has no int8 dot-product instructions (VNNI)"
    if not has_int8_dot_products():
        cap = os.environ.get("ONEDNN_MAX_CPU_ISA")
        where = f"ONEDNN_MAX_CPU_ISA={cap} leaves out" if cap else "this CPU has no"
        return f"{where} int8 dot-product instructions (VNNI, AMX or Arm's sdot)"
    return None


def weight_levels_for_this_cpu() -> int:
    """The largest int8 weight that keeps this process's int8 matmul exact: 127, or 63 (7 bits) where it
    sums pairs of products in 16 bits, where 255 x 63 x 2 stays below 2^15."""
    return 63 if int8_matmul_saturates() else 127


@functools.lru_cache(maxsize=None)
def int8_matmul_saturates() -> bool:
    """Whether this process's int8 matmul gets the worst case (every product 127 x 127) wrong, as
    oneDNN's does without VNNI; the answer holds for the process (oneDNN reads its caps once)."""
    a, b = torch.full((4, 64), 127, dtype=torch.int8), torch.full((64, 8), 127, dtype=torch.int8)
    return not torch.equal(torch._int_mm(a, b), a.int() @ b.int())


def instruction_sets() -> dict:
    """What the kernels may use in this process, for a benchmark's report: with the caps set, a CPU
    with VNNI (int8 dot products in one instruction) stands in for one without; its clocks, caches and
    memory stay its own."""
    caps = {c: os.environ.get(c) for c in ISA_CAPS}
    return {
        "pytorch_capability": torch.backends.cpu.get_cpu_capability(),
        **caps,
        "int8_dot_products": has_int8_dot_products(),
        "saturates": int8_matmul_saturates(),
    }


class FiniteOutputs(torch.nn.Module):
    """The compiled int8 model, its first output checked to be finite: compiled kernels that go wrong
    on some CPU (int8_isa.sh saw NaN with PyTorch's own kernels capped to AVX2) would otherwise rank
    passages by garbage without a word. One reduction over the outputs; nothing else changes."""

    def __init__(self, model: torch.nn.Module, mode: str):
        super().__init__()
        self.model, self.mode = model, mode
        # torch.compile specialises a batch of one, then compiles once more for any other (dynamic) batch size
        self.compiled: set = set()

    def __getattr__(self, name: str):
        """The wrapped model's attributes (``config`` and the like), as callers of the bare model expect."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("model"), name)

    def forward(self, *args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()), None)
        kind = "single inputs" if isinstance(first, torch.Tensor) and first.shape[0] == 1 else "batches"
        if kind in self.compiled:
            outputs = self.model(*args, **kwargs)
        else:  # a visible stall: say so, and how long it took (warm_up() moves it to load time)
            logger.warning("quantize=%r: compiling the int8 model for %s (once; tens of seconds)", self.mode, kind)
            started = time.perf_counter()
            outputs = self.model(*args, **kwargs)
            self.compiled.add(kind)
            logger.warning("quantize=%r: compiled for %s in %.1f s", self.mode, kind, time.perf_counter() - started)
        if not bool(torch.isfinite(outputs[0]).all()):
            raise RuntimeError(
                f"quantize={self.mode!r} produced non-finite outputs on this CPU "
                f"({instruction_sets()}); serve with quantize=None"
            )
        return outputs


def warm_up(run_batch) -> None:
    """Compile an int8 model now, for single inputs and for batches (``run_batch(n)`` runs n inputs),
    so no user request waits for it; the nodes call it when they load, ``serve`` before it listens."""
    run_batch(1)
    run_batch(2)


def default_device(device: Optional[str], mode: Optional[Quantize]) -> Optional[str]:
    """The device a model is built on: the one asked for, else the CPU when quantising (int8 runs nowhere
    else), else None (the caller's own pick: CUDA when available)."""
    return device or ("cpu" if mode is not None else None)


def slowdown_warning(mode: Quantize) -> Optional[str]:
    """The warning to give where ``mode`` would be slower than fp32 on this CPU, or None where it pays
    (or ``FORCE_INT8=1`` asks for it anyway)."""
    reason = int8_slowdown_reason()
    if reason is None or os.environ.get(FORCE_INT8) == "1":
        return None
    return (
        f"quantize={mode!r} ignored, serving fp32: {reason}, where int8 runs several times slower than fp32 "
        f"(set {FORCE_INT8}=1 to run int8 anyway)"
    )


def quantized(model: torch.nn.Module, mode: Quantize, device: torch.device) -> Optional[torch.nn.Module]:
    """``model`` as ``mode`` asks, for inference on ``device``; the first call compiles (~2 min for a
    BERT-base model on 2 cores; lengths vary without recompiling). None, with a warning saying why, where
    int8 would be slower than fp32 on this CPU: the caller serves ``model`` itself."""
    if mode not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be None or one of {QUANTIZE_MODES}, got {mode!r}")
    if device.type != "cpu":
        raise ValueError(f"quantize={mode!r} is for CPU inference; on {device.type} score in fp32 or half precision")
    warning = slowdown_warning(mode)
    if warning is not None:
        logger.warning(warning)
        return None
    if not (os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")):
        raise RuntimeError(f"quantize={mode!r} compiles the model (torch.compile): it needs a C++ compiler, none found")
    levels = weight_levels_for_this_cpu()
    if levels < 127:
        logger.warning(
            "quantize=%r: this CPU's int8 matmul saturates (no VNNI): weights kept to 7 bits so it stays exact", mode
        )
    return FiniteOutputs(torch.compile(int8_linear_layers(model, levels), dynamic=True), mode)
