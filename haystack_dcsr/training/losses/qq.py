"""QQ: the MEQ paper's query-side contrastive loss (Zhang et al., TACL 2023, Sec. 4).

It pulls a question q toward a paraphrase q+ and away from a minimally edited question q- (same
words but one, different answer), so the query encoder stops mapping q and q- to the same place.
Three forms, each over the questions of the batch that have the parts it needs:

- ``infonce``: softmax over all augmented questions of the batch (every q+ and q-), target q+;
  other questions' paraphrases and MEQs serve as in-batch negatives.
- ``dot``: mean of q . q- (push the MEQ away; no paraphrase needed).
- ``triplet``: mean of max(0, margin - q . q+ + q . q-).

All three compare questions on the scale QP scores passages: q . x / temperature. With the paper's raw
dot products (temperature 1) that is q . x itself; with normalised vectors at 0.05 (the sentence-
transformers geometry) a cosine is 1/20 of a logit, and an unscaled dot or triplet term would reach
the encoder with 1/20 of InfoNCE's gradient at the same weight. The triplet margin is in those units.
"""

import torch
import torch.nn.functional as F


class InfoNCEQQLoss(torch.nn.Module):
    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature

    def forward(self, q, q_pos, q_neg):
        return self.compute_loss_from_embeddings(q, q_pos, q_neg)

    def compute_loss_from_embeddings(self, q, q_pos, q_neg) -> torch.Tensor:
        """q, q_pos (P, d): questions with a paraphrase and that paraphrase; q_neg (M, d): every MEQ
        of the batch (may be empty). Row i of q has target column i."""
        if len(q) == 0:
            return q.new_zeros(())
        augmented = torch.cat([q_pos, q_neg]) if len(q_neg) else q_pos
        logits = q.float() @ augmented.float().T / self.temperature
        return F.cross_entropy(logits, torch.arange(len(q), device=q.device))


class DotQQLoss(torch.nn.Module):
    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature

    def forward(self, q, q_neg):
        return self.compute_loss_from_embeddings(q, q_neg)

    def compute_loss_from_embeddings(self, q, q_neg) -> torch.Tensor:
        """q, q_neg (M, d): questions that have an MEQ, and that MEQ."""
        if len(q) == 0:
            return q.new_zeros(())
        return (q.float() * q_neg.float()).sum(-1).mean() / self.temperature


class TripletQQLoss(torch.nn.Module):
    def __init__(self, margin: float = 1.0, temperature: float = 1.0):
        super().__init__()
        self.margin = margin
        self.temperature = temperature

    def forward(self, q, q_pos, q_neg):
        return self.compute_loss_from_embeddings(q, q_pos, q_neg)

    def compute_loss_from_embeddings(self, q, q_pos, q_neg) -> torch.Tensor:
        """q, q_pos, q_neg (T, d): questions with both a paraphrase and an MEQ."""
        if len(q) == 0:
            return q.new_zeros(())
        pos = (q.float() * q_pos.float()).sum(-1) / self.temperature
        neg = (q.float() * q_neg.float()).sum(-1) / self.temperature
        return F.relu(self.margin - pos + neg).mean()


def qq_loss(form: str, q, q_pos, q_neg, has_pos, has_neg, margin: float = 1.0, temperature: float = 1.0):
    """Dispatch on ``form`` with per-question availability masks ``has_pos`` / ``has_neg`` (bool)."""
    if form == "infonce":
        return InfoNCEQQLoss(temperature)(q[has_pos], q_pos[has_pos], q_neg[has_neg])
    if form == "dot":
        return DotQQLoss(temperature)(q[has_neg], q_neg[has_neg])
    if form == "triplet":
        both = has_pos & has_neg
        return TripletQQLoss(margin, temperature)(q[both], q_pos[both], q_neg[both])
    raise ValueError(f"QQ loss form must be infonce, dot or triplet, got {form!r}")
