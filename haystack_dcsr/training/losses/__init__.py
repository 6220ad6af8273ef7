"""Losses: QP (question-passage/sentence contrastive) and the MEQ paper's query-side QQ forms."""

from haystack_dcsr.training.losses.qp import QPLoss
from haystack_dcsr.training.losses.qq import DotQQLoss, InfoNCEQQLoss, TripletQQLoss, qq_loss

__all__ = ["QPLoss", "InfoNCEQQLoss", "DotQQLoss", "TripletQQLoss", "qq_loss"]
