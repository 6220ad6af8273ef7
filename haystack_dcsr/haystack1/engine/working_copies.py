"""A loaded store's own copy of a saved SQLite database, outside the save, so that loading never writes
into a saved folder.

A saved FAISS store is a set (index, map, database copy) that must agree. A load that opened the saved
database itself would let the store's writes (``delete_passages``, ``write_documents``) change the set's
database while its index stays as saved. A load therefore copies the saved database into a private folder
(``<temp>/haystack-dcsr-working/<name>-<pid>-<id>.db``) and opens that: the saved files are only read, and
a saved folder on read-only storage loads as well as any other. The store's writes reach a save only through
``save_pipeline``.

A copy goes when the store working on it is garbage-collected or the process exits; a killed process's
copies are removed by the next load in any process (their pid is gone).
"""

import atexit
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from pathlib import Path
from typing import Dict

_SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
_OWNED: Dict[Path, int] = {}  # working copies -> the pid that made it (a forked child inherits the table)
_LOCK = threading.Lock()


def working_folder() -> Path:
    """Where working copies live: a folder of the system's temporary directory (``TMPDIR``)."""
    return Path(tempfile.gettempdir()) / "haystack-dcsr-working"


def open_working_copy(saved: Path) -> Path:
    """A new working copy of the saved SQLite database ``saved``, owned by this process. Copies whose
    process is gone are removed first."""
    saved = Path(saved)
    folder = working_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    remove_stale_copies()
    copy = folder / f"{saved.stem}-{os.getpid()}-{uuid.uuid4().hex[:8]}{saved.suffix}"
    with _LOCK:
        _OWNED[copy] = os.getpid()  # before the copy exists: a half-written copy is this process's to remove
    try:
        shutil.copyfile(saved, copy)  # the saved file is sealed (never opened for writing): a plain copy is consistent
    except BaseException:
        release(copy)
        raise
    return copy


def release_with(store, copy: Path) -> None:
    """Remove the working copy ``copy`` once ``store`` (the document store working on it) is garbage-collected,
    so a process that loads again and again does not keep every copy until it exits."""
    weakref.finalize(store, release, Path(copy))


def release(copy: Path) -> None:
    """Remove this process's working copy ``copy`` (nothing if it is not one: a forked child that inherited the
    table leaves its parent's copies alone)."""
    with _LOCK:
        pid = _OWNED.pop(Path(copy), None)
    if pid == os.getpid():
        _remove_copy(Path(copy))


def is_working_copy(location: str) -> bool:
    """Whether a database file (or a ``sqlite:///`` URL naming one) is a load's working copy."""
    path = Path(location.split("sqlite:///", 1)[-1])
    return path.parent == working_folder() and path.suffix == ".db"


def remove_stale_copies() -> None:
    """Remove the working copies whose process is gone (killed before it could)."""
    folder = working_folder()
    for copy in folder.glob("*.db") if folder.is_dir() else ():
        pid = copy.stem.rsplit("-", 2)[-2] if copy.stem.count("-") >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            _remove_copy(copy)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _remove_copy(copy: Path) -> None:
    for path in [copy, *(copy.with_name(copy.name + side) for side in _SQLITE_SIDE_FILES)]:
        path.unlink(missing_ok=True)


@atexit.register
def _remove_owned_copies() -> None:
    """At exit, this process's copies go."""
    for copy in list(_OWNED):
        release(copy)
