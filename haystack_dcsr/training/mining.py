"""Hard negatives from a Haystack BM25 node (the DPR recipe): top BM25 passages without an answer.

Mining goes through ``BM25Retriever.retrieve_batch`` so any BM25 store works:
``ElasticsearchDocumentStore`` when a server URL is given, else the embedded
``SparseBM25DocumentStore``. Output is streamed as JSONL, one record per line in input order,
so an interrupted run resumes where it stopped.
"""

import json
import logging
from pathlib import Path
from typing import Iterable, List, Optional, Union

from haystack.document_stores import KeywordDocumentStore
from haystack.nodes import BM25Retriever
from haystack.nodes.retriever import BaseRetriever
from haystack.schema import Document
from tqdm.auto import tqdm

from haystack_dcsr.haystack1.bm25 import SparseBM25DocumentStore
from haystack_dcsr.training.data import Passage, Record, answerless_negatives

logger = logging.getLogger(__name__)


def bm25_retriever(
    passages: Iterable[Passage], elasticsearch_url: Optional[str] = None, index: str = "dcsr_bm25"
) -> BM25Retriever:
    """A ``BM25Retriever`` over ``passages``: Elasticsearch at ``elasticsearch_url``, else embedded."""
    documents = [Document(content=p.text, id=p.key, meta={"title": p.title}) for p in passages]
    if elasticsearch_url:
        from urllib.parse import urlparse

        from haystack.document_stores import ElasticsearchDocumentStore

        url = urlparse(elasticsearch_url)
        store: KeywordDocumentStore = ElasticsearchDocumentStore(
            host=url.hostname or "localhost",
            port=url.port or 9200,
            scheme=url.scheme or "http",
            username=url.username or "",
            password=url.password or "",
            index=index,
            recreate_index=True,
        )
    else:
        store = SparseBM25DocumentStore(index=index, progress_bar=False)
    store.write_documents(documents, index=index)
    return BM25Retriever(document_store=store, scale_score=False)


def mine_hard_negatives(
    records: List[Record],
    retriever: BaseRetriever,
    output: Union[str, Path],
    top_k: int = 30,
    keep: int = 30,
    batch_size: int = 1024,
    progress_bar: bool = True,
) -> int:
    """Append records with ``hard_negative_ctxs`` = up to ``keep`` of the ``retriever``'s top ``top_k``
    passages that are not a positive and contain no answer (``BM25Retriever`` for DPR's recipe, a
    trained ``DCSRRetriever`` for model-based negatives). Resumes after the records already in
    ``output``. Returns how many records were mined in this call."""
    output = Path(output)
    done = _count_lines(output)
    if done > len(records):
        raise ValueError(f"{output} holds {done} records but only {len(records)} were given: wrong output file?")
    normalized = {}  # passage key -> normalised text, computed once per passage
    output.parent.mkdir(parents=True, exist_ok=True)
    with (
        output.open("a", encoding="utf-8") as handle,
        tqdm(
            total=len(records), initial=done, disable=not progress_bar, desc="Mining BM25 negatives", unit=" q"
        ) as bar,
    ):
        for start in range(done, len(records), batch_size):
            chunk = records[start : start + batch_size]
            hits = retriever.retrieve_batch([r.question for r in chunk], top_k=top_k)
            for record, documents in zip(chunk, hits):
                ranked = (Passage(title=d.meta.get("title", ""), text=d.content, passage_id=d.id) for d in documents)
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


def mine_with_retriever(
    model_dir: Union[str, Path],
    records: List[Record],
    corpus: List[Passage],
    output: Union[str, Path],
    top_k: int = 30,
    keep: int = 30,
    batch_size: int = 256,
) -> int:
    """Model-based hard negatives (the paper's DCSR-hard round): index ``corpus`` with the trained
    towers in ``model_dir`` and keep the top passages without an answer."""
    from haystack.document_stores import FAISSDocumentStore

    from haystack_dcsr import DCSRRetriever, SentencePreprocessor

    if (Path(model_dir) / "dcsr_retriever.json").is_file():
        retriever = DCSRRetriever.load(model_dir)
        splitter = SentencePreprocessor(split_sentences=retriever.passage_encoder.config.level != "passage")
    else:  # a DCSRModel directory (a trainer output): the model says how to split its passages
        retriever = DCSRRetriever(model=str(model_dir))
        splitter = SentencePreprocessor(model=str(model_dir))
    splitter.progress_bar = False
    store = FAISSDocumentStore(
        sql_url="sqlite://",
        embedding_dim=retriever.embedding_dim,
        faiss_index_factory_str="Flat",
        duplicate_documents="skip",
        progress_bar=False,
    )
    retriever.document_store = store
    documents = [Document(content=p.text, id=p.key, meta={"title": p.title}) for p in corpus]
    store.write_documents(splitter.process(documents)["documents"])
    store.update_embeddings(retriever)
    return mine_hard_negatives(records, retriever, output, top_k=top_k, keep=keep, batch_size=batch_size)
