"""Direct reads of a Haystack 1.x SQL-backed store (FAISSDocumentStore included): the one module
that touches Haystack's ORM tables and session.

Haystack's own readers build an ORM object per row (milliseconds each) and some scan the whole
table; DCSR reads hundreds of sentences per query and every sentence row when it maps a FAISS
index, so it reads plain columns here. A store's SQLAlchemy session is one object shared by every
caller and is not thread-safe, so every read below holds that store's lock (``store_lock``).
"""

import threading
import weakref
from contextlib import contextmanager
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from haystack.document_stores.base import BaseDocumentStore, FilterType
from haystack.schema import Document

from haystack_dcsr.core.text.sentence_units import META, SentencePosition
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


@contextmanager
def sql_session(document_store: BaseDocumentStore) -> Iterator:
    """The store's session, under its lock."""
    with store_lock(document_store):
        yield document_store.session


def refuse_server_database(document_store: BaseDocumentStore) -> None:
    """A FAISS store serves DCSR from one process with its database in SQLite, saved with it by ``save_pipeline``.
    Over a database server (PostgreSQL) several processes would share rows behind FAISS indexes each keeps for
    itself, and a server restart would break the store's one session: refused by name, with the engines made for
    that."""
    if not is_sql_store(document_store) or document_store.session.bind.dialect.name == "sqlite":
        return
    url = document_store.session.bind.url
    raise ValueError(
        f"{type(document_store).__name__} over a {url.get_backend_name()} database ({url.host or ''}/"
        f"{url.database or ''}): DCSR serves a FAISS store from one process with its database in SQLite "
        "(sql_url='sqlite:///...', saved with the index by save_pipeline). For a database that several processes "
        "share and that restarts on its own, use a server engine: DCSRMilvusDocumentStore (Haystack 1.x and 2.x) "
        "or PgvectorDocumentStore (Haystack 2.x)."
    )


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

    from haystack_dcsr.core.indexes.filters import filter_fields
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
