"""Direct reads of a Haystack 1.x SQL-backed store (FAISSDocumentStore included): the one module
that touches Haystack's ORM tables and session.

Haystack's own readers build an ORM object per row (milliseconds each) and some scan the whole
table; DCSR reads hundreds of sentences per query and every sentence row when it maps a FAISS
index, so it reads plain columns here. A store's SQLAlchemy session is one object shared by every
caller and is not thread-safe, so every read below holds that store's lock (``store_lock``).
"""

import functools
import threading
import weakref
from contextlib import contextmanager
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.schema import Document

from haystack_dcsr.core.sentence_units import META, SentencePosition
from haystack_dcsr.haystack1.engine.sentence_map import SentenceRows

_SQL_BATCH = 5000
_locks: "weakref.WeakKeyDictionary[BaseDocumentStore, threading.RLock]" = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def store_lock(document_store: BaseDocumentStore) -> threading.RLock:
    """The lock that serialises this process's reads of one store's SQL session."""
    with _locks_guard:
        lock = _locks.get(document_store)
        if lock is None:
            lock = _locks[document_store] = threading.RLock()
        return lock


class DatabaseUnavailableError(ConnectionError):
    """The store's SQL database could not be reached, or the connection broke mid-call. The call did nothing that
    a retry would not redo (its transaction was rolled back); the store works again once the database is back."""


_DISCONNECT_TEXT = ("server closed the connection", "terminating connection", "could not connect", "connection refused",
                   "connection already closed", "the database system is", "ssl connection has been closed")  # fmt: skip


def _database_error(document_store: BaseDocumentStore, error: BaseException) -> DatabaseUnavailableError:
    url = document_store.session.bind.url
    where = f"{url.drivername}://{url.host or ''}{':' + str(url.port) if url.port else ''}/{url.database or ''}"
    return DatabaseUnavailableError(
        f"the store's database ({where}) failed: {type(error).__name__}: {str(error).strip().splitlines()[0]}. "
        "Its transaction was rolled back; retry once the database is reachable."
    )


def _sql_failure(error: BaseException):
    """(failed SQL error or None, whether it is a lost connection) for ``error`` or what it wraps."""
    from sqlalchemy import exc

    while error is not None:
        if isinstance(error, exc.PendingRollbackError):
            return error, True
        if isinstance(error, exc.DBAPIError):
            lost = error.connection_invalidated or any(text in str(error).lower() for text in _DISCONNECT_TEXT)
            return error, lost
        error = error.__cause__ or error.__context__
    return None, False


@contextmanager
def sql_session(document_store: BaseDocumentStore) -> Iterator:
    """The store's session, under its lock; a failed statement is rolled back (so the next call starts clean and,
    after a lost connection, reconnects); a lost connection is raised as a :class:`DatabaseUnavailableError`."""
    with store_lock(document_store):
        try:
            yield document_store.session
        except Exception as error:
            _recover_or_raise(document_store, error)


SESSION_METHODS = (
    "write_documents", "update_embeddings", "get_document_count", "get_embedding_count", "get_all_documents",
    "get_documents_by_id", "get_document_by_id", "delete_documents", "delete_index", "update_document_meta",
    "query_by_embedding", "query_by_embedding_batch", "get_all_labels", "get_label_count",
)  # fmt: skip


def recover_sessions(document_store: BaseDocumentStore) -> None:
    """Make a SQL store survive its database restarting or a connection being killed: each connection is checked
    when taken from the pool (a dead one is replaced), and a call of Haystack's own that fails on a broken
    connection leaves the session rolled back (instead of refusing every later call with "Can't reconnect until
    invalid transaction is rolled back") and raises a :class:`DatabaseUnavailableError`."""
    if getattr(document_store, "_dcsr_recovers_sessions", False):
        return
    from sqlalchemy import event

    engine = document_store.session.bind
    if not getattr(engine, "_dcsr_pings", False):
        event.listen(engine, "engine_connect", _ping)  # SQLAlchemy's pessimistic disconnect handling
        engine._dcsr_pings = True
    for name in SESSION_METHODS:
        method = getattr(document_store, name, None)
        if method is not None:
            setattr(document_store, name, _recovering(document_store, method))
    generator = document_store.get_all_documents_generator

    def get_all_documents_generator(*args, **kwargs):
        try:
            yield from generator(*args, **kwargs)
        except Exception as error:
            _recover_or_raise(document_store, error)

    document_store.get_all_documents_generator = get_all_documents_generator
    document_store._dcsr_recovers_sessions = True


def _recovering(document_store: BaseDocumentStore, method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as error:
            _recover_or_raise(document_store, error)

    return call


def _recover_or_raise(document_store: BaseDocumentStore, error: BaseException):
    failed, lost = _sql_failure(error)
    if failed is None:
        raise error
    with store_lock(document_store):
        document_store.session.rollback()
    if not lost:
        raise error
    raise _database_error(document_store, failed) from error


def _ping(connection, branch=False):
    """Run ``SELECT 1`` on a connection taken from the pool; a dead one is invalidated and reopened once."""
    from sqlalchemy import exc, select

    if branch:
        return
    save_should_close_with_result = connection.should_close_with_result
    connection.should_close_with_result = False
    try:
        connection.scalar(select(1))
    except exc.DBAPIError as error:
        if not error.connection_invalidated:
            raise
        connection.scalar(select(1))  # the pool reconnects; a server still down raises here
    finally:
        connection.should_close_with_result = save_should_close_with_result


def is_sql_store(document_store: BaseDocumentStore) -> bool:
    from haystack.document_stores.sql import SQLDocumentStore

    return isinstance(document_store, SQLDocumentStore)


class VectorRow(NamedTuple):
    """A sentence row that has a FAISS vector: its id, vector id and position (None if not DCSR)."""

    doc_id: str
    vector_id: int
    where: Optional[SentencePosition]


def fetch_documents(
    document_store: BaseDocumentStore, ids: Sequence[str], index: Optional[str] = None
) -> List[Document]:
    """Documents by id (missing ids are left out), with ``meta["vector_id"]`` where they have one."""
    if not ids:
        return []
    if not is_sql_store(document_store):
        try:
            return document_store.get_documents_by_id(list(ids), index=index)
        except KeyError:  # InMemoryDocumentStore fails on a missing id: read them one by one
            found = []
            for doc_id in ids:
                try:
                    doc = document_store.get_document_by_id(doc_id, index=index)
                except KeyError:
                    doc = None
                if doc is not None:
                    found.append(doc)
            return found
    from haystack.document_stores.sql import DocumentORM, MetaDocumentORM

    index = index or document_store.index
    documents: Dict[str, Document] = {}
    with sql_session(document_store) as session:
        # Select by id only and check the index in Python: with "index = ?" in the WHERE clause SQLite
        # picks the index on that column, which every row shares, and scans the whole table.
        for chunk in _chunks(list(ids)):
            rows = session.query(
                DocumentORM.id, DocumentORM.index, DocumentORM.content, DocumentORM.content_type, DocumentORM.vector_id
            ).filter(DocumentORM.id.in_(chunk))
            for row in rows:
                if row.index == index:
                    meta = {} if row.vector_id is None else {"vector_id": row.vector_id}
                    documents[row.id] = Document(
                        id=row.id, content=row.content, content_type=row.content_type, meta=meta
                    )
            metas = session.query(
                MetaDocumentORM.document_id, MetaDocumentORM.document_index, MetaDocumentORM.name, MetaDocumentORM.value
            ).filter(MetaDocumentORM.document_id.in_(chunk))
            for row in metas:
                if row.document_index == index and row.document_id in documents:
                    documents[row.document_id].meta[row.name] = row.value
    return list(documents.values())


def _vector_joins(document_store, index: str, vector_ids: Optional[Iterable[int]]) -> Iterator[Tuple]:
    """``(doc id, vector id, meta index, DCSR meta)`` for each row that has a vector id (all of them, or
    those with the given vector ids), streamed from SQL. One pass over the table when ``vector_ids`` is
    None; by the (index, vector_id) unique index otherwise. A document yields one tuple per ``dcsr`` meta
    row of its id in any index (``meta index`` tells whose), or one with ``None`` when it has none.

    The meta rows are joined by document id alone (the index is checked by the caller): SQLite would
    otherwise walk the meta table through its ``document_index`` or ``name`` index, which every row
    shares, once per document (hours at a million sentences)."""
    from haystack.document_stores.sql import DocumentORM, MetaDocumentORM
    from sqlalchemy import and_, func

    joined = and_(MetaDocumentORM.document_id == DocumentORM.id, func.coalesce(MetaDocumentORM.name, "") == META)
    with sql_session(document_store) as session:
        base = (
            session.query(DocumentORM.id, DocumentORM.vector_id, MetaDocumentORM.document_index, MetaDocumentORM.value)
            .outerjoin(MetaDocumentORM, joined)
            .filter(DocumentORM.index == index)
        )
        if vector_ids is None:
            queries = [base.filter(DocumentORM.vector_id.isnot(None))]
        else:
            wanted = [str(v) for v in vector_ids]
            queries = [base.filter(DocumentORM.vector_id.in_(chunk)) for chunk in _chunks(wanted)]
        for query in queries:
            yield from query.yield_per(_SQL_BATCH)


def vector_rows(document_store, index: str, vector_ids: Optional[Iterable[int]] = None) -> Iterator[VectorRow]:
    """Rows that have a vector id (all of them, or those with the given vector ids), with their DCSR
    position (None when the row is no DCSR sentence of ``index``). One object a row: for a few rows
    (a query's hits, a deletion); a whole index is read as columns (``vector_columns``)."""
    found: Dict[str, VectorRow] = {}
    for doc_id, vector_id, meta_index, info in _vector_joins(document_store, index, vector_ids):
        if doc_id not in found or meta_index == index:  # a same-id document of another index: own meta
            found[doc_id] = VectorRow(doc_id, int(vector_id), _position(info) if meta_index == index else None)
    yield from found.values()


def vector_columns(document_store, index: str, vector_ids: Optional[Iterable[int]] = None) -> SentenceRows:
    """The rows ``vector_rows`` reads, as the columns a vector map is built from: a few bytes a row, so
    mapping millions of sentence rows holds no Python object per row (at 5M rows those objects alone
    were gigabytes)."""
    columns = SentenceRows()
    foreign: Dict[int, None] = {}  # vector ids seen only with another index's meta (rare): no DCSR position
    for _doc_id, vector_id, meta_index, info in _vector_joins(document_store, index, vector_ids):
        if meta_index == index or meta_index is None:
            columns.add(int(vector_id), _position(info) if meta_index == index else None)
        else:
            foreign[int(vector_id)] = None
    return columns.finish(unplaced=foreign)


def vector_ids_matching(document_store, index: str, filters: FilterType) -> List[int]:
    """Vector ids of the rows that pass Haystack ``filters``, evaluated in Python on the decoded meta
    values (``haystack_dcsr.haystack1.filters``): SQL would compare the JSON text of numbers as strings."""
    from haystack.document_stores.sql import DocumentORM, MetaDocumentORM

    from haystack_dcsr.core.filters import filter_fields
    from haystack_dcsr.haystack1.filters import matcher

    match = matcher(filters)
    fields = sorted(filter_fields(filters))
    metas: Dict[str, Dict] = {}
    with sql_session(document_store) as session:
        for chunk in _chunks(fields):
            rows = session.query(MetaDocumentORM.document_id, MetaDocumentORM.name, MetaDocumentORM.value).filter(
                MetaDocumentORM.document_index == index, MetaDocumentORM.name.in_(chunk)
            )
            for doc_id, name, value in rows.yield_per(_SQL_BATCH):
                metas.setdefault(doc_id, {})[name] = value
        rows = session.query(DocumentORM.id, DocumentORM.vector_id).filter(
            DocumentORM.index == index, DocumentORM.vector_id.isnot(None)
        )
        verdicts: Dict[str, bool] = {}  # sentences share their passage's meta: evaluate each distinct meta once
        vector_ids = []
        for doc_id, vector_id in rows.yield_per(_SQL_BATCH):
            meta = metas.get(doc_id, {})
            key = repr(sorted(meta.items()))
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = match(meta)
            if verdict:
                vector_ids.append(int(vector_id))
    return sorted(vector_ids)


def doc_ids_at(document_store, index: str, vector_ids: Sequence[int]) -> Dict[int, str]:
    """Which document each of a few vector ids belongs to now (probes for an index rebuilt elsewhere)."""
    from haystack.document_stores.sql import DocumentORM

    with sql_session(document_store):
        rows = (
            document_store.session.query(DocumentORM.vector_id, DocumentORM.id)
            .filter(DocumentORM.index == index, DocumentORM.vector_id.in_([str(v) for v in vector_ids]))
            .all()
        )
    return {int(vector_id): doc_id for vector_id, doc_id in rows}


def _position(info) -> Optional[SentencePosition]:
    if not isinstance(info, dict):
        return None
    try:
        return SentencePosition(**info)
    except TypeError:
        return None


def _chunks(items: List, size: int = _SQL_BATCH) -> Iterator[List]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def sentence_ids_of(document_store, index: str, passage_ids: Sequence[str]) -> List[str]:
    """Every sentence id ``<passage id>#<n>`` in the store for these passages, found by a range
    scan of the primary key ('$' follows '#'), stale sentences of earlier versions included."""
    from haystack.document_stores.sql import DocumentORM

    found = []
    with sql_session(document_store):
        for passage_id in dict.fromkeys(passage_ids):
            rows = (
                document_store.session.query(DocumentORM.id)
                .filter(
                    DocumentORM.id >= f"{passage_id}#", DocumentORM.id < f"{passage_id}$", DocumentORM.index == index
                )
                .all()
            )
            for (doc_id,) in rows:
                head, _, number = doc_id.rpartition("#")
                if head == passage_id and number.isdigit():
                    found.append(doc_id)
    return found


def passage_head_ids(document_store, index: str) -> List[str]:
    """The id of every passage's sentence #0 (one scan of the id column, in SQL)."""
    from haystack.document_stores.sql import DocumentORM

    with sql_session(document_store):
        rows = (
            document_store.session.query(DocumentORM.id)
            .filter(DocumentORM.index == index, DocumentORM.id.like("%#0"))
            .all()
        )
    return [doc_id for (doc_id,) in rows]


def vector_row_count(document_store, index: str) -> int:
    """How many rows of ``index`` have a vector id (one COUNT in SQL)."""
    from haystack.document_stores.sql import DocumentORM
    from sqlalchemy import func

    with sql_session(document_store):
        return int(
            document_store.session.query(func.count(DocumentORM.id))
            .filter(DocumentORM.index == index, DocumentORM.vector_id.isnot(None))
            .scalar()
        )


def highest_vector_id(document_store, index: str) -> int:
    """The highest vector id a row of ``index`` holds (-1: none)."""
    from haystack.document_stores.sql import DocumentORM
    from sqlalchemy import Integer, cast, func

    with sql_session(document_store):
        found = (
            document_store.session.query(func.max(cast(DocumentORM.vector_id, Integer)))
            .filter(DocumentORM.index == index, DocumentORM.vector_id.isnot(None))
            .scalar()
        )
    return -1 if found is None else int(found)


def sqlite_connection(document_store):
    """The raw ``sqlite3`` connection behind a store on SQLite (None on any other database)."""
    if document_store.session.bind.dialect.name != "sqlite":
        return None
    fairy = document_store.session.connection().connection
    return getattr(fairy, "driver_connection", None) or fairy.connection


def stale_sentence_ids(document_store, index: str) -> List[str]:
    """Every DCSR sentence row that is not part of its passage's current version (see
    ``sentence_units``): one pass over the ids and positions of the index."""
    from haystack.document_stores.sql import DocumentORM, MetaDocumentORM
    from sqlalchemy import and_, func

    joined = and_(MetaDocumentORM.document_id == DocumentORM.id, func.coalesce(MetaDocumentORM.name, "") == META)
    positions: Dict[str, SentencePosition] = {}
    with sql_session(document_store):
        rows = (
            document_store.session.query(DocumentORM.id, MetaDocumentORM.document_index, MetaDocumentORM.value)
            .join(MetaDocumentORM, joined)
            .filter(DocumentORM.index == index)
        )
        for doc_id, meta_index, info in rows.yield_per(_SQL_BATCH):
            where = _position(info) if meta_index == index else None
            if where is not None:
                positions[doc_id] = where
    heads = {where.passage_id: where for where in positions.values() if where.index == 0}
    return [
        doc_id
        for doc_id, where in positions.items()
        if where.passage_id not in heads or not where.same_version(heads[where.passage_id])
    ]
