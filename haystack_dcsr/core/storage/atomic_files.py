"""Files that are either the old version or the new one, never half of either.

A save that is killed, or that fills the disk, must leave the previous save loadable. Every file
is written under a temporary name in its own folder, flushed to disk (``fsync``), then renamed over
the real name (a rename within a folder is atomic) and the folder entry flushed; a failure removes
the temporary file and leaves the real one as it was.
"""

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Union

PathLike = Union[str, Path]


def temporary_name(path: PathLike) -> Path:
    """A hidden sibling of ``path`` that no other writer uses."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextmanager
def replacing(path: PathLike) -> Iterator[Path]:
    """A temporary path to write ``path``'s new version to (by any means: a file, SQLite's backup);
    on leaving the block it is flushed and renamed over ``path``, on an error removed."""
    path = Path(path)
    temporary = temporary_name(path)
    try:
        yield temporary
        with open(temporary, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def atomic_write(path: PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Replace ``path`` with what ``write`` writes into the binary file it is given."""
    with replacing(path) as temporary, open(temporary, "wb") as out:
        write(out)
    return Path(path)


def atomic_write_bytes(path: PathLike, data: Union[bytes, memoryview]) -> Path:
    return atomic_write(path, lambda out: out.write(data))


def atomic_write_text(path: PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def fsync_folder(folder: PathLike) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        handle = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
