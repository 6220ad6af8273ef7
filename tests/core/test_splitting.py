import random

import pytest

from haystack_dcsr.core.text.splitting import SentenceSplitter


@pytest.fixture(scope="module")
def splitter():
    return SentenceSplitter()


def test_abbreviations_do_not_end_sentences(splitter):
    text = "Dr. Smith moved to Washington D.C. in Jan. 1990. He met Mr. Jones there."
    assert splitter.split(text) == ["Dr. Smith moved to Washington D.C. in Jan. 1990.", "He met Mr. Jones there."]


def test_spans_point_into_the_text_and_strip_whitespace(splitter):
    text = "  First one.   Second one!\n\nThird one?  "
    spans = splitter.spans(text)
    assert spans == [(2, 12), (15, 26), (28, 38)]
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one!", "Third one?"]


def test_no_boundary_is_one_sentence_and_blank_is_none(splitter):
    assert splitter.spans("a heading without punctuation") == [(0, 29)]
    assert splitter.spans("") == []
    assert splitter.spans(" \n\t ") == []


def test_non_latin_sentence_endings_split(splitter):
    assert splitter.split("北京是中国的首都。上海很大！ Привет. Как дела?") == [
        "北京是中国的首都。",
        "上海很大！",
        "Привет.",
        "Как дела?",
    ]


def test_min_words_merges_short_sentences_forward():
    text = "Yes. It was the best of times, it was the worst. Short one. Four words are here. End."
    assert SentenceSplitter(min_words=3).split(text) == [
        "Yes. It was the best of times, it was the worst.",
        "Short one. Four words are here. End.",
    ]


def test_sentences_and_gaps_tile_any_text(splitter):
    rng = random.Random(7)
    pieces = ["Mr.", "Smith", "ran.", "It", "rained!", "e.g.", "this", "?", "U.S.", "\n", "  ", "。", "x", "3.5"]
    for _ in range(200):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        spans = splitter.spans(text)
        cursor = 0
        for start, end in spans:
            assert start < end and not text[cursor:start].strip()
            assert not text[start].isspace() and not text[end - 1].isspace()
            cursor = end
        assert not text[cursor:].strip()


def test_fit_learns_abbreviations_and_round_trips(tmp_path):
    corpus = " ".join(f"The Zorg. corp. was founded by Zorg. employee {i}. Then it grew." for i in range(60))
    before = SentenceSplitter()
    after = SentenceSplitter().fit([corpus])
    assert "zorg" in after.params.abbrev_types and "zorg" not in before.params.abbrev_types
    path = tmp_path / "punkt.json"
    after.save(path)
    loaded = SentenceSplitter.load(path)
    sample = "Ask the Zorg. corp. about it. They know."
    assert loaded.split(sample) == after.split(sample)


def test_negative_min_words_is_rejected():
    with pytest.raises(ValueError, match="min_words"):
        SentenceSplitter(min_words=-1)


GERMAN = "Der Vertrag wurde am 3. Okt. 1990 in Berlin unterzeichnet. Danach begann eine neue Zeit."


def test_an_unknown_language_is_refused_with_what_works():
    with pytest.raises(
        ValueError, match="Unknown sentence-splitting language 'klingon': Punkt has models for .*german"
    ):
        SentenceSplitter(language="klingon")


def test_german_offline_warns_and_a_fitted_splitter_splits_it_right(caplog):
    from haystack_dcsr.core.text.splitting import PunktParameters

    offline = SentenceSplitter(language="german")
    if offline.params.abbrev_types and "okt" not in offline.params.abbrev_types:  # no punkt_tab: English rules
        assert "Punkt model for 'german' is not installed" in caplog.text and "fit(passages)" in caplog.text
        assert "Okt." in offline.split(GERMAN)  # "am 3. Okt." cut apart by English rules
    corpus = [
        f"Die Sitzung fand am {d}. Okt. {y} statt und dauerte lange. Am {d + 1}. Nov. {y} folgte die nächste. "
        "Sie war kurz."
        for d in range(1, 25)
        for y in (1990, 1991)
    ]
    fitted = SentenceSplitter(language="german").fit(corpus)
    assert {"okt", "nov"} <= fitted.params.abbrev_types and isinstance(fitted.params, PunktParameters)
    assert fitted.split(GERMAN) == [
        "Der Vertrag wurde am 3. Okt. 1990 in Berlin unterzeichnet.",
        "Danach begann eine neue Zeit.",
    ]
