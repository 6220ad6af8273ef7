"""The index layout as Haystack 1.x Documents (the layout itself: ``sentence_units``)."""

from typing import List, Sequence

from haystack.schema import Document

from haystack_dcsr.core.text.sentence_units import assemble_passage as assemble_parts
from haystack_dcsr.core.text.sentence_units import sentence_parts
from haystack_dcsr.core.text.splitting import Span

SPLITTER = "SentencePreprocessor"  # the 1.x node that makes sentence Documents, named where a Document may not be one


def sentence_documents(passage: Document, spans: Sequence[Span]) -> List[Document]:
    """The sentence Documents of ``passage`` split at ``spans`` (which tile it up to whitespace)."""
    return [
        Document(content=content, id=doc_id, meta=meta)
        for doc_id, content, meta in sentence_parts(passage.id, passage.content, passage.meta, spans)
    ]


def assemble_passage(sentences: Sequence[Document]) -> Document:
    """Rebuild the passage Document (id, exact text, meta) from all of its current sentence Documents."""
    doc_id, content, meta = assemble_parts(sentences)
    return Document(content=content, id=doc_id, meta=meta)
