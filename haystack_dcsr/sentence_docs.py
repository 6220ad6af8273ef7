"""The index layout: one Haystack Document per sentence, from which its passage can be rebuilt.

A DCSR index holds one vector per sentence, so the document store holds one Document per
sentence. Each sentence Document carries its passage's meta (so filters work on sentences) and
where it sits in the passage (so the passage is rebuilt exactly, and encoded whole). Passages are
therefore a *view* over their sentences: no text is stored twice, and deleting a passage's
sentences deletes the passage.
"""
from typing import Dict, Iterable, List, Sequence, Tuple

from haystack.schema import Document

from haystack_dcsr.splitting import Span

PASSAGE_ID = "dcsr_passage_id"
SENTENCE_INDEX = "dcsr_sentence_index"
SENTENCE_COUNT = "dcsr_sentence_count"
SPAN_START = "dcsr_start"
SPAN_END = "dcsr_end"
GAP_BEFORE = "dcsr_gap"  # whitespace between the previous sentence (or passage start) and this one
TAIL = "dcsr_tail"  # whitespace after the last sentence; stored on the last sentence only
SUPPORT = "dcsr_sentences"  # on returned passages: the retrieved sentences that support them
DCSR_KEYS = (PASSAGE_ID, SENTENCE_INDEX, SENTENCE_COUNT, SPAN_START, SPAN_END, GAP_BEFORE, TAIL)

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
    for index, (start, end) in enumerate(spans):
        meta = {key: value for key, value in passage.meta.items() if key not in DCSR_KEYS}
        meta.update(
            {
                PASSAGE_ID: passage.id,
                SENTENCE_INDEX: index,
                SENTENCE_COUNT: len(spans),
                SPAN_START: start,
                SPAN_END: end,
                GAP_BEFORE: text[previous_end:start],
            }
        )
        if index == len(spans) - 1:
            meta[TAIL] = text[end:]
        documents.append(Document(content=text[start:end], id=sentence_id(passage.id, index), meta=meta))
        previous_end = end
    return documents


def assemble_passage(sentences: Iterable[Document]) -> Document:
    """Rebuild the passage Document (id, exact text, meta) from all of its sentence Documents."""
    ordered = sorted(sentences, key=lambda doc: doc.meta[SENTENCE_INDEX])
    if not ordered:
        raise ValueError("Cannot assemble a passage from no sentences")
    first, last = ordered[0].meta, ordered[-1].meta
    if len(ordered) != first[SENTENCE_COUNT] or [d.meta[SENTENCE_INDEX] for d in ordered] != list(range(len(ordered))):
        raise ValueError(
            f"Passage {first[PASSAGE_ID]!r} has {first[SENTENCE_COUNT]} sentences but "
            f"{len(ordered)} were found in the document store"
        )
    content = "".join(doc.meta[GAP_BEFORE] + doc.content for doc in ordered) + last.get(TAIL, "")
    meta = {key: value for key, value in first.items() if key not in DCSR_KEYS and key != "vector_id"}
    return Document(content=content, id=first[PASSAGE_ID], meta=meta)


def group_by_passage(sentences: Iterable[Document]) -> Dict[str, List[Document]]:
    groups: Dict[str, List[Document]] = {}
    for doc in sentences:
        groups.setdefault(doc.meta[PASSAGE_ID], []).append(doc)
    return groups


def passage_sentence_ids(passage_id: str, sentence_count: int) -> List[str]:
    return [sentence_id(passage_id, index) for index in range(sentence_count)]
