"""A ``FAISSDocumentStore`` saved as one consistent set, and refused when the set is not one.

A FAISS store lives in three places: the FAISS index (vectors by position), the SQL database
(documents and each one's vector id) and DCSR's vector map (vector id -> passage, sentence).
Haystack's ``store.save`` rewrites the index file in place (a kill or a full disk leaves it cut
short) and nothing ties the three together, so an older index file beside a newer database loads
without a word and answers wrongly. ``save_faiss_store`` therefore:

- writes every file atomically (``atomic_files``): a failed save leaves the previous file whole;
- copies a SQLite database into the set (SQLite's online backup, so the copy is consistent even
  while the store is open, in-memory databases included): the saved folder is self-contained and
  loads from any working directory or machine (a load works on a copy of it outside the folder:
  ``working_copies``);
- writes SHA-256 checksums of every file of the set, the vector map included, last: a load verifies them
  first, so a file cut short, altered or taken from another save is refused by name (``DamagedFileError``);
  the map, a cache of SQL, is checked when a retriever reads it and ignored (rebuilt from SQL) if it fails.

``save_pipeline`` builds on this with a generation folder per save and the YAML written last, so a
crash at any point leaves the previous pipeline loadable.
"""

import errno
import json
import logging
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Union

from haystack_dcsr.core.storage.atomic_files import atomic_write_bytes, atomic_write_text, replacing
from haystack_dcsr.core.storage.checksums import verify_checksums, write_checksums
from haystack_dcsr.core.storage.store_guard import guard
from haystack_dcsr.haystack1.engine.sentence_map import checksum_listing, map_path
from haystack_dcsr.haystack1.engine.sql_rows import sqlite_connection, store_lock
from haystack_dcsr.haystack1.engine.working_copies import is_working_copy, open_working_copy, release_with

logger = logging.getLogger(__name__)

_NOT_SAVED = ("faiss_index", "faiss_index_path", "faiss_config_path")  # the objects and paths of this load
PathLike = Union[str, Path]
TEMPORARY_CONFIG_PREFIX = "dcsr-store-"  # open_params' resolved configs, removed once read
SQLITE_PREFIX = "sqlite:///"


def config_path(index_path: PathLike) -> Path:
    """Where Haystack keeps the store's creation parameters: ``index.json`` beside ``index.faiss``."""
    return Path(index_path).with_suffix(".json")


def save_faiss_store(
    document_store, index_path: PathLike, index: Optional[str] = None, search=None, copy_database: bool = True
) -> Path:
    """Save the store's FAISS index, its config, DCSR's vector map and (SQLite,
    unless ``copy_database`` is False) a copy of the database, each file atomically; returns
    ``index_path``. Load it with ``FAISSDocumentStore.load(index_path)`` or through
    ``load_pipeline``; ``search`` is the retriever's ``FaissSentenceSearch`` when one has the map
    already (else the map is built from SQL here)."""
    import faiss

    from haystack_dcsr.haystack1.engine.sentence_search import FaissSentenceSearch

    index_path = Path(index_path)
    index = index or document_store.index
    if index not in document_store.faiss_indexes:
        raise ValueError(f"Index {index!r} does not exist in the FAISSDocumentStore: nothing to save")
    index_path.parent.mkdir(parents=True, exist_ok=True)
    search = search or FaissSentenceSearch(document_store, index)
    with guard(document_store).reading(), store_lock(document_store):  # one state: no write in between
        sentence_map = search.current_map()
        faiss_index = document_store.faiss_indexes[index]
        data = faiss.serialize_index(faiss_index)
        params = document_store._component_config["params"]
        config = {key: value for key, value in params.items() if key not in _NOT_SAVED}
        database = sqlite_connection(document_store) if copy_database else None
        if database is not None:
            database_path = index_path.with_suffix(".db")
            copy_sqlite(database, database_path)
            config["sql_url"] = f"{SQLITE_PREFIX}{database_path.name}"  # relative to the config file: see open_params
        else:
            config["sql_url"] = absolute_sql_url(config.get("sql_url", ""), Path.cwd())
            if is_working_copy(config["sql_url"]):
                raise ValueError(
                    f"copy_database=False would make the save name {config['sql_url']}, the working copy this "
                    "store was loaded with, which goes when the store does: save with copy_database=True. "
                    "Nothing was written."
                )
    atomic_write_bytes(index_path, memoryview(data))
    atomic_write_text(config_path(index_path), json.dumps(config, default=str))
    sentence_map.save(map_path(index_path))
    saved_files = [index_path.name, config_path(index_path).name, map_path(index_path).name]
    saved_files += [database_path.name] if database is not None else []  # a load works on a copy of it
    write_checksums(index_path.parent, saved_files, checksum_listing(index_path))  # last: the checksums seal the set
    return index_path


def copy_sqlite(connection: sqlite3.Connection, path: Path) -> None:
    """A consistent copy of an open SQLite database (SQLite's online backup), written atomically."""
    with replacing(path) as temporary:
        target = sqlite3.connect(str(temporary))
        try:
            connection.backup(target)
        except sqlite3.Error as error:  # SQLite reports a full disk as "disk I/O error"
            raise OSError(errno.EIO, f"could not copy the SQLite database to {path} ({error}): is the disk full?")
        finally:
            target.close()


def absolute_sql_url(sql_url: str, base: Path) -> str:
    """A SQLite URL with a relative file made absolute against ``base``; other URLs as they are."""
    if not sql_url.startswith(SQLITE_PREFIX):
        return sql_url
    location = sql_url[len(SQLITE_PREFIX) :]
    if not location or location == ":memory:" or location.startswith("/"):
        return sql_url
    return SQLITE_PREFIX + str((base / location).resolve())


def open_params(index_path: PathLike, base: Optional[Path] = None) -> Dict[str, Any]:
    """``FAISSDocumentStore`` parameters that open a saved store from anywhere: the index path made
    absolute (against ``base``, e.g. the YAML's folder) and, when its config names a database by a
    relative SQLite path (a copy saved beside it), a config naming a working copy of that database
    (``working_copies``: the store's writes never change the save). Checks the files first, so a
    missing, cut-short or altered file is an error that says what to do, not FAISS's."""
    index_path = saved_file(index_path, base)
    config_file = saved_file(config_path(index_path), base)
    # the vector map is a cache of SQL: checked when a retriever reads it, and ignored (rebuilt) if damaged
    verify_checksums(index_path.parent, listing=checksum_listing(index_path), skip=[map_path(index_path).name])
    config = json.loads(config_file.read_text())
    resolved = absolute_sql_url(config.get("sql_url", ""), index_path.parent)
    if resolved == config.get("sql_url"):
        return {"faiss_index_path": str(index_path)}
    saved_database = saved_file(resolved[len(SQLITE_PREFIX) :], what="FAISS store's database")
    config["sql_url"] = SQLITE_PREFIX + str(open_working_copy(saved_database))
    handle, name = tempfile.mkstemp(prefix=TEMPORARY_CONFIG_PREFIX, suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(config, out)
    return {"faiss_index_path": str(index_path), "faiss_config_path": name}


def saved_file(path: PathLike, base: Optional[Path] = None, what: str = "FAISS store") -> Path:
    """A file of a save (of ``what``), named relative to ``base`` (the YAML's folder; default: the
    working directory) or absolutely; a missing one is an error that says what to do."""
    path = Path(path)
    path = path if path.is_absolute() else ((base or Path.cwd()) / path).resolve()
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the saved {what} is incomplete. Save it again (save_pipeline or "
            "save_faiss_store), or point the pipeline at a complete save."
        )
    return path


def discard_temporary_config(params: Dict[str, Any]) -> None:
    """Remove the resolved config ``open_params`` wrote, once the store has read it."""
    config = params.get("faiss_config_path")
    if config and Path(config).name.startswith(TEMPORARY_CONFIG_PREFIX):
        Path(config).unlink(missing_ok=True)


def load_faiss_store(index_path: PathLike):
    """``FAISSDocumentStore.load`` for a set written by ``save_faiss_store``: opens the saved database
    copy from any working directory, and a missing or cut-short file is an error that says what to do."""
    from haystack.document_stores import FAISSDocumentStore

    params = open_params(index_path)
    try:
        return adopt_working_copy(FAISSDocumentStore(**params))
    finally:
        discard_temporary_config(params)


def adopt_working_copy(document_store):
    """Tie the working copy a loaded store opened (``open_params``) to the store's life; returns the store."""
    bind = document_store.session.bind
    if bind.dialect.name == "sqlite" and bind.url.database not in (None, "", ":memory:"):
        release_with(document_store, Path(bind.url.database))  # (any other file is not a copy: left alone)
    return document_store
