"""Query-side tuning: every training sentence, encoded once by a frozen passage tower, is a candidate.

With the passage tower trained, a step can only afford the batch's few candidates, re-encoded each
time. Frozen, the passage side is a fixed table: every sentence of the training passages is
encoded once and each question's softmax runs over all of them, so every sentence of the corpus is
a negative, including the ones the current query tower ranks highest (ADORE, Zhan et al., SIGIR
2021; DensePhrases' query-side fine-tuning, Lee et al., 2021). A question and its MEQ then each see
the other's gold sentence as a scored negative on every step, which is what "own gold first" asks
of the model. The index is the served one: sentences split and encoded whole, as the retriever
indexes them, so the vectors a question is tuned against are the vectors it will be served.

Two targets (``target``): ``sentence``, the sample's answer sentence against every other row (the
paper's sentence-level softmax; the gold passage's other sentences are negatives too), or
``passage``, the gold passage's share of the softmax, summed over its sentences: what HasAns ranks
by, so a frozen passage tower's sentences of one passage are not pulled apart from one another.
False negatives: the gold passage's other answer sentences are masked (``sentence``, as in a batch),
and so is any sentence of another passage among the question's ``mask_top`` best-scored rows that
holds one of its answers; further down, a false negative's share of the softmax is negligible.
"""

from typing import Dict, List, Literal, Sequence, Tuple

import numpy as np
import torch

from haystack_dcsr.core.model.encoder import PassageTower
from haystack_dcsr.core.ranking.metrics import contains_answer, normalize_for_matching
from haystack_dcsr.training.data import Passage, Record
from haystack_dcsr.training.samples import Candidate, Sample, SampleBuilder

Target = Literal["sentence", "passage"]


def training_passages(records: Sequence[Record]) -> List[Passage]:
    """Every passage the records name (positives, negatives, and their MEQs' positives), once each."""
    seen: Dict[str, Passage] = {}
    for record in records:
        for named in [record, *record.negative_questions]:
            for passage in [*named.positives, *named.hard_negatives, *named.negatives]:
                seen.setdefault(passage.key, passage)
    return list(seen.values())


class FrozenSentenceIndex:
    """The sentence vectors of ``passages`` and the per-question targets over them.

    :param passages: the corpus the questions are tuned against (``training_passages``).
    :param builder: the trainer's sample builder: its sentence splits are the samples' keys.
    :param tower: the frozen passage tower.
    :param mask_top: how many best-scored rows per question are checked for its answers.
    :param target: ``sentence`` (the answer sentence) or ``passage`` (all of the gold passage's rows).
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        builder: SampleBuilder,
        tower: PassageTower,
        mask_top: int = 100,
        target: Target = "sentence",
    ):
        if target not in ("sentence", "passage"):
            raise ValueError(f"target must be 'sentence' or 'passage', got {target!r}")
        units = [builder.units(p, tower.config.level) for p in passages]
        self.keys = [
            Candidate(p, j if tower.config.level == "sentence" else None).key
            for p, unit in zip(passages, units)
            for j in range(len(unit))
        ]
        self.row = {key: i for i, key in enumerate(self.keys)}
        first = np.cumsum([0] + [len(unit) for unit in units])
        self.rows_of = {p.key: range(int(first[i]), int(first[i + 1])) for i, p in enumerate(passages)}
        self.normalized = [normalize_for_matching(s) for unit in units for s in unit]
        tower.model.eval()  # no dropout in the vectors every step is scored against
        with torch.no_grad():
            self.vectors = torch.from_numpy(np.ascontiguousarray(tower.encode(units, progress_bar=True)))
        self.mask_top, self.target = mask_top, target

    def __len__(self) -> int:
        return len(self.keys)

    def targets(self, samples: Sequence[Sample], scores: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Each question's positive rows (Q, N) and its mask (True = a false negative, out of its softmax);
        ``scores`` (Q, N) are the step's own logits (any increasing scale of q . row), read for the top rows."""
        missing = [s.positive.key for s in samples if s.positive.key not in self.row]
        if missing:
            raise KeyError(f"Positives not in the frozen index (built from other records?): {missing[:3]}")
        positives = torch.zeros((len(samples), len(self.keys)), dtype=torch.bool)
        mask = torch.zeros_like(positives)
        best = scores.detach().topk(min(self.mask_top, len(self.keys)), dim=1).indices.cpu().tolist()
        for q, sample in enumerate(samples):
            if self.target == "passage":
                gold = self.rows_of[sample.positive.passage.key]
                positives[q, gold.start : gold.stop] = True
            else:
                positives[q, self.row[sample.positive.key]] = True
                for key in sample.positive_keys:
                    if key in self.row:
                        mask[q, self.row[key]] = True
            answers = [normalize_for_matching(a) for a in sample.answers]
            for row in best[q]:
                if contains_answer(self.normalized[row], answers):
                    mask[q, row] = True
        return positives, mask & ~positives
