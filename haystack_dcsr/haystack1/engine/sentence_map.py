"""Which passage version and sentence each vector of a FAISS sentence index stands for.

FAISS knows vectors by position; Haystack keeps each document's vector id in SQL. DCSR reads
thousands of hits per query, so the map lives in memory as two arrays indexed by vector id: built
by one pass over the table, then *extended* with the rows of new vector ids only (Haystack adds
vectors at the end). A map is never changed in place: a change makes a new map that shares the
append-only passage list, so a search holding a map sees one consistent state while another
thread updates the retriever's map.

Only *current* sentences are mapped (see ``sentence_units``): a vector whose row is a stale
sentence, whose passage has no sentence #0, or whose row is not a DCSR sentence maps to -1 and
is never a hit.
"""

import json
import zipfile
from array import array
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from haystack_dcsr.core.text.sentence_units import PassageRef, SentencePosition, sentence_id

HeadReader = Callable[[List[str]], Dict[str, SentencePosition]]
MAP_FORMAT = 2  # 2: ids with offsets (any character); a format-2 map saved with a fingerprint reads as well
MAP_SUFFIX = ".dcsr-map.npz"  # beside the FAISS index file: index.faiss -> index.faiss.dcsr-map.npz


def map_path(index_path: Union[str, Path]) -> Path:
    """Where the vector map of ``index.faiss`` lives: ``index.faiss.dcsr-map.npz``."""
    return Path(f"{index_path}{MAP_SUFFIX}")


def checksum_listing(index_path: Union[str, Path]) -> str:
    """The checksum file of one saved store, ``index.faiss.sha256`` (several stores may share a folder)."""
    return f"{Path(index_path).name}.sha256"


class SentenceRows:
    """SQL rows that have vector ids, as the columns a map is built from: each row's vector id, passage,
    sentence index and passage version (count and fingerprint), a few bytes a row. Passage ids and
    version fingerprints are stored once each; a row that is no DCSR sentence has passage -1.

    Fill with ``add`` (rows in any order), then ``finish``; a vector id added twice keeps its last row."""

    def __init__(self):
        self.passage_ids: List[str] = []  # passage number -> id, in order of first appearance
        self.version_names: List[str] = []  # version number -> fingerprint
        self._passage_numbers: Dict[str, int] = {}
        self._version_numbers: Dict[str, int] = {}
        self._columns = self._empty_columns()
        self.vector_id = self.passage = self.sentence = self.count = self.version = np.zeros(0, np.int64)

    @staticmethod
    def _empty_columns() -> Dict[str, array]:
        return {"vector_id": array("q"), **{name: array("i") for name in ("passage", "sentence", "count", "version")}}

    def __len__(self) -> int:
        return len(self.vector_id)

    def add(self, vector_id: int, where: Optional[SentencePosition]) -> None:
        columns = self._columns
        columns["vector_id"].append(vector_id)
        if where is None:
            for name in ("passage", "sentence", "count", "version"):
                columns[name].append(-1)
            return
        columns["passage"].append(self._number(where.passage_id, self._passage_numbers, self.passage_ids))
        columns["sentence"].append(where.index)
        columns["count"].append(where.count)
        columns["version"].append(self.version_number(where.version))

    def passage_number(self, passage_id: str) -> int:
        return self._passage_numbers[passage_id]

    def version_number(self, version: str) -> int:
        return self._number(version, self._version_numbers, self.version_names)

    @staticmethod
    def _number(name: str, numbers: Dict[str, int], names: List[str]) -> int:
        number = numbers.get(name)
        if number is None:
            number = numbers[name] = len(names)
            names.append(name)
        return number

    def finish(self, unplaced: Iterable[int] = ()) -> "SentenceRows":
        """Turn the columns into arrays, one row per vector id (its last); ``unplaced`` vector ids that
        no added row has become rows without a DCSR position."""
        arrays = {name: np.frombuffer(column, dtype=column.typecode) for name, column in self._columns.items()}
        ids = arrays["vector_id"]
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # a table scan is usually in id order already
            order = np.argsort(ids, kind="stable")
            ordered = ids[order]
            last = np.append(ordered[1:] != ordered[:-1], True)  # the last of each run of one id
            arrays = {name: values[order[last]] for name, values in arrays.items()}
        extra = np.setdiff1d(np.fromiter(unplaced, dtype=np.int64), arrays["vector_id"])
        if len(extra):
            arrays = {
                name: np.concatenate([values, extra if name == "vector_id" else np.full(len(extra), -1, values.dtype)])
                for name, values in arrays.items()
            }
        for name, values in arrays.items():
            setattr(self, name, values)  # views of the columns where nothing was reordered: no copy
        self._columns = self._empty_columns()
        return self


class SentenceMap:
    """vector id -> (passage key, sentence index); ``passages[key]`` is the passage version."""

    def __init__(
        self,
        vector_passage: np.ndarray,
        vector_sentence: np.ndarray,
        passages: List[PassageRef],
        keys: Dict[str, int],
        ntotal: int,
    ):
        self.vector_passage = vector_passage
        self.vector_sentence = vector_sentence
        self.passages = passages  # append-only: keys held by earlier hits stay valid
        self.keys = keys  # passage id -> key of its current version
        self.ntotal = ntotal  # the FAISS index size this map describes

    @classmethod
    def empty(cls) -> "SentenceMap":
        return cls(np.zeros(0, np.int32), np.zeros(0, np.int32), [], {}, 0)

    @property
    def mapped(self) -> int:
        """Vectors that stand for a current sentence."""
        return int(np.count_nonzero(self.vector_passage >= 0))

    def with_rows(self, rows: SentenceRows, read_heads: HeadReader, ntotal: int) -> "SentenceMap":
        """A new map: this one plus ``rows`` (rows of new vector ids, or all rows on a rebuild).

        A passage's version is that of its sentence #0 (read from the store when ``rows`` lack it); a
        sentence of another version maps to -1. A passage whose sentence #0 now has another version
        gets a new key; the vectors of its old version stop being hits. Vectorised over the rows: the
        only Python loop is over passages."""
        vids, numbers = rows.vector_id, rows.passage
        size = max(ntotal, len(self.vector_passage), int(vids.max()) + 1 if len(vids) else 0)
        vector_passage = np.full(size, -1, dtype=np.int32)
        vector_sentence = np.zeros(size, dtype=np.int32)
        vector_passage[: len(self.vector_passage)] = self.vector_passage
        vector_sentence[: len(self.vector_sentence)] = self.vector_sentence
        placed = numbers >= 0
        vector_passage[vids[~placed]] = -1
        n = len(rows.passage_ids)
        head_count = np.full(n, -1, dtype=np.int64)
        head_version = np.full(n, -1, dtype=np.int64)
        at_head = placed & (rows.sentence == 0)
        head_count[numbers[at_head]] = rows.count[at_head]
        head_version[numbers[at_head]] = rows.version[at_head]
        unknown = [rows.passage_ids[i] for i in np.flatnonzero(head_count < 0)]
        for pid, head in (read_heads(unknown) if unknown else {}).items():
            number = rows.passage_number(pid)
            head_count[number], head_version[number] = head.count, rows.version_number(head.version)
        passages, keys, replaced = self.passages, self.keys, []
        key_of = np.full(n, -1, dtype=np.int64)
        for number in np.flatnonzero(head_count >= 0):
            pid = rows.passage_ids[number]
            ref = PassageRef(pid, int(head_count[number]), rows.version_names[head_version[number]])
            key = keys.get(pid)
            if key is None or passages[key] != ref:
                if key is not None:
                    replaced.append(key)
                key = keys[pid] = len(passages)
                passages.append(ref)
            key_of[number] = key
        vids, numbers = vids[placed], numbers[placed]
        # current: the version of its passage's head (a passage without a known head has count -1: never)
        current = (rows.count[placed] == head_count[numbers]) & (rows.version[placed] == head_version[numbers])
        vector_passage[vids] = np.where(current, key_of[numbers], -1)
        vector_sentence[vids] = rows.sentence[placed]
        if replaced:
            vector_passage[np.isin(vector_passage, replaced)] = -1
        return SentenceMap(vector_passage, vector_sentence, passages, keys, ntotal)

    def lookup(self, vector_ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keep mask, passage keys, sentence indices) of FAISS result ids (-1 = no result)."""
        inside = (vector_ids >= 0) & (vector_ids < len(self.vector_passage))
        safe = np.where(inside, vector_ids, 0)
        keys = np.where(inside, self.vector_passage[safe], -1)
        keep = keys >= 0
        return keep, keys[keep], self.vector_sentence[safe][keep]

    def sentence_id_at(self, vector_id: int) -> Optional[str]:
        if not 0 <= vector_id < len(self.vector_passage) or self.vector_passage[vector_id] < 0:
            return None
        return sentence_id(
            self.passages[self.vector_passage[vector_id]].passage_id, int(self.vector_sentence[vector_id])
        )

    def save(self, path: Union[str, Path]) -> None:
        """One ``.npz``: the two arrays and the passage table as flat arrays (ids as UTF-8 bytes with
        offsets, so any id round-trips; no pickle). Written atomically (temporary file, fsync, rename)."""
        from haystack_dcsr.core.storage.atomic_files import atomic_write

        current = np.zeros(len(self.passages), dtype=bool)
        current[list(self.keys.values())] = True
        encoded = [ref.passage_id.encode("utf-8") for ref in self.passages]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(e) for e in encoded])
        versions = np.array([ref.version for ref in self.passages], dtype="S16")
        counts = np.array([ref.count for ref in self.passages], dtype=np.int32)
        meta = {"format": MAP_FORMAT, "ntotal": self.ntotal}
        atomic_write(
            path,
            lambda out: np.savez(
                out,
                vector_passage=self.vector_passage,
                vector_sentence=self.vector_sentence,
                ids=np.frombuffer(b"".join(encoded), dtype=np.uint8),
                id_offsets=offsets,
                versions=versions,
                counts=counts,
                current=current,
                meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
            ),
        )

    @classmethod
    def load(cls, path: Union[str, Path]) -> "SentenceMap":
        """A saved map; raises ``ValueError`` for a file that is cut short or not a map."""
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(data["meta"].tobytes().decode("utf-8"))
                if meta.get("format") not in (1, MAP_FORMAT):
                    raise ValueError(f"{path}: not a DCSR vector map of format 1 or {MAP_FORMAT}")
                raw = data["ids"].tobytes()
                if "id_offsets" in data:
                    offsets = data["id_offsets"]
                    ids = [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])]
                else:  # format 1: ids joined by newlines
                    ids = raw.decode("utf-8").split("\n") if raw or len(data["counts"]) else []
                passages = [
                    PassageRef(pid, int(count), version.decode("ascii"))
                    for pid, count, version in zip(ids, data["counts"], data["versions"])
                ]
                keys = {passages[key].passage_id: int(key) for key in np.flatnonzero(data["current"])}
                return cls(
                    data["vector_passage"].copy(), data["vector_sentence"].copy(), passages, keys, int(meta["ntotal"])
                )
        except (zipfile.BadZipFile, EOFError, KeyError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: not a readable DCSR vector map ({type(error).__name__}: {error})") from None

    def probe_ids(self, count: int = 4) -> List[int]:
        """A few mapped vector ids spread over the index (first, last and between), to check
        cheaply that the store still puts the same sentences there."""
        mapped = np.flatnonzero(self.vector_passage[: self.ntotal] >= 0)
        if len(mapped) == 0:
            return []
        picks = np.unique(np.linspace(0, len(mapped) - 1, num=min(count, len(mapped))).astype(int))
        return [int(mapped[i]) for i in picks]


def check_in_sync(rows: SentenceRows, ntotal: int, keeps_ids: bool, describe: str) -> None:
    """Refuse an index whose SQL vector ids no longer point at their vectors.

    Removing vectors from a FAISS index that numbers them by position (Flat, HNSW, SQ, PQ: all
    but IVF) shifts every later vector down while Haystack keeps the old ids in SQL: each later
    id then names another sentence's vector. That shows as an id at or past ``ntotal``."""
    largest = int(rows.vector_id.max()) if len(rows) else -1
    if len(rows) > ntotal or (not keeps_ids and largest >= ntotal):
        raise IndexOutOfSyncError(
            f"{describe}: its FAISS index holds {ntotal} vectors but SQL gives {len(rows)} documents vector ids up to "
            f"{largest}, so stored ids point at vectors that are missing or belong to other sentences. "
            f"Either documents "
            "were deleted from a FAISS index that renumbers its vectors (Flat, HNSW, PQ, SQ; to delete passages "
            "without this, use DCSRRetriever.delete_passages), or the store was opened on its SQL database without "
            "its saved FAISS index (load it with FAISSDocumentStore.load / faiss_index_path; "
            "haystack_dcsr.save_pipeline writes YAML that does). Nothing was returned. Rebuild the vectors with "
            "store.update_embeddings(retriever)."
        )


class IndexOutOfSyncError(ValueError):
    """The FAISS index and the SQL vector ids disagree; the message says how to rebuild."""
