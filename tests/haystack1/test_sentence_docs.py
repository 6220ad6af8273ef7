import pytest
from haystack.schema import Document

from haystack_dcsr.core.text.sentence_units import parse_sentence_id, passage_version, sentence_id
from haystack_dcsr.core.text.splitting import SentenceSplitter
from haystack_dcsr.haystack1.engine.sentence_docs import assemble_passage, sentence_documents
from haystack_dcsr.haystack1.preprocessor import SentencePreprocessor


def test_sentence_ids_are_deterministic_and_parse_back():
    assert sentence_id("abc", 3) == "abc#3"
    assert parse_sentence_id("a#b#12") == ("a#b", 12)
    with pytest.raises(ValueError, match="not a DCSR sentence id"):
        parse_sentence_id("plain-document-id")


def test_sentence_documents_link_to_their_passage():
    passage = Document(content="  One here.  Two there.\n", id="p1", meta={"title": "T"})
    spans = SentenceSplitter().spans(passage.content)
    docs = sentence_documents(passage, spans)
    assert [d.id for d in docs] == ["p1#0", "p1#1"]
    assert [d.content for d in docs] == ["One here.", "Two there."]
    assert docs[1].meta["title"] == "T"
    version = passage_version(passage.content, spans)
    assert docs[1].meta["dcsr"] == {
        "passage_id": "p1",
        "index": 1,
        "count": 2,
        "start": 13,
        "end": 23,
        "gap": "  ",
        "tail": "\n",
        "version": version,
    }
    assert docs[0].meta["dcsr"]["version"] == version and len(version) == 16
    assert docs[0].meta["dcsr"]["tail"] == "" and docs[0].meta["dcsr"]["gap"] == "  "


def test_passage_is_rebuilt_exactly_from_shuffled_sentences():
    text = "\tAlpha beta.  Gamma?\n\nDelta!  "
    passage = Document(content=text, id="p", meta={"source": "x"})
    docs = sentence_documents(passage, SentenceSplitter().spans(text))
    rebuilt = assemble_passage(reversed(docs))
    assert (rebuilt.content, rebuilt.id, rebuilt.meta) == (text, "p", {"source": "x"})


def test_assembling_with_a_missing_sentence_fails_loudly():
    docs = sentence_documents(Document(content="A b. C d. E f.", id="p"), [(0, 4), (5, 9), (10, 14)])
    with pytest.raises(ValueError, match="has 3 sentences but 2 were found"):
        assemble_passage(docs[:2])


def test_too_long_passage_id_is_rejected():
    with pytest.raises(ValueError, match="too long"):
        sentence_documents(Document(content="A.", id="x" * 99), [(0, 2)])


def test_preprocessor_reports_and_skips_empty_documents(caplog, corpus):
    empty = Document(content="   \n", id="empty-one")
    out = SentencePreprocessor(progress_bar=False).process(corpus + [empty])
    assert out["skipped"] == ["empty-one"]
    assert "skipped 1 document(s) with no text: empty-one" in caplog.text
    assert len(out["passages"]) == 5 and len(out["documents"]) == 15
    assert SentencePreprocessor.passages_from_sentences(out["documents"]) == out["passages"]


def test_preprocessor_rejects_non_text_documents():
    import pandas as pd

    table = Document(content=pd.DataFrame({"a": [1]}), content_type="table", id="tbl")
    with pytest.raises(ValueError, match="'tbl' has content_type 'table'"):
        SentencePreprocessor(progress_bar=False).process([table])


def test_preprocessor_run_batch_keeps_lists_apart(corpus):
    node = SentencePreprocessor(progress_bar=False)
    output, edge = node.run_batch(documents=[corpus[:2], corpus[2:]])
    assert edge == "output_1"
    assert [len(docs) for docs in output["documents"]] == [6, 9]


def test_preprocessor_saves_fitted_punkt(tmp_path, corpus):
    node = SentencePreprocessor(progress_bar=False).fit(corpus)
    node.save(tmp_path / "punkt.json")
    again = SentencePreprocessor(punkt_params_path=str(tmp_path / "punkt.json"), progress_bar=False)
    assert [d.content for d in again.process(corpus)["documents"]] == [
        d.content for d in node.process(corpus)["documents"]
    ]


def test_preprocessor_without_splitting_keeps_each_passage_whole():
    passage = Document(content="  Paris is big. It is old.\n", id="p1", meta={"title": "Paris"})
    units = SentencePreprocessor(split_sentences=False, progress_bar=False).process(
        [passage, Document(content=" ", id="e")]
    )
    [unit] = units["documents"]
    assert unit.content == "Paris is big. It is old." and unit.id == "p1#0" and unit.meta["title"] == "Paris"
    assert units["skipped"] == ["e"]
    assert assemble_passage([unit]).content == passage.content


def test_the_same_passage_object_twice_is_split_once():
    passage = Document(content="One sentence. Another one.", id="p")
    out = SentencePreprocessor(progress_bar=False).process([passage, passage])
    assert [d.id for d in out["documents"]] == ["p#0", "p#1"] and out["passages"] == [passage]
