"""Retrieval metrics with DPR-style answer matching.

DPR counts a passage as a hit when an answer's token sequence occurs in it, after Unicode NFD
normalisation and lower-casing, tokens being runs of letters/digits or single other symbols.
Combining accents are dropped after NFD (DPR keeps them inside tokens), so "Café" matches "cafe".
The same rule is used for every system here so their top-k numbers are comparable.
"""
import re
import unicodedata
from typing import Dict, Iterable, List, Sequence

_TOKEN = re.compile(r"[\w]+|[^\w\s]", re.UNICODE)


def answer_tokens(text: str) -> List[str]:
    decomposed = unicodedata.normalize("NFD", text.lower())
    return _TOKEN.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


def normalize_for_matching(text: str) -> str:
    """Tokens joined by single spaces, padded: a token sequence occurs in a text exactly when its
    padded form is a substring of the text's padded form (tokens hold no spaces)."""
    return " " + " ".join(answer_tokens(text)) + " "


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
