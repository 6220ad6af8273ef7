"""Training the ``<sent>`` marker: its own start, its own learning rate, its own warm-up.

The marker is the one token DCSR adds to a pretrained model, so it is the one embedding row that
starts with no meaning. Started as a copy of [CLS], its hidden states within a passage are nearly
identical (cosine 0.995 on SQuAD dev with MiniLM, the study ``studies/marker_recipe.py``,
docs/research/studies.md): every sentence gets the passage's vector, and 80 steps at the base learning rate
leave it so. The knobs here:

- ``MarkerOffset``: a trainable vector added to the marker's embedding through a forward hook,
  so it can have its own learning rate and warm-up without touching the model's parameters;
  ``folded`` writes it into the embedding matrix for saving, so saved towers are plain HF models.
- ``initialise_marker``: where a *new* marker starts (a copy of [CLS], the mean embedding, or
  random as HF initialises new rows).
- ``learning_rate_schedule``: the towers' linear schedule, held at zero for the marker-only steps.
"""

import contextlib
from typing import Dict, Iterator, Optional

import torch

from haystack_dcsr.core.model.encoder import Tower
from haystack_dcsr.core.model.models import MarkerInit, set_marker_row


class MarkerOffset(torch.nn.Module):
    """A learnable offset of the ``<sent>`` embedding of one tower (zero at the start).

    The model's own marker row keeps training with everything else; the offset is the extra
    freedom the marker gets (its own learning rate, no weight decay, a warm-up of its own).
    """

    def __init__(self, tower: Tower):
        super().__init__()
        if tower.marker_id is None:
            raise ValueError("MarkerOffset needs a tower with marker pooling")
        self.marker_id = tower.marker_id
        self._embeddings = (tower.model.get_input_embeddings(),)  # a tuple: not registered as a second owner
        self.offset = torch.nn.Parameter(torch.zeros(self.embeddings.weight.shape[1], device=tower.device))
        self._hook = self.embeddings.register_forward_hook(self._add)

    @property
    def embeddings(self) -> torch.nn.Module:
        return self._embeddings[0]

    def _add(self, module, inputs, output):
        at_marker = (inputs[0] == self.marker_id).unsqueeze(-1).to(output.dtype)
        return output + at_marker * self.offset.to(output.dtype)

    @contextlib.contextmanager
    def folded(self) -> Iterator[None]:
        """The offset written into the embedding row (and the hook off) for the duration: what a
        saved tower must hold. The row is restored bit for bit afterwards."""
        weight = self.embeddings.weight
        with torch.no_grad():
            row = weight[self.marker_id].clone()
            weight[self.marker_id] += self.offset
        self._hook.remove()
        try:
            yield
        finally:
            with torch.no_grad():
                weight[self.marker_id] = row
            self._hook = self.embeddings.register_forward_hook(self._add)


def initialise_marker(tower: Tower, how: MarkerInit, generator: Optional[torch.Generator] = None) -> None:
    """Set a tower's marker row (``models.set_marker_row``: cls, mean or random)."""
    if tower.marker_id is None:
        raise ValueError("initialise_marker needs a tower with marker pooling")
    cls_id = tower.open_ids[0] if tower.open_ids else None
    set_marker_row(tower.model, tower.marker_id, how, cls_id, generator)


def marker_is_new(name_or_path: str, marker: str) -> bool:
    """Whether the base tower's own tokenizer lacks the marker (a DCSR tower trained further keeps
    its trained marker: ``marker_init`` applies to new markers only)."""
    from transformers import AutoTokenizer

    from haystack_dcsr.core.model.models import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(name_or_path), trust_remote_code=False)
    return marker not in tokenizer.get_vocab()


def attach_markers(
    towers: Dict[str, Tower], init: Optional[MarkerInit], offsets: bool, new: Dict[str, bool], seed: int = 0
) -> Dict[str, MarkerOffset]:
    """Apply ``init`` to the towers whose marker is ``new``; return an offset per tower when ``offsets``."""
    generator = torch.Generator().manual_seed(seed)
    for name, tower in towers.items():
        if init is not None and new[name]:
            initialise_marker(tower, init, generator)
    return {name: MarkerOffset(tower) for name, tower in towers.items()} if offsets else {}


def learning_rate_schedule(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int, marker_warmup_steps: int = 0
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up and decay, as ``transformers.get_linear_schedule_with_warmup``, for group 0
    (the towers) after ``marker_warmup_steps`` at zero; a second group (the marker offsets) follows
    the plain schedule from step 0, so the marker alone trains first."""

    def linear(step: int, start: int) -> float:
        step -= start
        if step < 0:
            return 0.0
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        return max(0.0, (total_steps - start - step) / max(1, total_steps - start - warmup_steps))

    lambdas = [lambda step: linear(step, marker_warmup_steps)]
    lambdas += [lambda step: linear(step, 0)] * (len(optimizer.param_groups) - 1)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)
