"""SentencePreprocessor: the Haystack node that turns passages into DCSR's sentence Documents."""

import logging
from pathlib import Path
from typing import Dict, List, Optional, Union

from haystack.nodes.base import BaseComponent
from haystack.schema import Document
from tqdm.auto import tqdm

from haystack_dcsr.core.model.dcsr_model import ModelFiles, model_splitter
from haystack_dcsr.core.text.sentence_units import group_by_passage, unique_passages, whole_span
from haystack_dcsr.core.text.splitting import SentenceSplitter
from haystack_dcsr.haystack1.engine.sentence_docs import assemble_passage, sentence_documents

logger = logging.getLogger(__name__)
_DEFAULTS = dict(language="english", min_words=0, punkt_params_path=None, split_sentences=True)


class SentencePreprocessor(BaseComponent):
    """Splits passage Documents into sentence Documents linked to their passage.

    Place it after Haystack's ``PreProcessor`` (which cuts ~100-word passages) and before the
    document store or a ``DCSRRetriever`` in an indexing pipeline::

        pipeline.add_node(PreProcessor(split_length=100), name="Cutter", inputs=["File"])
        pipeline.add_node(SentencePreprocessor(), name="Sentences", inputs=["Cutter"])
        pipeline.add_node(document_store, name="Store", inputs=["Sentences"])

    Output ``documents`` holds one Document per sentence (id ``<passage_id>#<n>``, the passage's meta,
    its position and character span); ``passages`` holds the input passages that were indexed and
    ``skipped`` the ids of documents with no text, which are logged and not indexed.

    :param language: nltk Punkt model used when nltk's ``punkt_tab`` data is installed.
    :param min_words: merge sentences of at most this many words into the next (0 = off; the
        DCSR reference code uses 8).
    :param punkt_params_path: a file written by ``save`` or ``SentenceSplitter.save`` holding Punkt
        parameters fitted on a corpus (see ``fit``).
    :param split_sentences: False keeps each passage whole as its one unit: the input that a
        passage-level (DPR-style) tower needs, served by the same retriever and store.
    :param progress_bar: show a tqdm progress bar.
    :param model: a DCSR model (directory or hub name) whose splitter settings to use: language,
        ``min_words``, fitted Punkt parameters, and no splitting for a passage-level model. The other
        splitting parameters must then stay at their defaults.
    """

    outgoing_edges = 1

    def __init__(
        self,
        language: str = "english",
        min_words: int = 0,
        punkt_params_path: Optional[str] = None,
        split_sentences: bool = True,
        progress_bar: bool = True,
        model: Optional[str] = None,
    ):
        super().__init__()
        self.split_sentences = split_sentences
        self.progress_bar = progress_bar
        if model is not None:
            given = dict(
                language=language,
                min_words=min_words,
                punkt_params_path=punkt_params_path,
                split_sentences=split_sentences,
            )
            changed = [name for name, value in given.items() if value != _DEFAULTS[name]]
            if changed:
                raise ValueError(
                    f"SentencePreprocessor: {', '.join(changed)} come(s) from the model; leave them out "
                    f"when model={model!r} is given"
                )
            files = ModelFiles.locate(model)
            self.split_sentences = files.settings.split_sentences
            self.splitter = model_splitter(files)
            return
        self.splitter = SentenceSplitter.configured(language, min_words, punkt_params_path)

    def fit(self, documents: List[Document]) -> "SentencePreprocessor":
        """Learn the corpus' abbreviations (Punkt, unsupervised, offline) before splitting it."""
        self.splitter.fit(doc.content for doc in documents if isinstance(doc.content, str))
        return self

    def save(self, path: Union[str, Path]) -> None:
        """Save the Punkt parameters, to be loaded back with ``punkt_params_path``."""
        self.splitter.save(path)

    def process(self, documents: List[Document]) -> Dict[str, list]:
        sentences: List[Document] = []
        passages: List[Document] = []
        skipped: List[str] = []
        documents = unique_passages(documents)
        for doc in tqdm(documents, disable=not self.progress_bar, desc="Splitting sentences", unit=" docs"):
            if doc.content_type != "text" or not isinstance(doc.content, str):
                raise ValueError(f"Document {doc.id!r} has content_type {doc.content_type!r}: only text is supported")
            spans = self.splitter.spans(doc.content) if self.split_sentences else whole_span(doc.content)
            if not spans:
                skipped.append(doc.id)
                continue
            sentences.extend(sentence_documents(doc, spans))
            passages.append(doc)
        if skipped:
            logger.warning(
                "SentencePreprocessor skipped %d document(s) with no text: %s%s",
                len(skipped),
                ", ".join(skipped[:10]),
                " ..." if len(skipped) > 10 else "",
            )
        return {"documents": sentences, "passages": passages, "skipped": skipped}

    def run(self, documents: List[Document]):  # type: ignore
        return self.process(documents), "output_1"

    def run_batch(self, documents: Union[List[Document], List[List[Document]]]):  # type: ignore
        if documents and isinstance(documents[0], list):
            outputs = [self.process(docs) for docs in documents]  # type: ignore[arg-type]
            return {
                key: [output[key] for output in outputs] for key in ("documents", "passages", "skipped")
            }, "output_1"
        return self.run(documents)  # type: ignore[arg-type]

    @staticmethod
    def passages_from_sentences(sentences: List[Document]) -> List[Document]:
        """Inverse of ``process``: the passages that ``sentences`` (complete per passage) came from."""
        return [assemble_passage(group) for group in group_by_passage(sentences).values()]


def stub_haystack_punkt() -> Path:
    """Keep Haystack's ``PreProcessor`` from downloading nltk's punkt offline; returns the stub folder.

    ``PreProcessor.__init__`` downloads punkt when ``nltk.data.find("tokenizers/punkt")`` fails, even
    when it will never split sentences (before ``SentencePreprocessor``, DCSR splits them), and offline
    that prints a download error. An empty punkt folder on nltk's path answers the check; nltk's real
    data, when installed, is still found first."""
    import tempfile

    import nltk

    stub = Path(tempfile.gettempdir()) / "haystack-dcsr-nltk"
    (stub / "tokenizers" / "punkt").mkdir(parents=True, exist_ok=True)
    if str(stub) not in nltk.data.path:
        nltk.data.path.append(str(stub))
    return stub
