"""DCSRAnswerSentenceMarker: which sentence of each returned passage best answers the query, for Haystack 2.x.

``meta["dcsr_sentences"]`` holds the sentences that retrieved a passage, scored in context; this second,
cheap pass scores every sentence of each passage alone (query tower and passage tower, no neighbours) and
sets ``meta["dcsr_answer_sentence"]`` (``core.text.evidence``, as the 1.x ``mark_answer_sentence=True`` does).
``haystack_dcsr.core.text.evidence.render_html`` then shows the passages with both marked.
"""

from dataclasses import replace
from typing import Any, Dict, List, Optional

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_dcsr.core.model.dcsr_model import DCSRModel
from haystack_dcsr.core.model.models import DEFAULT_MODEL, Precision
from haystack_dcsr.core.text.evidence import mark_answer_sentences


@component
class DCSRAnswerSentenceMarker:
    """Marks the answer sentence of each passage (after ``DCSRRetriever``, a joiner or a ranker).

    :param model: the DCSR model whose towers score the sentences (the retriever's).
    :param device: torch device; None picks CUDA when available.
    :param precision: ``auto``, ``fp32``, ``fp16`` or ``bf16``.
    """

    def __init__(self, model: str = DEFAULT_MODEL, device: Optional[str] = None, precision: Precision = "auto"):
        self.model, self.device, self.precision = model, device, precision
        self._model = DCSRModel.from_pretrained(model, device=device, precision=precision)

    @component.output_types(documents=List[Document])
    def run(self, query: str, documents: List[Document]) -> Dict[str, List[Document]]:
        marked = [replace(doc, meta=dict(doc.meta)) for doc in documents]  # the inputs stay as they were
        units = dict(zip((doc.id for doc in marked), self._model.passage_units([doc.content or "" for doc in marked])))
        kept = [doc for doc in marked if units[doc.id]]  # a passage without text has no sentence to mark
        mark_answer_sentences(
            self._model.encode_queries, self._model.encode_passages, query, kept, lambda doc: units[doc.id]
        )
        return {"documents": marked}

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(self, model=self.model, device=self.device, precision=self.precision)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRAnswerSentenceMarker":
        return default_from_dict(cls, data)
