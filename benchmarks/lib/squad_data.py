"""Open SQuAD for the benchmarks: every v1.1 paragraph as the corpus, dev questions as the test."""

import gzip
import json
import random
from pathlib import Path
from typing import Iterable, List, Tuple

from haystack.document_stores import FAISSDocumentStore
from haystack.schema import Document

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "squad"
Question = Tuple[str, List[str], str]  # text, answers, gold passage id


def load_squad(
    data_dir: Path = DATA, n_passages: int = 10**9, n_questions: int = 1000, seed: int = 0, keep: Iterable[str] = ()
) -> Tuple[List[Document], List[Question]]:
    """All paragraphs (ids ``<split>-<article>-<paragraph>``) and a fixed random sample of dev
    questions (all of them when ``n_questions`` is 0 or too large). Quick runs with fewer
    passages keep every gold passage (and the ids in ``keep``) and fill up with a seeded sample
    of the others."""
    passages, questions = [], []
    for split in ("dev", "train"):
        data = json.load(gzip.open(data_dir / f"{split}-v1.1.json.gz"))["data"]
        for a, article in enumerate(data):
            for p, paragraph in enumerate(article["paragraphs"]):
                pid = f"{split}-{a}-{p}"
                passages.append(Document(content=paragraph["context"], id=pid, meta={"title": article["title"]}))
                if split == "dev":
                    for qa in paragraph["qas"]:
                        questions.append((qa["question"], [ans["text"] for ans in qa["answers"]], pid))
    if 0 < n_questions < len(questions):
        questions = random.Random(seed).sample(questions, n_questions)
    if n_passages < len(passages):
        gold = {pid for _, _, pid in questions} | set(keep)
        rest = [d for d in passages if d.id not in gold]
        passages = [d for d in passages if d.id in gold] + random.Random(seed).sample(rest, n_passages - len(gold))
    return passages, questions


def faiss_store(path: Path, embedding_dim: int = 384) -> FAISSDocumentStore:
    """The benchmarks' store: FAISS Flat over SQLite at ``path`` (384: MiniLM's width). ``duplicate_documents="skip"``
    makes a fresh bulk load fast (Haystack's default "overwrite" deletes before each row)."""
    return FAISSDocumentStore(
        sql_url=f"sqlite:///{path}",
        embedding_dim=embedding_dim,
        faiss_index_factory_str="Flat",
        similarity="dot_product",
        duplicate_documents="skip",
        progress_bar=False,
    )
