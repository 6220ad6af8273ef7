"""The index layout, framework-free: one unit per sentence, from which its passage can be rebuilt.

A DCSR index holds one vector per sentence, so a document store holds one document per sentence.
Each sentence carries its passage's meta (so filters work on sentences) and where it sits in the
passage (so the passage is rebuilt exactly, and encoded whole). Passages are therefore a *view*
over their sentences: no text is stored twice, and deleting a passage's sentences deletes it.

Stores write sentence documents one by one, so re-writing a passage can leave sentences of its old
version behind (``overwrite`` with fewer sentences keeps the old tail; ``skip`` with more adds the
new tail). Every sentence therefore carries its passage's ``version`` (a fingerprint of text and
sentence boundaries), and sentence ``#0`` -- which every version has, and which every write mode
replaces or keeps together with the rest of its version -- is the authority: a sentence is
*current* when its count and version equal those of its passage's sentence ``#0``. Stale sentences
are never encoded as part of a passage, never retrieved and never shown.

Haystack 1.x and 2.x Documents both have ``id``, ``content`` and ``meta``; the functions here read
any such object (``Unit``) and return plain values, which each framework's adapter wraps in its own
``Document`` (``sentence_docs`` for 1.x, ``haystack2.documents`` for 2.x).
"""

import hashlib
import logging
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Protocol, Sequence, Tuple

from haystack_dcsr.core.text.splitting import Span

META = "dcsr"  # one meta entry (a dict) per sentence: one SQL meta row, not seven
SUPPORT = "dcsr_sentences"  # on returned passages: the retrieved sentences that support them
logger = logging.getLogger(__name__)


class Unit(Protocol):
    """What a sentence document offers, in Haystack 1.x and 2.x alike."""

    id: str
    content: Any
    meta: Dict[str, Any]


class Parts(NamedTuple):
    """A document's parts, for the framework's ``Document`` to be built from."""

    id: str
    content: str
    meta: Dict[str, Any]


class SentencePosition(NamedTuple):
    """Where a sentence sits in its passage (``meta["dcsr"]``)."""

    passage_id: str
    index: int
    count: int
    start: int  # character span in the passage
    end: int
    gap: str  # whitespace between the previous sentence (or passage start) and this one
    tail: str  # whitespace after the last sentence ("" on other sentences)
    version: str = ""  # fingerprint of the passage version (stores written before versions: "")

    def same_version(self, other: "SentencePosition") -> bool:
        return self.count == other.count and self.version == other.version


class PassageRef(NamedTuple):
    """A passage version as the retriever saw it in its index: enough to read and check it."""

    passage_id: str
    count: int
    version: str = ""

    @classmethod
    def of(cls, head: SentencePosition) -> "PassageRef":
        return cls(head.passage_id, head.count, head.version)


class IncompletePassageError(ValueError):
    """The store does not hold every current sentence of a passage, so it cannot be rebuilt exactly."""


class NotASentenceError(ValueError):
    """A document that was not split into DCSR sentences; each adapter names its own splitter."""


GENERIC_SPLITTER = "DCSR's sentence splitter"  # adapters name their framework's component instead


def position(doc: Unit, splitter: str = GENERIC_SPLITTER) -> SentencePosition:
    """Where a sentence document sits; ``splitter`` names the component that makes such documents in
    the caller's framework (each adapter passes its own where a user's document may not be a sentence)."""
    info = doc.meta.get(META) if doc.meta else None
    if not isinstance(info, dict):
        raise NotASentenceError(
            f"Document {doc.id!r} is not a DCSR sentence Document (no {META!r} in meta): "
            f"pass passages through {splitter} before indexing them"
        )
    return SentencePosition(**info)


ID_SEPARATOR = "#"
MAX_ID_LENGTH = 100  # Haystack's SQL stores ids in a String(100) column


def sentence_id(passage_id: str, index: int) -> str:
    return f"{passage_id}{ID_SEPARATOR}{index}"


def parse_sentence_id(doc_id: str) -> Tuple[str, int]:
    passage_id, sep, index = doc_id.rpartition(ID_SEPARATOR)
    if not sep or not index.isdigit():
        raise ValueError(
            f"Document id {doc_id!r} is not a DCSR sentence id '<passage_id>{ID_SEPARATOR}<n>'. "
            f"Index passages through {GENERIC_SPLITTER} so the store holds sentence documents."
        )
    return passage_id, int(index)


def head_id(passage_id: str) -> str:
    """The id of sentence #0, the passage's authority on its current version."""
    return sentence_id(passage_id, 0)


def passage_version(text: str, spans: Sequence[Span]) -> str:
    """A short fingerprint of a passage's text and its sentence boundaries."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8)
    digest.update(repr([tuple(span) for span in spans]).encode("ascii"))
    return digest.hexdigest()


def check_storable(passage_id: str, text: Any, meta: Any) -> None:
    """Refuse, naming the passage, what some store would silently alter: a NUL character (PostgreSQL's text and
    JSON cannot hold one, and pgvector-haystack drops it from the content), in the id, the text or any meta value."""
    for where, value in (("id", passage_id), ("text", text), ("meta", meta)):
        if _holds_nul(value):
            raise ValueError(
                f"Passage {str(passage_id)[:60]!r}: its {where} holds a NUL character (\\x00), which a store would "
                "drop or refuse; remove it first. Nothing was written."
            )


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(item) for item in value)
    return False


def sentence_parts(passage_id: str, text: str, meta: Dict[str, Any], spans: Sequence[Span]) -> List[Parts]:
    """The sentence documents of a passage split at ``spans`` (which tile it up to whitespace)."""
    check_storable(passage_id, text, meta)
    if len(sentence_id(passage_id, len(spans))) > MAX_ID_LENGTH:
        raise ValueError(
            f"Passage id {passage_id[:40]!r}... is too long: sentence ids must fit in {MAX_ID_LENGTH} characters"
        )
    parts = []
    previous_end = 0
    version = passage_version(text, spans)
    meta = {key: value for key, value in (meta or {}).items() if key != META}
    for index, (start, end) in enumerate(spans):
        tail = text[end:] if index == len(spans) - 1 else ""
        info = SentencePosition(passage_id, index, len(spans), start, end, text[previous_end:start], tail, version)
        parts.append(Parts(sentence_id(passage_id, index), text[start:end], {**meta, META: info._asdict()}))
        previous_end = end
    return parts


def assemble_passage(sentences: Iterable[Unit]) -> Parts:
    """The passage (id, exact text, meta) rebuilt from all of its current sentence documents.

    Raises ``IncompletePassageError`` unless ``sentences`` are exactly sentences 0..count-1 of one
    version (stale sentences of another version must be left out by the caller)."""
    ordered = sorted(sentences, key=lambda doc: position(doc).index)
    if not ordered:
        raise IncompletePassageError("Cannot assemble a passage from no sentences")
    positions = [position(doc) for doc in ordered]
    first = positions[0]
    if [p.index for p in positions] != list(range(first.count)) or not all(first.same_version(p) for p in positions):
        raise IncompletePassageError(
            f"Passage {first.passage_id!r} has {first.count} sentences but {len(ordered)} were found in the "
            "document store (as sentences of one version of it)"
        )
    content = "".join(p.gap + doc.content for p, doc in zip(positions, ordered)) + positions[-1].tail
    meta = {key: value for key, value in ordered[0].meta.items() if key not in (META, "vector_id")}
    return Parts(first.passage_id, content, meta)


def group_by_passage(sentences: Iterable[Unit], splitter: str = GENERIC_SPLITTER) -> Dict[str, List[Unit]]:
    groups: Dict[str, List[Unit]] = {}
    for doc in sentences:
        groups.setdefault(position(doc, splitter).passage_id, []).append(doc)
    return groups


def passage_sentence_ids(passage_id: str, sentence_count: int) -> List[str]:
    return [sentence_id(passage_id, index) for index in range(sentence_count)]


def sentence_ids_of(passages: Iterable[PassageRef]) -> List[str]:
    """The ids of every sentence of these passage versions, passage by passage: what a read of them asks for."""
    return [sid for ref in passages for sid in passage_sentence_ids(ref.passage_id, ref.count)]


def current_sentences(ref: PassageRef, documents: Dict[str, Unit]) -> Optional[List[Unit]]:
    """Sentences 0..count-1 of the passage version ``ref`` from ``documents`` (by id), or None when
    one is missing or belongs to another version."""
    sentences = []
    for sid in passage_sentence_ids(ref.passage_id, ref.count):
        doc = documents.get(sid)
        if doc is None:
            return None
        where = position(doc)
        if where.count != ref.count or where.version != ref.version:
            return None
        sentences.append(doc)
    return sentences


def unique_passages(documents: Sequence[Unit]) -> List[Unit]:
    """``documents`` without repeats of one passage; refuses two *different* passages sharing an id,
    whose sentences would overwrite each other in the store (one lost, or a passage mixing both)."""
    seen: Dict[str, Unit] = {}  # first document of each id, in order
    for doc in documents:
        first = seen.setdefault(doc.id, doc)
        if (first.content, first.meta) != (doc.content, doc.meta):
            raise ValueError(
                f"Passage id {doc.id!r} is used by two different passages in this batch ({_preview(first.content)} "
                f"and {_preview(doc.content)}): give them distinct ids (Haystack's PreProcessor derives ids from "
                "the content), or keep one. Nothing was split."
            )
    if len(seen) < len(documents):
        logger.info("Dropped %d repeated passage(s) before splitting", len(documents) - len(seen))
    return list(seen.values())


def _preview(text) -> str:
    text = str(text)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def whole_span(text: str) -> List[Span]:
    """The text without its outer whitespace as one span (none for blank text): the one unit a
    passage-level (DPR-style) model reads."""
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return [(start, end)] if end > start else []


def has_support(documents: Sequence[Unit]) -> bool:
    """Passages returned by a DCSR retriever (they carry their supporting sentences): their scores
    are HasAns probabilities, which the hybrid joins keep as they are when asked to."""
    return bool(documents) and all(SUPPORT in (doc.meta or {}) for doc in documents)
