"""Haystack 2.x edges: an empty document does not fail the batch, and errors name 2.x classes."""

import logging

import pytest
from haystack import Document
from haystack.dataclasses import ByteStream

from haystack_dcsr.haystack2 import DCSRDocumentEmbedder, DCSRSentenceSplitter

MODEL = "all-MiniLM-L6-v2"


def test_empty_documents_are_skipped_with_a_warning_and_the_rest_is_split(caplog):
    documents = [
        Document(id="a", content="First sentence here. Second sentence here."),
        Document(id="empty", content=""),
        Document(id="none"),
        Document(id="blank", content="   \n "),
    ]
    with caplog.at_level(logging.WARNING):
        out = DCSRSentenceSplitter(model=MODEL).run(documents=documents)["documents"]
    assert [doc.id for doc in out] == ["a#0", "a#1"]
    assert "skipped 3 document(s) with no text" in caplog.text and "none" in caplog.text


def test_a_blob_without_text_is_refused_naming_the_2x_splitter():
    with pytest.raises(ValueError, match="DCSRSentenceSplitter: Document 'b' holds no text"):
        DCSRSentenceSplitter(model=MODEL).run(documents=[Document(id="b", blob=ByteStream(b"%PDF"))])


def test_the_2x_embedder_names_the_2x_splitter_for_unsplit_passages():
    with pytest.raises(ValueError, match="pass passages through DCSRSentenceSplitter") as error:
        DCSRDocumentEmbedder(model=MODEL).run(documents=[Document(id="p", content="Not split. At all.")])
    assert "SentencePreprocessor" not in str(error.value)


def test_the_2x_ranker_defaults_are_the_shared_ones():
    import inspect

    from haystack_dcsr.core.model.cross_encoder import DEFAULT_FIRST_STAGE_WEIGHT, DEFAULT_TOP_K
    from haystack_dcsr.haystack2 import DCSRCrossEncoderRanker

    params = inspect.signature(DCSRCrossEncoderRanker.__init__).parameters
    assert params["first_stage_weight"].default == DEFAULT_FIRST_STAGE_WEIGHT == 0.0
    assert params["top_k"].default == DEFAULT_TOP_K == 10
    assert params["scale_score"].default is True and "progress_bar" in params
