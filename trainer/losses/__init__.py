"""Losses: QP (question-passage/sentence contrastive) and the MEQ paper's query-side QQ forms."""
from trainer.losses.qp import QPLoss
from trainer.losses.qq import DotQQLoss, InfoNCEQQLoss, TripletQQLoss, qq_loss

__all__ = ["QPLoss", "InfoNCEQQLoss", "DotQQLoss", "TripletQQLoss", "qq_loss"]
