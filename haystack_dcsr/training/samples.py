"""Training samples and batches, re-drawn every epoch.

DCSR (sentence level): the positive is a sentence of the positive passage that holds an answer;
negatives are, by recipe, an *in-passage* sentence without the answer (not next to an answer
sentence; falling back to a sentence of a BM25 passage) and random sentences of BM25 hard-negative
passages. DPR (passage level): the positive passage and BM25 hard-negative passages. In-batch
negatives come for free: every question is scored against every candidate of the (global) batch,
except candidates that are in fact its positives (same answer sentence / same passage), which are
masked out of its softmax.

The MEQ paper's query-side augmentations ride along: each question with a paraphrase (q+) or
minimally edited question (q-) keeps them in its batch, q+ / q- are re-drawn each epoch, and each
q- is also trained as a question of its own (its own QP term).
"""

import dataclasses
import random
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from haystack_dcsr.core.ranking.metrics import contains_answer, normalize_for_matching
from haystack_dcsr.core.text.splitting import SentenceSplitter
from haystack_dcsr.training.data import Passage, Record

# The paper's ablation recipes, by name, as the list of per-question extra negatives.
RECIPES = {
    "+1 BM25 random": ("bm25",),
    "+2 BM25 random": ("bm25", "bm25"),
    "+1 in-passage +1 BM25 random": ("in_passage", "bm25"),
    "dpr": ("bm25",),
}


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A passage (DPR, ``sentence`` None) or one sentence of it in context (DCSR)."""

    passage: Passage
    sentence: Optional[int] = None

    @property
    def key(self) -> str:
        return self.passage.key if self.sentence is None else f"{self.passage.key}#{self.sentence}"


@dataclasses.dataclass
class Sample:
    question: str
    positive: Candidate
    negatives: List[Candidate]
    positive_keys: frozenset  # every candidate key that is a positive of this question
    paraphrase: Optional[str] = None  # q+
    meq: Optional[str] = None  # q-
    answers: Tuple[str, ...] = ()  # what marks a false negative outside the batch (query-side tuning)


@dataclasses.dataclass
class Batch:
    """What one step encodes: questions, unique passages, candidates and the masks between them."""

    questions: List[str]
    passages: List[Passage]
    candidates: List[Tuple[int, Optional[int]]]  # (index into passages, sentence or None)
    positives: torch.Tensor  # (questions,) candidate index of each question's positive
    mask: torch.Tensor  # (questions, candidates) True = a false negative, excluded from the softmax
    paraphrases: List[Optional[str]]  # per question: q+ (None: none, or an MEQ question itself)
    meqs: List[Optional[str]]  # per question: q-


class SampleBuilder:
    """Turns records into samples for one epoch (deterministic given the seed and the epoch).

    :param level: ``sentence`` (DCSR) or ``passage`` (DPR).
    :param negatives: per-question extra negatives, a ``RECIPES`` name or a list of
        ``in_passage`` / ``bm25``.
    :param exclude_adjacent: in-passage negatives skip sentences next to an answer sentence
        (they often restate the answer; the reference code does this).
    :param train_meqs: add every q- as a question of its own with its own positive (MEQ paper).
    :param meq_oversample: records with an MEQ enter each epoch this many times, each with freshly
        drawn q+, q- and negatives (MEQs are rare in mined data: ~5% of SQuAD train questions).
    """

    def __init__(
        self,
        level: str = "sentence",
        negatives="+1 in-passage +1 BM25 random",
        exclude_adjacent: bool = True,
        train_meqs: bool = True,
        splitter: Optional[SentenceSplitter] = None,
        seed: int = 0,
        meq_oversample: int = 1,
    ):
        if level not in ("sentence", "passage"):
            raise ValueError(f"level must be 'sentence' or 'passage', got {level!r}")
        recipe = RECIPES.get(negatives, negatives) if isinstance(negatives, str) else negatives
        if isinstance(recipe, str) or any(kind not in ("in_passage", "bm25") for kind in recipe):
            raise ValueError(
                f"negatives must be one of {list(RECIPES)} or a list of 'in_passage'/'bm25', got {negatives!r}"
            )
        if level == "passage" and "in_passage" in recipe:
            raise ValueError("in-passage negatives need level='sentence'")
        if meq_oversample < 1:
            raise ValueError(f"meq_oversample must be >= 1, got {meq_oversample}")
        self.level, self.recipe = level, tuple(recipe)
        self.exclude_adjacent, self.train_meqs, self.seed = exclude_adjacent, train_meqs, seed
        self.meq_oversample = meq_oversample
        self.splitter = splitter or SentenceSplitter()
        self._sentences: Dict[str, List[str]] = {}
        self.skipped_no_answer_sentence = 0

    def for_validation(self) -> "SampleBuilder":
        """The same recipe without MEQ training samples, for dev batches; it shares this builder's
        splitter and sentence cache, so passages seen in training are not split again."""
        twin = SampleBuilder(
            level=self.level,
            negatives=list(self.recipe),
            exclude_adjacent=self.exclude_adjacent,
            train_meqs=False,
            splitter=self.splitter,
            seed=self.seed,
        )
        twin._sentences = self._sentences
        return twin

    def sentences(self, passage: Passage) -> List[str]:
        if passage.key not in self._sentences:
            self._sentences[passage.key] = self.splitter.split(passage.text) or [passage.text]
        return self._sentences[passage.key]

    def units(self, passage: Passage, level: str) -> List[str]:
        """What a tower of ``level`` encodes of ``passage``, as the retriever serves it: its sentences
        (DCSR), or the passage whole (DPR)."""
        return self.sentences(passage) if level == "sentence" else [passage.text]

    def answer_sentences(self, passage: Passage, answers: Sequence[str]) -> List[int]:
        normalized = [normalize_for_matching(a) for a in answers]
        return [
            j for j, s in enumerate(self.sentences(passage)) if contains_answer(normalize_for_matching(s), normalized)
        ]

    def epoch(self, records: Sequence[Record], epoch: int) -> List[List[Sample]]:
        """Groups of samples for ``epoch``: a question with its MEQ questions, kept in one batch."""
        rng = random.Random(f"{self.seed}-{epoch}")
        self.skipped_no_answer_sentence = 0
        groups = []
        for record in records:
            for _ in range(self.meq_oversample if record.negative_questions else 1):
                group = self.group(record, rng)
                if group:
                    groups.append(group)
        rng.shuffle(groups)
        return groups

    def group(self, record: Record, rng: random.Random) -> List[Sample]:
        """A question with its MEQ (trained too, when ``train_meqs``): samples that share a batch."""
        paraphrase = rng.choice(record.positive_questions) if record.positive_questions else None
        meq = rng.choice(record.negative_questions) if record.negative_questions else None
        sample = self.sample(record, rng, paraphrase=paraphrase, meq=meq.question if meq else None)
        if sample is None:
            return []
        group = [sample]
        if meq is not None and self.train_meqs:
            meq_record = meq if meq.hard_negatives else dataclasses.replace(meq, hard_negatives=record.hard_negatives)
            meq_sample = self.sample(meq_record, rng)
            if meq_sample is not None:
                group.append(meq_sample)
        return group

    def sample(
        self, record: Record, rng: random.Random, paraphrase: Optional[str] = None, meq: Optional[str] = None
    ) -> Optional[Sample]:
        passage = record.positives[0]  # the first positive, as in DPR and DCSR
        bm25_passages = record.hard_negatives or record.negatives
        if self.level == "passage":
            positive = Candidate(passage)
            keys = frozenset(p.key for p in record.positives)
            negatives = [Candidate(rng.choice(bm25_passages)) for _ in self.recipe if bm25_passages]
            return Sample(record.question, positive, negatives, keys, paraphrase, meq, tuple(record.answers))
        answer_sentences = self.answer_sentences(passage, record.answers)
        if not answer_sentences:  # the answer straddles a sentence boundary
            self.skipped_no_answer_sentence += 1
            return None
        positive = Candidate(passage, rng.choice(answer_sentences))
        keys = frozenset(Candidate(passage, j).key for j in answer_sentences)
        excluded = set(answer_sentences)
        if self.exclude_adjacent:
            excluded |= {j + d for j in answer_sentences for d in (-1, 1)}
        in_passage = [j for j in range(len(self.sentences(passage))) if j not in excluded]
        negatives = []
        for kind in self.recipe:
            if kind == "in_passage" and in_passage:
                negatives.append(Candidate(passage, rng.choice(in_passage)))
            elif bm25_passages:  # a BM25 negative, also the in-passage fallback
                other = rng.choice(bm25_passages)
                negatives.append(Candidate(other, rng.randrange(len(self.sentences(other)))))
        return Sample(record.question, positive, negatives, keys, paraphrase, meq, tuple(record.answers))


def make_batch(samples: Sequence[Sample], mask_false_negatives: bool = True) -> Batch:
    """Candidates = every sample's positive and negatives; each passage is listed (encoded) once."""
    passage_index: Dict[str, int] = {}
    passages: List[Passage] = []
    candidate_index: Dict[str, int] = {}
    candidates: List[Tuple[int, Optional[int]]] = []
    keys: List[str] = []

    def add(candidate: Candidate) -> int:
        if candidate.key not in candidate_index:
            if candidate.passage.key not in passage_index:
                passage_index[candidate.passage.key] = len(passages)
                passages.append(candidate.passage)
            candidate_index[candidate.key] = len(candidates)
            candidates.append((passage_index[candidate.passage.key], candidate.sentence))
            keys.append(candidate.key)
        return candidate_index[candidate.key]

    positives = [add(s.positive) for s in samples]
    for s in samples:
        for negative in s.negatives:
            add(negative)
    mask = torch.zeros((len(samples), len(candidates)), dtype=torch.bool)
    if mask_false_negatives:
        for q, s in enumerate(samples):
            for c, key in enumerate(keys):
                if c != positives[q] and key in s.positive_keys:
                    mask[q, c] = True
    return Batch(
        questions=[s.question for s in samples],
        passages=passages,
        candidates=candidates,
        positives=torch.tensor(positives, dtype=torch.long),
        mask=mask,
        paraphrases=[s.paraphrase for s in samples],
        meqs=[s.meq for s in samples],
    )


def batches(groups: Sequence[List[Sample]], batch_size: int, drop_last: bool = True) -> List[List[Sample]]:
    """Pack groups (a question and its MEQs) into batches of about ``batch_size`` questions,
    never splitting a group. For training the last, incomplete batch is dropped (every step sees
    the same number of in-batch negatives); validation keeps it."""
    out, current = [], []
    for group in groups:
        if current and len(current) + len(group) > batch_size:
            out.append(current)
            current = []
        current.extend(group)
    if current and (len(current) == batch_size or not drop_last):
        out.append(current)
    return out
