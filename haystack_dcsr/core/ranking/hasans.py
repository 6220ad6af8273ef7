"""HasAns: from retrieved sentence scores to passage scores (DCSR, Eq. "HasAns").

The top-N sentence scores of a query are turned into probabilities with a softmax, and a passage
P scores ``HasAns(P) = 1 - prod_{i in P} (1 - p_i)``: the probability that at least one of its
retrieved sentences holds the answer. Computed in log space, ``log prod(1 - p_i) = sum log1p(-p_i)``,
so a passage whose sentences all have tiny p keeps full precision, and ranking uses that log sum
(lower = better), which still separates passages whose HasAns rounds to 1.0.
"""

from typing import Iterable, NamedTuple, Optional, Sequence

import numpy as np


class PassageScores(NamedTuple):
    """Passages of one query, best first."""

    passages: np.ndarray  # passage keys (whatever ints the caller used)
    hasans: np.ndarray  # HasAns in [0, 1]
    log_none: np.ndarray  # log prod(1 - p_i): the ranking key, ascending
    sentence_probabilities: np.ndarray  # p_i of each input sentence, in input order


def sentence_probabilities(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Softmax of raw inner products over the last axis, in float64."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits = np.asarray(scores, dtype=np.float64) / temperature
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def hasans_scores(scores: np.ndarray, passage_keys: np.ndarray, temperature: float = 1.0) -> PassageScores:
    """HasAns of every passage that has at least one of the retrieved sentences.

    :param scores: raw inner products of the N retrieved sentences.
    :param passage_keys: the passage (int key) of each of those sentences.
    """
    scores = np.asarray(scores)
    if scores.size == 0:
        empty = np.zeros(0)
        return PassageScores(np.zeros(0, dtype=np.asarray(passage_keys).dtype), empty, empty, empty)
    probabilities = sentence_probabilities(scores, temperature)
    passages, inverse = np.unique(passage_keys, return_inverse=True)
    with np.errstate(divide="ignore"):
        log_none = np.bincount(inverse, weights=np.log1p(-probabilities), minlength=len(passages))
    order = np.argsort(log_none, kind="stable")
    log_none = log_none[order]
    return PassageScores(passages[order], -np.expm1(log_none), log_none, probabilities)


TOP_N_SENTENCES = 3000  # sentences a query retrieves before HasAns: the retrievers' default, the benchmarks' setting


def rank_hits(
    scores: np.ndarray,
    passage_keys: np.ndarray,
    temperature: float,
    top_k: Optional[int] = None,
) -> PassageScores:
    """Passages ranked by HasAns over a query's retrieved sentences: the one ranking rule of every engine,
    the trainer and the benchmarks (``passage_ranking.rank_passages`` drives it over an engine, leaving out the
    hits of passages the engine can no longer serve). The first ``top_k`` passages are kept (all when None);
    ``sentence_probabilities`` covers every hit, in input order."""
    ranked = hasans_scores(np.asarray(scores), np.asarray(passage_keys), temperature)
    if top_k is not None:
        ranked = ranked._replace(
            passages=ranked.passages[:top_k], hasans=ranked.hasans[:top_k], log_none=ranked.log_none[:top_k]
        )
    return ranked


def kept_hits(passage_keys: np.ndarray, gone: Iterable[int] = ()) -> np.ndarray:
    """The mask of the hits whose passage is not in ``gone``."""
    gone = list(gone)
    passage_keys = np.asarray(passage_keys)
    return ~np.isin(passage_keys, gone) if gone else np.ones(len(passage_keys), dtype=bool)


def score_passages(query: np.ndarray, passage_vectors: Sequence[np.ndarray], temperature: float = 1.0) -> np.ndarray:
    """Scores of fixed candidate passages for one query (higher is better): HasAns over all of the
    candidates' sentence vectors together, as the ranking key ``-log prod(1 - p_i)``. This is how the
    MEQ paper's 50-candidate ranking evaluates DCSR, and how a DCSR reranker scores a candidate list.

    :param query: the query vector.
    :param passage_vectors: per candidate, its sentence vectors (one row each).
    """
    if not len(passage_vectors):
        return np.zeros(0)
    sentence_scores = np.concatenate([np.asarray(v) @ query for v in passage_vectors])
    keys = np.concatenate([np.full(len(v), n) for n, v in enumerate(passage_vectors)])
    scored = hasans_scores(sentence_scores, keys, temperature)
    out = np.full(len(passage_vectors), -np.inf)
    out[scored.passages] = -scored.log_none
    return out


def hasans_of_key(keys: np.ndarray) -> np.ndarray:
    """The HasAns probabilities behind ``score_passages``' ranking keys ``-log prod(1 - p_i)``: the
    scale a retriever serves and a hybrid fuses (0 for a candidate without sentences)."""
    keys = np.asarray(keys, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(keys == -np.inf, 0.0, -np.expm1(-keys))
