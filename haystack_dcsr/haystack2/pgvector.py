"""PostgreSQL + pgvector as a DCSR engine: ``pgvector-haystack``'s ``PgvectorDocumentStore``, ranked two ways.

Through the driver (the default), as every engine: one statement returns a query's top-N sentences (ids, inner
products and places in their passages only), the client computes HasAns, then reads the best passages' sentences
by primary key.

In the database (``rank_in_database=True`` on the retrievers): one statement computes the whole rule where the
vectors are. It takes the top-N sentences by inner product, keeps those whose passage version the table holds
whole (every sentence ``0..count-1`` of that version), softmaxes their scores at the model's temperature, sums
``ln(1 - p_i)`` per passage, and returns the ``top_k`` passages with their sentences joined in: one round trip,
and nothing but the returned passages crosses the network. A statement sees one snapshot of the table, so a
passage being re-written by another process is served as it was, or not at all. Unlike the driver, which leaves
out only the unservable passages it reads (those that reach a top ``top_k``), the statement leaves out every
unservable passage among the hits before the softmax; on a table without stale or half-written passages the two
give the same ranking and scores.

Queries run on connections of this module's own (a small pool per store), not on the store's single shared
cursor, so concurrent queries neither wait for each other nor read each other's results; a connection that
finds the server gone is dropped and the query retried once on a new one (PostgreSQL restarted), after which the
error is ``PostgresUnavailableError``, a ``ConnectionError`` that servers answer with 503.

Every call to the server, the driver's and the store's own (count, filter, write, delete), fails with
``PostgresUnavailableError`` within ``timeout_s()`` seconds (``DCSR_PGVECTOR_TIMEOUT_S``, 30 by default) when the
server does not answer: connecting is bounded by libpq's ``connect_timeout``, and a statement by a deadline on
the client (``core.storage.socket_deadline``), since a hung server cannot enforce a ``statement_timeout`` of its own.
A write cut by the deadline is rolled back by PostgreSQL with its connection (each call is one transaction).
"""

import functools
import logging
import os
import threading
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import psycopg
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError
from haystack_integrations.document_stores.pgvector.filters import NO_VALUE, _parse_comparison_condition
from psycopg.rows import dict_row
from psycopg.sql import SQL, Composed, Identifier

from haystack_dcsr.core.ranking.passage_ranking import RankedPassage, SentenceHits, Support
from haystack_dcsr.core.storage.request_errors import first_line
from haystack_dcsr.core.storage.socket_deadline import socket_deadline
from haystack_dcsr.core.text.sentence_units import META, PassageRef, SentencePosition, check_storable, sentence_ids_of
from haystack_dcsr.haystack2.store_sentences import StoreSentences

logger = logging.getLogger(__name__)

# how each vector function orders rows (pgvector's distance operator) and turns that into a raw similarity
DISTANCES = {"inner_product": ("<#>", "({d}) * -1"), "cosine_similarity": ("<=>", "1 - ({d})")}
SIMILARITIES = {"inner_product": "dot_product", "cosine_similarity": "cosine"}
MAX_EF_SEARCH = 1000  # pgvector's range for hnsw.ef_search; past it, iterative index scans supply the rest

# The one-statement ranking. {table}, {score}, {distance} and {where} are filled in; the parameters, in order:
# the query vector (score), the filter's values, the query vector (order), top_n, the temperature, top_k.
RANK_STATEMENT = """
WITH hits AS MATERIALIZED (
    SELECT id, meta->'dcsr'->>'passage_id' AS pid, (meta->'dcsr'->>'count')::int AS n,
           meta->'dcsr'->>'version' AS version, {score} AS score
    FROM {table}{where} ORDER BY {distance} LIMIT %s
),
versions AS MATERIALIZED (
    SELECT v.pid, v.n, v.version,
           (SELECT count(*) FROM generate_series(0, v.n - 1) i JOIN {table} s ON s.id = v.pid || '#' || i
            WHERE (s.meta->'dcsr'->>'count')::int = v.n AND s.meta->'dcsr'->>'version' = v.version) = v.n AS whole
    FROM (SELECT DISTINCT pid, n, version FROM hits) v
),
kept AS MATERIALIZED (
    SELECT h.id, h.pid, h.n, h.version, h.score, row_number() OVER (ORDER BY h.score DESC, h.id) - 1 AS hit
    FROM hits h JOIN versions v USING (pid, n, version) WHERE v.whole
),
logits AS (SELECT kept.*, (score - max(score) OVER ()) / %s AS z FROM kept),
normalised AS (
    SELECT logits.*, ln(sum(CASE WHEN z < {floor} THEN 0 ELSE exp(z) END) OVER ()) AS log_total FROM logits
),
probabilities AS MATERIALIZED (
    SELECT normalised.*, CASE WHEN z - log_total < {floor} THEN 0 ELSE exp(z - log_total) END AS p FROM normalised
),
passages AS MATERIALIZED (
    SELECT pid, n, version, min(hit) AS first_hit,
           sum(CASE WHEN p < 1e-30 THEN -p
                    WHEN p < 1e-4 THEN -(p + p * p / 2 + p * p * p / 3)
                    WHEN p < 1 THEN ln(1 - p) ELSE '-Infinity'::float8 END) AS log_none
    FROM probabilities GROUP BY pid, n, version
    ORDER BY log_none, first_hit LIMIT %s
),
support AS MATERIALIZED (
    SELECT pr.id, pr.hit, pr.score, pr.p FROM probabilities pr JOIN passages ps USING (pid, n, version)
)
SELECT ps.pid, ps.n, ps.version, ps.log_none, s.id, s.content, s.meta, su.hit, su.score, su.p
FROM passages ps
CROSS JOIN LATERAL generate_series(0, ps.n - 1) i
JOIN {table} s ON s.id = ps.pid || '#' || i
LEFT JOIN support su ON su.id = s.id
ORDER BY ps.log_none, ps.first_hit, i
"""
# The softmax runs in log space: p = exp(z - ln(sum(exp(z)))), z the logits less their maximum. PostgreSQL raises
# "value out of range: underflow" where numpy rounds to 0 (exp of less than about -745, a product below the smallest
# double), so every exp whose argument is under EXP_FLOOR is taken as 0, and ln(1 - p) is -p for p under 1e-30
# (exact in doubles) and its series to p^3 under 1e-4 (error < p^4 / 4), as log1p does in the driver.
EXP_FLOOR = -700


TIMEOUT_VARIABLE = "DCSR_PGVECTOR_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30.0
STORE_CALLS = ("count_documents", "filter_documents", "write_documents", "delete_documents")  # on its own connection
_BOUNDED = "_dcsr_calls_bounded"
NO_ANSWER = "no answer within {:g} s"  # a call its deadline ended


def timeout_s() -> float:
    """Seconds any call to PostgreSQL may wait for an answer (``DCSR_PGVECTOR_TIMEOUT_S``; 30 by default)."""
    value = os.environ.get(TIMEOUT_VARIABLE, "")
    try:
        seconds = float(value) if value else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{TIMEOUT_VARIABLE} must be a number of seconds, got {value!r}") from None
    if seconds <= 0:
        raise ValueError(f"{TIMEOUT_VARIABLE} must be > 0, got {value!r}")
    return seconds


class PostgresUnavailableError(ConnectionError):
    """PostgreSQL did not answer (down, restarting, hung, unreachable): the call can be retried once it is back."""


def connect(url: str) -> psycopg.Connection:
    """A connection whose set-up waits at most ``timeout_s()`` (libpq's ``connect_timeout``, whole seconds)."""
    try:
        return psycopg.Connection.connect(url, connect_timeout=max(1, round(timeout_s())))
    except psycopg.OperationalError as error:
        raise _unavailable(error) from error


def bound_store_calls(document_store) -> None:
    """Give the store's own calls (``STORE_CALLS``, on its single connection) the same bound as the driver's: a
    deadline on its connection's socket, and ``connect_timeout`` on a new connection; an unanswered call, or one that
    finds the server down, is a ``PostgresUnavailableError``. Installed once per store instance, before its guard,
    so that time spent waiting for another thread's write does not count."""
    if getattr(document_store, _BOUNDED, False):
        return

    def socket_of():
        connection = document_store._connection
        return None if connection is None or connection.closed else connection.pgconn.socket

    def bounded(method):
        @functools.wraps(method)
        def call(*args, **kwargs):
            with socket_deadline(socket_of, timeout_s()) as deadline:
                try:
                    return method(*args, **kwargs)
                except (DocumentStoreError, psycopg.OperationalError) as error:
                    cause = error if isinstance(error, psycopg.OperationalError) else error.__cause__
                    if deadline.passed:
                        raise _unavailable(NO_ANSWER.format(timeout_s())) from error
                    if isinstance(cause, psycopg.OperationalError):
                        raise _unavailable(cause) from error
                    raise

        return call

    for name in STORE_CALLS:
        setattr(document_store, name, bounded(getattr(document_store, name)))
    write = document_store.write_documents

    @functools.wraps(write)
    def checked_write(documents, *args, **kwargs):
        for doc in documents:  # before anything is written: the store would drop a NUL from the content
            check_storable(doc.id, doc.content, doc.meta)
        return write(documents, *args, **kwargs)

    document_store.write_documents = checked_write
    document_store._create_connection = lambda: connect(document_store.connection_string.resolve_value() or "")
    setattr(document_store, _BOUNDED, True)


class PgvectorSentences(StoreSentences):
    """A ``PgvectorDocumentStore`` of DCSR sentence Documents, for the driver and for ``rank_in_database``."""

    def __init__(self, document_store):
        bound_store_calls(document_store)
        super().__init__(document_store)
        function = document_store.vector_function
        if function not in DISTANCES:
            raise ValueError(
                f"DCSR ranks by inner product, but this PgvectorDocumentStore compares by {function}: create it with "
                "vector_function='inner_product' (or 'cosine_similarity' for a model whose vectors are normalised)"
            )
        operator, score = DISTANCES[function]
        self._similarity = SIMILARITIES[function]
        self._table = Identifier(document_store.schema_name, document_store.table_name)
        distance = SQL("embedding {} %s::{}").format(SQL(operator), SQL(document_store.vector_type))
        self._distance = distance
        self._score = SQL(score).format(d=distance)
        self._connections = _Connections(document_store)
        self._check_layout()

    def _check_layout(self) -> None:
        """Refuse, before any corpus is embedded, a table this store cannot serve: vectors of another width than the
        store's ``embedding_dimension``, or rows that are not DCSR sentences (a plain Haystack Documents table, on
        which the database path would answer nothing and the driver fail). A server that does not answer now is
        not an error here: the first query reports it."""
        store = self.document_store
        statement = SQL(
            "SELECT (SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding') "
            "AS width, (SELECT meta FROM {table} LIMIT 1) AS meta"
        ).format(table=self._table)
        exists = SQL("SELECT to_regclass(%s) IS NOT NULL AS found")
        name = f'"{store.schema_name}"."{store.table_name}"'
        try:
            if not self._connections.fetch(exists, (name,), check_table=False)[0]["found"]:
                return  # the store creates it on first use, with its own width
            row = self._connections.fetch(statement, (name,), check_table=False)[0]
        except PostgresUnavailableError:
            return
        if row["width"] and row["width"] > 0 and row["width"] != store.embedding_dimension:
            raise ValueError(
                f"PostgreSQL table {name} holds {row['width']}-dimensional vectors, not the store's "
                f"embedding_dimension {store.embedding_dimension}: open it with the towers it was built with, or use "
                "another table"
            )
        meta = row["meta"]
        if meta is not None and not (isinstance(meta.get(META), dict) and "passage_id" in meta[META]):
            raise ValueError(
                f"PostgreSQL table {name} holds Documents that are not DCSR sentences (no {META!r} in their meta): "
                "it was written without DCSRSentenceSplitter. Index passages through DCSRSentenceSplitter and "
                "DCSRDocumentEmbedder into another table"
            )

    @property
    def similarity(self) -> str:
        return self._similarity

    def search(self, query_vectors, top_n: int, filters: Optional[Dict[str, Any]]) -> List[SentenceHits]:
        """Each query's hits as the driver needs them and no more: ids, scores and places (no text, no meta, no
        vectors over the wire); the passages the driver then reads come whole, by primary key."""
        where, values = _where(filters)
        statement = SQL(  # an HNSW scan's relaxed order re-sorted, as the ranking statement orders its hits
            "WITH hits AS MATERIALIZED (SELECT id, meta->'dcsr' AS position, {score} AS score FROM {table}{where} "
            "ORDER BY {distance} LIMIT %s) SELECT * FROM hits ORDER BY score DESC, id"
        ).format(score=self._score, table=self._table, where=where, distance=self._distance)
        hits = []
        for vector in np.asarray(query_vectors):
            query = _vector_literal(vector)
            rows = self._connections.fetch(statement, (query, *values, query, top_n), top_n)
            positions = [SentencePosition(**row["position"]) for row in rows]
            hits.append(SentenceHits.of([row["score"] for row in rows], positions))
        return hits

    def _stored(self, passages) -> List[Document]:
        return self._select(SQL("id = ANY(%s)"), sentence_ids_of(passages))

    def _sentences_of(self, passage_ids: List[str]) -> List[Document]:
        """Every sentence under these passage ids, of any version (a stale tail too): by the ``dcsr`` meta."""
        return self._select(SQL("meta->{}->>'passage_id' = ANY(%s)").format(META), list(passage_ids))

    def _matching(self, filters: Dict[str, Any]) -> List[Document]:
        where, values = _where(filters)
        statement = SQL("SELECT id, content, meta FROM {table}{where}").format(table=self._table, where=where)
        return [_document(row) for row in self._connections.fetch(statement, values)]

    def _select(self, condition: Composed, values: list) -> List[Document]:
        statement = SQL("SELECT id, content, meta FROM {table} WHERE {condition}")
        rows = self._connections.fetch(statement.format(table=self._table, condition=condition), (values,))
        return [_document(row) for row in rows]

    def rank_in_database(
        self,
        query_vectors: np.ndarray,
        temperature: float,
        top_n: int,
        top_k: int,
        filters: Optional[Sequence[Optional[Dict[str, Any]]]] = None,
    ) -> List[List[RankedPassage]]:
        """Each query's ``top_k`` passages by HasAns over its ``top_n`` sentences, computed by PostgreSQL in one
        statement per query (``RANK_STATEMENT``); the same shape as ``passage_ranking.rank_passages`` returns."""
        query_vectors = np.asarray(query_vectors)
        filters = list(filters) if filters is not None else [None] * len(query_vectors)
        with self.reading():
            return [self._rank_one(v, temperature, top_n, top_k, f) for v, f in zip(query_vectors, filters)]

    def _rank_one(self, vector, temperature, top_n, top_k, filters) -> List[RankedPassage]:
        where, values = _where(filters)
        statement = SQL(RANK_STATEMENT).format(
            table=self._table, score=self._score, distance=self._distance, where=where, floor=SQL(str(EXP_FLOOR))
        )
        query = _vector_literal(vector)
        rows = self._connections.fetch(statement, (query, *values, query, top_n, temperature, top_k), top_n)
        ranked: Dict[PassageRef, RankedPassage] = {}
        for row in rows:
            ref = PassageRef(row["pid"], row["n"], row["version"])
            if ref not in ranked:
                ranked[ref] = RankedPassage(ref, [], float(-np.expm1(row["log_none"])), [])
            passage = ranked[ref]
            sentence = _document(row)
            passage.sentences.append(sentence)
            if row["hit"] is not None:
                index = len(passage.sentences) - 1
                passage.support.append(Support(int(row["hit"]), index, float(row["score"]), float(row["p"])))
        for passage in ranked.values():
            passage.support.sort(key=lambda support: support.hit)
        return list(ranked.values())


def _where(filters: Optional[Dict[str, Any]]):
    """`` WHERE ...`` and its values for Haystack 2.x filters: each comparison as the store translates it, with
    SQL's unknown (a missing field) read as false, so that ``NOT``, which the store's own translation lacks,
    means what it means on the other 2.x stores."""
    if not filters:
        return SQL(""), ()
    condition, values = _condition(filters)
    return SQL(" WHERE ") + condition, tuple(values)


def _condition(filters: Dict[str, Any]):
    if not isinstance(filters, dict) or not ("field" in filters or "conditions" in filters):
        raise FilterError(
            f"Invalid filter syntax: {filters!r} (Haystack 2.x: 'field'/'operator'/'value' or 'operator'/'conditions')"
        )
    if "field" in filters:
        comparison, values = _parse_comparison_condition(filters)
        return SQL("coalesce({}, false)").format(comparison), [v for v in values if v is not NO_VALUE]
    operator, conditions = filters.get("operator"), filters["conditions"]
    if operator not in ("AND", "OR", "NOT"):
        raise FilterError(f"Unknown logical operator {operator!r}: use AND, OR or NOT")
    if not conditions:
        raise FilterError(f"'conditions' must not be empty in {filters!r}")
    parts = [_condition(condition) for condition in conditions]
    values = [value for _, part_values in parts for value in part_values]
    joined = SQL("(") + SQL(" OR " if operator == "OR" else " AND ").join(part for part, _ in parts) + SQL(")")
    return (SQL("NOT ") + joined if operator == "NOT" else joined), values


def _vector_literal(vector) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _document(row: Dict[str, Any]) -> Document:
    return Document(id=row["id"], content=row["content"], meta=row["meta"] or {}, score=row.get("score"))


class _Pooled:
    """A connection and the search width it was last set to."""

    def __init__(self, connection: psycopg.Connection):
        self.connection = connection
        self.ef_search = 0


class _Connections:
    """Connections of the store's database for queries, one per concurrent query, kept for reuse. A connection
    is set for HNSW once per search width (``hnsw.ef_search``; iterative scans past its range)."""

    def __init__(self, document_store):
        self._store = document_store
        self._idle: List[_Pooled] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._table_ready = False

    def fetch(
        self, statement: Composed, values: Sequence[Any], top_n: int = 0, check_table: bool = True
    ) -> List[Dict[str, Any]]:
        """The rows of one statement, on a connection of the pool (``check_table``: the store's table made first)."""
        if check_table and not self._table_ready:  # the store creates its table on first use: a retriever may be first
            try:
                self._store.count_documents()
            except DocumentStoreError as error:
                if isinstance(error.__cause__, psycopg.OperationalError):
                    raise _unavailable(error.__cause__) from error
                raise
            self._table_ready = True
        for attempt in (1, 2):
            pooled, fresh = self._take()
            try:
                with socket_deadline(lambda: pooled.connection.pgconn.socket, timeout_s()) as deadline:
                    self._set_width(pooled, top_n)
                    with pooled.connection.cursor(row_factory=dict_row) as cursor:
                        rows = cursor.execute(statement, tuple(values)).fetchall()
            except psycopg.OperationalError as error:
                pooled.connection.close()
                if deadline.passed:  # a hung server: asking again would wait as long
                    raise _unavailable(NO_ANSWER.format(timeout_s())) from error
                if fresh or attempt == 2:
                    raise _unavailable(error) from error
                continue  # an idle connection the server dropped (a restart): once more on a new one
            self._give_back(pooled)
            return rows

    def _take(self):
        with self._lock:
            if self._pid != os.getpid():  # a forked child never uses its parent's connections
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop(), False
        connection = connect(self._store.connection_string.resolve_value() or "")
        connection.autocommit = True
        try:
            connection.execute("SET hnsw.iterative_scan = relaxed_order")
        except psycopg.errors.Error:  # pgvector before 0.8: an HNSW search returns at most ef_search rows
            logger.warning(
                "This server's pgvector has no iterative index scans (0.8 and later): an HNSW search returns at most "
                "hnsw.ef_search (up to %d) sentences, whatever top_n_sentences asks",
                MAX_EF_SEARCH,
            )
        return _Pooled(connection), True

    def _set_width(self, pooled: _Pooled, top_n: int) -> None:
        width = self._store.hnsw_ef_search or min(max(top_n, 40), MAX_EF_SEARCH)
        if top_n and pooled.ef_search != width:
            pooled.connection.execute(SQL("SET hnsw.ef_search = {}").format(width))
            pooled.ef_search = width

    def _give_back(self, pooled: _Pooled) -> None:
        with self._lock:
            if self._pid == os.getpid():
                self._idle.append(pooled)


def _unavailable(error) -> PostgresUnavailableError:
    reason = error if isinstance(error, str) else first_line(error)
    return PostgresUnavailableError(f"PostgreSQL did not answer ({reason}): retry once the server is back")
