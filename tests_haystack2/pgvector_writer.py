"""The pgvector tests' random corpus, and a writer process for their kill test: ``random_corpus(N, seed=11)``'s
passages, one ``write_documents`` call per passage, printing each passage id once the call returned.

    python pgvector_writer.py <database url> <passages>
"""

import sys

import numpy as np
from haystack import Document

from haystack_dcsr.core.text.sentence_units import group_by_passage, sentence_parts

DIM = 384  # all-MiniLM-L6-v2's width: its settings (temperature, normalised vectors) rank the random corpus
WRITER = __file__


def random_corpus(passages: int, seed: int = 0):
    """Sentence Documents of ``passages`` passages (1-6 sentences, two tenants) with random unit vectors."""
    rng = np.random.default_rng(seed)
    sentences = []
    for number in range(passages):
        texts = [f"Sentence {i} of passage {number}." for i in range(int(rng.integers(1, 7)))]
        starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
        spans = [(int(start), int(start) + len(t)) for start, t in zip(starts, texts)]
        meta = {"tenant": "a" if number % 3 else "b", "number": number}
        for doc_id, content, sentence_meta in sentence_parts(f"p{number}", " ".join(texts), meta, spans):
            vector = rng.normal(size=DIM)
            embedding = list(vector / np.linalg.norm(vector))
            sentences.append(Document(id=doc_id, content=content, meta=sentence_meta, embedding=embedding))
    return sentences


def main() -> None:
    from haystack.document_stores.types import DuplicatePolicy
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    url, passages = sys.argv[1], int(sys.argv[2])
    store = PgvectorDocumentStore(
        connection_string=Secret.from_token(url), embedding_dimension=DIM, vector_function="inner_product"
    )
    for passage_id, sentences in group_by_passage(random_corpus(passages, seed=11), "x").items():
        store.write_documents(sentences, policy=DuplicatePolicy.OVERWRITE)
        print(passage_id, flush=True)


if __name__ == "__main__":
    main()
