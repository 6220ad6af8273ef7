"""Sentence vectors for a Haystack 1.x store: every passage encoded once and whole, its sentences read
from the store when a batch holds only some of them (``update_embeddings`` cuts passages at batch
boundaries), and the sample a FAISS index that needs training is trained on.
"""

import logging
from typing import Callable, Dict, List, Optional

import numpy as np
from haystack.document_stores.base import BaseDocumentStore
from haystack.schema import Document

from haystack_dcsr.core.model.encoder import PassageTower
from haystack_dcsr.core.storage.store_guard import writes_paused
from haystack_dcsr.core.text.sentence_units import (
    PassageRef,
    current_sentences,
    group_by_passage,
    head_id,
    passage_sentence_ids,
    position,
    sentence_ids_of,
)
from haystack_dcsr.haystack1.engine.sentence_docs import SPLITTER
from haystack_dcsr.haystack1.engine.sql_rows import fetch_documents

logger = logging.getLogger(__name__)


class PassageEmbedder:
    """The passage tower over a store's sentence Documents.

    :param tower: the passage tower.
    :param store: the store the sentences live in (None: every batch must hold whole passages).
    :param on_embedded: called after each batch is encoded (the retriever's searches note new vectors).
    """

    def __init__(
        self,
        tower: PassageTower,
        store: Optional[BaseDocumentStore],
        batch_size: int = 32,
        progress_bar: bool = False,
        on_embedded: Callable[[], None] = lambda: None,
    ):
        self.tower, self.store, self.batch_size = tower, store, batch_size
        self.progress_bar, self.on_embedded = progress_bar, on_embedded

    def embed(self, documents: List[Document]) -> np.ndarray:
        """One vector per sentence Document, encoding each passage once and whole.

        Sentences whose passage siblings are not in ``documents`` (a batch boundary of
        ``update_embeddings``) have them read from the document store. A sentence that is not part
        of its passage's current version (left behind by re-writing the passage), or whose passage
        is missing sentences in the store, gets a zero vector and a warning instead of an error:
        Haystack's ``update_embeddings`` has already reset the index when it calls this, so an
        error here would leave the store without vectors. Such sentences are never retrieved.
        """
        groups = group_by_passage(documents, SPLITTER)  # raises for documents that are not DCSR sentences
        if len(documents) == 1 and self.store is None and position(documents[0]).count > 1:
            # Haystack stores probe the vector size with one document before update_embeddings:
            # the sentence alone answers that, without its siblings
            return self.tower.encode([[documents[0].content]])
        passages = self._current_passages(groups)
        encodable = [pid for pid, sentences in passages.items() if sentences is not None]
        with writes_paused():  # queries may run while this batch is encoded (store_guard)
            vectors = self.tower.encode(
                [[doc.content for doc in passages[pid]] for pid in encodable],
                batch_size=self.batch_size,
                progress_bar=self.progress_bar and len(documents) > 1000,
            )
        row_of: Dict[str, int] = {}
        for pid in encodable:
            for doc in passages[pid]:
                row_of[doc.id] = len(row_of)
        self.on_embedded()
        output = np.zeros((len(documents), self.tower.dim), dtype=np.float32)
        unusable = []
        for i, doc in enumerate(documents):
            row = row_of.get(doc.id)  # only current sentences of complete passages have a row
            if row is None:
                unusable.append(doc.id)
            else:
                output[i] = vectors[row]
        if unusable:
            logger.warning(
                "%d sentence Document(s) are not part of a complete current passage and got no usable vector: %s%s. "
                "They are left over from re-writing a passage with another number of sentences, or their passage "
                "lost sentences; they are never retrieved. DCSRRetriever.delete_passages or re-writing the passage "
                "cleans them up.",
                len(unusable),
                ", ".join(unusable[:5]),
                " ..." if len(unusable) > 5 else "",
            )
        return output

    def _current_passages(self, groups: Dict[str, List[Document]]) -> Dict[str, Optional[List[Document]]]:
        """Each passage's current sentences in order (None when the store lacks some of them)."""
        known = {doc.id: doc for docs in groups.values() for doc in docs}
        heads = {pid: known[head_id(pid)] for pid in groups if head_id(pid) in known}
        refs: Dict[str, Optional[PassageRef]] = {pid: None for pid in groups}
        missing_heads = [head_id(pid) for pid in groups if pid not in heads]
        for doc in self._read(missing_heads):
            heads[position(doc).passage_id] = doc
        for pid, head in heads.items():
            refs[pid] = PassageRef.of(position(head))
        wanted = [
            sid
            for ref in refs.values()
            if ref is not None
            for sid in passage_sentence_ids(ref.passage_id, ref.count)
            if sid not in known
        ]
        known.update((doc.id, doc) for doc in self._read(wanted))
        return {pid: None if ref is None else current_sentences(ref, known) for pid, ref in refs.items()}

    def _read(self, ids: List[str]) -> List[Document]:
        if not ids:
            return []
        if self.store is None:
            raise ValueError(
                f"{len(ids)} sibling sentences of these passages are not in this batch and the retriever has "
                "no document store to read them from: create it with DCSRRetriever(document_store=<the store>)"
            )
        return fetch_documents(self.store, ids)

    def train_faiss_index(self, max_sentences: int = 100_000, seed: int = 0, index: Optional[str] = None) -> int:
        """Train a FAISS index that needs it (SQ, IVF, PQ) on the vectors of a random sample of the
        store's passages, encoded whole as they will be indexed; returns the vectors used (0 when the
        index needs no training). Call it after writing the sentences and before update_embeddings."""
        import random

        from haystack.document_stores import FAISSDocumentStore

        from haystack_dcsr.haystack1.engine.sql_rows import passage_head_ids

        store = self.store
        if not isinstance(store, FAISSDocumentStore):
            raise ValueError("train_index needs a FAISSDocumentStore")
        index = index or store.index
        if store.faiss_indexes[index].is_trained:
            return 0
        head_ids = passage_head_ids(store, index)
        random.Random(seed).shuffle(head_ids)
        chosen, total = [], 0
        for start in range(0, len(head_ids), 10_000):  # DCSR passages hold ~5 sentences: few rounds
            for head in fetch_documents(store, head_ids[start : start + 10_000], index):
                if total < max_sentences:
                    chosen.append(PassageRef.of(position(head)))
                    total += position(head).count
            if total >= max_sentences:
                break
        documents = {doc.id: doc for doc in fetch_documents(store, sentence_ids_of(chosen), index)}
        passages = [s for s in (current_sentences(ref, documents) for ref in chosen) if s is not None]
        if not passages:
            raise ValueError(f"No complete passages in index {index!r} to train the FAISS index on: write them first")
        vectors = self.tower.encode([[doc.content for doc in p] for p in passages], batch_size=self.batch_size)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if store.similarity == "cosine":
            store.normalize_embedding(vectors)  # as the store does to the vectors it will add
        store.train_index(embeddings=vectors, index=index)
        return len(vectors)
