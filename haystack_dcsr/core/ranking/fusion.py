"""Score fusion of several rankings of the same passages (e.g. DCSR's HasAns with BM25).

Scores of different retrievers live on different scales, so each list is min-max scaled to
[0, 1] per query before the weighted sum; a caller may keep a list as it is (``scaled``). A passage
missing from a list gets 0 from it. This is the fusion behind the README's hybrid rows (weights
0.5 / 0.5, fixed a priori). HasAns is scaled too by default: it is a probability, but a small one
(median 0.2 for the top passage of a fine-tuned model on SQuAD-open), so kept as is it lost to
BM25's scaled 1.0 at equal weights and the hybrid read 3.5 top-1 lower (the study
``studies/fusion_weight.py``, docs/research/studies.md). ``reciprocal_rank_fusion`` is the rank-based alternative that
Haystack's ``JoinDocuments`` offers, here so the benchmark can measure what that node gives a user.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy.stats import rankdata

Ranked = Sequence[Tuple[str, float]]  # (passage id, score), best first
HYBRID = "hybrid_scores"  # meta key of joined passages: each input's own score, as given


def check_weights(owner: str, weights: Optional[Sequence[float]]) -> Optional[List[float]]:
    """Fusion weights: finite numbers >= 0 with a positive sum (None = equal weights). NaN or inf
    would make every fused score NaN, and all-zero weights every score 0: either way the order
    silently falls back to one input's."""
    if weights is None:
        return None
    problem = not isinstance(weights, (list, tuple)) or not weights
    problem = problem or any(isinstance(w, bool) or not isinstance(w, (int, float)) for w in weights)
    problem = problem or any(not np.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0
    if problem:
        raise ValueError(f"{owner}: weights must be finite numbers >= 0 with a sum > 0, got {weights!r}")
    return [float(w) for w in weights]


def fuse(
    rankings: Sequence[Ranked],
    weights: Optional[Sequence[float]] = None,
    depth: Optional[int] = None,
    scaled: Optional[Sequence[bool]] = None,
) -> List[Tuple[str, float]]:
    """The union of ``rankings`` ordered by ``sum(weight * score)``, best first (ties keep
    first-seen order); ``scaled[i]`` (default: all) min-max scales list i first."""
    weights = check_weights("fuse", weights) or [1.0 / len(rankings)] * len(rankings)
    scaled = list(scaled) if scaled is not None else [True] * len(rankings)
    if not len(weights) == len(scaled) == len(rankings):
        raise ValueError(f"{len(weights)} weights and {len(scaled)} scale flags for {len(rankings)} rankings")
    scores: Dict[str, float] = {}
    for ranked, weight, scale in zip(rankings, weights, scaled):
        values = np.array([score for _, score in ranked], dtype=np.float64)
        if scale and len(values):
            values = (values - values.min()) / max(values.max() - values.min(), 1e-12)
        for (pid, _), value in zip(ranked, values):
            scores[pid] = scores.get(pid, 0.0) + weight * float(value)
    fused = sorted(scores.items(), key=lambda item: -item[1])
    return fused[:depth] if depth else fused


def fuse_with_parts(
    rankings: Sequence[Ranked],
    weights: Optional[Sequence[float]] = None,
    depth: Optional[int] = None,
    scaled: Optional[Sequence[bool]] = None,
) -> List[Tuple[str, float, List[Optional[float]]]]:
    """``fuse``, with each input's own score of every fused passage (None where it lacks it): what
    the join nodes show in ``meta["hybrid_scores"]``."""
    own = [dict(ranked) for ranked in rankings]
    return [(pid, score, [scores.get(pid) for scores in own]) for pid, score in fuse(rankings, weights, depth, scaled)]


RRF_K = 61  # Haystack's JoinDocuments: the RRF paper's 60, plus 1 for 0-based ranks


def reciprocal_rank_fusion(
    rankings: Sequence[Ranked], weights: Optional[Sequence[float]] = None, depth: Optional[int] = None
) -> List[Tuple[str, float]]:
    """The union of ``rankings`` ordered by ``sum(weight * n / (61 + rank))`` (rank 0-based by score,
    weights normalised to sum 1), divided by its maximum ``n / 61`` so first everywhere is 1: what
    ``JoinDocuments(join_mode="reciprocal_rank_fusion")`` gives lists without tied scores. Tied scores
    share their best rank, so the order a list happens to give tied passages (a gold candidate listed
    first, say) decides nothing. Scales do not matter, which is RRF's appeal next to ``fuse``; how far
    apart two scores are does not either."""
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings) or sum(weights) <= 0:
        raise ValueError(f"{len(weights)} weights (sum {sum(weights)}) for {len(rankings)} rankings")
    scores: Dict[str, float] = {}
    total = sum(weights)
    for ranked, weight in zip(rankings, weights):
        share = weight / total * len(rankings)
        ranks = rankdata([-score for _, score in ranked], method="min") - 1
        for (pid, _), rank in zip(ranked, ranks):
            scores[pid] = scores.get(pid, 0.0) + share / (RRF_K + float(rank))
    fused = sorted(((pid, score * RRF_K / len(rankings)) for pid, score in scores.items()), key=lambda item: -item[1])
    return fused[:depth] if depth else fused
