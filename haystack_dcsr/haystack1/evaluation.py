"""Haystack 1.x's own evaluation (``Pipeline.eval``) read as the core's metrics take it."""

from typing import Dict

from haystack_dcsr.core.ranking.metrics import has_answer


def eval_result_hit_ranks(result, node: str = "Retriever") -> Dict[str, int]:
    """First-hit rank (DPR answer matching) per query from a Haystack ``EvaluationResult``, so
    ``top_k_accuracy`` / ``mean_reciprocal_rank`` apply to ``Pipeline.eval`` output unchanged."""
    frame = result[node]
    frame = frame[frame["type"] == "document"] if "type" in frame else frame
    ranks: Dict[str, int] = {}
    for query, rows in frame.sort_values("rank").groupby("query", sort=False):
        gold = [a for answers in rows["gold_answers"] for a in (answers or [])]
        ranks[query] = next(
            (int(r) for r, context in zip(rows["rank"], rows["context"]) if has_answer(str(context), gold)), 0
        )
    return ranks
