"""SHA-256 checksums written beside saved files, so that a truncated or altered file is refused by name.

Safetensors and ``torch.load`` notice a damaged header, but not flipped bytes inside tensor data: those load as
other numbers, silently. A save therefore writes ``checksums.sha256`` (``sha256sum`` format: ``sha256sum -c``
checks it by hand) over what it wrote, and a load verifies it first. Folders saved before this file existed
have none and load as before.
"""

import hashlib
import os
import threading
from pathlib import Path
from typing import Dict, Iterable, Tuple, Union

CHECKSUM_FILE = "checksums.sha256"
_VERIFIED: Dict[Tuple[str, int, int], bool] = {}  # (file, size, mtime) already verified in this process
_LOCK = threading.Lock()


class DamagedFileError(ValueError):
    """A saved file that is missing, truncated or altered since it was written; the message names it."""


def sha256_of(path: Union[str, Path]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksums(
    folder: Union[str, Path],
    names: Iterable[str],
    listing: str = CHECKSUM_FILE,
) -> Path:
    """``folder/listing`` over ``names`` (paths relative to ``folder``), written atomically."""
    from haystack_dcsr.core.storage.atomic_files import atomic_write_text

    folder = Path(folder)
    lines = [f"{sha256_of(folder / name)}  {Path(name).as_posix()}" for name in sorted(set(names))]
    return atomic_write_text(folder / listing, "\n".join(lines) + "\n")


def files_under(folder: Union[str, Path], *parts: str) -> list:
    """Every file under ``folder / part`` (a file or a folder) for each part that exists, relative to ``folder``."""
    folder = Path(folder)
    found = []
    for part in parts:
        path = folder / part
        if path.is_file():
            found.append(part)
        elif path.is_dir():
            found += [str(p.relative_to(folder)) for p in sorted(path.rglob("*")) if p.is_file()]
    return [name for name in found if Path(name).name != CHECKSUM_FILE]


def verify_checksums(
    folder: Union[str, Path], only: Iterable[str] = (), listing: str = CHECKSUM_FILE, skip: Iterable[str] = ()
) -> None:
    """Check the files ``folder/listing`` lists (those under ``only``'s prefixes, if given; none named in
    ``skip``): a missing, truncated or altered one is a :class:`DamagedFileError` naming it. Nothing to check
    without that file. A file verified once in this process is not hashed again while its size and mtime stay
    the same."""
    folder = Path(folder)
    listing = folder / listing
    if not listing.is_file():
        return
    prefixes, skipped = tuple(only), set(skip)
    for number, line in enumerate(listing.read_text().splitlines(), 1):
        digest, _, name = line.partition("  ")
        if not name or len(digest) != 64:
            raise DamagedFileError(f"{listing}: line {number} is not '<sha256>  <file>': the checksum file is damaged")
        if (prefixes and not name.startswith(prefixes)) or name in skipped:
            continue
        path = folder / name
        if not path.is_file():
            raise DamagedFileError(f"{path}: missing (listed in {listing}): the saved folder is incomplete")
        stat = os.stat(path)
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        with _LOCK:
            if _VERIFIED.get(key) == digest:
                continue
        if sha256_of(path) != digest:
            raise DamagedFileError(
                f"{path}: damaged: its SHA-256 differs from the one written when it was saved ({listing}), so it "
                "was truncated or altered since. Restore it from a copy, or save it again."
            )
        with _LOCK:
            _VERIFIED[key] = digest
