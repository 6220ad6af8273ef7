"""One ranking driver over one small sentence-index protocol: the top-N sentences of each query, passages by
HasAns, only passages the index can still serve.

Every engine DCSR runs on (the exact index, FAISS + SQL under Haystack 1.x, the Haystack 2.x stores, Milvus,
pgvector) is a ``SentenceIndex``: it says how it compares vectors (``similarity``), ``search`` returns each
query's sentence hits with scores, passage keys and sentence positions, and ``read`` returns the current
sentences of passage versions, or None for a version it can no longer serve (deleted, re-written since it was
indexed, half-written). One capability is optional, detected, never a no-op: ``reading`` (an index over a store
that this process writes to: the driver holds its read side across each batch's search and reads, so a batch is
answered for one state). ``rank_passages`` owns the loop around the one ranking rule
(``hasans.rank_hits``): rank, read the best passages, leave out those that cannot be served and rank again
without their sentences, until every passage returned is whole and current. Adapters only encode queries, call
the driver and wrap ``RankedPassage`` in their framework's Document (``passage_parts`` gives the text, meta and
the ``dcsr_sentences`` support list they all serve).
"""

import contextlib
import dataclasses
import logging
from typing import (
    Any,
    ContextManager,
    Dict,
    Generic,
    Hashable,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    TypeVar,
    runtime_checkable,
)

import numpy as np
from tqdm.auto import tqdm

from haystack_dcsr.core.ranking.hasans import PassageScores, kept_hits, rank_hits
from haystack_dcsr.core.text.sentence_units import SUPPORT, Parts, PassageRef, SentencePosition, Unit, assemble_passage

logger = logging.getLogger(__name__)

Filters = Any  # the engine's filter syntax (Haystack 1.x or 2.x dicts, Milvus expressions): only compared here
Sentences = TypeVar("Sentences")  # what ``read`` gives for a passage: sentence units, or positions (exact index)
INNER_PRODUCTS = ("dot_product", "cosine")  # how DCSR compares vectors: HasAns softmaxes raw inner products


@dataclasses.dataclass(frozen=True)
class SentenceHits:
    """The sentence hits of one query, best first, and the passage version each belongs to."""

    scores: np.ndarray  # raw scores (inner products), never rescaled: HasAns softmaxes them
    passage_keys: np.ndarray  # int keys into ``passages``
    sentence_indices: np.ndarray  # each hit's position in its passage
    passages: Sequence[Hashable]  # passage versions (``PassageRef``s, or passage numbers), never rewritten
    documents: Mapping[str, Unit] = dataclasses.field(default_factory=dict)  # units the search read, by id

    @classmethod
    def empty(cls) -> "SentenceHits":
        return cls(np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int32), ())

    @classmethod
    def of(
        cls, scores: Sequence[float], positions: Sequence[SentencePosition], documents: Mapping[str, Unit] = {}
    ) -> "SentenceHits":
        """Hits from an engine's scored sentences, each keyed by the passage version it names itself: a
        sentence left from an older version of its passage gets that version, which ``read`` cannot serve."""
        return cls.keyed(
            scores, [PassageRef.of(where) for where in positions], [where.index for where in positions], documents
        )

    @classmethod
    def keyed(
        cls,
        scores: Sequence[float],
        refs: Sequence[PassageRef],
        sentence_indices: Sequence[int],
        documents: Mapping[str, Unit] = {},
    ) -> "SentenceHits":
        """``of`` for an engine that has each hit's passage version and sentence index without a whole
        ``SentencePosition`` (Milvus reads them from its result's columns)."""
        keys: Dict[PassageRef, int] = {}
        passage_keys = [keys.setdefault(ref, len(keys)) for ref in refs]
        return cls(
            np.asarray(scores, dtype=np.float64),
            np.array(passage_keys, dtype=np.int64),
            np.array(sentence_indices, dtype=np.int32),
            list(keys),
            documents=dict(documents),
        )

    def without(self, passage_keys: Iterable[int]) -> "SentenceHits":
        """These hits less those of the given passage keys."""
        keep = kept_hits(self.passage_keys, passage_keys)
        return self if keep.all() else self.select(keep)

    def select(self, keep: np.ndarray) -> "SentenceHits":
        """The hits where ``keep`` (a mask) is true; an engine's own per-hit columns follow in its subclass."""
        return dataclasses.replace(
            self,
            scores=self.scores[keep],
            passage_keys=self.passage_keys[keep],
            sentence_indices=self.sentence_indices[keep],
        )


class SentenceIndex(Protocol[Sentences]):
    """What every engine offers the driver. Writes and deletes stay with the engine (and its framework)."""

    @property
    def similarity(self) -> str:
        """How the index compares vectors, in Haystack's names: ``dot_product`` or ``cosine`` (``l2`` is refused)."""

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[Filters]) -> List[SentenceHits]:
        """Each query's ``top_n`` best sentences (fewer where fewer match ``filters``)."""

    def read(self, passages: Sequence[Hashable], known: Mapping[str, Unit]) -> Dict[Hashable, Optional[Sentences]]:
        """Each passage version's current sentences in order, or None where it can no longer be served whole.
        ``known``: sentence units the searches already hold, by id."""


@runtime_checkable
class GuardedIndex(Protocol):
    """An index over a store this process writes to: ``reading()`` holds writes off (``core.storage.store_guard``)."""

    def reading(self) -> ContextManager[None]:
        """The read side of the store's guard: no write call runs while it is held."""


@dataclasses.dataclass(frozen=True)
class Support:
    """One retrieved sentence behind a passage."""

    hit: int  # row in the query's (kept) hits
    sentence_index: int
    score: float  # raw score
    probability: float  # p_i of the HasAns softmax


@dataclasses.dataclass(frozen=True)
class RankedPassage(Generic[Sentences]):
    """A passage a query returns: its version, what ``read`` gave for it, HasAns and the supporting sentences."""

    ref: Hashable
    sentences: Sentences
    hasans: float
    support: List[Support]


def rank_passages(
    index: SentenceIndex[Sentences],
    query_vectors: np.ndarray,
    temperature: float,
    top_n: int,
    top_k: int,
    filters: Optional[Sequence[Optional[Filters]]] = None,
    batch_size: Optional[int] = None,
    progress_bar: bool = False,
) -> List[List[RankedPassage[Sentences]]]:
    """Each query's ``top_k`` passages by HasAns over its ``top_n`` sentences, all of them served whole.

    :param filters: one per query (None: no filter); queries with equal filters are searched together.
    :param batch_size: queries searched and read together (default: all), each batch under the index's read
        guard where it has one, so a batch is answered for one state of the store and writes wait for one batch.
    """
    query_vectors = np.asarray(query_vectors)
    filters = list(filters) if filters is not None else [None] * len(query_vectors)
    if len(filters) != len(query_vectors):
        raise ValueError(f"{len(filters)} filters for {len(query_vectors)} queries: give one per query (or none)")
    if index.similarity not in INNER_PRODUCTS:
        raise ValueError(
            f"This index compares vectors by {index.similarity}, but DCSR ranks by inner product: use a "
            f"{' or '.join(INNER_PRODUCTS)} index"
        )
    size = batch_size or max(len(query_vectors), 1)
    starts = range(0, len(query_vectors), size)
    ranked: List[List[RankedPassage[Sentences]]] = []
    for start in tqdm(starts, disable=not progress_bar or len(starts) < 2, desc="Querying", unit=" batches"):
        batch = slice(start, start + size)
        with index.reading() if isinstance(index, GuardedIndex) else contextlib.nullcontext():
            ranked.extend(_rank_batch(index, query_vectors[batch], temperature, top_n, top_k, filters[batch]))
    return ranked


def _rank_batch(index, query_vectors, temperature, top_n, top_k, filters):
    hits: List[SentenceHits] = [SentenceHits.empty()] * len(query_vectors)
    for group in same_filter_groups(filters):
        for row, found in zip(group, index.search(query_vectors[group], top_n, filters[group[0]])):
            hits[row] = found
    return _rank_served(index, hits, temperature, top_k)


def _rank_served(index: SentenceIndex, hits: Sequence[SentenceHits], temperature: float, top_k: int):
    """HasAns over the hits; the best passages are read; a passage version that cannot be served is left out of
    every query of the batch (its hits too, so each query is ranked as over the index without it) and the
    rankings recomputed (``rank_hits``), until every passage in each top ``top_k`` is served. Two versions of one
    passage that both read whole (one from a search's snapshot, one from a read after a write: an engine whose
    writes are not atomic, Milvus) are both left out: a query never serves one passage twice."""
    read: Dict[Hashable, Optional[Any]] = {}
    known = {sid: doc for h in hits for sid, doc in h.documents.items()}
    while True:
        gone = {ref for ref, sentences in read.items() if sentences is None}
        views = []
        for h in hits:
            if gone:  # keys of the hits only: ``passages`` may be an engine's whole table
                h = h.without([key for key in np.unique(h.passage_keys) if h.passages[int(key)] in gone])
            views.append((h, rank_hits(h.scores, h.passage_keys, temperature, top_k=top_k)))
        wanted = {h.passages[int(key)]: None for h, scores in views for key in scores.passages}
        missing = [ref for ref in wanted if ref not in read]
        if not missing:
            break
        read.update(index.read(missing, known))
        versions: Dict[Hashable, List[Hashable]] = {}
        for ref, sentences in read.items():
            if sentences is not None:
                versions.setdefault(getattr(ref, "passage_id", ref), []).append(ref)
        read.update((ref, None) for refs in versions.values() if len(refs) > 1 for ref in refs)
    dropped = sorted({str(getattr(ref, "passage_id", ref)) for ref, sentences in read.items() if sentences is None})
    if dropped:
        logger.warning(
            "Left out %d passage(s) that the index no longer holds as they were indexed (deleted, re-written or "
            "half-written since): %s",
            len(dropped),
            ", ".join(dropped[:5]),
        )
    return [[_ranked(h, scores, rank, read) for rank in range(len(scores.passages))] for h, scores in views]


def _ranked(h: SentenceHits, scores: PassageScores, rank: int, read: Dict[Hashable, Any]) -> RankedPassage:
    key = int(scores.passages[rank])
    ref = h.passages[key]
    support = [
        Support(int(i), int(h.sentence_indices[i]), float(h.scores[i]), float(scores.sentence_probabilities[i]))
        for i in np.flatnonzero(h.passage_keys == key)
    ]
    return RankedPassage(ref, read[ref], float(scores.hasans[rank]), support)


def passage_parts(ranked: RankedPassage) -> Parts:
    """The served passage (id, exact text, meta with ``dcsr_sentences``) of a ranked passage whose
    ``sentences`` are sentence units: what every Haystack adapter returns, wrapped in its Document."""
    sentences = ranked.sentences
    doc_id, content, meta = assemble_passage(sentences)
    support = [
        {
            "sentence_index": s.sentence_index,
            "text": sentences[s.sentence_index].content,
            "score": s.score,
            "probability": s.probability,
        }
        for s in ranked.support
    ]
    return Parts(doc_id, content, {**meta, SUPPORT: support})


def same_filter_groups(filters: Sequence[Optional[Filters]]) -> List[List[int]]:
    """Row numbers grouped by equal filter, in first-seen order (filters are dicts: not hashable)."""
    groups: List[List[int]] = []
    for row, query_filter in enumerate(filters):
        for group in groups:
            if filters[group[0]] == query_filter:
                group.append(row)
                break
        else:
            groups.append([row])
    return groups
