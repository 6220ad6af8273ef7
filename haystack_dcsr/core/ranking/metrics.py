"""Retrieval metrics with DPR-style answer matching.

DPR counts a passage as a hit when an answer's token sequence occurs in it, after Unicode NFD
normalisation and lower-casing, tokens being runs of letters/digits or single other symbols.
Combining accents are dropped after NFD (DPR keeps them inside tokens), so "Café" matches "cafe".
The same rule is used for every system here so their top-k numbers are comparable.
"""

import functools
import re
import sys
import unicodedata
from typing import Dict, Iterable, List, Sequence

import numpy as np

_TOKEN = re.compile(r"[\w]+|[^\w\s]", re.UNICODE)


@functools.lru_cache(maxsize=1)
def _combining_marks() -> Dict[int, None]:
    """Every code point with a combining class, for ``str.translate`` (a C loop: the per-character
    Python filter it replaces was the hot spot of training-sample building)."""
    return {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


def answer_tokens(text: str) -> List[str]:
    lowered = text.lower()
    if lowered.isascii():  # nothing to decompose
        return _TOKEN.findall(lowered)
    return _TOKEN.findall(unicodedata.normalize("NFD", lowered).translate(_combining_marks()))


def normalize_for_matching(text: str) -> str:
    """Tokens joined by single spaces, padded: a token sequence occurs in a text exactly when its
    padded form is a substring of the text's padded form (tokens hold no spaces)."""
    return " " + " ".join(answer_tokens(text)) + " "


def normalize_answer(text: str) -> str:
    """SQuAD's exact-match normalisation (lower case, no punctuation, no articles, single spaces),
    accents dropped: for deciding whether two answers are the same answer."""
    tokens = [t for t in answer_tokens(text) if t.isalnum() or "_" in t]
    return " ".join(t for t in tokens if t not in ("a", "an", "the"))


_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)


def answer_words(text: str) -> List[str]:
    """An answer's words as SQuAD's F1 script reads them: lower case, accents and articles dropped,
    punctuation deleted rather than split on, so "non-violent" is the one word "nonviolent" and not
    "violent" with a prefix (the distinction ``answers_differ`` in ``meq`` turns on)."""
    lowered = unicodedata.normalize("NFD", text.lower()).translate(_combining_marks())
    return [w for w in _PUNCTUATION.sub("", lowered).split() if w not in ("a", "an", "the")]


def contains_answer(normalized_passage: str, normalized_answers: Iterable[str]) -> bool:
    """``has_answer`` on texts already passed through ``normalize_for_matching`` (fast in loops)."""
    return any(answer.strip() and answer in normalized_passage for answer in normalized_answers)


def has_answer(passage: str, answers: Iterable[str]) -> bool:
    return contains_answer(normalize_for_matching(passage), [normalize_for_matching(a) for a in answers])


def first_hit_ranks(ranked_passages: Sequence[Sequence[str]], answers: Sequence[Sequence[str]]) -> List[int]:
    """1-based rank of the first passage holding an answer, per question; 0 when none does."""
    ranks = []
    for passages, golds in zip(ranked_passages, answers):
        ranks.append(next((rank for rank, text in enumerate(passages, 1) if has_answer(text, golds)), 0))
    return ranks


def top_k_accuracy(first_hits: Sequence[int], ks: Iterable[int] = (1, 5, 20, 100)) -> Dict[int, float]:
    """Share of questions with an answer-bearing passage in the top k."""
    total = max(len(first_hits), 1)
    return {k: sum(1 for r in first_hits if 0 < r <= k) / total for k in ks}


def top_k_by_group(
    first_hits: Sequence[int], groups: Sequence[str], ks: Iterable[int] = (1, 5, 20, 100)
) -> Dict[str, Dict]:
    """``top_k_accuracy`` within each group (e.g. question word): where a retriever wins or loses."""
    if len(first_hits) != len(groups):
        raise ValueError(f"{len(first_hits)} first-hit ranks but {len(groups)} group labels")
    members: Dict[str, List[int]] = {}
    for rank, group in zip(first_hits, groups):
        members.setdefault(group, []).append(rank)
    return {g: {"n": len(r), "top_k": top_k_accuracy(r, ks)} for g, r in sorted(members.items())}


# ---- ranking a fixed candidate set (the MEQ paper's 50-candidate evaluation) ---------------------


def rank_of_positive(scores: Sequence[float], positive: int = 0) -> int:
    """1-based rank of candidate ``positive`` by ``scores`` (higher is better). Ties count against
    the positive, so a model that scores everything equally gets the worst rank, not the best."""
    values = np.asarray(scores, dtype=np.float64)
    others = np.delete(values, positive)
    return 1 + int(np.sum(others >= values[positive]))


def mean_rank(ranks: Sequence[int]) -> float:
    return float(np.mean(ranks)) if len(ranks) else 0.0


def reciprocal_ranks(ranks: Sequence[int]) -> List[float]:
    """1 / rank per row; a rank of 0 (not found) counts 0, below any rank."""
    return [1.0 / r if r > 0 else 0.0 for r in ranks]


def mean_reciprocal_rank(ranks: Sequence[int]) -> float:
    return float(np.mean(reciprocal_ranks(ranks))) if len(ranks) else 0.0


# ---- contrast consistency over (q, q') pairs -------------------------------------------------------


def pair_hits(
    ranks_q: Sequence[int], ranks_meq: Sequence[int], ks: Iterable[int] = (1, 5, 20, 100)
) -> Dict[str, Dict[int, float]]:
    """Hit@k for the questions, for their MEQs, and for both of a pair at once (consistency)."""
    if len(ranks_q) != len(ranks_meq):
        raise ValueError(f"{len(ranks_q)} question ranks but {len(ranks_meq)} MEQ ranks")
    ks = list(ks)
    both = [max(a, b) if a > 0 and b > 0 else 0 for a, b in zip(ranks_q, ranks_meq)]
    return {"q": top_k_accuracy(ranks_q, ks), "meq": top_k_accuracy(ranks_meq, ks), "both": top_k_accuracy(both, ks)}


def top_k_overlap(ids_q: Sequence[Sequence[str]], ids_meq: Sequence[Sequence[str]], k: int) -> float:
    """Mean share of the top-k passages that q and its MEQ have in common (lower: the retriever
    tells the two questions apart; the MEQ paper reports it next to hit@k)."""
    if len(ids_q) != len(ids_meq):
        raise ValueError(f"{len(ids_q)} question rankings but {len(ids_meq)} MEQ rankings")
    if not len(ids_q):
        return 0.0
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(ids_q, ids_meq)]))


def own_gold_first(ranked_ids: Sequence[Sequence[str]], own: Sequence[str], other: Sequence[str]) -> float:
    """Share of questions whose own gold passage is retrieved and ranked above the other question's
    gold (for an MEQ q': its gold above q's); see ``own_gold_wins``."""
    wins = own_gold_wins(ranked_ids, own, other)
    return float(np.mean(wins)) if wins else 0.0


def own_gold_wins(ranked_ids: Sequence[Sequence[str]], own: Sequence[str], other: Sequence[str]) -> List[bool]:
    """Per question: is its own gold passage retrieved and ranked above the other question's gold?
    A passage not retrieved ranks below every retrieved one, so "neither retrieved" counts as a
    miss. Meant for pairs whose gold passages differ; kept per pair so two systems can be paired."""
    if not (len(ranked_ids) == len(own) == len(other)):
        raise ValueError(f"{len(ranked_ids)} rankings, {len(own)} own and {len(other)} other gold passages")
    wins = []
    for ids, mine, theirs in zip(ranked_ids, own, other):
        position = {pid: i for i, pid in reversed(list(enumerate(ids)))}
        wins.append(mine in position and position[mine] < position.get(theirs, len(ids)))
    return wins


def query_contrast_accuracy(sim_positive: Sequence[float], sim_negative: Sequence[float]) -> float:
    """Share of questions closer to their paraphrase q+ than to their MEQ q-: sim(q, q+) > sim(q, q-)."""
    if len(sim_positive) != len(sim_negative):
        raise ValueError(f"{len(sim_positive)} positive similarities but {len(sim_negative)} negative ones")
    if not len(sim_positive):
        return 0.0
    return float(np.mean(np.asarray(sim_positive) > np.asarray(sim_negative)))
