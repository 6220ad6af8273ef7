"""HybridJoin: BM25 and DCSR in one Haystack pipeline, fused as the README's hybrid row.

Haystack's ``JoinDocuments`` sums scores as they come (its ``merge``) or by rank (RRF); the
benchmark's best top-1 systems min-max scale each list per query and add them by weight (HasAns
too, or HasAns kept as a probability), which ``JoinDocuments`` cannot express (its ``merge`` takes
scores as given), so this join node does exactly that (``haystack_dcsr.core.ranking.fusion``).
Both branches must return *passages* with the same ids: DCSR rebuilds passages from its sentence
store, and BM25 runs over a store of the same passages (Haystack's ``PreProcessor`` output, written
to a BM25 store beside the sentence store; see ``examples/pipelines/hybrid.haystack-pipeline.yml``).
"""

from typing import Dict, List, Optional, Tuple

from haystack.nodes.other.join import JoinNode
from haystack.schema import Document

from haystack_dcsr.core.ranking.fusion import HYBRID, check_weights, fuse_with_parts
from haystack_dcsr.core.text.sentence_units import has_support


class HybridJoin(JoinNode):
    """Joins the passage lists of several retrievers by weighted scores, each list min-max scaled per
    query first.

        pipeline.add_node(BM25Retriever(document_store=passage_store, top_k=100), name="BM25", inputs=["Query"])
        pipeline.add_node(DCSRRetriever(document_store=sentence_store, top_k=100), name="DCSR", inputs=["Query"])
        pipeline.add_node(HybridJoin(weights=[0.5, 0.5], top_k_join=10), name="Hybrid", inputs=["DCSR", "BM25"])

    :param weights: one per input, in the order of the node's ``inputs``; default equal weights.
    :param top_k_join: passages returned (None: all of the union).
    :param scale_hasans: min-max scale DCSR's HasAns too (default). False keeps it as a probability,
        which at equal weights lets BM25 dominate (3.5 top-1 lower on SQuAD-open; ``docs/guides/hybrid.md``).
    """

    outgoing_edges = 1

    def __init__(
        self, weights: Optional[List[float]] = None, top_k_join: Optional[int] = None, scale_hasans: bool = True
    ):
        super().__init__()
        if top_k_join is not None and (not isinstance(top_k_join, int) or top_k_join < 1):
            raise ValueError(f"HybridJoin: top_k_join must be an integer >= 1 or null, got {top_k_join!r}")
        self.weights = check_weights("HybridJoin", weights)
        self.top_k_join = top_k_join
        self.scale_hasans = scale_hasans

    def join(self, results: List[List[Document]], top_k: Optional[int] = None) -> List[Document]:
        """One query's passage lists (one per retriever) joined into one."""
        if self.weights is not None and len(self.weights) != len(results):
            raise ValueError(f"HybridJoin has {len(self.weights)} weights but {len(results)} inputs")
        by_id: Dict[str, Document] = {}
        for docs in results:
            for doc in docs:
                by_id.setdefault(doc.id, doc)  # the first input's copy (e.g. DCSR's, with its sentences)
        ranked = [[(doc.id, float(doc.score or 0.0)) for doc in docs] for docs in results]
        hasans = [has_support(docs) for docs in results]
        output = []
        for pid, score, parts in fuse_with_parts(
            ranked, self.weights, top_k or self.top_k_join, scaled=[self.scale_hasans or not h for h in hasans]
        ):
            source = by_id[pid]
            output.append(
                Document(
                    content=source.content,
                    id=pid,
                    score=score,
                    meta={**source.meta, HYBRID: parts},
                    content_type=source.content_type,
                )
            )
        return output

    def run_accumulated(self, inputs: List[Dict], top_k_join: Optional[int] = None) -> Tuple[Dict, str]:
        documents = self.join([inp["documents"] for inp in inputs], top_k_join)
        return {"documents": documents, "labels": inputs[0].get("labels")}, "output_1"

    def run_batch_accumulated(self, inputs: List[Dict], top_k_join: Optional[int] = None) -> Tuple[Dict, str]:
        per_input = [inp["documents"] for inp in inputs]
        if per_input and per_input[0] and isinstance(per_input[0][0], Document):
            return self.run_accumulated(inputs, top_k_join)
        documents = [self.join([docs[q] for docs in per_input], top_k_join) for q in range(len(per_input[0]))]
        return {"documents": documents, "labels": inputs[0].get("labels")}, "output_1"
