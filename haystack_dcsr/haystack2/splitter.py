"""DCSRSentenceSplitter: passages in, DCSR sentence Documents out (the layout of ``sentence_units``)."""

import logging
from typing import Any, Dict, List

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_dcsr.dcsr_model import ModelFiles, model_splitter
from haystack_dcsr.models import DEFAULT_MODEL
from haystack_dcsr.sentence_units import sentence_parts, unique_passages, whole_span

logger = logging.getLogger(__name__)


@component
class DCSRSentenceSplitter:
    """Splits each passage into sentence Documents (id ``<passage id>#<n>``, the passage's meta, its
    position under ``meta["dcsr"]``), with the splitter settings of ``model``, so indexing and
    querying cannot disagree. A passage-level model keeps each passage as one unit.

    Haystack's ``DocumentSplitter`` cuts passages (e.g. 100 words) before this; the retriever
    returns those passages, rebuilt exactly from their sentences.

    :param model: the DCSR model (directory or hub name) the sentences will be encoded with.
    """

    def __init__(self, model: str = DEFAULT_MODEL):
        self.model = model
        files = ModelFiles.locate(model)  # no weights: only the settings and a fitted splitter
        self._splitter = model_splitter(files) if files.settings.split_sentences else None

    @component.output_types(documents=List[Document])
    def run(self, documents: List[Document]) -> Dict[str, List[Document]]:
        sentences: List[Document] = []
        for doc in documents:
            if not isinstance(doc.content, str):
                raise ValueError(f"Document {doc.id!r} has no text content: DCSR indexes text passages")
        for doc in unique_passages(documents):
            text = doc.content
            spans = self._splitter.spans(text) if self._splitter is not None else whole_span(text)
            if not spans:
                logger.warning("DCSRSentenceSplitter skipped document %r: it has no text", doc.id)
                continue
            sentences.extend(
                Document(id=doc_id, content=content, meta=meta)
                for doc_id, content, meta in sentence_parts(doc.id, text, doc.meta, spans)
            )
        return {"documents": sentences}

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(self, model=self.model)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRSentenceSplitter":
        return default_from_dict(cls, data)
