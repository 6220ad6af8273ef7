"""Minimally edited questions (MEQs): the MEQ paper's pair criteria, one rule per function.

A question q' is an MEQ of q when it is a small word-level edit of q (1-3 words), keeps the
question word, is not merely q with a filler word added ("first", "not", ...), stays close in
embedding space, is not a paraphrase, and has a different answer. The rules run cheapest first,
so mining all same-article pairs of a dataset only embeds the few pairs the text rules keep.
"""

import dataclasses
import re
import typing
from collections import Counter
from typing import Callable, Dict, List, Literal, Optional, Sequence, Tuple

import numpy as np

from haystack_dcsr.core.ranking.metrics import answer_words, normalize_answer

QUESTION_WORDS = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how")
TRIVIAL_ADDITIONS = frozenset({"first", "last", "new", "next", "original", "not"})
_WORD = re.compile(r"\w+", re.UNICODE)

Embed = Callable[[List[str]], np.ndarray]
AnswerRule = Literal["exact", "shorter_form"]


def words(question: str) -> List[str]:
    return _WORD.findall(question.lower())


def word_edit_distance(a: Sequence[str], b: Sequence[str], limit: Optional[int] = None) -> int:
    """Levenshtein distance over words; with ``limit``, any distance above it returns limit + 1
    early (a banded computation: mining compares millions of pairs)."""
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, word_a in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, word_b in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word_a != word_b))
        if limit is not None and min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def question_word(question_words: Sequence[str]) -> Optional[str]:
    """The first wh-word ("how many" counts as "how"); the first word for yes/no questions."""
    for word in question_words:
        if word in QUESTION_WORDS:
            return word
    return question_words[0] if question_words else None


def only_trivial_addition(
    a: Sequence[str], b: Sequence[str], distance: int, trivial: frozenset = TRIVIAL_ADDITIONS
) -> bool:
    """True when one question is the other plus ``trivial`` words only: the edit is pure
    insertion (the length gap equals the distance) and every inserted word is trivial."""
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    if len(longer) - len(shorter) != distance:
        return False
    inserted = Counter(longer) - Counter(shorter)
    return sum(inserted.values()) == distance and all(word in trivial for word in inserted)


def answers_differ(answers: Sequence[str], other_answers: Sequence[str], rule: AnswerRule = "shorter_form") -> bool:
    """No answer of one question is the same answer as an answer of the other.

    ``"exact"``: the same after SQuAD normalisation. ``"shorter_form"`` (default) also counts a shorter
    form of the same answer: one answer's words all occur in the other and make up at least half of
    it ("Einstein" / "Albert Einstein", "December 1963" / "12 December 1963"). Exact matching let such
    pairs through as MEQs although they are paraphrases: 67 of the 2,793 MEQ pairs mined from SQuAD train
    and 11 of the 352 contrast pairs (``docs/guides/meq.md``). A longer answer that merely holds the
    other one ("OneDrive for Business" / "OneDrive") still differs, as does "non-violent" / "violent".
    """
    rule = checked_answer_rule(rule)
    if {normalize_answer(a) for a in answers} & {normalize_answer(a) for a in other_answers}:
        return False
    if rule == "exact":
        return True
    mine = [Counter(answer_words(a)) for a in answers]
    theirs = [Counter(answer_words(a)) for a in other_answers]
    return not any(_shorter_form(a, b) or _shorter_form(b, a) for a in mine for b in theirs)


def checked_answer_rule(rule: str) -> AnswerRule:
    if rule not in typing.get_args(AnswerRule):
        raise ValueError(f"answer_rule must be one of {typing.get_args(AnswerRule)}, got {rule!r}")
    return rule


def _shorter_form(short: Counter, long: Counter) -> bool:
    size = sum(short.values())
    return 0 < size and 2 * size >= sum(long.values()) and not short - long


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v) + 1e-12))


@dataclasses.dataclass
class Verdict:
    """Whether a pair is an MEQ pair and, if not, the first rule it failed."""

    accepted: bool
    reason: str = ""
    distance: int = 0
    similarity: Optional[float] = None


class MEQFilter:
    """The MEQ paper's criteria for (q, q') pairs.

    :param embed: maps questions to vectors for the cosine rule; None skips that rule (text rules
        only). ``MEQFilter.with_model`` builds one from any encoder directory or hub name.
    :param threshold: minimum cosine. The paper's 0.95 is for Contriever; MiniLM's cosines run
        lower, so calibrate with ``calibrate_threshold`` (``docs/guides/meq.md``: how the default was chosen).
    :param is_paraphrase: optional classifier hook ``(q, q') -> bool``; paraphrases are rejected.
    :param different_answers: the answer rule; off only to find paraphrases with the other rules.
    :param answer_rule: what counts as the same answer (``answers_differ``): ``"shorter_form"``, or
        ``"exact"`` to rebuild the contrast set and MEQ file the benchmark tables were measured on.
    """

    def __init__(
        self,
        embed: Optional[Embed] = None,
        threshold: float = 0.95,
        min_edits: int = 1,
        max_edits: int = 3,
        trivial_additions=TRIVIAL_ADDITIONS,
        is_paraphrase: Optional[Callable[[str, str], bool]] = None,
        different_answers: bool = True,
        answer_rule: AnswerRule = "shorter_form",
    ):
        if not 1 <= min_edits <= max_edits:
            raise ValueError(f"need 1 <= min_edits <= max_edits, got {min_edits}, {max_edits}")
        self.embed, self.threshold = embed, threshold
        self.min_edits, self.max_edits = min_edits, max_edits
        self.trivial_additions = frozenset(trivial_additions)
        self.is_paraphrase = is_paraphrase
        self.different_answers = different_answers
        self.answer_rule = checked_answer_rule(answer_rule)

    @classmethod
    def with_model(
        cls, model_name_or_path: str = "all-MiniLM-L6-v2", threshold: float = 0.95, use_gpu: bool = True, **kwargs
    ) -> "MEQFilter":
        """Cosines from a model's own pooling (mean, normalised for sentence-transformers models)."""
        from haystack_dcsr.core.model.encoder import QueryTower

        tower = QueryTower(model_name_or_path, use_gpu=use_gpu)
        return cls(embed=lambda texts: tower.encode(texts), threshold=threshold, **kwargs)

    def text_rules(self, q: str, q2: str, answers: Sequence[str], answers2: Sequence[str]) -> Verdict:
        """Every rule but the cosine: edit distance, question word, trivial addition, answers,
        paraphrase hook."""
        a, b = words(q), words(q2)
        distance = word_edit_distance(a, b, limit=self.max_edits)
        if not self.min_edits <= distance <= self.max_edits:
            return Verdict(False, "edit distance", distance)
        if question_word(a) != question_word(b):
            return Verdict(False, "question word", distance)
        if only_trivial_addition(a, b, distance, self.trivial_additions):
            return Verdict(False, "trivial addition", distance)
        if self.different_answers and not answers_differ(answers, answers2, self.answer_rule):
            return Verdict(False, "same answer", distance)
        if self.is_paraphrase is not None and self.is_paraphrase(q, q2):
            return Verdict(False, "paraphrase", distance)
        return Verdict(True, "", distance)

    def check(
        self, q: str, q2: str, answers: Sequence[str], answers2: Sequence[str], similarity: Optional[float] = None
    ) -> Verdict:
        """One pair, all rules; ``similarity`` skips embedding when the caller has the cosine."""
        verdict = self.text_rules(q, q2, answers, answers2)
        if not verdict.accepted or (self.embed is None and similarity is None):
            return verdict
        if similarity is None:
            u, v = self.embed([q, q2])
            similarity = cosine(u, v)
        verdict.similarity = similarity
        if similarity < self.threshold:
            return Verdict(False, "cosine", verdict.distance, similarity)
        return verdict

    def filter_pairs(
        self, questions: Sequence[Tuple[str, Sequence[str]]], pairs: Sequence[Tuple[int, int]], batch_size: int = 256
    ) -> Tuple[List[Tuple[int, int, Verdict]], Dict[str, int]]:
        """Accepted pairs of ``questions`` (text, answers) among candidate index ``pairs``, and how
        many each rule rejected. Questions are embedded once, only when a text-rule survivor needs it."""
        rejected: Counter = Counter()
        survivors = []
        for i, j in pairs:
            verdict = self.text_rules(questions[i][0], questions[j][0], questions[i][1], questions[j][1])
            if verdict.accepted:
                survivors.append((i, j, verdict))
            else:
                rejected[verdict.reason] += 1
        if self.embed is None or not survivors:
            return survivors, dict(rejected)
        needed = sorted({k for i, j, _ in survivors for k in (i, j)})
        vectors = {}
        for start in range(0, len(needed), batch_size):
            chunk = needed[start : start + batch_size]
            for k, vector in zip(chunk, self.embed([questions[k][0] for k in chunk])):
                vectors[k] = vector
        accepted = []
        for i, j, verdict in survivors:
            verdict.similarity = cosine(vectors[i], vectors[j])
            if verdict.similarity >= self.threshold:
                accepted.append((i, j, verdict))
            else:
                rejected["cosine"] += 1
        return accepted, dict(rejected)


def candidate_pairs(
    groups: Dict[str, List[int]], question_words_of: Sequence[Sequence[str]], max_edits: int = 3
) -> List[Tuple[int, int]]:
    """Index pairs (i < j) within each group (e.g. an article) whose word lengths differ by at
    most ``max_edits``: the only pairs that can pass the edit-distance rule."""
    pairs = []
    for members in groups.values():
        ordered = sorted(members, key=lambda k: len(question_words_of[k]))
        for x, i in enumerate(ordered):
            for j in ordered[x + 1 :]:
                if len(question_words_of[j]) - len(question_words_of[i]) > max_edits:
                    break
                pairs.append((min(i, j), max(i, j)))
    return pairs


def calibrate_threshold(pairs: Sequence[Tuple[str, str]], embed: Embed, keep: float = 0.9) -> float:
    """The cosine that keeps a ``keep`` share of known MEQ-like pairs under another encoder: the
    paper's Contriever threshold (0.95) transfers as a quantile, not as a number."""
    if not pairs:
        raise ValueError("calibrate_threshold needs at least one pair")
    first = embed([a for a, _ in pairs])
    second = embed([b for _, b in pairs])
    cosines = [cosine(u, v) for u, v in zip(first, second)]
    return float(np.quantile(cosines, 1.0 - keep))
