"""Each loss against values computed by hand."""

import math

import pytest
import torch

from haystack_dcsr.training.losses import DotQQLoss, InfoNCEQQLoss, QPLoss, TripletQQLoss, qq_loss
from haystack_dcsr.training.losses.qp import positive_ranks


def test_qp_is_softmax_cross_entropy_over_all_candidates():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    c = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # scores: q0 -> [2, 0, 1], q1 -> [0, 1, 1]; positives 0 and 1
    expected = (-math.log(math.exp(2) / (math.exp(2) + 1 + math.exp(1))) - math.log(math.e / (1 + 2 * math.e))) / 2
    assert float(QPLoss()(q, c, torch.tensor([0, 1]))) == pytest.approx(expected, rel=1e-6)


def test_qp_mask_removes_false_negatives_from_the_softmax():
    q = torch.tensor([[0.0, 1.0]])
    c = torch.tensor([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    unmasked = float(QPLoss()(q, c, torch.tensor([0])))
    masked = float(QPLoss()(q, c, torch.tensor([0]), torch.tensor([[False, True, False]])))
    assert unmasked == pytest.approx(-math.log(math.e / (2 * math.e + 1)))
    assert masked == pytest.approx(-math.log(math.e / (math.e + 1)))


def test_qp_temperature_scales_logits():
    q, c = torch.tensor([[1.0]]), torch.tensor([[1.0], [0.0]])
    assert float(QPLoss(temperature=0.5)(q, c, torch.tensor([0]))) == pytest.approx(
        -math.log(math.exp(2) / (math.exp(2) + 1))
    )


def test_positive_ranks():
    q = torch.tensor([[1.0, 0.0]])
    c = torch.tensor([[0.5, 0.0], [2.0, 0.0], [1.0, 0.0]])
    assert positive_ranks(q, c, torch.tensor([0])).tolist() == [3]
    assert positive_ranks(q, c, torch.tensor([0]), torch.tensor([[False, True, False]])).tolist() == [2]


def test_infonce_qq_targets_the_paraphrase_among_all_augmented_questions():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    q_pos = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    q_neg = torch.tensor([[1.0, 1.0]])
    # q0 logits [1, 0, 1] target 0; q1 logits [0, 2, 1] target 1
    expected = (-math.log(math.e / (2 * math.e + 1)) - math.log(math.exp(2) / (1 + math.exp(2) + math.e))) / 2
    assert float(InfoNCEQQLoss()(q, q_pos, q_neg)) == pytest.approx(expected, rel=1e-6)


def test_dot_and_triplet_qq():
    q = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
    q_pos = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    q_neg = torch.tensor([[2.0, 0.0], [0.0, -1.0]])
    assert float(DotQQLoss()(q, q_neg)) == pytest.approx((2.0 + -1.0) / 2)
    # margins: max(0, 1 - 3 + 2) = 0 ; max(0, 1 - 1 + -1) = 0 -> with margin 3: [2, 1]
    assert float(TripletQQLoss(margin=1.0)(q, q_pos, q_neg)) == pytest.approx(0.0)
    assert float(TripletQQLoss(margin=3.0)(q, q_pos, q_neg)) == pytest.approx(1.5)
    # on QP's scale, the margin in its units: q . q+ = [3, 1] -> [6, 2], q . q- = [2, -1] -> [4, -2]
    assert float(DotQQLoss(temperature=0.5)(q, q_neg)) == pytest.approx((4.0 + -2.0) / 2)
    assert float(TripletQQLoss(margin=3.0, temperature=0.5)(q, q_pos, q_neg)) == pytest.approx((1.0 + 0.0) / 2)


def test_qq_dispatch_uses_only_questions_with_the_needed_parts():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    q_pos = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    q_neg = torch.tensor([[0.0, 0.0], [3.0, 3.0], [0.0, 1.0]])
    has_pos = torch.tensor([True, False, True])
    has_neg = torch.tensor([False, True, True])
    assert float(qq_loss("dot", q, q_pos, q_neg, has_pos, has_neg)) == pytest.approx((3.0 + 1.0) / 2)
    assert float(qq_loss("triplet", q, q_pos, q_neg, has_pos, has_neg, margin=2.0)) == pytest.approx(2.0)
    assert float(qq_loss("dot", q, q_pos, q_neg, has_pos, has_neg, temperature=0.05)) == pytest.approx(40.0)
    with pytest.raises(ValueError, match="infonce, dot or triplet"):
        qq_loss("cosine", q, q_pos, q_neg, has_pos, has_neg)
    empty = torch.zeros((0, 2))
    assert float(InfoNCEQQLoss()(empty, empty, empty)) == 0.0
