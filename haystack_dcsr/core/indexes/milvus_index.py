"""DCSR's sentence index on Milvus: one collection row per sentence, written and read whole by passage.

A Milvus server (standalone, a cluster, or Zilliz Cloud: only the URI changes) holds the sentence vectors; this
class owns the collection's schema and is a ``passage_ranking.SentenceIndex`` for the ranking driver. It is
framework-free: the Haystack 1.x ``MilvusDocumentStore`` (``haystack1.milvus_store``) is a thin store over it.

Rows: ``id`` (the sentence id, ``<passage_id>#<n>``), ``passage_id``, ``position`` (the sentence's place in
its passage: ``meta["dcsr"]`` of the layout in ``sentence_units``), ``content``, ``meta`` (the passage's meta,
JSON, which filters read as ``meta["field"]``), ``embedded`` and ``vector``. Sentence ids are deterministic, so
writing a passage is an upsert by primary key, and one request never splits a passage (``_whole_passages``). Milvus
applies one request at one timestamp, and a search sees a snapshot at a timestamp, so a passage switches from one
version to the next in one request that searches see whole or not at all:

- a re-write with as many sentences or more replaces the old rows in that upsert;
- a re-write with fewer sentences upserts, in the same request, a *placeholder* under each surplus sentence id (no
  passage id, not embedded: never searched, read, listed or counted), then deletes the placeholders. A write cut
  short between the two (a server crash, a killed client) leaves the new version whole and placeholders that
  nothing sees; ``wait_until_indexed`` removes any left over;
- a delete by ids deletes each passage's sentences in one request.

No search therefore ranks a passage as a mix of versions or as part of one, whether or not the driver reads it, and
no write costs more as the collection grows (heads are read and surplus ids deleted by primary key; nothing is found
by an expression that scans every row). ``read`` refuses any version whose sentences do not add up (a sentence
deleted directly), so a partial passage is never served.

Milvus searches at most 16,384 rows per query. Reads run at ``Session`` consistency by default: a process sees
every write it made itself that returned (Milvus waits for the server to have applied them), while a process that
has not written does not wait for the server's time tick (~200 ms on a default server); it sees other processes'
writes once the server has applied them, within about one time tick. ``Strong`` makes every read wait for every
write that returned anywhere; ``Bounded`` and ``Eventually`` wait for none (``CONSISTENCY_LEVELS``).
"""

import json
import logging
import time
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

try:  # pymilvus's own JSON decoder where installed (it decodes the hits' position column ~3x faster)
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

from haystack_dcsr.core.indexes.index_presets import MILVUS_PRESETS
from haystack_dcsr.core.ranking.passage_ranking import SentenceHits
from haystack_dcsr.core.text.sentence_units import (
    ID_SEPARATOR,
    META,
    PassageRef,
    check_storable,
    current_sentences,
    head_id,
    position,
    sentence_id,
)

logger = logging.getLogger(__name__)

MAX_TOP_N = 16_384  # Milvus's limit on a search's k
ID_LENGTH = 128
CONTENT_BYTES = 65_535  # a VARCHAR's limit, in UTF-8 bytes
META_BYTES = 65_536  # a JSON field's limit
FIELDS = ("id", "passage_id", "position", "content", "meta", "embedded", "vector")  # this layout's schema
EVERY_ROW = 'id != ""'  # sentence ids are never empty
LIVE = 'passage_id != ""'  # every row but the placeholders of a shrinking re-write (their passage id is empty)
PLACEHOLDERS = 'passage_id == ""'
NO_ROW = "id in []"  # Milvus has no false literal; an empty list matches nothing
WRITE_BATCH = 1_000
INDEX_POLL_S = 1.0
HANDOFF_S = 15.0  # a query node's swap of sealed segments for growing ones, on Milvus's default configuration
READ_BATCH = 1_000

METRICS = ("IP", "COSINE")
SIMILARITIES = {"dot_product": "IP", "cosine": "COSINE"}  # Haystack's names for them


def metric_of(similarity: str) -> str:
    """The Milvus metric of a Haystack ``similarity`` (``dot_product``, what DCSR ranks by, or ``cosine``)."""
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {', '.join(SIMILARITIES)}, got {similarity!r}")
    return SIMILARITIES[similarity]


# this process's deletes per (uri, collection), and how many of them its reads are known to see (``Session``)
_DELETES_MADE: Dict[Any, int] = {}
_DELETES_SEEN: Dict[Any, int] = {}
# what each level guarantees a read (the default first); ``guarantee`` in docs/guides/milvus-operations.md
CONSISTENCY_LEVELS = ("Session", "Strong", "Bounded", "Eventually")


class MilvusUnavailableError(ConnectionError):
    """The Milvus server did not answer (down, restarting, unreachable) within the timeout."""


class SentenceRow(NamedTuple):
    """A stored sentence, shaped like any framework's Document (``sentence_units.Unit``)."""

    id: str
    content: str
    meta: Dict[str, Any]  # the passage's meta, with the sentence's place under "dcsr"
    embedding: Optional[np.ndarray] = None  # when read with vectors and embedded


class MilvusSentenceIndex:
    """A collection of DCSR sentences on a Milvus server.

    :param uri: the server (``http://host:19530``), a cluster's proxy, or a Milvus Lite file (``./dcsr.db``).
    :param collection: the collection's name; created on first use when ``embedding_dim`` is given.
    :param embedding_dim: the towers' width (checked against an existing collection).
    :param metric: ``IP`` (inner product, what DCSR ranks by) or ``COSINE`` (only for models whose vectors are
        normalised, where it equals IP).
    :param preset: the vector index: ``flat`` (exact), ``hnsw`` or ``ivf_sq8`` (``MILVUS_PRESETS``).
    :param token: ``user:password`` or an API key.
    :param timeout: seconds any call (connecting, searching, reading, writing) may take before it fails with
        ``MilvusUnavailableError``: a server that is down or hung is a bounded failure.
    :param consistency_level: what a read waits for (``CONSISTENCY_LEVELS``): ``Session`` (this process's own
        returned writes), ``Strong`` (every returned write, from any client: each read waits for the server's
        time tick), ``Bounded`` or ``Eventually`` (none). Applied to every read, whatever level the collection was
        created with; a read that lists the collection page by page follows the collection's level for any
        other process's writes (Milvus takes its iterator's level from the collection).
    """

    def __init__(
        self,
        uri: str = "http://localhost:19530",
        collection: str = "dcsr_sentences",
        embedding_dim: Optional[int] = None,
        metric: str = "IP",
        preset: str = "flat",
        token: str = "",
        timeout: float = 30.0,
        consistency_level: str = "Session",
    ):
        if consistency_level not in CONSISTENCY_LEVELS:
            raise ValueError(f"consistency_level must be one of {', '.join(CONSISTENCY_LEVELS)}: {consistency_level!r}")
        if metric.upper() not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)} (DCSR ranks by inner products): {metric!r}")
        if preset not in MILVUS_PRESETS:
            raise ValueError(f"Unknown Milvus preset {preset!r}: choose one of {', '.join(MILVUS_PRESETS)}")
        self.uri, self.collection, self.metric, self.preset = uri, collection, metric.upper(), preset
        self.timeout, self.consistency_level = timeout, consistency_level
        self._token = token
        self._client = None
        self._new_connection = True  # reads have not yet caught up with the server on this connection
        self.embedding_dim = self._existing_dim()
        if self.embedding_dim is None and embedding_dim is not None:
            self._create(embedding_dim)
        elif embedding_dim is not None and embedding_dim != self.embedding_dim:
            raise ValueError(
                f"Milvus collection {collection!r} holds {self.embedding_dim}-dimensional vectors, not "
                f"{embedding_dim}: use another collection, or the towers it was built with"
            )

    # ---- schema ----------------------------------------------------------------------------------

    def _existing_dim(self) -> Optional[int]:
        if not self._request("look up the collection", "has_collection"):
            return None
        described = self._request("describe the collection", "describe_collection")
        names = [f["name"] for f in described["fields"]]
        missing = [name for name in FIELDS if name not in names]
        if missing:
            raise ValueError(
                f"Milvus collection {self.collection!r} has the fields {', '.join(names)}, not this store's layout "
                f"(it lacks {', '.join(missing)}): it was written by another client (milvus-haystack's 2.x store "
                "writes text, vector and meta fields). Open it with the client that wrote it, or use another collection"
            )
        vector = next(f for f in described["fields"] if f["name"] == "vector")
        index = self._request("describe the index", "describe_index", "vector")
        found = str(index.get("metric_type", "")).upper()
        if found and found != self.metric:
            raise ValueError(
                f"Milvus collection {self.collection!r} compares vectors by {found}, not {self.metric}: "
                f"open it with metric={found!r}, or use another collection"
            )
        self.preset = next(
            (name for name, p in MILVUS_PRESETS.items() if p.index_type == index.get("index_type")), self.preset
        )
        self._request("load the collection", "load_collection")
        return int(vector["params"]["dim"])

    def _create(self, dim: int) -> None:
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_LENGTH)
        schema.add_field("passage_id", DataType.VARCHAR, max_length=ID_LENGTH)
        schema.add_field("position", DataType.JSON)
        schema.add_field("content", DataType.VARCHAR, max_length=65_535)
        schema.add_field("meta", DataType.JSON)
        schema.add_field("embedded", DataType.BOOL)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        index_params = self.client.prepare_index_params()
        preset = MILVUS_PRESETS[self.preset]
        index_params.add_index(
            field_name="vector", metric_type=self.metric, index_type=preset.index_type, params=preset.build_params
        )

        def create():
            self.client.create_collection(
                self.collection,
                schema=schema,
                index_params=index_params,
                consistency_level=self.consistency_level,
                timeout=self.timeout,
            )
            self.client.load_collection(self.collection, timeout=self.timeout)

        self._call(create, "create the collection")
        logger.warning(
            "Milvus collection %r did not exist on %s: created it empty (%d-dimensional, %s)",
            self.collection,
            self.uri,
            dim,
            self.preset,
        )
        self.embedding_dim = dim

    def drop(self) -> None:
        """Delete the collection and everything in it."""
        self._request("drop the collection", "drop_collection")
        self.embedding_dim = None

    @property
    def similarity(self) -> str:
        """How the collection compares vectors, in Haystack's names: ``dot_product`` or ``cosine``."""
        return {metric: name for name, metric in SIMILARITIES.items()}[self.metric]

    # ---- writes ----------------------------------------------------------------------------------

    def write(self, sentences: Sequence[Any], vectors: Optional[np.ndarray] = None, new: bool = False) -> int:
        """Write whole passages: every passage named by ``sentences`` (sentence units: ``id``, ``content``,
        ``meta`` with ``"dcsr"``) loses its stored rows, then gets these. ``vectors``: one per sentence (None:
        rows wait for ``set_vectors``, and are not searched until then).

        ``new``: the caller found none of these sentence ids stored (``stored_ids``; a load that skips or
        refuses stored passages), so the rows are inserted. An upsert deletes each key before it inserts, and
        the server checks every segment for a deleted key, so upserts grow slower as the collection grows;
        inserts of new keys do not. Two writers inserting one passage id at once would store its rows twice:
        one writer per passage id at a time, as for every write."""
        if not sentences:
            return 0
        self._require()
        rows = self._checked_rows(sentences, vectors)
        by_passage: Dict[str, List[Dict[str, Any]]] = {}
        for row in rows:  # a passage given twice in one call: its last version wins, as on every other store
            passage = by_passage.get(row["passage_id"])
            if passage and passage[0]["position"]["version"] != row["position"]["version"]:
                del by_passage[row["passage_id"]]
            by_passage.setdefault(row["passage_id"], []).append(row)
        self._settle()
        placeholders = {} if new else self._surplus_placeholders(by_passage)
        written = [list({row["id"]: row for row in passage}.values()) for passage in by_passage.values()]
        switched = [rows + placeholders.get(rows[0]["passage_id"], []) for rows in written]
        for batch in _whole_passages(switched, WRITE_BATCH):  # one request switches each passage's version
            self._request("write sentences", "insert" if new else "upsert", batch)
        if placeholders:
            self.delete(ids=[row["id"] for rows in placeholders.values() for row in rows])
        return sum(len(passage) for passage in written)

    def stored_ids(self, ids: Sequence[str]) -> Set[str]:
        """Which of these sentence ids the collection holds (a read of the ids alone, by primary key)."""
        if not self.exists:
            return set()
        self._settle()
        return {row["id"] for row in self._rows_by_id("read stored ids", ids, ["id"])}

    def unstored_passages(self, sentences: Sequence[Any]) -> Tuple[List[Any], Set[str]]:
        """The sentences of the passages none of whose sentence ids is stored (what ``write(new=True)`` inserts),
        and the stored ids among them: a load that skips stored passages writes the first, one that refuses them
        (``fail``) refuses when the second is not empty. Any stored sentence counts, not only a head, so a passage
        whose head was deleted directly is skipped rather than stored twice."""
        stored = self.stored_ids([unit.id for unit in sentences])
        skipped = {position(unit).passage_id for unit in sentences if unit.id in stored}
        return [unit for unit in sentences if position(unit).passage_id not in skipped], stored

    def _rows_by_id(self, what: str, ids: Sequence[str], fields: List[str]) -> List[Dict[str, Any]]:
        """The rows with these primary keys (``fields`` of each), ``READ_BATCH`` ids a request: a read whose
        cost does not grow with the collection. Placeholders are left out here, not by the request's expression,
        which names primary keys only."""
        ids, rows = list(ids), []
        for start in range(0, len(ids), READ_BATCH):
            found = self._request(
                what,
                "query",
                filter=f"id in {literal(ids[start : start + READ_BATCH])}",
                output_fields=[*fields, "passage_id"],
                consistency_level=self.consistency_level,
            )
            rows.extend(row for row in found if row["passage_id"])
        return rows

    def _surplus_placeholders(self, passages: Dict[str, List[Dict[str, Any]]]) -> Dict[str, List[Dict[str, Any]]]:
        """For each passage whose stored version has more sentences than the new one (its head, sentence #0, says
        how many), a placeholder row under each surplus sentence id, to be upserted with the new version: the
        request that switches the version also takes the old version's surplus sentences out of every search.
        Heads are read by primary key, a cost that does not grow with the collection."""
        rows = self._rows_by_id("read passage heads", [head_id(pid) for pid in passages], ["id", "position"])
        heads = {row["position"]["passage_id"]: row["position"] for row in rows}
        return {
            pid: [self._placeholder(sentence_id(pid, index)) for index in range(new[0]["position"]["count"], stored)]
            for pid, new in passages.items()
            if (stored := heads.get(pid, {}).get("count", 0)) > new[0]["position"]["count"]
        }

    def _placeholder(self, sid: str) -> Dict[str, Any]:
        """A row that holds a sentence id without being a sentence (``LIVE`` leaves it out of every read)."""
        zeros = np.zeros(self.embedding_dim, np.float32).tolist()
        return dict(id=sid, passage_id="", position={}, content="", meta={}, embedded=False, vector=zeros)

    def set_vectors(self, sentences: Sequence[Any], vectors: Sequence[Optional[np.ndarray]]) -> None:
        """Re-write stored sentences in place (``upsert``) with these vectors (None: not embedded)."""
        self._require()
        rows = self._checked_rows(sentences, vectors)
        passages = _grouped(rows, lambda row: row["passage_id"])
        for batch in _whole_passages(passages, WRITE_BATCH):  # a passage searchable all at once
            self._request("write vectors", "upsert", batch)

    def delete(self, ids: Optional[Sequence[str]] = None, expression: str = "") -> None:
        """Delete sentences by id, or every sentence matching a filter expression (all when neither is given;
        ``NO_ROW`` deletes none)."""
        if not self.exists:
            return
        if ids is not None:
            passages = _grouped(ids, lambda sid: sid.rpartition(ID_SEPARATOR)[0])
            for batch in _whole_passages(passages, READ_BATCH):  # a passage goes in one request
                self._request("delete sentences", "delete", filter=f"id in {literal(batch)}")
        else:
            self._request("delete sentences", "delete", filter=expression or EVERY_ROW)
        _DELETES_MADE[self._key] = _DELETES_MADE.get(self._key, 0) + 1

    def wait_until_indexed(self, timeout: float = 3600.0) -> Dict[str, int]:
        """Seal the rows written so far, wait until the server has built the vector index over all of them and
        its query node serves them from the sealed, indexed segments; returns the index's row counts
        (``total_rows``, ``indexed_rows``: both count deleted rows until compaction drops them).

        Milvus indexes only sealed segments: rows still in growing segments, or sealed ones whose index is being built,
        are searched without the collection's index (by brute force, or through the temporary index Milvus builds on
        growing segments, ``queryNode.segcore.interimIndex``). Right after a load an ``hnsw`` collection therefore
        answers at a scan's cost until its index is built (minutes for a million rows). Call this after a bulk load and
        before serving or measuring; ``pending_index_rows`` of ``describe_index`` is what an operator watches for the
        same thing. A built index is not yet a served one: the query node keeps answering from the growing segments
        until its coordinator next updates the collection's target (10-15 s after the seal on a server with Milvus's
        default configuration), so this also waits until every sealed segment is listed as loaded
        (``list_loaded_segments``; where the client has no such call, ``HANDOFF_S``). A request the busy server does not
        answer within the index's ``timeout`` is asked again until ``timeout`` (this call's) has passed; a server that
        stays down then fails with ``MilvusUnavailableError``."""
        if not self.exists:
            return {}
        deadline = time.monotonic() + timeout

        def patiently(call):
            """A call the server may not answer within ``self.timeout`` while it compacts and builds (seen after
            ~900k passages on two cores): asked again until ``timeout`` has passed."""
            while True:
                try:
                    return call()
                except MilvusUnavailableError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(INDEX_POLL_S)

        patiently(lambda: self.delete(expression=PLACEHOLDERS))  # left by a re-write cut short: a scan, done here
        stored = patiently(self.count)
        patiently(lambda: self._call(lambda: self.client.flush(self.collection, timeout=timeout), "seal the rows"))
        total = indexed = 0
        unserved: Set[int] = set()
        while time.monotonic() <= deadline:
            state = patiently(lambda: self._request("describe the index", "describe_index", "vector"))
            total, indexed = int(state.get("total_rows", 0)), int(state.get("indexed_rows", 0))
            if not int(state.get("pending_index_rows", 0)) and indexed >= stored and indexed >= total:
                unserved = patiently(self._unserved_segments)
                if not unserved:
                    return {"total_rows": total, "indexed_rows": indexed}
            time.sleep(INDEX_POLL_S)
        waiting = (
            f"sealed segments {sorted(unserved)} not yet served by its query node"
            if unserved
            else f"{indexed} of {max(total, stored)} rows indexed"
        )
        raise TimeoutError(
            f"Milvus collection {self.collection!r}: {waiting} after {timeout:.0f} s (the server is still building "
            "and loading; wait longer, or see its log)"
        )

    def _unserved_segments(self) -> Set[int]:
        """The collection's sealed segments holding rows that its query node does not serve yet (by id)."""
        if not hasattr(self.client, "list_loaded_segments"):  # a pymilvus that cannot list them: wait as long as
            time.sleep(HANDOFF_S)  # the swap took on a default server
            return set()

        def segments(method: str):
            return self._call(
                lambda: getattr(self.client, method)(self.collection, timeout=self.timeout), "list its segments"
            )

        sealed = {s.segment_id for s in segments("list_persistent_segments") if s.num_rows and _state(s) == "flushed"}
        served = {s.segment_id for s in segments("list_loaded_segments") if _state(s) == "sealed"}
        return sealed - served

    # ---- reads -----------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.embedding_dim is not None

    def count(self, expression: str = "", embedded: Optional[bool] = None) -> int:
        if not self.exists:
            return 0
        expr = _and(LIVE, expression, _embedded(embedded))
        self._settle()
        found = self._request(
            "count sentences",
            "query",
            filter=expr,
            output_fields=["count(*)"],
            consistency_level=self.consistency_level,
        )
        return int(found[0]["count(*)"])

    def sentences(
        self,
        expression: str = "",
        ids: Optional[Sequence[str]] = None,
        with_vectors: bool = False,
        embedded: Optional[bool] = None,
        batch: int = 1000,
    ) -> Iterator[SentenceRow]:
        """Stored sentences matching a filter expression (or with these ids; ``embedded``: only those with, or
        without, vectors), in batches from the server."""
        if not self.exists:
            return
        expression = _and(LIVE, expression, _embedded(embedded))
        self._settle()
        fields = ["id", "content", "meta", "position", "embedded"] + (["vector"] if with_vectors else [])
        if ids is not None:
            ids = list(ids)
            for start in range(0, len(ids), READ_BATCH):
                expr = _and(expression, f"id in {literal(ids[start : start + READ_BATCH])}")
                found = self._request(
                    "read sentences",
                    "query",
                    filter=expr,
                    output_fields=fields,
                    consistency_level=self.consistency_level,
                )
                yield from (_sentence(row) for row in found)
            return
        last: Optional[str] = None
        while True:  # pages in id order, the cursor quoted as every literal is (pymilvus's iterator does not quote it)
            expr = _and(None if last is None else f"id > {literal(last)}", expression)
            rows = self._request(
                "read sentences",
                "query",
                filter=expr,
                output_fields=fields,
                limit=batch,
                iterator="True",  # the server returns the smallest ids first, as its own iterator relies on
                reduce_stop_for_best="True",
                guarantee_timestamp=self._own_writes_timestamp(),
            )
            if not rows:  # only an empty page ends it: a page may be short (or long) while rows remain
                return
            yield from (_sentence(row) for row in rows)
            last = max(row["id"] for row in rows)

    # ---- the SentenceIndex protocol --------------------------------------------------------------

    def search(self, query_vectors: np.ndarray, top_n: int, filters: Optional[str] = None) -> List[SentenceHits]:
        """Each query's ``top_n`` nearest embedded sentences matching the filter expression ``filters``."""
        queries = np.asarray(query_vectors, dtype=np.float32)
        if not self.exists or len(queries) == 0:
            return [SentenceHits.empty() for _ in queries]
        if queries.ndim != 2 or queries.shape[1] != self.embedding_dim:
            raise ValueError(
                f"Query vectors have dimension {queries.shape[-1]} but Milvus collection {self.collection!r} holds "
                f"{self.embedding_dim}-dimensional vectors: query with the towers it was built with"
            )
        top_n = min(top_n, MAX_TOP_N)
        self._settle()
        params = dict(MILVUS_PRESETS[self.preset].search_params)
        if MILVUS_PRESETS[self.preset].index_type == "HNSW":
            params["ef"] = max(top_n, 64)
        found = self._request(
            "search",
            "search",
            data=queries.tolist(),
            filter=_and(filters, _embedded(True)),
            limit=top_n,
            output_fields=["position"],
            search_params={"metric_type": self.metric, "params": params},
            consistency_level=self.consistency_level,
        )
        return [_hits(rows) for rows in found]

    def read(self, passages: Sequence[PassageRef], known: Mapping[str, Any] = {}) -> Dict[PassageRef, Optional[list]]:
        """Each passage version's sentences, or None where the collection does not hold that version whole.

        A version found incomplete is read once more before it is given up: under concurrent writes a Milvus 2.3
        server was seen to leave rows out of a ``Strong`` read by id that the next read returned (the soak in
        ``tests/haystack1/test_milvus_faults.py``), and a passage left out for that would be an answer of no state."""
        result = self._read_once(passages)
        incomplete = [ref for ref, sentences in result.items() if sentences is None]
        if incomplete:
            result.update(self._read_once(incomplete))
        return result

    def _read_once(self, passages: Sequence[PassageRef]) -> Dict[PassageRef, Optional[list]]:
        ids = [f"{ref.passage_id}#{n}" for ref in passages for n in range(ref.count)]
        stored = {row.id: row for row in self.sentences(ids=ids)}
        return {ref: current_sentences(ref, stored) for ref in passages}

    # ---- plumbing --------------------------------------------------------------------------------

    @property
    def _key(self):
        return self.uri, self.collection

    def _settle(self) -> None:
        """Before a read at ``Session``: one ``Strong`` read first, once on each new connection and once after this
        process deleted from the collection. A reader's first read on a connection (a new process, a server just
        restarted and replaying its log) then sees every write that returned before it, never a state the
        collection did not pass through, such as an empty collection mid-recovery; and Milvus 2.3 answers a delete
        without its timestamp, so the client's record of its last write (what ``Session`` waits for) does not
        cover a delete. Once the server has applied everything up to now, every later read sees it."""
        deletes = _DELETES_MADE.get(self._key, 0)
        if self.consistency_level != "Session" or (
            not self._new_connection and _DELETES_SEEN.get(self._key, 0) >= deletes
        ):
            return
        self._request(
            "catch up with the server",
            "query",
            filter=EVERY_ROW,
            output_fields=["id"],
            limit=1,
            consistency_level="Strong",
        )
        self._new_connection = False
        _DELETES_SEEN[self._key] = max(_DELETES_SEEN.get(self._key, 0), deletes)

    def _own_writes_timestamp(self) -> int:
        """The server timestamp of this process's last write to the collection (1: none), for a read that
        cannot take a consistency level of its own (Milvus's id-ordered paging): it then still sees this
        process's writes on a ``Session`` collection (a ``Strong`` collection waits for every write anyway)."""
        from pymilvus.client import ts_utils

        address = self.client._get_connection().server_address
        return ts_utils.get_collection_ts(self.collection, address, "") or ts_utils.get_eventually_ts()

    def _checked_rows(self, sentences: Sequence[Any], vectors) -> List[Dict[str, Any]]:
        """The rows of these sentences (``vectors``: one per sentence, None for none), every one checked before
        anything is written or deleted: the server refuses a whole request for one row over a field's size."""
        self._check_vectors(sentences, vectors)
        rows = [self._row(doc, None if vectors is None else vectors[i]) for i, doc in enumerate(sentences)]
        for row in rows:
            check_row_limits(row)
        return rows

    def _check_vectors(self, sentences: Sequence[Any], vectors) -> None:
        """Refuse vectors that do not fit the collection, naming both widths, before anything is written."""
        if vectors is None:
            return
        if len(vectors) != len(sentences):
            raise ValueError(f"{len(vectors)} vectors for {len(sentences)} sentences")
        widths = {len(vector) for vector in vectors if vector is not None}
        if widths - {self.embedding_dim}:
            raise ValueError(
                f"{max(widths - {self.embedding_dim})}-dimensional vectors for Milvus collection {self.collection!r}, "
                f"which holds {self.embedding_dim}-dimensional ones: embed with the towers it was built with (or "
                "use another collection); nothing was written"
            )

    def _require(self) -> None:
        if not self.exists:
            raise ValueError(
                f"Milvus collection {self.collection!r} does not exist yet: give embedding_dim to create it"
            )

    def _row(self, doc: Any, vector: Optional[np.ndarray]) -> Dict[str, Any]:
        where = position(doc)
        meta = {key: value for key, value in (doc.meta or {}).items() if key not in (META, "vector_id")}
        return {
            "id": doc.id,
            "passage_id": where.passage_id,
            "position": where._asdict(),
            "content": doc.content,
            "meta": json.loads(json.dumps(meta, default=str)),
            "embedded": vector is not None,
            "vector": (np.zeros(self.embedding_dim) if vector is None else np.asarray(vector, np.float32)).tolist(),
        }

    @property
    def client(self):
        """The server's client, connected on first use and again after the server was unreachable. Each
        connection is this index's own (``dedicated``): pymilvus otherwise shares one channel per URI in the
        process, and a channel that failed while the server was down can stay in gRPC's reconnect backoff (up to
        two minutes) after the server is back, so a new client would inherit the wait."""
        if self._client is None:
            from pymilvus import MilvusClient

            self._client = self._call(
                lambda: MilvusClient(uri=self.uri, token=self._token, timeout=self.timeout, dedicated=True),
                "connect",
            )
            self._new_connection = True
        return self._client

    def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - the channel is being dropped because it failed
                pass

    def _request(self, what: str, method: str, *args, **kwargs):
        """``client.<method>(collection, *args, **kwargs)``, bounded by ``timeout`` as every call to the server is
        (a hung server is a bounded failure), through ``_call``."""
        return self._call(
            lambda: getattr(self.client, method)(self.collection, *args, timeout=self.timeout, **kwargs), what
        )

    def _call(self, action, what: str):
        import grpc
        from pymilvus.exceptions import MilvusException

        try:
            return action()
        except (MilvusException, grpc.RpcError) as error:  # a deadline passed: grpc's own error, not pymilvus's
            if not _unavailable(error):
                raise
            self._disconnect()  # a new connection on the next call: the server may come back on the same address
            raise MilvusUnavailableError(
                f"Milvus at {self.uri} did not answer ({what}, collection {self.collection!r}): {_message(error)}. "
                "A read can be retried once the server is back; a write that failed here may be partly done: run "
                "it again (passages are written whole, so no passage is served half-written meanwhile)"
            ) from None


def _message(error) -> str:
    """A pymilvus error's message, or a grpc error's details (``Deadline Exceeded``)."""
    details = getattr(error, "details", None)
    return getattr(error, "message", None) or (details() if callable(details) else str(error))


UNAVAILABLE_CODE = 503  # the code a Milvus 2.3 server gives an error of its own that a retry resolves
UNAVAILABLE_WORDS = (
    "unavailable",
    "not available",  # a restarted server whose channels are not subscribed again yet
    "deadline",
    "timeout",
    "fail connecting",
    "connection",
    "not loaded",
    "not ready",
    "closed channel",  # another thread of this process dropped the connection after the server failed
)


def _unavailable(error) -> bool:
    """Errors of a server that is down, hung (a deadline passed), restarting or still loading its collections."""
    text = _message(error).lower()
    return getattr(error, "code", None) == UNAVAILABLE_CODE or any(word in text for word in UNAVAILABLE_WORDS)


def check_row_limits(row: Dict[str, Any]) -> None:
    """Refuse a row the server would refuse, naming the sentence and the limit, before anything is written or
    deleted: Milvus refuses a whole request for one row over a field's size."""
    check_storable(row["passage_id"], row["content"], row["meta"])
    if not row["passage_id"]:  # an empty passage id marks a placeholder (``LIVE``)
        raise ValueError(f"sentence {row['id'][:80]!r} has an empty passage id; nothing was written")
    for field, limit in (("id", ID_LENGTH), ("passage_id", ID_LENGTH), ("content", CONTENT_BYTES)):
        size = len(row[field].encode("utf-8"))
        if size > limit:
            raise ValueError(
                f"sentence {row['id'][:80]!r}: its {field} is {size} bytes, more than the {limit} a Milvus collection "
                "holds; nothing was written (split the passage into shorter sentences, or use shorter ids)"
            )
    size = len(json.dumps(row["meta"], ensure_ascii=False).encode("utf-8"))
    if size > META_BYTES:
        raise ValueError(
            f"sentence {row['id'][:80]!r}: its meta is {size} bytes of JSON, more than the {META_BYTES} a Milvus "
            "collection holds; nothing was written (keep large values outside the document's meta)"
        )


def _grouped(items: Sequence[Any], passage_of) -> List[List[Any]]:
    """``items`` (rows or sentence ids) grouped by passage, in first-seen order, for ``_whole_passages``."""
    groups: Dict[str, List[Any]] = {}
    for item in items:
        groups.setdefault(passage_of(item), []).append(item)
    return list(groups.values())


def _whole_passages(passages: List[List[Any]], size: int) -> Iterator[List[Any]]:
    """Batches of about ``size`` rows (or ids), each passage's in one batch (one request), however many it has."""
    batch: List[Any] = []
    for rows in passages:
        if batch and len(batch) + len(rows) > size:
            yield batch
            batch = []
        batch.extend(rows)
    if batch:
        yield batch


def _state(segment) -> str:
    """A listed segment's state in lower case (pymilvus gives an enum, or its name): "flushed", "sealed", ..."""
    state = getattr(segment, "state", "")
    return str(getattr(state, "name", state)).rsplit(".", 1)[-1].lower()


def _embedded(embedded: Optional[bool]) -> Optional[str]:
    return None if embedded is None else f"embedded == {str(embedded).lower()}"


def literal(value: Any) -> str:
    """A value (a string, a number, a list of them) as a Milvus expression literal."""
    return json.dumps(list(value) if isinstance(value, (list, tuple)) else value, ensure_ascii=False)


def _and(*expressions: Optional[str]) -> str:
    parts = [f"({e})" for e in expressions if e]
    return " and ".join(parts)


def _sentence(row: Dict[str, Any]) -> SentenceRow:
    meta = dict(row.get("meta") or {})
    meta[META] = row["position"]
    vector = row.get("vector") if row.get("embedded") else None
    return SentenceRow(row["id"], row["content"], meta, None if vector is None else np.asarray(vector, np.float32))


def _hits(rows: Sequence[Dict[str, Any]]) -> SentenceHits:
    """One query's hits as ``SentenceHits``. pymilvus gives each query's hits as a list of dicts it builds on
    first access (a dict, an entity dict and a decoded JSON per hit: ~5 ms for a top_n of 1,000); where the result
    still holds its columns (pymilvus's ``HybridHits``: ``distances`` and the ``position`` column's JSON), they
    are read as columns instead."""
    scores, positions = getattr(rows, "distances", None), _position_column(rows)
    if scores is None or positions is None:
        scores = [row["distance"] for row in rows]
        positions = [row.get("entity", row)["position"] for row in rows]
    refs = [PassageRef(p["passage_id"], p["count"], p.get("version", "")) for p in positions]
    return SentenceHits.keyed(scores, refs, [p["index"] for p in positions])


def _position_column(rows) -> Optional[List[Dict[str, Any]]]:
    """The hits' ``position`` values read from the result's JSON column, or None where pymilvus gave no column
    (another pymilvus version, rows already materialized, or plain dicts)."""
    if getattr(rows, "has_materialized", True):
        return None
    column = next((f for f in getattr(rows, "lazy_field_data", ()) if f.field_name == "position"), None)
    start = getattr(rows, "start", None)
    if column is None or start is None or column.is_dynamic or len(column.valid_data):
        return None
    return [_json_loads(cell) for cell in column.scalars.json_data.data[start : start + len(rows)]]
