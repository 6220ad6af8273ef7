"""DCSRDocumentEmbedder: each passage encoded whole, one vector per sentence Document."""

import asyncio
from dataclasses import replace
from typing import Any, Dict, List, Optional

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_dcsr.core.model.dcsr_model import DCSRModel
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.model.models import DEFAULT_MODEL, Precision
from haystack_dcsr.core.ranking.parameters import check_parameters, check_quantize_device
from haystack_dcsr.core.text.sentence_units import assemble_passage, group_by_passage, position
from haystack_dcsr.haystack2.store_sentences import SPLITTER


@component
class DCSRDocumentEmbedder:
    """Sets ``embedding`` on DCSR sentence Documents (from ``DCSRSentenceSplitter``).

    A sentence's vector depends on its neighbours (the passage is read whole, one ``<sent>`` marker
    per sentence), so every sentence of a passage must arrive in the same call: a passage with
    sentences missing is refused by name rather than encoded out of context.

    :param model: DCSR model directory or hub name (only its passage tower is loaded).
    :param batch_size: passage windows per forward pass.
    :param device: torch device; None picks CUDA when available.
    :param precision: ``auto``, ``fp32``, ``fp16`` or ``bf16``.
    :param quantize: ``"int8"``: encode with int8 weights and per-token int8 activations, compiled at the
        first batch (CPU only). Query with the retriever set the same way.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 32,
        device: Optional[str] = None,
        precision: Precision = "auto",
        progress_bar: bool = False,
        quantize: Optional[Quantize] = None,
    ):
        check_parameters("DCSRDocumentEmbedder", ("quantize",), quantize=quantize)
        check_quantize_device("DCSRDocumentEmbedder", quantize, device)
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        self.progress_bar = progress_bar
        self.quantize = quantize
        self._model = DCSRModel.from_pretrained(model, device=device, precision=precision, quantize=quantize)

    def warm_up(self) -> None:
        """Load the passage tower now rather than on the first run."""
        self._model.passage_tower  # noqa: B018 (loads it)

    @component.output_types(documents=List[Document])
    def run(self, documents: List[Document]) -> Dict[str, List[Document]]:
        groups = group_by_passage(documents, SPLITTER)  # refuses non-sentences
        ordered = []
        for passage_id, sentences in groups.items():
            count = position(sentences[0]).count
            if len({position(doc).index for doc in sentences}) != count:
                raise ValueError(
                    f"Passage {passage_id!r} has {count} sentences but {len(sentences)} came to the embedder: pass all "
                    "of a passage's sentences in one call (its sentence vectors depend on each other)"
                )
            assemble_passage(sentences)  # refuses a mix of two versions of one passage
            ordered.append(sorted(sentences, key=lambda doc: position(doc).index))
        vectors = self._model.encode_passages(
            [[doc.content for doc in passage] for passage in ordered],
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
        )
        row = {doc.id: i for i, doc in enumerate(doc for passage in ordered for doc in passage)}
        return {"documents": [replace(doc, embedding=vectors[row[doc.id]].tolist()) for doc in documents]}

    @component.output_types(documents=List[Document])
    async def run_async(self, documents: List[Document]) -> Dict[str, List[Document]]:
        """``run`` in a worker thread, so that the event loop of ``Pipeline.run_async`` keeps serving while passages
        are encoded (torch releases the GIL while it computes)."""
        return await asyncio.to_thread(self.run, documents)

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(
            self,
            model=self.model,
            batch_size=self.batch_size,
            device=self.device,
            precision=self.precision,
            progress_bar=self.progress_bar,
            quantize=self.quantize,
        )

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DCSRDocumentEmbedder":
        return default_from_dict(cls, data)
