"""Significance tests behind the benchmark tables: is a gap between two systems on the same questions
more than noise? (Exact McNemar on hits, Wilcoxon signed-rank on reciprocal ranks.) The benchmarks'
own: a user evaluating a retriever needs the metrics in ``haystack_dcsr.core.ranking.metrics``, not these."""

from typing import Dict, Sequence

from scipy.stats import binomtest, wilcoxon

from haystack_dcsr.core.ranking.metrics import reciprocal_ranks


def paired_sign_test(first_hits_a: Sequence[int], first_hits_b: Sequence[int], k: int) -> Dict[str, float]:
    """Exact McNemar test of two systems' top-k hits on the same questions (``mcnemar_exact``).
    A 0.1-point gap on 10,570 questions can be noise; this says whether it is."""
    if len(first_hits_a) != len(first_hits_b):
        raise ValueError(f"{len(first_hits_a)} first-hit ranks against {len(first_hits_b)}")
    return mcnemar_exact([0 < r <= k for r in first_hits_a], [0 < r <= k for r in first_hits_b])


def mcnemar_exact(wins_a: Sequence[bool], wins_b: Sequence[bool]) -> Dict[str, float]:
    """Exact McNemar test of two systems' successes on the same items: only items that one system
    gets and the other misses count; two-sided p-value of that split under "no difference"."""
    if len(wins_a) != len(wins_b):
        raise ValueError(f"{len(wins_a)} outcomes against {len(wins_b)}")
    a_only = sum(bool(a) and not b for a, b in zip(wins_a, wins_b))
    b_only = sum(bool(b) and not a for a, b in zip(wins_a, wins_b))
    n = a_only + b_only
    # scipy's exact binomial test: the exact rational 2 * P(X <= min) to 1e-12 (tested), in milliseconds
    # where summing big-integer binomials takes seconds (the study studies/binomtest_speed.py, docs/research/studies.md)
    p_value = float(binomtest(a_only, n, 0.5).pvalue) if n else 1.0
    return {"a_only": a_only, "b_only": b_only, "p_value": p_value}


def paired_rank_test(ranks_a: Sequence[int], ranks_b: Sequence[int]) -> Dict[str, float]:
    """Wilcoxon signed-rank test of two systems' reciprocal ranks on the same rows (the usual test
    for an MRR gap): how many rows each ranks the gold higher, and the two-sided p-value. Rows both
    rank alike carry no evidence and are dropped, as McNemar drops agreements."""
    if len(ranks_a) != len(ranks_b):
        raise ValueError(f"{len(ranks_a)} ranks against {len(ranks_b)}")
    diff = [a - b for a, b in zip(reciprocal_ranks(ranks_a), reciprocal_ranks(ranks_b)) if a != b]
    p_value = float(wilcoxon(diff).pvalue) if diff else 1.0
    return {"a_better": sum(d > 0 for d in diff), "b_better": sum(d < 0 for d in diff), "p_value": p_value}
