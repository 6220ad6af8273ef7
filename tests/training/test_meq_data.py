"""Contrast-set and augmentation builders on a hand-made article."""

import json

import pytest

from haystack_dcsr.core.text.meq import MEQFilter
from haystack_dcsr.training.cli import main, write_corpus
from haystack_dcsr.training.data import Passage, Record, load_records, write_records
from haystack_dcsr.training.meq_data import build_augmentation, build_contrast_set, word_pairs

ARTICLE = Passage("Olympics", "Paris hosted the Summer Olympics in 1924. London hosted them in 1908.", "olympics-0")
OTHER = Passage("Olympics", "Athens hosted the first modern Olympics in 1896.", "olympics-1")
RECORDS = [
    Record("When did Paris host the Summer Olympics?", ["1924"], [ARTICLE]),
    Record("When did London host the Summer Olympics?", ["1908"], [ARTICLE]),  # MEQ of 0
    Record("When did Paris hold the Summer Olympics?", ["1924"], [ARTICLE]),  # paraphrase of 0
    Record("Where were the first modern Olympics held?", ["Athens"], [OTHER]),  # too far from all
    Record("When did Athens host the first modern Olympics?", ["1896"], [OTHER]),
    Record(
        "Who won the most medals at the Paris games?",
        ["the United States"],
        [Passage("Medals", "The United States won the most medals.", "m")],
    ),
]
# filler passages without any answer, so 30 BM25 and 19 random negatives exist
CORPUS = [ARTICLE, OTHER] + [
    Passage(f"T{n}", f"Olympics story number {n} about the games and sport.", f"f{n}") for n in range(60)
]


def test_word_pairs_stay_inside_an_article_and_within_reach():
    pairs = word_pairs(RECORDS, max_edits=3)
    assert (0, 1) in pairs and (0, 2) in pairs
    assert all(RECORDS[i].positives[0].title == RECORDS[j].positives[0].title for i, j in pairs)
    assert not any(5 in pair for pair in pairs)  # the only "Medals" question has no partner


def test_contrast_set_files(tmp_path):
    summary = build_contrast_set(RECORDS, CORPUS, MEQFilter(), tmp_path, seed=1)
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    questions = {(p["question"], p["meq"]) for p in pairs}
    assert ("When did Paris host the Summer Olympics?", "When did London host the Summer Olympics?") in questions
    assert all(p["answers"] != p["meq_answers"] for p in pairs)
    first = next(p for p in pairs if p["question"] == RECORDS[0].question)
    assert first["paraphrase"] == "When did Paris hold the Summer Olympics?"
    ranking = [json.loads(line) for line in (tmp_path / "ranking.jsonl").read_text().splitlines()]
    assert len(ranking) == 2 * len(pairs) == 2 * summary["pairs"]
    for row in ranking:
        candidates = row["candidates"]
        assert len(candidates) == 50 == len(set(candidates))
        assert candidates[0] in {"olympics-0", "olympics-1"}  # gold first
        texts = {p.key: p.text for p in CORPUS}
        assert not any(a in texts[c] for c in candidates[1:] for a in row["answers"])
    assert summary["rejected"]["same answer"] >= 1  # the paraphrase (0, 2)


def text_pairs(out_dir):
    """Each written pair's two question texts, unordered."""
    return [frozenset((p["question"], p["meq"])) for p in map(json.loads, (out_dir / "pairs.jsonl").open())]


def test_repeated_questions_pair_once_unless_kept(tmp_path):
    repeated = RECORDS + [RECORDS[0], RECORDS[1]]  # a dataset that asks both questions twice
    summary = build_contrast_set(repeated, CORPUS, MEQFilter(), tmp_path / "unique", seed=1)
    texts = text_pairs(tmp_path / "unique")
    assert len(texts) == len(set(texts)) == summary["pairs"]
    alone = build_contrast_set(RECORDS, CORPUS, MEQFilter(), tmp_path / "alone", seed=1)
    assert summary["pairs"] == alone["pairs"] and alone["repeats_dropped"] == 0  # the copies add nothing
    kept = build_contrast_set(repeated, CORPUS, MEQFilter(), tmp_path / "kept", seed=1, keep_repeats=True)
    assert summary["repeats_dropped"] > 0 and kept["pairs"] == summary["pairs"] + summary["repeats_dropped"]
    kept_texts = text_pairs(tmp_path / "kept")
    assert set(kept_texts) == set(texts) and len(kept_texts) == kept["pairs"]


def test_augmentation_adds_meqs_and_paraphrases_in_trainer_format(tmp_path):
    out = tmp_path / "aug.jsonl"
    stats = build_augmentation(RECORDS, MEQFilter(), out)
    records = load_records(out).records
    assert stats["meq_pairs"] >= 1 and len(records) == len(RECORDS)
    first = records[0]
    assert "When did London host the Summer Olympics?" in [m.question for m in first.negative_questions]
    assert first.negative_questions[0].answers == ["1908"]
    assert first.positive_questions == ["When did Paris hold the Summer Olympics?"]
    assert records[5].negative_questions == [] and records[5].positive_questions == []


@pytest.mark.parametrize("flags, rule", [([], "shorter_form"), (["--answer-rule", "exact"], "exact")])
def test_build_contrast_set_cli_passes_the_answer_rule(tmp_path, monkeypatch, flags, rule):
    """ "When did Paris hold..." answered "July 1924" is a paraphrase of "When did Paris host...?"
    ("1924"), not an MEQ: the default rule drops it; --answer-rule exact (the recorded sets') kept it."""
    chosen = []

    def without_model(cls, model, threshold, max_edits, answer_rule):  # text rules only: no encoder here
        chosen.append(answer_rule)
        return cls(threshold=threshold, max_edits=max_edits, answer_rule=answer_rule)

    monkeypatch.setattr(MEQFilter, "with_model", classmethod(without_model))
    july = Passage("Olympics", "Paris hosted the Summer Olympics in July 1924.", "olympics-july")
    records = [Record(RECORDS[0].question, ["1924"], [july]), Record(RECORDS[2].question, ["July 1924"], [july])]
    write_records(records, tmp_path / "records.jsonl")
    write_corpus([july] + CORPUS, tmp_path / "corpus.jsonl")
    main(
        ["build-contrast-set", str(tmp_path / "records.jsonl"), str(tmp_path / "corpus.jsonl"), str(tmp_path / "out")]
        + flags
    )
    pairs = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").open()]
    assert chosen == [rule]
    assert [p["meq"] for p in pairs] == ([RECORDS[2].question] if rule == "exact" else [])
