"""contrast_pairwise.py reads a model's preference between a pair's two golds: the rows it asks
and, for a bi-encoder, the HasAns of the two passages as the MEQ ranking scores candidates."""

import numpy as np
from benchmark_scripts import load_benchmark
from tiny_models import make_tiny_cross_encoder

from haystack_dcsr.core.cross_encoder import CrossEncoder
from haystack_dcsr.core.dcsr_model import DCSRModel
from haystack_dcsr.core.hasans import score_passages

GOLD = "Denver won Super Bowl 50. The game was played in Santa Clara."
OWN = "New England won Super Bowl XLIX. It was played in Glendale, Arizona."
PAIRS = [("Who won Super Bowl 50?", GOLD, "Who won Super Bowl XLIX?", OWN, True)] * 2


def test_preferences_ask_q_prime_own_gold_over_q_gold_and_q_the_other_way():
    pairwise = load_benchmark("contrast_pairwise")
    asked = []

    def prefers(rows):
        asked.extend(rows)
        return np.array([a == OWN for _, a, _ in rows])  # prefers OWN, whoever asks

    won = pairwise.preferences(prefers, PAIRS)
    assert asked[0] == ("Who won Super Bowl XLIX?", OWN, GOLD) and asked[2] == ("Who won Super Bowl 50?", GOLD, OWN)
    assert won == {"meq": [True, True], "q": [False, False]}


def test_dcsr_reading_is_hasans_over_the_two_passages(tiny_bert_mean):
    pairwise = load_benchmark("contrast_pairwise")
    rows = [("Who won Super Bowl 50?", GOLD, OWN), ("Who won Super Bowl XLIX?", OWN, GOLD)]
    got = pairwise.load_prefers(f"dcsr:{tiny_bert_mean}")(rows)
    model = DCSRModel.from_pretrained(tiny_bert_mean, use_gpu=False)
    split = model.splitter().split
    queries = model.encode_queries([q for q, _, _ in rows])
    expected = []
    for query, (_, a, b) in zip(queries, rows):
        keys = score_passages(query, [model.encode_passages([split(a)]), model.encode_passages([split(b)])], 0.05)
        expected.append(keys[0] > keys[1])
    assert got.tolist() == expected


def test_cross_encoder_reading_compares_the_two_logits(tmp_path):
    pairwise = load_benchmark("contrast_pairwise")
    directory = make_tiny_cross_encoder(tmp_path / "ce")
    rows = [("Who won Super Bowl 50?", GOLD, OWN), ("Who won Super Bowl 50?", OWN, GOLD)]
    logits = CrossEncoder(directory).score_pairs([(rows[0][0], GOLD), (rows[0][0], OWN)])
    assert pairwise.load_prefers(directory)(rows).tolist() == [logits[0] > logits[1], logits[1] > logits[0]]
