"""Rank, world size and the gathering of vectors across processes under ``torchrun``; trivial in one.

Every rank builds the same global batch and encodes its share (``owners``); ``gather`` puts every
rank's vectors together in global order, only the rank's own rows carrying a gradient.
"""

import os
from typing import List, Optional, Sequence

import torch
import torch.distributed as dist


class Distributed:
    """Rank, world size and the gathering of vectors; trivial in a single process."""

    def __init__(self, preferred_device: Optional[str] = None):
        self.preferred_device = preferred_device
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        on_gpu = torch.cuda.is_available() and preferred_device != "cpu"
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if on_gpu else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def device(self) -> torch.device:
        """The preferred device (cpu, cuda, cuda:N) or, when None, this rank's GPU if there is one."""
        preferred = self.preferred_device
        if preferred == "cpu" or (preferred is None and not torch.cuda.is_available()):
            return torch.device("cpu")
        if not torch.cuda.is_available():
            raise ValueError(f"device {preferred!r} asked for, but torch sees no CUDA GPU")
        index = int(preferred.split(":")[1]) if preferred and ":" in preferred else self.local_rank
        torch.cuda.set_device(index)
        return torch.device("cuda", index)

    def owners(self, n: int) -> List[int]:
        """Which rank encodes each of ``n`` items: strided, so shares differ by at most one."""
        return [i % self.world for i in range(n)]

    def gather(self, local: Optional[torch.Tensor], owners: Sequence[int], dim: int, device) -> torch.Tensor:
        """All rows in global order, given the rank that computed each (``owners``) and this rank's
        own rows (``local``, in global order). Rows from other ranks carry no gradient."""
        if local is None:
            local = torch.zeros((0, dim), device=device)
        if self.world == 1:
            return local
        per_rank = [[i for i, owner in enumerate(owners) if owner == r] for r in range(self.world)]
        padded = torch.zeros((max(1, *(len(rows) for rows in per_rank)), dim), device=device)
        padded[: len(local)] = local.detach().float()
        chunks = [torch.zeros_like(padded) for _ in range(self.world)]
        dist.all_gather(chunks, padded)
        rows: List[torch.Tensor] = [None] * len(owners)  # type: ignore[list-item]
        for rank, indices in enumerate(per_rank):
            for k, i in enumerate(indices):
                rows[i] = local[k].float() if rank == self.rank else chunks[rank][k]
        return torch.stack(rows) if rows else local

    def barrier(self):
        if self.world > 1:
            dist.barrier()
