"""Hard negatives for training, without any Haystack: BM25 (the DPR recipe) and a trained model's own
(the paper's DCSR-hard round).

A miner is a ``search``: questions and a depth in, each question's ranked passages out. Two ship here,
on the package's core: ``bm25_search`` (the core's sparse BM25, Elasticsearch scoring) and
``dense_search`` (a trained DCSR model over an exact sentence index, ranked by HasAns as the retrievers
serve it, on the GPU when there is one). ``retriever_search`` mines through any Haystack retriever
(``haystack_dcsr.haystack1.mining`` builds them: Elasticsearch, a FAISS-backed ``DCSRRetriever``).
``mine_hard_negatives`` keeps each question's top passages that are not a positive and hold no answer,
streamed as JSONL in input order, so an interrupted run resumes where it stopped.
"""

import json
import logging
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Union

from tqdm.auto import tqdm

from haystack_dcsr.training.data import Passage, Record, answerless_negatives

logger = logging.getLogger(__name__)

Search = Callable[[List[str], int], List[List[Passage]]]
"""questions, top_k -> per question its top_k passages, best first."""


def bm25_search(passages: Sequence[Passage], query_batch_size: int = 512) -> Search:
    """BM25 over ``passages`` (Lucene scoring, ties in corpus order): the DPR recipe's negatives."""
    from haystack_dcsr.core.indexes.sparse_bm25 import SparseBM25

    passages = list(passages)
    bm25 = SparseBM25([p.text for p in passages], query_batch_size=query_batch_size)

    def search(questions: List[str], top_k: int) -> List[List[Passage]]:
        return [[passages[row] for row in rows] for rows, _ in bm25.search(questions, top_k)]

    return search


def dense_search(
    model: Union[str, Path],
    passages: Sequence[Passage],
    device: Optional[str] = None,
    batch_size: int = 64,
    progress_bar: bool = True,
) -> Search:
    """A trained DCSR model's ranking of ``passages`` (a model directory or hub name): every passage split
    and encoded whole as the retrievers index it, an exact search over all sentence vectors and HasAns
    over each question's top sentences, as ``DCSRRetriever`` serves a FAISS Flat index."""
    from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
    from haystack_dcsr.core.model.dcsr_model import DCSRModel

    passages = list(passages)
    dcsr = DCSRModel.from_pretrained(str(model), device=device)
    units = dcsr.passage_units([p.text for p in passages])
    vectors = dcsr.encode_passages(units, batch_size=batch_size, progress_bar=progress_bar)
    index = ExactSentenceIndex(vectors, [len(u) for u in units], device=str(dcsr.passage_tower.device))

    def search(questions: List[str], top_k: int) -> List[List[Passage]]:
        queries = dcsr.encode_queries(questions, batch_size=256)
        ranked = index.rank_passage_numbers(queries, dcsr.temperature, top_k=top_k)
        return [[passages[int(p)] for p in row.passages] for row in ranked]

    return search


def retriever_search(retriever) -> Search:
    """A Haystack retriever's ``retrieve_batch`` as a search (``haystack_dcsr.haystack1.mining`` builds
    such retrievers over a corpus): its documents as the trainer's passages."""

    def search(questions: List[str], top_k: int) -> List[List[Passage]]:
        return [
            [Passage(title=d.meta.get("title", ""), text=d.content, passage_id=d.id) for d in documents]
            for documents in retriever.retrieve_batch(questions, top_k=top_k)
        ]

    return search


def mine_hard_negatives(
    records: List[Record],
    search: Search,
    output: Union[str, Path],
    top_k: int = 30,
    keep: int = 30,
    batch_size: int = 1024,
    progress_bar: bool = True,
) -> int:
    """Append records with ``hard_negative_ctxs`` = up to ``keep`` of the ``search``'s top ``top_k``
    passages that are not a positive and contain no answer. Resumes after the records already in
    ``output``. Returns how many records were mined in this call."""
    output = Path(output)
    done = _count_lines(output)
    if done > len(records):
        raise ValueError(f"{output} holds {done} records but only {len(records)} were given: wrong output file?")
    normalized = {}  # passage key -> normalised text, computed once per passage
    output.parent.mkdir(parents=True, exist_ok=True)
    with (
        output.open("a", encoding="utf-8") as handle,
        tqdm(total=len(records), initial=done, disable=not progress_bar, desc="Mining negatives", unit=" q") as bar,
    ):
        for start in range(done, len(records), batch_size):
            chunk = records[start : start + batch_size]
            for record, ranked in zip(chunk, search([r.question for r in chunk], top_k)):
                record.hard_negatives = answerless_negatives(record, ranked, keep, normalized)
                handle.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
            handle.flush()
            bar.update(len(chunk))
    return len(records) - done


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open(encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    complete = [line for line in lines[:-1] if line.strip()]
    if lines[-1].strip():  # a half-written last line from an interrupted run: drop it
        with path.open("w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in complete))
    return len(complete)
