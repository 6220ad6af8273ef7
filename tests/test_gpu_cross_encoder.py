"""The cross-encoder's GPU round trip, on the CPU: the pairs the rerank rows need are collected here,
trained and scored "there" from the packed data, and the returned model and scores install as the
``PairScores`` cache of exactly the directory that scored them (a changed model is refused)."""

import json
import lzma

import numpy as np
import pytest
from conftest import make_records, with_meqs
from tiny_models import make_tiny_cross_encoder

from haystack_dcsr.core.cross_encoder import CrossEncoder
from haystack_dcsr.training.data import write_records
from tests.benchmark_scripts import load_benchmark


def packed_data(tmp_path, gpu_train):
    """gpu_train.py pack's layout for a few records, half of them with an MEQ (the next record)."""
    records = make_records(12)
    write_records(records, tmp_path / "train.jsonl")
    write_records(with_meqs(records), tmp_path / "train_meq.jsonl")
    data, corpus = tmp_path / "packed", {}
    data.mkdir()
    gpu_train.pack_records(tmp_path / "train.jsonl", data / "train.jsonl.xz", corpus)
    gpu_train.pack_records(
        tmp_path / "train_meq.jsonl", data / "train_meq.jsonl.xz", corpus, over=("train", tmp_path / "train.jsonl")
    )
    with lzma.open(data / "corpus.json.xz", "wt") as handle:
        json.dump(corpus, handle)
    return records, data, {pid: text for pid, (_, text) in corpus.items()}


def test_pairs_collected_here_are_scored_there_and_installed_as_the_models_cache(tmp_path):
    gpu_train, rerank_module = load_benchmark("gpu_train"), load_benchmark("cross_encoder_rerank")
    gpu_ce = load_benchmark("gpu_cross_encoder")
    records, data, texts = packed_data(tmp_path, gpu_train)
    # here: a rerank row over a base's top 2 collects its head pairs and scores nothing
    collector = rerank_module.PairsToScore()
    base = [
        [(r.positives[0].key, 2.0), (r.hard_negatives[0].key, 1.0), (r.hard_negatives[1].key, 0.5)] for r in records
    ]
    questions = [r.question for r in records]
    rerank_module.rerank_rankings(questions, base, collector, top_n=2, blend=True)
    assert collector.write(tmp_path / "pairs.jsonl.xz") == 2 * len(records)
    wanted = gpu_ce.read_pairs(tmp_path / "pairs.jsonl.xz")
    assert wanted == [(q, [pid for pid, _ in row[:2]]) for q, row in zip(questions, base)]
    # there: train a few steps from the packed MEQ file, export fp16 parts, score the pairs
    base_model = make_tiny_cross_encoder(tmp_path / "base")
    out = tmp_path / "out"
    settings = ["max_steps=2", "questions_per_batch=2", "negatives=2", "max_length=64", "log_every=1"]
    gpu_ce.main(
        ["run", "--data", str(data), "--base", base_model, "--pairs", str(tmp_path / "pairs.jsonl.xz")]
        + ["--out", str(out), "--workdir", str(tmp_path / "work")]
        + [item for setting in settings for item in ("--set", setting)]
    )
    assert sorted(p.name for p in out.iterdir()) == ["ce.log.jsonl", "ce.scores.jsonl.xz", "ce.tar.part0"]
    assert (out / "ce.log.jsonl").read_text().count("\n") == 2
    # here: install, then the benchmark's cache has every pair, with the installed model's own logits
    gpu_ce.main(["install", str(out), str(tmp_path / "models"), str(tmp_path / "cache")])
    installed = tmp_path / "models" / "ce"
    scores = rerank_module.PairScores(installed, texts, tmp_path / "cache")
    flat = [(q, pid) for q, pids in wanted for pid in pids]
    assert scores.fill(flat) == 0
    direct = CrossEncoder(str(installed), device="cpu").score_pairs([(q, texts[pid]) for q, pid in flat])
    assert np.allclose([scores.scores[pair] for pair in flat], direct, atol=1e-5)
    # a directory holding other files than the scored model's (a stale earlier model) is refused
    stale = tmp_path / "stale" / "ce"
    stale.mkdir(parents=True)
    (stale / "pytorch_model.bin").write_bytes(b"an older model")
    with pytest.raises(SystemExit, match=r"scored by model \w+, but .*stale/ce is \w+"):
        gpu_ce.install(out, tmp_path / "stale", tmp_path / "cache2")
    assert not list((tmp_path / "cache2").iterdir())


def test_a_model_that_stays_there_is_sized_to_a_budget_and_its_scores_alone_install(tmp_path):
    gpu_train, rerank_module = load_benchmark("gpu_train"), load_benchmark("cross_encoder_rerank")
    gpu_ce = load_benchmark("gpu_cross_encoder")
    records, data, texts = packed_data(tmp_path, gpu_train)
    collector = rerank_module.PairsToScore()
    base = [[(r.positives[0].key, 2.0), (r.hard_negatives[0].key, 1.0)] for r in records]
    rerank_module.rerank_rankings([r.question for r in records], base, collector, top_n=2, blend=False)
    collector.write(tmp_path / "pairs.jsonl.xz")
    # a second file asks deeper for two questions: each question is scored once, its ids merged
    deeper = rerank_module.PairsToScore()
    deeper.fill([(records[0].question, records[0].hard_negatives[1].key), (records[1].question, base[1][0][0])])
    deeper.write(tmp_path / "deeper.jsonl.xz")
    merged = gpu_ce.read_pairs(tmp_path / "pairs.jsonl.xz", tmp_path / "deeper.jsonl.xz")
    assert merged[0] == (records[0].question, [*(pid for pid, _ in base[0]), records[0].hard_negatives[1].key])
    assert merged[1:] == [(r.question, [pid for pid, _ in row]) for r, row in zip(records[1:], base[1:])]
    # there: a 30-step probe times a step, the run takes what fits the budget; the model is not in --out
    out, work = tmp_path / "out", tmp_path / "work"
    settings = ["questions_per_batch=2", "negatives=1", "max_length=32", "log_every=1", "max_steps=7"]
    gpu_ce.main(
        ["run", "--data", str(data), "--base", make_tiny_cross_encoder(tmp_path / "base")]
        + ["--pairs", str(tmp_path / "pairs.jsonl.xz"), "--pairs", str(tmp_path / "deeper.jsonl.xz")]
        + ["--out", str(out), "--workdir", str(work)]
        + [item for setting in settings for item in ("--set", setting)]
        + ["--budget-s", "0.01", "--model-stays"]
    )
    assert sorted(p.name for p in out.iterdir()) == ["ce.log.jsonl", "ce.scores.jsonl.xz"]
    header = json.loads(lzma.open(out / "ce.scores.jsonl.xz", "rt").readline())
    assert header["probe_step_s"] > 0 and header["budget_s"] == 0.01
    assert "max_steps: 30" in header["config"]  # a budget under one probe still trains the probe's 30 steps
    assert (out / "ce.log.jsonl").read_text().count("\n") == 30
    assert (work / "probe" / "log.jsonl").read_text().count("\n") == 3  # steps 10, 20, 30
    # here: a directory with the scored model's fingerprint alone; the benchmark reads its cache
    gpu_ce.main(["install", str(out), str(tmp_path / "models"), str(tmp_path / "cache")])
    installed = tmp_path / "models" / "ce"
    assert [p.name for p in installed.iterdir()] == [rerank_module.SCORED_ELSEWHERE]
    scores = rerank_module.PairScores(installed, texts, tmp_path / "cache")
    flat = [(r.question, pid) for r, row in zip(records, base) for pid, _ in row]
    assert scores.fill(flat) == 0
    direct = CrossEncoder(str(work / "served"), device="cpu").score_pairs([(q, texts[pid]) for q, pid in flat])
    assert np.allclose([scores.scores[pair] for pair in flat], direct, atol=1e-5)
    assert scores.fill([(records[0].question, records[0].hard_negatives[1].key)]) == 0  # the deeper file's
    # a pair that was not scored there cannot be scored here
    with pytest.raises(SystemExit, match=r"scored on another machine and its weights stayed there; 1 pairs"):
        scores.fill([(records[2].question, records[2].hard_negatives[1].key)])
    # installing the same scores again keeps the directory (same fingerprint) and the cache complete
    gpu_ce.main(["install", str(out), str(tmp_path / "models"), str(tmp_path / "cache")])
    assert rerank_module.PairScores(installed, texts, tmp_path / "cache").fill(flat) == 0
    # the model fetched later (its parts from the workdir): the directory becomes the model, the same cache
    for part in work.glob("ce.tar.part*"):
        (out / part.name).write_bytes(part.read_bytes())
    gpu_ce.main(["install", str(out), str(tmp_path / "models"), str(tmp_path / "cache")])
    assert not (installed / rerank_module.SCORED_ELSEWHERE).exists()
    fetched = rerank_module.PairScores(installed, texts, tmp_path / "cache")
    assert fetched.path == scores.path and fetched.fill(flat) == 0
    assert fetched.fill([(records[2].question, records[2].hard_negatives[1].key)]) == 1  # its weights are here now
