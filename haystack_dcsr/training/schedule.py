"""Which questions share a batch: shuffled groups, or batches built around MEQ pairs.

The QQ loss only sees a question's MEQ if both are in one batch, and its InfoNCE form only gets
in-batch negatives from *other* pairs in that batch. Shuffled freely, SQuAD train puts ~1.5
MEQ-bearing questions in a batch of 32 (4,127 of 87,401 questions carry an MEQ), so the term is
starved. The MEQ paper pre-schedules its batches from an index file so a question and its
augmentations land together; ``meq_centred`` does the same from the seed and the epoch: every
batch holds ``meq_per_batch`` MEQ groups (a question and its MEQ, both trained) and is filled up
with the other questions. The other questions pass once per epoch; MEQ groups are drawn without
repeats until all have been used, then a fresh pass starts (new q+, q- and negatives), so an epoch
uses each MEQ record about ``meq_per_batch * batches / MEQ records`` times.
"""

import random
from typing import Iterator, List, Sequence

from haystack_dcsr.training.data import Record
from haystack_dcsr.training.samples import Sample, SampleBuilder, batches


def epoch_batches(
    builder: SampleBuilder, records: Sequence[Record], epoch: int, batch_size: int, meq_per_batch: int = 0
) -> List[List[Sample]]:
    """The training batches of ``epoch`` (deterministic given the builder's seed and the epoch)."""
    if meq_per_batch:
        return meq_centred(builder, records, epoch, batch_size, meq_per_batch)
    return batches(builder.epoch(records, epoch), batch_size)


def meq_centred(
    builder: SampleBuilder, records: Sequence[Record], epoch: int, batch_size: int, meq_per_batch: int
) -> List[List[Sample]]:
    """Batches of exactly ``batch_size`` questions, ``meq_per_batch`` of their groups MEQ pairs."""
    if 2 * meq_per_batch >= batch_size:
        raise ValueError(f"meq_per_batch={meq_per_batch} pairs leave no room in batches of {batch_size} questions")
    rng = random.Random(f"{builder.seed}-{epoch}-meq")
    with_meq = [r for r in records if r.negative_questions]
    if not with_meq:
        raise ValueError("meq_per_batch needs training records with MEQs (negative_questions): none were found")
    others = [g for g in (builder.group(r, rng) for r in records if not r.negative_questions) if g]
    rng.shuffle(others)
    pairs = _meq_groups(builder, with_meq, rng)
    pending: List[List[Sample]] = []  # MEQ groups put off because their question is already in the batch
    out: List[List[Sample]] = []
    rest = iter(others)
    while True:
        batch: List[Sample] = []
        questions: set = set()
        for _ in range(meq_per_batch):
            group = _disjoint(pending, pairs, questions)
            batch.extend(group)
            questions.update(s.question for s in group)
        while len(batch) < batch_size:
            group = next(rest, None)
            if group is None:
                return out  # the last, incomplete batch is dropped, as in ``batches``
            batch.extend(group)
        out.append(batch)


def _disjoint(pending: List[List[Sample]], pairs: Iterator[List[Sample]], questions: set) -> List[Sample]:
    """The first put-off group, else the next new one, that asks none of ``questions`` (q and its MEQ
    are each other's MEQ: group(q) and group(q') must not share a batch); others are put off."""
    for group in list(pending):
        if questions.isdisjoint(s.question for s in group):
            pending.remove(group)
            return group
    while True:
        group = next(pairs)
        if questions.isdisjoint(s.question for s in group):
            return group
        pending.append(group)


def _meq_groups(builder: SampleBuilder, with_meq: Sequence[Record], rng: random.Random) -> Iterator[List[Sample]]:
    """MEQ groups without repeats, pass after pass, each pass in a new order with fresh samples."""
    while True:
        order = list(with_meq)
        rng.shuffle(order)
        produced = False
        for record in order:
            group = builder.group(record, rng)
            if group:
                produced = True
                yield group
        if not produced:
            raise ValueError("no MEQ record yields a training sample (no answer sentence in any positive)")
