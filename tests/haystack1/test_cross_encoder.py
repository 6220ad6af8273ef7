"""The cross-encoder reranker: reranking keeps one descending list, length-sorted batching changes no
score, Haystack's own ranker serves a trained directory identically, and the benchmark's rerank rows."""

import numpy as np
import pytest
from benchmark_scripts import load_benchmark
from haystack.nodes import SentenceTransformersRanker
from haystack.schema import Document
from tiny_models import make_tiny_cross_encoder
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from haystack_dcsr.core.model.cross_encoder import CrossEncoder, rerank
from haystack_dcsr.core.ranking.fusion import fuse

QUESTION = "what is the capital of france?"
TEXTS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany, a city of museums, lakes and a long and divided history.",
    "Rome.",
    "The capital of Spain is Madrid; the capital of Portugal is Lisbon.",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("cross_encoder"))


def test_rerank_reorders_the_head_and_keeps_the_tail_below_it():
    ranked = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0), ("e", 5.0)]
    out = rerank(ranked, [0.1, 2.0, -1.0], top_n=3)
    assert [pid for pid, _ in out] == ["b", "a", "c", "d", "e"]
    scores = [s for _, s in out]
    assert scores[:3] == [2.0, 0.1, -1.0] and scores == sorted(scores, reverse=True) and len(set(scores)) == 5
    assert [pid for pid, _ in rerank(ranked[:2], [1.0, 2.0], top_n=5)] == ["b", "a"]
    with pytest.raises(ValueError, match="2 scores for the 3 passages to rerank"):
        rerank(ranked, [1.0, 2.0], top_n=3)


def test_length_sorted_batches_score_each_pair_as_if_alone(model_dir):
    scorer = CrossEncoder(model_dir, batch_size=2, device="cpu")
    pairs = [(QUESTION, t) for t in TEXTS]
    together = scorer.score_pairs(pairs)
    alone = [scorer.score_pairs([p])[0] for p in pairs]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert len(set(np.round(together, 6))) == len(TEXTS)  # a random head still tells the passages apart


def test_haystack_ranker_serves_the_directory_in_the_scorer_order(model_dir):
    ranker = SentenceTransformersRanker(model_name_or_path=model_dir, use_gpu=False, scale_score=False)
    served = ranker.predict(QUESTION, [Document(content=t, id=str(i)) for i, t in enumerate(TEXTS)], top_k=len(TEXTS))
    logits = CrossEncoder(model_dir, device="cpu").score_pairs([(QUESTION, t) for t in TEXTS])
    assert [d.id for d in served] == [str(i) for i in np.argsort(-logits)]
    np.testing.assert_allclose([d.score for d in served], np.sort(logits)[::-1], atol=1e-5)


def test_a_model_with_two_labels_is_refused(tmp_path):
    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=2)
    BertForSequenceClassification(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(make_tiny_cross_encoder(tmp_path / "tok")).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="needs one output label, this model has 2"):
        CrossEncoder(str(tmp_path))


def test_benchmark_rerank_rows_reuse_scored_pairs_and_rerank_the_fifty_candidates(model_dir, tmp_path):
    squad_open = load_benchmark("squad_open")
    rerank_module = load_benchmark("cross_encoder_rerank")
    base_name, model_path, top = squad_open.parse_rerank("Hybrid A + BM25+runs/ce/last@5")
    assert (base_name, str(model_path), top) == ("Hybrid A + BM25", "runs/ce/last", 5)
    assert squad_open.parse_rerank("B+dir")[2] == 20
    with pytest.raises(SystemExit, match=r"expected rerank:BASE\+MODEL_DIR\[@N\]"):
        squad_open.parse_rerank("no-model-dir")
    texts = {str(i): t for i, t in enumerate(TEXTS)}
    scores = rerank_module.PairScores(model_dir, texts, tmp_path)
    base = [[("3", 4.0), ("2", 3.0), ("1", 2.0), ("0", 1.0)]]
    reranked = rerank_module.rerank_rankings([QUESTION], base, scores, top_n=2)
    head = scores(QUESTION, ["3", "2"])
    assert [pid for pid, _ in reranked[0]][:2] == (["3", "2"] if head[0] > head[1] else ["2", "3"])
    assert [pid for pid, _ in reranked[0]][2:] == ["1", "0"]
    again = rerank_module.PairScores(model_dir, texts, tmp_path)  # read back: nothing left to score
    assert again.fill([(QUESTION, "3"), (QUESTION, "2")]) == 0 and again(QUESTION, ["3", "2"]) == head
    assert again.fill([(QUESTION, "0")]) == 1 and scores.path.read_text().count("\n") == 3
    blended = rerank_module.rerank_rankings([QUESTION], base, again, top_n=3, blend=True)[0]
    logits = np.array(again(QUESTION, ["3", "2", "1"]))
    scaled = (logits - logits.min()) / (logits.max() - logits.min())
    mixed = 0.5 * scaled + 0.5 * np.array([1.0, 0.5, 0.0])  # the base's 4, 3, 2 min-max scaled
    assert [pid for pid, _ in blended] == [["3", "2", "1"][i] for i in np.argsort(-mixed, kind="stable")] + ["0"]
    ranking = [{"question": QUESTION, "candidates": ["0", "1", "2", "3"]}]
    candidates = rerank_module.rerank_candidates(ranking, [[1.0, 2.0, 3.0, 4.0]], again, top_n=2)
    order = [ranking[0]["candidates"][i] for i in np.argsort(-candidates[0])]
    assert order == [pid for pid, _ in reranked[0]]


def test_benchmark_int8_scores_are_kept_apart_from_fp32_and_scored_quantised(model_dir, tmp_path, monkeypatch):
    rerank_module = load_benchmark("cross_encoder_rerank")
    built = []

    class Recorder:  # stands in for CrossEncoder: the compiled int8 path has its own tests (test_int8.py)
        def __init__(self, path, device=None, quantize=None):
            built.append((device, quantize))

        def score_pairs(self, pairs):
            return [float(len(passage)) for _, passage in pairs]

    monkeypatch.setattr(rerank_module, "CrossEncoder", Recorder)
    texts = {"0": "short", "1": "a longer passage"}
    fp32 = rerank_module.PairScores(model_dir, texts, tmp_path)
    int8 = rerank_module.PairScores(model_dir, texts, tmp_path, quantize="int8")
    assert int8.path != fp32.path and int8.path.name == fp32.path.name.replace(".jsonl", "-int8.jsonl")
    assert int8.fill([(QUESTION, "0"), (QUESTION, "1")]) == 2 and built == [("cpu", "int8")]
    assert int8(QUESTION, ["0", "1"]) == [5.0, 16.0] and not fp32.path.exists()
    assert rerank_module.PairScores(model_dir, texts, tmp_path).fill([(QUESTION, "0")]) == 1  # fp32 scores anew
    assert built[-1] == ("cpu", None)


def test_the_1x_node_blends_leaves_its_input_alone_and_ranks_a_batch(model_dir):
    from haystack_dcsr import CrossEncoderRanker

    docs = [Document(content=t, id=str(i), score=float(4 - i)) for i, t in enumerate(TEXTS)]
    alone = CrossEncoderRanker(model=model_dir, top_k=None, use_gpu=False)  # first_stage_weight 0: CE alone
    blended = CrossEncoderRanker(model=model_dir, first_stage_weight=0.5, top_k=3, use_gpu=False)
    logits = alone.scorer.score_pairs([(QUESTION, t) for t in TEXTS])
    assert [d.id for d in alone.predict(QUESTION, docs)] == [str(i) for i in np.argsort(-logits, kind="stable")]
    # scale_score (Haystack's default): the sigmoid of the logit; False: the logit itself
    assert [d.score for d in alone.predict(QUESTION, docs)] == pytest.approx(sorted(1 / (1 + np.exp(-logits)))[::-1])
    raw = CrossEncoderRanker(model=model_dir, top_k=None, use_gpu=False, scale_score=False, devices=["cpu"])
    assert [d.score for d in raw.predict(QUESTION, docs)] == pytest.approx(sorted(logits)[::-1])
    with pytest.raises(ValueError, match="devices is an empty list"):
        CrossEncoderRanker(model=model_dir, devices=[])
    with pytest.raises(ValueError, match="set first_stage_weight=0 to rank by the cross-encoder alone"):
        blended.predict(QUESTION, [Document(content="no score", id="n")])
    expected = fuse([[(str(i), float(s)) for i, s in enumerate(logits)], [(d.id, d.score) for d in docs]])
    assert [(d.id, pytest.approx(d.score, abs=1e-5)) for d in blended.predict(QUESTION, docs)] == expected[:3]
    assert [d.score for d in docs] == [4.0, 3.0, 2.0, 1.0]  # the retriever's documents keep their scores
    batch = blended.predict_batch([QUESTION, "rome?"], docs)
    assert [len(b) for b in batch] == [3, 3] and [d.id for d in batch[0]] == [pid for pid, _ in expected[:3]]
    with pytest.raises(ValueError, match="2 document lists for 1 queries"):
        blended.predict_batch([QUESTION], [docs, docs])
    with pytest.raises(ValueError, match="first_stage_weight must be within"):
        CrossEncoderRanker(model=model_dir, first_stage_weight=2.0)
    refused = r"CrossEncoderRanker: top_k must be an integer in \[1, 2147483647\], or null, got 0"
    with pytest.raises(ValueError, match=refused):
        CrossEncoderRanker(model=model_dir, top_k=0)
