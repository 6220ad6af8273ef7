"""DCSRRetriever: sentence vectors in, passages ranked by HasAns out."""
import json
import logging
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.nodes.retriever.dense import DenseRetriever
from haystack.schema import Document
from tqdm.auto import tqdm

from haystack_dcsr.encoder import PassageEncoder
from haystack_dcsr.hasans import hasans_scores
from haystack_dcsr.models import DEFAULT_MODEL, resolve_model_path
from haystack_dcsr.query_encoder import QueryEncoder
from haystack_dcsr.sentence_docs import (
    SUPPORT,
    group_by_passage,
    passage_sentence_ids,
    position,
)
from haystack_dcsr.sentence_search import (
    Hits,
    SentenceSearch,
    fetch_documents,
    sentence_search_for,
)

logger = logging.getLogger(__name__)

CONFIG_NAME = "dcsr_retriever.json"


class DCSRRetriever(DenseRetriever):
    """Dense Contextual Sentence Representation retriever (Wu et al., ACL 2022).

    The store holds one vector per sentence (index passages through ``SentencePreprocessor``); each
    passage is encoded whole, so a sentence vector sees its neighbours. A query retrieves the top
    ``top_n_sentences`` sentences, softmaxes their inner products (``temperature``) into p_i, and
    ranks passages by ``HasAns(P) = 1 - prod(1 - p_i)`` over P's retrieved sentences::

        store = FAISSDocumentStore(embedding_dim=384, faiss_index_factory_str="Flat")
        store.write_documents(SentencePreprocessor().process(passages)["documents"])
        retriever = DCSRRetriever(document_store=store)
        store.update_embeddings(retriever)
        best = retriever.retrieve("Who founded the university?", top_k=5)
        best[0].score, best[0].meta["dcsr_sentences"][0]["text"]

    Returned passages carry their HasAns as ``score`` (already a probability, so ``scale_score`` has
    no effect) and, in ``meta["dcsr_sentences"]``, the retrieved sentences that support them.

    :param query_model: query tower: HF directory or hub name; ignored when ``query_encoder`` is given.
    :param passage_model: passage tower; None uses ``query_model`` (shared initial weights, as in the paper).
    :param query_encoder: a ``QueryEncoder`` node to use as the query tower (e.g. one trained with
        the MEQ query-side loss); YAML can reference one by name.
    :param pooling: ``marker`` (DCSR, for trained towers) or ``mean`` (zero-shot); None = from the model.
    :param top_n_sentences: sentences read per query before aggregation (paper: 3,000, ~100 x the
        mean sentences per passage).
    :param temperature: softmax temperature; None = the model's (1.0 for raw DCSR dot products as
        in the paper, 0.05 for normalised sentence-transformers vectors).
    :param max_seq_len: tokens per passage window; longer passages are windowed, never cut.
    :param passage_cache_size: assembled passages kept in memory (LRU) between queries with a
        ``FAISSDocumentStore``, cleared whenever the index changes; 0 reads every passage from SQL.
    """

    def __init__(
        self,
        document_store: Optional[BaseDocumentStore] = None,
        query_model: str = DEFAULT_MODEL,
        passage_model: Optional[str] = None,
        query_encoder: Optional[QueryEncoder] = None,
        pooling: Optional[str] = None,
        normalize: Optional[bool] = None,
        top_k: int = 10,
        top_n_sentences: int = 3000,
        temperature: Optional[float] = None,
        max_seq_len: Optional[int] = None,
        max_query_len: int = 64,
        batch_size: int = 32,
        use_gpu: bool = True,
        device: Optional[str] = None,
        precision: str = "auto",
        progress_bar: bool = True,
        passage_cache_size: int = 100_000,
    ):
        super().__init__()
        if top_k < 1 or top_n_sentences < 1:
            raise ValueError(f"top_k and top_n_sentences must be >= 1, got {top_k} and {top_n_sentences}")
        self.document_store = document_store
        self.query_encoder = query_encoder or QueryEncoder(
            query_model, pooling=pooling, normalize=normalize, max_seq_len=max_query_len, batch_size=batch_size,
            use_gpu=use_gpu, device=device, precision=precision, progress_bar=progress_bar,
        )
        self.passage_model = passage_model or query_model
        resolve_model_path(self.passage_model)  # fail now, not at indexing time, on a missing directory
        self._passage_options = dict(
            pooling=pooling, normalize=normalize, max_length=max_seq_len, device=device, use_gpu=use_gpu,
            precision=precision,
        )
        self._passage_encoder: Optional[PassageEncoder] = None
        self.top_k = top_k
        self.top_n_sentences = top_n_sentences
        self.temperature = temperature
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.passage_cache_size = passage_cache_size
        self._searches: Dict[tuple, SentenceSearch] = {}
        if document_store is not None:
            check_store_dimension(document_store, self.embedding_dim)

    # ---- encoding -------------------------------------------------------------------------------

    @property
    def embedding_dim(self) -> int:
        return self.query_encoder.dim

    @property
    def passage_encoder(self) -> PassageEncoder:
        """Loaded on first use: query-only pipelines never pay for the passage tower."""
        if self._passage_encoder is None:
            self._passage_encoder = PassageEncoder(self.passage_model, **self._passage_options)
            if self._passage_encoder.dim != self.embedding_dim:
                raise ValueError(
                    f"Passage tower {self.passage_model!r} has dimension {self._passage_encoder.dim} but the query "
                    f"tower has {self.embedding_dim}"
                )
        return self._passage_encoder

    @property
    def hasans_temperature(self) -> float:
        """The softmax temperature HasAns uses: the one given, else the query tower's own."""
        return self.temperature or self.query_encoder.temperature

    def embed_queries(self, queries: List[str]) -> np.ndarray:
        return self.query_encoder.encode(queries)

    def embed_documents(self, documents: List[Document]) -> np.ndarray:
        """One vector per sentence Document, encoding each passage once and whole.

        Sentences whose passage siblings are not in ``documents`` (a batch boundary of
        ``update_embeddings``) have them read from the document store.
        """
        groups = group_by_passage(documents)  # raises for documents that are not DCSR sentences
        if len(documents) == 1 and self.document_store is None and position(documents[0]).count > 1:
            # Haystack stores probe the vector size with one document before update_embeddings:
            # the sentence alone answers that, without its siblings
            return self.passage_encoder.encode([[documents[0].content]])
        complete = self._complete_passages(groups)
        passage_ids = list(complete)
        vectors = self.passage_encoder.encode(
            [[doc.content for doc in complete[pid]] for pid in passage_ids],
            batch_size=self.batch_size,
            progress_bar=self.progress_bar and len(documents) > 1000,
        )
        first_row, row = {}, 0
        for pid in passage_ids:
            first_row[pid] = row
            row += len(complete[pid])
        for search in self._searches.values():
            search.invalidate()
        rows = [first_row[p.passage_id] + p.index for p in map(position, documents)]
        return vectors[rows]

    def _complete_passages(self, groups: Dict[str, List[Document]]) -> Dict[str, List[Document]]:
        have = {pid: {position(doc).index: doc for doc in docs} for pid, docs in groups.items()}
        counts = {pid: position(docs[0]).count for pid, docs in groups.items()}
        missing = [sid for pid, found in have.items() for j, sid in enumerate(passage_sentence_ids(pid, counts[pid]))
                   if j not in found]
        if missing:
            if self.document_store is None:
                raise ValueError(
                    f"{len(missing)} sibling sentences of these passages are not in this batch and the retriever has "
                    "no document store to read them from: create it with DCSRRetriever(document_store=<the store>)"
                )
            for doc in fetch_documents(self.document_store, missing):
                have[position(doc).passage_id][position(doc).index] = doc
        for pid, found in have.items():
            if len(found) != counts[pid]:
                raise ValueError(f"Passage {pid!r}: only {len(found)} of its {counts[pid]} sentences could be found")
        return {pid: [found[j] for j in range(counts[pid])] for pid, found in have.items()}

    # ---- retrieval ------------------------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        filters: Optional[FilterType] = None,
        top_k: Optional[int] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        scale_score: Optional[bool] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> List[Document]:
        return self.retrieve_batch([query], filters=filters, top_k=top_k, index=index, headers=headers,
                                   document_store=document_store)[0]

    def retrieve_batch(
        self,
        queries: List[str],
        filters: Optional[Union[FilterType, List[Optional[FilterType]]]] = None,
        top_k: Optional[int] = None,
        index: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        batch_size: Optional[int] = None,
        scale_score: Optional[bool] = None,
        document_store: Optional[BaseDocumentStore] = None,
    ) -> List[List[Document]]:
        if isinstance(queries, str):
            queries = [queries]
        if headers:
            raise NotImplementedError("DCSRRetriever does not support headers")
        store = document_store or self.document_store
        if store is None:
            raise ValueError("DCSRRetriever has no document store: pass one to __init__ or to retrieve()")
        top_k = top_k or self.top_k
        search = self._search_for(store, index)
        per_query_filters = filters if isinstance(filters, list) else [filters] * len(queries)
        if len(per_query_filters) != len(queries):
            raise ValueError(f"Got {len(per_query_filters)} filters for {len(queries)} queries")
        results: List[List[Document]] = []
        step = batch_size or max(self.batch_size, 256)
        batches = range(0, len(queries), step)
        for start in tqdm(batches, disable=not self.progress_bar or len(batches) < 2, desc="Querying", unit=" batches"):
            chunk = queries[start : start + step]
            vectors = self.embed_queries(chunk)
            chunk_filters = per_query_filters[start : start + step]
            if all(f == chunk_filters[0] for f in chunk_filters):
                hits = search.search(vectors, self.top_n_sentences, chunk_filters[0])
            else:
                hits = [search.search(v[None], self.top_n_sentences, f)[0] for v, f in zip(vectors, chunk_filters)]
            results.extend(self._rank(search, hits, top_k))
        return results

    def _rank(self, search: SentenceSearch, hits: Sequence[Hits], top_k: int) -> List[List[Document]]:
        scored = [hasans_scores(h.scores, h.passage_keys, self.hasans_temperature) for h in hits]
        fetched = search.fetch_passages({int(key) for s in scored for key in s.passages[:top_k]})
        results = []
        for h, scores in zip(hits, scored):
            documents = []
            for key, hasans in zip(scores.passages[:top_k], scores.hasans):
                passage, sentences = fetched[int(key)]
                support = [
                    {
                        "sentence_index": int(h.sentence_indices[i]),
                        "text": sentences[h.sentence_indices[i]].content,
                        "score": float(h.scores[i]),
                        "probability": float(scores.sentence_probabilities[i]),
                    }
                    for i in np.flatnonzero(h.passage_keys == key)
                ]
                meta = {**passage.meta, SUPPORT: support}
                documents.append(Document(content=passage.content, id=passage.id, score=float(hasans), meta=meta))
            results.append(documents)
        return results

    def _search_for(self, store: BaseDocumentStore, index: Optional[str]) -> SentenceSearch:
        key = (id(store), index or store.index)
        if key not in self._searches:
            self._searches[key] = sentence_search_for(store, index, self.passage_cache_size)
        return self._searches[key]

    # ---- persistence ----------------------------------------------------------------------------

    def save(self, save_dir: Union[Path, str]) -> None:
        """``query_encoder/`` and ``passage_encoder/`` HF directories plus ``dcsr_retriever.json``."""
        save_dir = Path(save_dir)
        self.query_encoder.save(save_dir / "query_encoder")
        self.passage_encoder.save(save_dir / "passage_encoder")
        config = {"top_k": self.top_k, "top_n_sentences": self.top_n_sentences, "temperature": self.temperature,
                  "batch_size": self.batch_size, "passage_cache_size": self.passage_cache_size}
        (save_dir / CONFIG_NAME).write_text(json.dumps(config, indent=1))

    @classmethod
    def load(cls, load_dir: Union[Path, str], document_store: Optional[BaseDocumentStore] = None, **kwargs) -> "DCSRRetriever":
        load_dir = Path(load_dir)
        config_file = load_dir / CONFIG_NAME
        if not config_file.is_file():
            raise FileNotFoundError(f"{config_file} not found: not a directory written by DCSRRetriever.save")
        config = {**json.loads(config_file.read_text()), **kwargs}
        return cls(document_store=document_store, query_model=str(load_dir / "query_encoder"),
                   passage_model=str(load_dir / "passage_encoder"), **config)


def check_store_dimension(document_store: BaseDocumentStore, dim: int) -> None:
    store_dim = getattr(document_store, "embedding_dim", None)
    if store_dim is not None and store_dim != dim:
        raise ValueError(
            f"The document store expects {store_dim}-dimensional embeddings but the DCSR towers produce {dim}: "
            f"create the store with embedding_dim={dim} (nothing was written to it)"
        )
