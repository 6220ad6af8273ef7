"""Every MEQ rule accepts one pair and rejects one; mining and calibration on hand-made data."""

import numpy as np
import pytest

from haystack_dcsr.core.text.meq import (
    MEQFilter,
    answers_differ,
    calibrate_threshold,
    candidate_pairs,
    only_trivial_addition,
    question_word,
    word_edit_distance,
    words,
)

Q = "Who wrote the first Harry Potter book?"


def test_word_edit_distance_counts_words_and_stops_early():
    assert word_edit_distance(words(Q), words("Who wrote the last Harry Potter book?")) == 1
    assert word_edit_distance(words(Q), words("Who published the last Harry Potter film?")) == 3
    assert word_edit_distance(["a", "b", "c"], ["a", "c"]) == 1
    assert word_edit_distance(words(Q), words("When was it?"), limit=3) == 4  # capped at limit + 1


def test_edit_distance_rule():
    meq = MEQFilter()
    assert meq.check(Q, "Who wrote the last Harry Potter book?", ["J. K. Rowling"], ["Rowling's ghost"]).accepted
    same = meq.check(Q, Q, ["Rowling"], ["someone"])
    far = meq.check(Q, "Who directed the last four Harry Potter films in London?", ["Rowling"], ["Yates"])
    assert (same.accepted, same.reason) == (False, "edit distance")
    assert (far.accepted, far.reason, far.distance) == (False, "edit distance", 4)


def test_question_word_rule():
    meq = MEQFilter()
    assert question_word(words("How many people live in Paris?")) == "how"
    assert question_word(words("Is Paris big?")) == "is"
    assert meq.check(
        "When did Paris host the Olympics?", "When did London host the Olympics?", ["1924"], ["1908"]
    ).accepted
    verdict = meq.check(
        "When did Paris host the Olympics?", "Where did Paris host the Olympics?", ["1924"], ["Colombes"]
    )
    assert (verdict.accepted, verdict.reason) == (False, "question word")


def test_trivial_addition_rule():
    meq = MEQFilter()
    added = meq.check(
        "Who was the president of France?",
        "Who was the first president of France?",
        ["Macron"],
        ["Louis-Napoleon Bonaparte"],
    )
    assert (added.accepted, added.reason) == (False, "trivial addition")
    # the same word swapped in (not only added) is a real edit
    assert meq.check(
        "Who was the last president of France?",
        "Who was the first president of France?",
        ["Macron"],
        ["Louis-Napoleon Bonaparte"],
    ).accepted
    assert only_trivial_addition(words("a b"), words("a not b"), 1)
    assert not only_trivial_addition(words("a b"), words("a green b"), 1)


def test_answer_rule_normalises_answers():
    meq = MEQFilter()
    verdict = meq.check(Q, "Who wrote the last Harry Potter book?", ["J. K. Rowling"], ["j.k. rowling", "JK"])
    assert not answers_differ(["The Beatles"], ["Beatles"]) and not answers_differ(["Café!"], ["cafe"])
    assert answers_differ(["1924"], ["1908", "1948"])
    assert (verdict.accepted, verdict.reason) == (False, "same answer")


def test_a_shorter_form_of_an_answer_is_the_same_answer():
    # exact matching let these SQuAD dev pairs through as MEQs although they are paraphrases
    assert not answers_differ(["Einstein"], ["Albert Einstein"])
    assert not answers_differ(["December 1963"], ["12 December 1963"])
    assert not answers_differ(["to conduct photosynthesis", "conduct photosynthesis"], ["photosynthesis"])
    # a longer answer that merely holds the other, or a word joined by punctuation, still differs
    assert answers_differ(["OneDrive"], ["OneDrive for Business"])
    assert answers_differ(["non-violent"], ["violent"])
    assert answers_differ(["Class I MHC molecules"], ["Class II MHC molecules"])
    assert answers_differ(["Einstein"], ["Albert Einstein"], rule="exact")
    relativity = ("Who developed the theory of relativity?", "Who came up with the theory of relativity?")
    verdict = MEQFilter(max_edits=4).check(*relativity, ["Einstein"], ["Albert Einstein"])
    assert (verdict.accepted, verdict.reason) == (False, "same answer")
    assert MEQFilter(max_edits=4, answer_rule="exact").check(*relativity, ["Einstein"], ["Albert Einstein"]).accepted


def test_an_unknown_answer_rule_is_refused():
    with pytest.raises(ValueError, match="answer_rule must be one of .*'shorter_form'.* got 'fuzzy'"):
        MEQFilter(answer_rule="fuzzy")
    with pytest.raises(ValueError, match="got 'fuzzy'"):
        answers_differ(["a"], ["b"], rule="fuzzy")
    with pytest.raises(ValueError, match="got 'fuzzy'"):  # also where the answers already match
        answers_differ(["a"], ["a"], rule="fuzzy")


def test_paraphrase_hook():
    meq = MEQFilter(is_paraphrase=lambda a, b: "penned" in b)
    verdict = meq.check(Q, "Who penned the first Harry Potter book?", ["Rowling"], ["someone else"])
    assert (verdict.accepted, verdict.reason) == (False, "paraphrase")
    assert meq.check(Q, "Who read the first Harry Potter book?", ["Rowling"], ["Stephen Fry"]).accepted


def fake_embed(texts):
    """Vectors that make 'Potter' questions close (cos 0.98) and 'Narnia' ones far (cos 0.6)."""
    out = []
    for text in texts:
        if "Narnia" in text:
            out.append([0.6, 0.8])
        elif "last" in text:
            out.append([np.cos(0.2), np.sin(0.2)])
        else:
            out.append([1.0, 0.0])
    return np.array(out)


def test_cosine_rule():
    meq = MEQFilter(embed=fake_embed, threshold=0.95)
    accepted = meq.check(Q, "Who wrote the last Harry Potter book?", ["Rowling"], ["Rowling's ghost"])
    assert accepted.accepted and accepted.similarity == pytest.approx(np.cos(0.2))
    rejected = meq.check(Q, "Who wrote the first Narnia book?", ["Rowling"], ["Lewis"])
    assert (rejected.accepted, rejected.reason, rejected.similarity) == (False, "cosine", pytest.approx(0.6))


def test_filter_pairs_mines_within_groups_and_counts_rejections():
    questions = [
        (Q, ["Rowling"]),
        ("Who wrote the last Harry Potter book?", ["Rowling's ghost"]),
        ("Who wrote the first Narnia book?", ["Lewis"]),
        ("Who wrote the first Harry Potter novel?", ["Rowling"]),  # same answer as 0
        ("Who wrote the last Harry Potter book in 2007 for children?", ["Rowling"]),  # 4 edits away
    ]
    pairs = candidate_pairs({"potter": [0, 1, 2, 3, 4]}, [words(q) for q, _ in questions], max_edits=3)
    assert (0, 4) not in pairs and (0, 1) in pairs  # length gap 4 never compared
    accepted, rejected = MEQFilter(embed=fake_embed).filter_pairs(questions, pairs)
    assert sorted((i, j) for i, j, _ in accepted) == [(0, 1), (1, 3)]
    assert rejected == {"same answer": 1, "cosine": 3}  # (0, 3); (0, 2), (1, 2), (2, 3)


def test_calibrated_threshold_keeps_the_requested_share():
    pairs = [(f"q{i}", f"p{i}") for i in range(10)]
    angles = {f"p{i}": 0.05 * i for i in range(10)}

    def embed(texts):
        return np.array([[np.cos(angles.get(t, 0.0)), np.sin(angles.get(t, 0.0))] for t in texts])

    threshold = calibrate_threshold(pairs, embed, keep=0.8)
    kept = sum(np.cos(a) >= threshold for a in angles.values())
    assert kept == 8
    with pytest.raises(ValueError):
        calibrate_threshold([], embed)
