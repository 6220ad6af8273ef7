"""DCSRHybridJoiner: BM25 and DCSR in one 2.x pipeline, fused as the README's hybrid row."""

from typing import Any, Dict, List, Optional

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.component.types import Variadic

from haystack_dcsr.core.ranking.fusion import HYBRID, check_weights, fuse_with_parts
from haystack_dcsr.core.ranking.parameters import check_parameters
from haystack_dcsr.core.text.sentence_units import has_support


@component
class DCSRHybridJoiner:
    """Joins passage lists by weighted scores, each list (HasAns, BM25) min-max scaled per query
    (``haystack_dcsr.core.ranking.fusion``), which Haystack's ``DocumentJoiner`` modes cannot express. Inputs must be
    passages with the same ids: run BM25 over a store of the same passages the sentence store was split from.

    :param weights: one per input list, in the order they arrive (DCSR first, as connected); default equal.
    :param top_k: passages returned (None: the whole union).
    :param scale_hasans: min-max scale DCSR's HasAns too (default). False keeps it as a probability,
        which at equal weights lets BM25 dominate (3.5 top-1 lower on SQuAD-open; ``docs/guides/hybrid.md``).
    """

    def __init__(self, weights: Optional[List[float]] = None, top_k: Optional[int] = None, scale_hasans: bool = True):
        check_parameters("DCSRHybridJoiner", ("top_k",), top_k=top_k)
        self.weights = check_weights("DCSRHybridJoiner", weights)
        self.top_k = top_k
        self.scale_hasans = scale_hasans

    @component.output_types(documents=List[Document])
    def run(self, documents: Variadic[List[Document]], top_k: Optional[int] = None) -> Dict[str, List[Document]]:
        lists = list(documents)
        lists.sort(key=lambda docs: not has_support(docs))  # DCSR first
        if self.weights is not None and len(self.weights) != len(lists):
            raise ValueError(f"DCSRHybridJoiner has {len(self.weights)} weights but {len(lists)} inputs")
        by_id: Dict[str, Document] = {}
        for docs in lists:
            for doc in docs:
                by_id.setdefault(doc.id, doc)
        ranked = [[(doc.id, float(doc.score or 0.0)) for doc in docs] for docs in lists]
        hasans = [has_support(docs) for docs in lists]
        output = [
            Document(id=pid, content=by_id[pid].content, meta={**by_id[pid].meta, HYBRID: parts}, score=score)
            for pid, score, parts in fuse_with_parts(
                ranked, self.weights, top_k or self.top_k, scaled=[self.scale_hasans or not h for h in hasans]
            )
        ]
        return {"documents": output}

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(self, weights=self.weights, top_k=self.top_k, scale_hasans=self.scale_hasans)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRHybridJoiner":
        return default_from_dict(cls, data)
