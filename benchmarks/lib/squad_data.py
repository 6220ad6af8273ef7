"""Open SQuAD for the benchmarks: every v1.1 paragraph as the corpus, dev questions as the test."""

import gzip
import json
import os
import random
from pathlib import Path
from typing import Iterable, List, Tuple

# SQuAD v1.1's folder: the SQUAD variable, else a "shared/data/squad" folder beside the clone (this project's machines)
DATA = Path(os.environ.get("SQUAD") or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "squad")
Question = Tuple[str, List[str], str]  # text, answers, gold passage id
Paragraph = Tuple[str, str, str]  # passage id, title, text


def read_squad(train: Path, dev: Path) -> Tuple[List[Paragraph], List[Question]]:
    """Every paragraph (ids ``<split>-<article>-<paragraph>``, dev first) and every dev question, from
    SQuAD v1.1 files (JSON or .gz), without Haystack: the benchmark's corpus order, which a ranking
    computed elsewhere (``squad_open.py``'s ``ranked:``) must share."""
    paragraphs, questions = [], []
    for split, path in (("dev", dev), ("train", train)):
        with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as handle:
            data = json.load(handle)["data"]
        for a, article in enumerate(data):
            for p, paragraph in enumerate(article["paragraphs"]):
                pid = f"{split}-{a}-{p}"
                paragraphs.append((pid, article["title"], paragraph["context"]))
                for qa in paragraph["qas"] if split == "dev" else []:
                    questions.append((qa["question"], [ans["text"] for ans in qa["answers"]], pid))
    return paragraphs, questions


def sample_questions(questions: List[Question], n_questions: int, seed: int = 0) -> List[Question]:
    """The benchmark's fixed random sample (all of them when ``n_questions`` is 0 or too large)."""
    return random.Random(seed).sample(questions, n_questions) if 0 < n_questions < len(questions) else questions


def load_squad(
    data_dir: Path = DATA, n_passages: int = 10**9, n_questions: int = 1000, seed: int = 0, keep: Iterable[str] = ()
):
    """All paragraphs as Haystack 1.x Documents (``read_squad``) and a fixed random sample of dev
    questions (``sample_questions``). Quick runs with fewer passages keep every gold passage (and the
    ids in ``keep``) and fill up with a seeded sample of the others."""
    from haystack.schema import Document

    paragraphs, questions = read_squad(data_dir / "train-v1.1.json.gz", data_dir / "dev-v1.1.json.gz")
    passages = [Document(content=text, id=pid, meta={"title": title}) for pid, title, text in paragraphs]
    questions = sample_questions(questions, n_questions, seed)
    if n_passages < len(passages):
        gold = {pid for _, _, pid in questions} | set(keep)
        rest = [d for d in passages if d.id not in gold]
        passages = [d for d in passages if d.id in gold] + random.Random(seed).sample(rest, n_passages - len(gold))
    return passages, questions


def faiss_store(path: Path, embedding_dim: int = 384):
    """The benchmarks' store: FAISS Flat over SQLite at ``path`` (384: MiniLM's width). ``duplicate_documents="skip"``
    makes a fresh bulk load fast (Haystack's default "overwrite" deletes before each row)."""
    from haystack.document_stores import FAISSDocumentStore

    return FAISSDocumentStore(
        sql_url=f"sqlite:///{path}",
        embedding_dim=embedding_dim,
        faiss_index_factory_str="Flat",
        similarity="dot_product",
        duplicate_documents="skip",
        progress_bar=False,
    )
