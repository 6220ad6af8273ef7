"""Training memory: what a run peaks at, and what autograd holds for backward.

A DCSR step encodes every candidate's *whole passage* with gradients: activations, not weights,
are most of the memory. Measured on SQuAD with MiniLM (the study ``studies/train_memory.py``,
docs/research/studies.md): a batch of 32 questions is ~80 passage windows, ~12k tokens, and autograd holds
~0.4 MB a token for backward (4.9 GiB of a 6.0 GiB peak; the data and model take 0.8 GiB). The gradient cache
(``grad_cache_chunk``) bounds that part by the chunk instead of the batch.
"""

import resource
import sys
from typing import Optional

import torch


def peak_memory_gb(device: Optional[torch.device] = None) -> float:
    """Peak GPU memory allocated by torch on a CUDA device; else the process's peak resident set."""
    if device is not None and device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (2**30 if sys.platform == "darwin" else 2**20)


class _Held:
    """A tensor saved for backward; counts itself out when autograd frees it."""

    __slots__ = ("tensor", "meter", "nbytes")

    def __init__(self, tensor: torch.Tensor, meter: "SavedActivations"):
        self.tensor, self.meter = tensor, meter
        self.nbytes = tensor.numel() * tensor.element_size()
        meter.live += self.nbytes
        meter.peak = max(meter.peak, meter.live)

    def __del__(self):
        self.meter.live -= self.nbytes


class SavedActivations:
    """Peak bytes of the tensors autograd holds for backward inside the ``with`` block (views of one
    tensor count once each: an upper bound that compares like with like, and that does not depend on
    the allocator or the device)."""

    def __init__(self):
        self.live = 0
        self.peak = 0
        self._hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: _Held(t, self), lambda held: held.tensor)

    def __enter__(self) -> "SavedActivations":
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)
