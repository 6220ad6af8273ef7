"""QP: softmax cross-entropy of each question over all candidates of the global batch (DPR's NLL).

Candidates are every question's positive and negatives, so each question also sees the others'
(in-batch negatives). Candidates that are really positives of the question (``mask``) are removed
from its softmax instead of being pushed away.
"""

import torch
import torch.nn.functional as F


class QPLoss(torch.nn.Module):
    """:param temperature: logits are ``q . c / temperature`` (1.0 = raw dot products, as DPR/DCSR)."""

    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature

    def forward(
        self, questions: torch.Tensor, candidates: torch.Tensor, positives: torch.Tensor, mask: torch.Tensor = None
    ) -> torch.Tensor:
        return self.compute_loss_from_embeddings(questions, candidates, positives, mask)

    def compute_loss_from_embeddings(self, questions, candidates, positives, mask=None) -> torch.Tensor:
        """questions (Q, d), candidates (C, d), positives (Q,) indices into C, mask (Q, C) bool."""
        logits = _masked(self.logits(questions, candidates), mask)
        return F.cross_entropy(logits, positives.to(logits.device))

    def logits(self, questions, candidates) -> torch.Tensor:
        """(Q, C) scaled scores; computed once when the caller also needs them (query-side tuning's top rows)."""
        return questions.float() @ candidates.float().T / self.temperature

    def marginal(self, logits, positives, mask=None) -> torch.Tensor:
        """-log of the softmax mass on each question's positives, several per question (a passage's
        sentences); logits from ``logits``, positives and mask (Q, C) bool. One positive per row is
        ``compute_loss_from_embeddings``."""
        logits = _masked(logits, mask)
        gold = logits.masked_fill(~positives.to(logits.device), float("-inf"))
        return (torch.logsumexp(logits, dim=1) - torch.logsumexp(gold, dim=1)).mean()


def _masked(logits: torch.Tensor, mask) -> torch.Tensor:
    """Masked candidates leave the softmax."""
    return logits if mask is None else logits.masked_fill(mask.to(logits.device), float("-inf"))


def positive_ranks(
    questions: torch.Tensor, candidates: torch.Tensor, positives: torch.Tensor, mask: torch.Tensor = None
) -> torch.Tensor:
    """1-based rank of each question's positive among the candidates (validation metric)."""
    scores = questions.float() @ candidates.float().T
    if mask is not None:
        scores = scores.masked_fill(mask.to(scores.device), float("-inf"))
    positive_scores = scores.gather(1, positives.view(-1, 1).to(scores.device))
    return (scores > positive_scores).sum(1) + 1
