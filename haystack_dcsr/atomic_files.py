"""Files that are either the old version or the new one, never half of either.

A save that is killed, or that fills the disk, must leave the previous save loadable. Every file
is written under a temporary name in its own folder, flushed to disk (``fsync``), then renamed over
the real name (a rename within a folder is atomic) and the folder entry flushed; a failure removes
the temporary file and leaves the real one as it was.
"""

import os
import uuid
from pathlib import Path
from typing import BinaryIO, Callable, Union

PathLike = Union[str, Path]


def temporary_name(path: PathLike) -> Path:
    """A hidden sibling of ``path`` that no other writer uses."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def atomic_write(path: PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Replace ``path`` with what ``write`` writes into the binary file it is given."""
    path = Path(path)
    temporary = temporary_name(path)
    try:
        with open(temporary, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)
    return path


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
