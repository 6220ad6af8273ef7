import pytest

from haystack_dcsr.metrics import answer_tokens, first_hit_ranks, has_answer, top_k_accuracy


def test_answer_tokens_are_normalised():
    assert answer_tokens("Café NEW-York!") == ["cafe", "new", "-", "york", "!"]
    assert answer_tokens("The U.S. (1990)") == ["the", "u", ".", "s", ".", "(", "1990", ")"]


def test_has_answer_matches_whole_token_sequences_case_insensitively():
    passage = "Super Bowl 50 was played in Santa Clara, California."
    assert has_answer(passage, ["santa clara"])
    assert has_answer(passage, ["nowhere", "Bowl 50"])
    assert not has_answer(passage, ["Clar"])  # part of a token is not a match
    assert not has_answer(passage, ["", "   "])


def test_first_hit_ranks_and_top_k():
    ranked = [["a b", "the answer x"], ["x", "y"], ["x is here", "x"]]
    ranks = first_hit_ranks(ranked, [["answer"], ["z"], ["x"]])
    assert ranks == [2, 0, 1]
    assert top_k_accuracy(ranks, ks=(1, 2)) == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}
