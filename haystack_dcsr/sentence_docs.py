"""The index layout: one Haystack Document per sentence, from which its passage can be rebuilt.

A DCSR index holds one vector per sentence, so the document store holds one Document per
sentence. Each sentence Document carries its passage's meta (so filters work on sentences) and
where it sits in the passage (so the passage is rebuilt exactly, and encoded whole). Passages are
therefore a *view* over their sentences: no text is stored twice, and deleting a passage's
sentences deletes the passage.
"""
from typing import Dict, Iterable, List, NamedTuple, Sequence, Tuple

from haystack.schema import Document

from haystack_dcsr.splitting import Span

META = "dcsr"  # one meta entry (a dict) per sentence: one SQL meta row, not seven
SUPPORT = "dcsr_sentences"  # on returned passages: the retrieved sentences that support them


class SentencePosition(NamedTuple):
    """Where a sentence Document sits in its passage (``meta["dcsr"]``)."""

    passage_id: str
    index: int
    count: int
    start: int  # character span in the passage
    end: int
    gap: str  # whitespace between the previous sentence (or passage start) and this one
    tail: str  # whitespace after the last sentence ("" on other sentences)


def position(doc: Document) -> SentencePosition:
    info = doc.meta.get(META) if doc.meta else None
    if not isinstance(info, dict):
        raise ValueError(
            f"Document {doc.id!r} is not a DCSR sentence Document (no {META!r} in meta): "
            "pass passages through SentencePreprocessor before indexing them"
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
            "Index passages through SentencePreprocessor so the store holds sentence Documents."
        )
    return passage_id, int(index)


def sentence_documents(passage: Document, spans: Sequence[Span]) -> List[Document]:
    """The sentence Documents of ``passage`` split at ``spans`` (which tile it up to whitespace)."""
    text = passage.content
    if len(sentence_id(passage.id, len(spans))) > MAX_ID_LENGTH:
        raise ValueError(
            f"Passage id {passage.id[:40]!r}... is too long: sentence ids must fit in {MAX_ID_LENGTH} characters"
        )
    documents = []
    previous_end = 0
    meta = {key: value for key, value in passage.meta.items() if key != META}
    for index, (start, end) in enumerate(spans):
        tail = text[end:] if index == len(spans) - 1 else ""
        info = SentencePosition(passage.id, index, len(spans), start, end, text[previous_end:start], tail)
        documents.append(
            Document(content=text[start:end], id=sentence_id(passage.id, index), meta={**meta, META: info._asdict()})
        )
        previous_end = end
    return documents


def assemble_passage(sentences: Iterable[Document]) -> Document:
    """Rebuild the passage Document (id, exact text, meta) from all of its sentence Documents."""
    ordered = sorted(sentences, key=lambda doc: position(doc).index)
    if not ordered:
        raise ValueError("Cannot assemble a passage from no sentences")
    positions = [position(doc) for doc in ordered]
    first = positions[0]
    if [p.index for p in positions] != list(range(first.count)):
        raise ValueError(
            f"Passage {first.passage_id!r} has {first.count} sentences but {len(ordered)} were found in the document store"
        )
    content = "".join(p.gap + doc.content for p, doc in zip(positions, ordered)) + positions[-1].tail
    meta = {key: value for key, value in ordered[0].meta.items() if key not in (META, "vector_id")}
    return Document(content=content, id=first.passage_id, meta=meta)


def group_by_passage(sentences: Iterable[Document]) -> Dict[str, List[Document]]:
    groups: Dict[str, List[Document]] = {}
    for doc in sentences:
        groups.setdefault(position(doc).passage_id, []).append(doc)
    return groups


def passage_sentence_ids(passage_id: str, sentence_count: int) -> List[str]:
    return [sentence_id(passage_id, index) for index in range(sentence_count)]
