"""A loaded store's own copy of a saved SQLite database, so that a save stays as it was written.

A saved FAISS store is a set (index, map, database copy) that must agree. If a load opened the saved
database itself, the store's writes (``delete_passages``, ``write_documents``) would change the set's
database while its index stays as saved: a process killed before its next ``save_pipeline`` would leave
a folder whose database and index disagree, and two processes loading one folder would write one
database behind two different indexes. A load therefore copies the saved database to a working copy
(``<Store>.working-<pid>-<id>.db`` beside it) and opens that; the saved files are only ever read.

A process owns each working copy while the store working on it lives: an exclusive ``flock`` on
``<copy>.owner``, released and the copy removed when the store is garbage-collected or the process exits
(a kill releases the lock too). Copies whose owner is gone (a killed process) are removed by the next
load from the same folder, and ``save_pipeline`` keeps a superseded generation while a live process still
works on a copy in it.
"""

import atexit
import fcntl
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from pathlib import Path
from typing import IO, Dict, List, Tuple

WORKING_MARK = ".working-"
OWNER_SUFFIX = ".owner"
_SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
_OWNED: Dict[Path, Tuple[int, IO]] = {}  # working copies -> (the pid that made it, its held owner lock)
_LOCK = threading.Lock()


def open_working_copy(saved: Path) -> Path:
    """A new working copy of the saved SQLite database ``saved``, owned by this process, beside it (or in
    the temporary folder when the save's folder is read-only). Stale copies there are removed first."""
    saved = Path(saved)
    folder = saved.parent if os.access(saved.parent, os.W_OK) else Path(tempfile.gettempdir())
    remove_stale_copies(folder)
    copy = folder / f"{saved.stem}{WORKING_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}{saved.suffix}"
    owner = open(_owner_path(copy), "a")
    fcntl.flock(owner.fileno(), fcntl.LOCK_EX)  # before the copy exists: a half-written copy is never "stale"
    try:
        shutil.copyfile(saved, copy)  # the saved file is sealed (never opened for writing): a plain copy is consistent
    except BaseException:
        owner.close()
        _remove_copy(copy)
        raise
    with _LOCK:
        _OWNED[copy] = (os.getpid(), owner)
    return copy


def release_with(store, copy: Path) -> None:
    """Remove the working copy ``copy`` once ``store`` (the document store working on it) is garbage-collected,
    so a process that loads again and again does not keep every copy (and generation) until it exits."""
    weakref.finalize(store, release, Path(copy))


def release(copy: Path) -> None:
    """Remove this process's working copy ``copy`` and give up its ownership (nothing if it is not one: a
    forked child that inherited the table leaves its parent's copies alone)."""
    with _LOCK:
        pid, owner = _OWNED.pop(Path(copy), (None, None))
    if owner is not None:
        if pid == os.getpid():
            _remove_copy(Path(copy))
        owner.close()


def is_working_copy(location: str) -> bool:
    """Whether a database file (or a ``sqlite:///`` URL naming one) is a load's working copy."""
    name = Path(location).name
    return WORKING_MARK in name and name.endswith(".db")


def copies_in_use(folder: Path) -> List[Path]:
    """The working copies in ``folder`` whose owner (this process or another) is alive."""
    return [copy for copy in _copies(folder) if not _owner_gone(copy)]


def remove_stale_copies(folder: Path) -> None:
    """Remove the working copies in ``folder`` whose owner process is gone (killed before it could)."""
    for copy in _copies(folder):
        if _owner_gone(copy):
            _remove_copy(copy)


def _copies(folder: Path) -> List[Path]:
    if not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).iterdir() if WORKING_MARK in p.name and p.suffix == ".db")


def _owner_path(copy: Path) -> Path:
    return copy.with_name(copy.name + OWNER_SUFFIX)


def _owner_gone(copy: Path) -> bool:
    """True when no process holds ``copy``'s owner lock (a flock is per open file, so this process's own
    copies read as held too)."""
    try:
        handle = open(_owner_path(copy))  # (created before its copy: missing means the copy is being removed)
    except FileNotFoundError:
        return True
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True


def _remove_copy(copy: Path) -> None:
    for path in [copy, *(copy.with_name(copy.name + side) for side in _SQLITE_SIDE_FILES), _owner_path(copy)]:
        path.unlink(missing_ok=True)


@atexit.register
def _remove_owned_copies() -> None:
    """At exit, this process's copies go."""
    for copy in list(_OWNED):
        release(copy)
