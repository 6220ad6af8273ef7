"""DCSRSentenceSplitter: passages in, DCSR sentence Documents out (the layout of ``sentence_units``)."""

import logging
from typing import Any, Dict, List

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_dcsr.core.model.dcsr_model import ModelFiles, model_splitter
from haystack_dcsr.core.model.models import DEFAULT_MODEL
from haystack_dcsr.core.text.sentence_units import sentence_parts, unique_passages, whole_span

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
        skipped = []
        for doc in documents:
            if doc.content is None and (doc.blob is not None or getattr(doc, "dataframe", None) is not None):
                raise ValueError(f"DCSRSentenceSplitter: Document {doc.id!r} holds no text (a blob): convert it first")
        for doc in unique_passages([d for d in documents if d.content is not None]):
            text = doc.content
            spans = self._splitter.spans(text) if self._splitter is not None else whole_span(text)
            if not spans:
                skipped.append(doc.id)
                continue
            sentences.extend(
                Document(id=doc_id, content=content, meta=meta)
                for doc_id, content, meta in sentence_parts(doc.id, text, doc.meta, spans)
            )
        skipped += [doc.id for doc in documents if doc.content is None]
        if skipped:  # as SentencePreprocessor does in 1.x: the rest of the batch is indexed
            logger.warning(
                "DCSRSentenceSplitter skipped %d document(s) with no text: %s", len(skipped), ", ".join(skipped[:10])
            )
        return {"documents": sentences}

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(self, model=self.model)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRSentenceSplitter":
        return default_from_dict(cls, data)
