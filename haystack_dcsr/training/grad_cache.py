"""Gradient cache (Gao et al., 2021): large contrastive batches in small GPU memory.

The contrastive loss needs every vector of the global batch at once, but not every activation.
So: (1) encode the batch in chunks without autograd, keeping each chunk's RNG state; (2) compute
the loss on detached copies of the vectors and backpropagate it to them only; (3) re-encode each
chunk with autograd under its saved RNG state (same dropout masks, so the same vectors) and push
the cached vector gradients through it. Peak memory is one chunk's activations; the gradients are
those of the whole batch in one pass (tested against the plain step).
"""

import contextlib
from typing import Callable, List, Optional, Sequence, Tuple

import torch

from haystack_dcsr.core.model.encoder import Window, renumber

Forward = Callable[[List[Window], int, List[Window], int], Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]]


class CachedPass:
    """One batch's chunked, gradient-free pass; ``replay`` finishes the backward.

    :param forward: ``(query_windows, n_q, passage_windows, n_p) -> (q_vectors, p_vectors)`` (the
        DDP-wrapped dual encoder).
    :param chunk: windows per forward pass (queries and passages chunked separately).
    """

    def __init__(
        self,
        forward: Forward,
        query_windows: Sequence[Window],
        n_queries: int,
        passage_windows: Sequence[Window],
        n_rows: int,
        chunk: int,
        device: torch.device,
    ):
        self.forward, self.device = forward, device
        self.chunks: List[Tuple[str, List[Window], List[int], torch.Tensor, Optional[torch.Tensor]]] = []
        self.queries = self._encode("q", query_windows, n_queries, chunk)
        self.passages = self._encode("p", passage_windows, n_rows, chunk)

    def _encode(self, side: str, windows: Sequence[Window], n_rows: int, chunk: int) -> Optional[torch.Tensor]:
        if not windows:
            return None
        out: Optional[torch.Tensor] = None
        for start in range(0, len(windows), chunk):
            local, rows = renumber(list(windows[start : start + chunk]))
            cpu_state = torch.get_rng_state()
            cuda_state = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
            with torch.no_grad():
                vectors = self._run(side, local, len(rows))
            if out is None:
                out = torch.zeros((n_rows, vectors.shape[1]), device=vectors.device)
            out[torch.tensor(rows, device=vectors.device)] = vectors.float()
            self.chunks.append((side, local, rows, cpu_state, cuda_state))
        assert out is not None
        return out.requires_grad_()

    def _run(self, side: str, windows: List[Window], n: int) -> torch.Tensor:
        q, p = self.forward(windows, n, [], 0) if side == "q" else self.forward([], 0, windows, n)
        return q if side == "q" else p

    def replay(self, no_sync: Callable[[], contextlib.AbstractContextManager], sync_last: bool) -> None:
        """Backpropagate the cached vector gradients through the encoders, chunk by chunk. Only the
        last chunk synchronises DDP gradients (when ``sync_last``)."""
        active = [c for c in self.chunks if (self.queries if c[0] == "q" else self.passages).grad is not None]
        for k, (side, windows, rows, cpu_state, cuda_state) in enumerate(active):
            cached = self.queries if side == "q" else self.passages
            last = k == len(active) - 1
            # fork_rng restores the generators afterwards: the replay leaves training's RNG stream untouched
            with torch.random.fork_rng(devices=[self.device] if cuda_state is not None else []):
                torch.set_rng_state(cpu_state)
                if cuda_state is not None:
                    torch.cuda.set_rng_state(cuda_state, self.device)
                with no_sync() if not (last and sync_last) else contextlib.nullcontext():
                    vectors = self._run(side, windows, len(rows))
                    grads = cached.grad[torch.tensor(rows, device=cached.device)]
                    torch.autograd.backward(vectors.float(), grad_tensors=grads)
