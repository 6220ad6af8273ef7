"""Retrieval validation: how the towers rank each dev question's gold passage among many, as served.

In-batch accuracy says how the model does against a batch's few candidates; users pick checkpoints
by retrieval. So the dev questions are answered over a fixed slice of dev passages (every question's
gold passage first, then the dev records' BM25 negatives and other passages, up to ``size``): all
sentences of the slice are encoded whole, as the retriever indexes them, and passages are ranked
by HasAns over all of them (a passage-level tower: one vector each, the same ranking as a dot
product). The slice is fixed for the run, so scores compare across validations.
"""

from typing import Dict, List, Sequence

import numpy as np

from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
from haystack_dcsr.core.model.encoder import PassageTower, QueryTower
from haystack_dcsr.training.data import Passage, Record
from haystack_dcsr.training.samples import SampleBuilder

KS = (1, 5, 20)


class RetrievalValidation:
    """MRR@10 and recall@k of the gold passage over a fixed slice of dev passages.

    :param records: dev records (their first positive is the gold passage).
    :param size: passages in the slice; questions whose gold passage does not fit are left out.
    """

    def __init__(self, records: Sequence[Record], builder: SampleBuilder, size: int = 2000):
        slice_: Dict[str, Passage] = {}
        for record in records:
            if record.positives and len(slice_) < size:
                slice_.setdefault(record.positives[0].key, record.positives[0])
        for record in records:
            for passage in [*record.hard_negatives, *record.negatives, *record.positives[1:]]:
                if len(slice_) < size:
                    slice_.setdefault(passage.key, passage)
        self.passages: List[Passage] = list(slice_.values())
        position = {key: i for i, key in enumerate(slice_)}
        kept = [r for r in records if r.positives and r.positives[0].key in position]
        self.questions = [r.question for r in kept]
        self.gold = np.array([position[r.positives[0].key] for r in kept], dtype=np.int64)
        self.builder = builder

    def __call__(self, query: QueryTower, passage: PassageTower, temperature: float) -> Dict[str, float]:
        if not self.questions:
            return {}
        units = [self.builder.units(p, passage.config.level) for p in self.passages]
        index = ExactSentenceIndex(passage.encode(units), [len(u) for u in units])
        # every sentence counts
        ranked = index.rank_passage_numbers(query.encode(self.questions), temperature, top_n=len(index))
        ranks = np.array([1 + int(np.flatnonzero(r.passages == gold)[0]) for r, gold in zip(ranked, self.gold)])
        metrics = {"mrr@10": float(np.mean(np.where(ranks <= 10, 1.0 / ranks, 0.0)))}
        metrics.update({f"recall@{k}": float(np.mean(ranks <= k)) for k in KS})
        metrics["retrieval_questions"], metrics["retrieval_passages"] = len(ranks), len(self.passages)
        return metrics
