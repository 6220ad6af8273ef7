"""Serving queries while the same process writes to the store: a reader-writer lock per store.

Neither Haystack's stores are safe under concurrent use: a 1.x FAISS/SQLite store shares one SQLAlchemy
session between all callers (concurrent use crashes in libsqlite3 or leaves the session in
``PendingRollbackError``), FAISS must not be searched while vectors are added or removed, and both
Haystacks' ``InMemoryDocumentStore`` iterate dicts that a write changes (Qdrant's local mode likewise).
``guard(store)`` installs, on that store instance, wrappers around its write methods (1.x's
``write_documents``, ``update_embeddings``, ``delete_documents``, ...; 2.x's ``write_documents``,
``delete_documents``, ``delete_by_filter``, ...: the synchronous ones) that take the *write* side of the
store's lock; the DCSR retrievers search and read passages under the *read* side. So a query sees the store
before or after a write call, never in the middle of one, and several queries still run together.

``update_embeddings`` spends nearly all of its time encoding passages. The retriever encodes each
batch inside ``writes_paused``: the writer keeps the lock (no other writer can start) but lets
queries in, which then see the index as it stands between two of Haystack's batches (a consistent
state: every vector added so far has its id in SQL). Queries therefore wait for bookkeeping, not
for encoding.
"""

import functools
import threading
from contextlib import contextmanager
from typing import Dict, Iterator

# the store methods that change documents, vectors or the index (all that Haystack 1.x and 2.x stores offer;
# a store has some of them)
WRITE_METHODS = (
    "write_documents",
    "update_embeddings",
    "delete_documents",
    "delete_all_documents",
    "delete_index",
    "update_document_meta",
    "train_index",
    "delete_by_filter",
    "update_by_filter",
)
_ATTRIBUTE = "_dcsr_store_guard"
_install_lock = threading.Lock()
_held = threading.local()  # the guards this thread is writing under, innermost last


class StoreGuard:
    """A reader-writer lock: many readers or one writer; the writer may pause to admit readers.

    Re-entrant on both sides (a writer may read and write again; a reader may read again). A thread
    that reads may not start writing (that would wait for itself): it gets an error instead."""

    def __init__(self):
        self._condition = threading.Condition()
        self._writer = None  # the writing thread's id
        self._write_depth = 0
        self._paused = False
        self._readers: Dict[int, int] = {}  # thread id -> read depth
        self._waiting_writers = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._condition:
            if self._writer != me and not self._readers.get(me):
                while (self._writer is not None and not self._paused) or (
                    self._writer is None and self._waiting_writers
                ):
                    self._condition.wait()
            self._readers[me] = self._readers.get(me, 0) + 1
        try:
            yield
        finally:
            with self._condition:
                self._readers[me] -= 1
                if not self._readers[me]:
                    del self._readers[me]
                self._condition.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._condition:
            if self._writer == me:
                self._write_depth += 1
            else:
                if self._readers.get(me):
                    raise RuntimeError(
                        "This thread is reading the document store (a query is running in it) and cannot write to it "
                        "until that query returns"
                    )
                self._waiting_writers += 1
                try:
                    while self._writer is not None or self._readers:
                        self._condition.wait()
                finally:
                    self._waiting_writers -= 1
                self._writer, self._write_depth = me, 1
        stack = _held.__dict__.setdefault("guards", [])
        stack.append(self)
        try:
            yield
        finally:
            stack.pop()
            with self._condition:
                self._write_depth -= 1
                if not self._write_depth:
                    self._writer = None
                    self._condition.notify_all()

    @contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Inside a write: let readers in until the block ends, then wait for them to leave. Outside a
        write (or when already paused), nothing."""
        me = threading.get_ident()
        with self._condition:
            if self._writer != me or self._paused:
                pausing = False
            else:
                pausing = self._paused = True
                self._condition.notify_all()
        try:
            yield
        finally:
            if pausing:
                with self._condition:
                    while any(thread != me for thread in self._readers):
                        self._condition.wait()
                    self._paused = False


@contextmanager
def writes_paused() -> Iterator[None]:
    """Pause every write this thread is inside (see ``StoreGuard.writes_paused``): what the retriever
    does while it encodes a batch for ``update_embeddings``, whichever store called it."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        for store_guard in dict.fromkeys(getattr(_held, "guards", [])):
            stack.enter_context(store_guard.writes_paused())
        yield


def guard(document_store) -> StoreGuard:
    """The store's guard, installed (once per store instance) around its write methods."""
    existing = getattr(document_store, _ATTRIBUTE, None)
    if existing is not None:
        return existing
    with _install_lock:
        existing = getattr(document_store, _ATTRIBUTE, None)
        if existing is not None:
            return existing
        store_guard = StoreGuard()
        for name in WRITE_METHODS:
            method = getattr(document_store, name, None)
            if callable(method):
                setattr(document_store, name, _writing(store_guard, method))
        setattr(document_store, _ATTRIBUTE, store_guard)
        return store_guard


def _writing(store_guard: StoreGuard, method):
    @functools.wraps(method)
    def write(*args, **kwargs):
        with store_guard.writing():
            return method(*args, **kwargs)

    write.__dcsr_guarded__ = True
    return write
