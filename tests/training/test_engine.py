"""The training engine on a tiny random BERT and synthetic data."""

import contextlib
import dataclasses
import json
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp
from conftest import make_records, make_tiny_bert
from forking import exit_code, forked
from haystack.document_stores import InMemoryDocumentStore
from haystack.schema import Document

from haystack_dcsr import DCSRRetriever, SentencePreprocessor
from haystack_dcsr.haystack1.mining import faiss_dcsr_retriever
from haystack_dcsr.training.config import TrainConfig
from haystack_dcsr.training.data import load_records, write_records
from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.mining import dense_search, mine_hard_negatives, retriever_search
from haystack_dcsr.training.samples import batches, make_batch


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("train_bert"), max_length=128)


@pytest.fixture(scope="module")
def bert_no_dropout(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("train_bert_nd"), max_length=128, dropout=0.0)


def config(model, tmp_path, **kwargs):
    values = dict(
        base_model=model,
        output_dir=str(tmp_path / "run"),
        batch_size=8,
        lr=1e-3,
        warmup_steps=0,
        max_passage_length=64,
        max_query_length=32,
        checkpoint_every=0,
        log_every=0,
        seed=3,
        precision="fp32",
    )  # thresholds below were set in fp32; on a GPU "auto" would pick bf16
    values.update(kwargs)
    return TrainConfig(**values)


@pytest.fixture(scope="module")
def trained(bert, tmp_path_factory):
    """One short DCSR run (marker pooling) shared by the tests below."""
    records = make_records(24)
    out = tmp_path_factory.mktemp("trained")
    trainer = Trainer(config(bert, out, max_steps=150, lr=3e-3, warmup_steps=10), records=records, dev_records=records)
    before = trainer.validate()
    history = trainer.train(resume=False)
    return trainer, records, before, history, trainer.validate(), out / "run"


def test_short_run_lowers_the_loss_and_raises_in_batch_accuracy(trained):
    trainer, records, before, history, after, run = trained
    first = sum(h["loss"] for h in history[:10]) / 10
    last = sum(h["loss"] for h in history[-10:]) / 10
    assert last < 0.5 * first
    assert after["accuracy"] > before["accuracy"] + 0.3
    assert after["average_rank"] < before["average_rank"] / 2
    lines = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert sum("loss" in line for line in lines) == 150
    assert all(line["step_s"] > 0 for line in lines if "loss" in line)  # each step's wall time, for budgets
    assert sum("dev_accuracy" in line for line in lines) == 50  # validation after each of the 50 epochs
    assert (run / "best" / "query_encoder" / "model.safetensors").is_file()


def test_dpr_mode_and_qq_loss_train_and_serve_whole_passages(bert, tmp_path):
    records = make_records(16)
    for record, other in zip(records, records[1:] + records[:1]):
        record.negative_questions = [other]  # another country's question: a stand-in MEQ
    trainer = Trainer(
        config(bert, tmp_path, level="passage", negatives="dpr", qq_form="triplet", max_steps=4), records=records
    )
    history = trainer.train(resume=False)
    assert all("qq" in h and h["loss"] == pytest.approx(h["qp"] + h["qq"], rel=1e-5) for h in history)
    assert trainer.passage.config.pooling == "cls"

    last = tmp_path / "run" / "last"
    saved = json.loads((last / "dcsr_model.json").read_text())  # a DCSRModel directory, its towers' one config
    assert saved["level"] == "passage" and saved["pooling"] == "cls"
    assert not (last / "passage_encoder" / "dcsr_encoder.json").exists()
    retriever = DCSRRetriever(model=str(last), precision="fp32", progress_bar=False)
    retriever.document_store = store = InMemoryDocumentStore(embedding_dim=32, progress_bar=False)
    passages = [Document(content=r.positives[0].text, id=r.positives[0].key) for r in records]
    with pytest.raises(ValueError, match="split_sentences=False"):
        retriever.embed_documents(SentencePreprocessor(progress_bar=False).process(passages[:2])["documents"])
    units = SentencePreprocessor(model=str(last), progress_bar=False).process(passages)["documents"]  # unsplit
    assert len(units) == len(passages)
    store.write_documents(units)
    store.update_embeddings(retriever)
    # served vectors are the training-time encodings of the whole passage
    trainer.model.eval()
    with torch.no_grad():
        trained_vectors = trainer.passage.forward(trainer.passage.text_windows([p.content for p in passages]))
    stored = {d.id: d.embedding for d in store.get_all_documents(return_embedding=True)}
    atol = 1e-4 if trainer.device.type == "cpu" else 1e-3  # GPU kernels differ with batch shape
    for passage, vector in zip(passages, trained_vectors):
        assert stored[passage.id + "#0"] == pytest.approx(vector.cpu().numpy(), abs=atol)
    results = retriever.retrieve(records[0].question, top_k=3)
    assert len(results) == 3 and {d.id for d in results} <= {p.id for p in passages}
    # model-based hard negatives from a passage-level tower index passages unsplit
    plain = make_records(16)  # the records above point at each other as MEQs
    corpus = [r.positives[0] for r in plain]
    search = dense_search(last, corpus, progress_bar=False)
    assert mine_hard_negatives(plain[:4], search, tmp_path / "hard.jsonl", top_k=3, keep=2, progress_bar=False) == 4
    assert all(len(m.hard_negatives) == 2 for m in load_records(tmp_path / "hard.jsonl").records)


def test_mine_dense_takes_answer_free_negatives_from_the_trained_retriever(trained, tmp_path):
    trainer, records, _, _, _, run = trained
    corpus = [r.positives[0] for r in records]
    fresh = [dataclasses.replace(r, hard_negatives=[]) for r in records]
    search = dense_search(run / "last", corpus, progress_bar=False)
    mined = mine_hard_negatives(fresh, search, tmp_path / "hard.jsonl", top_k=5, keep=3, progress_bar=False)
    assert mined == len(records)
    mined = load_records(tmp_path / "hard.jsonl").records
    assert [m.question for m in mined] == [r.question for r in records]
    for m in mined:
        assert 1 <= len(m.hard_negatives) <= 3
        assert all(n.key != m.positives[0].key and m.answers[0] not in n.text for n in m.hard_negatives)


def test_the_haystack_free_dense_miner_mines_what_the_served_faiss_retriever_mines(trained, tmp_path):
    """``dense_search`` (exact sentence search on the towers' device, HasAns; what ``mine-dense``
    and ``build-model`` use) must pick the DCSR-hard negatives that the served
    ``DCSRRetriever`` over FAISS Flat picks."""
    _, records, _, _, _, run = trained
    fresh = [dataclasses.replace(r, hard_negatives=[]) for r in records]
    write_records(fresh, tmp_path / "train.jsonl")
    corpus = [r.positives[0] for r in records]
    served = retriever_search(faiss_dcsr_retriever(run / "last", corpus))
    mine_hard_negatives(fresh, served, tmp_path / "served.jsonl", top_k=23, keep=3, progress_bar=False)
    exact_search = dense_search(run / "last", corpus, device="cpu", progress_bar=False)
    mine_hard_negatives(fresh, exact_search, tmp_path / "exact.jsonl", top_k=23, keep=3, progress_bar=False)
    exact, served = (load_records(tmp_path / name).records for name in ("exact.jsonl", "served.jsonl"))
    assert [[n.key for n in r.hard_negatives] for r in exact] == [[n.key for n in r.hard_negatives] for r in served]
    assert all(len(r.hard_negatives) == 3 for r in exact)
    assert all(n.key != r.positives[0].key and r.answers[0] not in n.text for r in exact for n in r.hard_negatives)


def test_a_second_round_trains_from_the_first_rounds_model_directory(trained, tmp_path):
    """DCSR-hard: base_model may be a DCSRModel directory; both towers start from its trained weights."""
    trainer, records, _, _, _, run = trained
    second = Trainer(config(str(run / "last"), tmp_path, max_steps=1), records=records[:8])
    for mine, first in ((second.query, trainer.query), (second.passage, trainer.passage)):
        assert all(
            torch.equal(a.cpu(), b.cpu())
            for a, b in zip(mine.model.state_dict().values(), first.model.state_dict().values())
        )


def test_saved_encoders_load_in_dcsr_retriever_and_retrieve(trained):
    trainer, records, _, _, _, run = trained
    last = run / "last"
    retriever = DCSRRetriever(
        query_model=str(last / "query_encoder"), passage_model=str(last / "passage_encoder"), progress_bar=False
    )
    assert retriever.query_encoder.tower.config.pooling == "marker"
    assert retriever.query_encoder.temperature == 1.0
    store = InMemoryDocumentStore(embedding_dim=32, progress_bar=False)
    retriever.document_store = store
    passages = [Document(content=r.positives[0].text, id=r.positives[0].key) for r in records]
    store.write_documents(SentencePreprocessor(progress_bar=False).process(passages)["documents"])
    store.update_embeddings(retriever)
    results = retriever.retrieve_batch([r.question for r in records], top_k=5)
    top1 = sum(docs[0].id == r.positives[0].key for docs, r in zip(results, records)) / len(records)
    assert top1 >= 0.25  # random would be 1/24


def test_killed_and_resumed_run_ends_with_the_same_weights_and_log(bert, tmp_path, monkeypatch):
    records = make_records(24)
    straight = Trainer(config(bert, tmp_path / "a", max_steps=6, checkpoint_every=3), records=records)
    straight.train(resume=False)

    interrupted = Trainer(config(bert, tmp_path / "b", max_steps=6, checkpoint_every=3), records=records)
    real_step, calls = Trainer.step, {"n": 0}

    def crash_after_three(self, micro_batches):
        if calls["n"] == 5:  # killed two steps past the checkpoint at step 3: steps 4-5 are logged, then redone
            raise KeyboardInterrupt("killed")
        calls["n"] += 1
        return real_step(self, micro_batches)

    monkeypatch.setattr(Trainer, "step", crash_after_three)
    with pytest.raises(KeyboardInterrupt):
        interrupted.train(resume=False)
    monkeypatch.setattr(Trainer, "step", real_step)
    resumed = Trainer(config(bert, tmp_path / "b", max_steps=6, checkpoint_every=3), records=records)
    resumed.train(resume=True)
    assert resumed.state["global_step"] == 6
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)

    def steps(directory):
        records = [json.loads(line) for line in (directory / "run" / "log.jsonl").read_text().splitlines()]
        return [(r["step"], round(r["loss"], 5)) for r in records if "loss" in r]

    assert steps(tmp_path / "b") == steps(tmp_path / "a")  # each step once, with the uninterrupted run's losses
    assert [step for step, _ in steps(tmp_path / "b")] == [1, 2, 3, 4, 5, 6]


def test_a_resume_with_settings_that_change_the_run_is_refused_and_keeps_config_yaml(bert, tmp_path, caplog):
    import logging

    from haystack_dcsr.training.checkpoints import CheckpointError

    records = make_records(24)
    Trainer(config(bert, tmp_path, max_steps=2, checkpoint_every=1), records=records).train(resume=False)
    saved = (tmp_path / "run" / "config.yaml").read_text()
    changed = Trainer(config(bert, tmp_path, max_steps=2, checkpoint_every=1, batch_size=4, seed=9), records=records)
    with pytest.raises(CheckpointError, match=r"other settings \(batch_size: 8 -> 4; seed: 3 -> 9\)"):
        changed.train(resume=True)
    assert (tmp_path / "run" / "config.yaml").read_text() == saved
    # its length and where and how often it writes may change, and are logged
    with caplog.at_level(logging.WARNING):
        Trainer(config(bert, tmp_path, max_steps=3, checkpoint_every=1, log_every=5), records=records).train()
    assert "changed settings: max_steps: 2 -> 3; log_every: 0 -> 5" in caplog.text
    assert (tmp_path / "run" / "config.yaml").read_text() == saved


def test_a_run_killed_before_its_first_checkpoint_logs_each_step_once(bert, tmp_path):
    """A child process, killed (SIGKILL) after it logged some steps and before any checkpoint;
    the run started again logs steps 1..N once each."""
    import signal
    import time

    def train_forever(out):
        Trainer(config(bert, tmp_path, max_steps=100000), records=make_records(24)).train(resume=True)

    pid, out = forked(train_forever, tmp_path)
    log = tmp_path / "run" / "log.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and (not log.is_file() or len(log.read_text().splitlines()) < 2):
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    assert exit_code(pid) == -signal.SIGKILL
    out.close()
    assert len(log.read_text().splitlines()) >= 2 and not list((tmp_path / "run").glob("checkpoint-*"))
    Trainer(config(bert, tmp_path, max_steps=3), records=make_records(24)).train(resume=True)
    steps = [json.loads(line)["step"] for line in log.read_text().splitlines() if "loss" in json.loads(line)]
    assert steps == [1, 2, 3]


@pytest.mark.parametrize("text, kind", [("- lr: 1\n- seed: 2\n", "list"), ("just words\n", "str")])
def test_a_config_file_of_the_wrong_shape_is_refused_by_name(tmp_path, text, kind):
    from haystack_dcsr.training.config import ConfigError

    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=f"c.yaml: a config file is a mapping of settings .* not a {kind}"):
        TrainConfig.from_yaml(tmp_path / "c.yaml")


def _first_step(model, directory, out, grad_cache_chunk=None, world=1, rank=0):
    """The first batch's loss and gradients (scaled to the global batch), saved by rank 0 to ``out``."""
    torch.set_num_threads(1)
    trainer = Trainer(
        config(model, directory, max_steps=1, grad_cache_chunk=grad_cache_chunk, device="cpu"), records=make_records(24)
    )
    samples = batches(trainer.builder.epoch(trainer.records, 0), trainer.config.batch_size)[0]
    trainer.model.train()
    loss, _ = trainer.loss(make_batch(samples))
    (loss * world).backward()
    if grad_cache_chunk:
        trainer._cached.replay(trainer.ddp.no_sync if world > 1 else contextlib.nullcontext, True)
    grads = {
        name: (p.grad if p.grad is not None else torch.zeros_like(p)).clone()
        for name, p in trainer.model.named_parameters()
    }
    if rank == 0:
        torch.save({"loss": float(loss), "grads": grads}, out)


def _ddp_rank(rank, model, directory, world, port, grad_cache_chunks):
    """One rank of a gloo group: the first step once per gradient-cache setting, in one process group."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank)
    )
    for chunk in grad_cache_chunks:
        _first_step(model, directory / f"ddp{chunk}", directory / f"ddp{chunk}.pt", chunk, world, rank)
    torch.distributed.destroy_process_group()


def test_ddp_with_two_gloo_processes_matches_one_process(bert_no_dropout, tmp_path):
    """Two ranks, with and without the gradient cache, = one plain process on the same global batch."""
    _first_step(bert_no_dropout, tmp_path / "single", tmp_path / "single.pt")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chunks = (None, 2)
    # forked ranks start with this process's imports (a spawned rank re-imports this module and Haystack: ~13 s)
    mp.start_processes(
        _ddp_rank, args=(bert_no_dropout, tmp_path, 2, port, chunks), nprocs=2, join=True, start_method="fork"
    )
    single = torch.load(tmp_path / "single.pt")
    for chunk in chunks:
        ddp = torch.load(tmp_path / f"ddp{chunk}.pt")
        assert ddp["loss"] == pytest.approx(single["loss"], rel=1e-5), chunk
        assert single["grads"].keys() == ddp["grads"].keys()
        for name in single["grads"]:
            torch.testing.assert_close(ddp["grads"][name], single["grads"][name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("level", ["sentence", "passage"])
def test_gradient_cache_gives_the_plain_steps_losses_and_gradients(bert_no_dropout, tmp_path, level):
    records = make_records(16)
    extra = dict(level="passage", negatives="dpr") if level == "passage" else {}
    runs = {}
    for chunk in (None, 3):
        trainer = Trainer(
            config(bert_no_dropout, tmp_path / f"gc{chunk}", max_steps=2, grad_cache_chunk=chunk, **extra),
            records=records,
        )
        grads = []
        step = trainer.optimizer.step

        def capture(*args, **kwargs):
            grads.append({n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None})
            return step(*args, **kwargs)

        trainer.optimizer.step = capture
        history = trainer.train(resume=False)
        runs[chunk] = ([h["loss"] for h in history], grads)
    (plain_loss, plain_grads), (cached_loss, cached_grads) = runs[None], runs[3]
    assert cached_loss == pytest.approx(plain_loss, rel=1e-5)
    for plain, cached in zip(plain_grads, cached_grads):
        assert plain.keys() == cached.keys() and len(plain) > 10
        for name, grad in plain.items():
            torch.testing.assert_close(cached[name], grad, rtol=1e-3, atol=1e-6)


def test_a_run_stopped_mid_epoch_is_validated_at_its_end(bert, tmp_path):
    records = make_records(24)  # 3 steps an epoch at batch 8
    Trainer(config(bert, tmp_path, max_steps=4), records=records, dev_records=records[:8]).train(resume=False)
    lines = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines if "dev_accuracy" in line] == [3, 4]


def test_device_knob_rejects_unknown_devices_and_a_missing_gpu(bert, tmp_path):
    with pytest.raises(ValueError, match="device must be"):
        config(bert, tmp_path, device="tpu")
    trainer = Trainer(config(bert, tmp_path, device="cpu", max_steps=1), records=make_records(8))
    assert trainer.device.type == "cpu" and trainer.query.model.device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            Trainer(config(bert, tmp_path, device="cuda"), records=make_records(8))


def test_gradient_cache_replays_each_chunk_with_its_own_dropout_masks(bert, tmp_path, monkeypatch):
    """With dropout on, the re-encoding that carries the gradients must reproduce the cached
    vectors (same RNG state), or the gradients belong to a different loss."""
    from haystack_dcsr.training import grad_cache

    original = grad_cache.CachedPass._run

    def largest_replay_gap(directory):
        passes = {False: [], True: []}

        def recording_run(self, side, windows, n):
            vectors = original(self, side, windows, n)
            passes[torch.is_grad_enabled()].append(vectors.detach().clone())
            return vectors

        monkeypatch.setattr(grad_cache.CachedPass, "_run", recording_run)
        Trainer(config(bert, directory, max_steps=2, grad_cache_chunk=3), records=make_records(16)).train(resume=False)
        assert len(passes[False]) == len(passes[True]) > 4
        return max(float((a - b).abs().max()) for a, b in zip(passes[False], passes[True]))

    assert largest_replay_gap(tmp_path / "restored") < 1e-6
    monkeypatch.setattr(torch, "set_rng_state", lambda state: None)  # control: no restore, other masks
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device=None: None)
    assert largest_replay_gap(tmp_path / "not_restored") > 1e-3


def test_towers_from_two_bases_train_serve_and_record_one_temperature(bert, tmp_path, caplog):
    """A query tower whose base says 0.05 and a passage tower whose base says 1.0: the loss, validation and
    dcsr_model.json all use the query tower's (the one a served model reads), with a warning naming both."""
    import json

    from haystack_dcsr import DCSRModel

    cosine = make_tiny_bert(tmp_path / "cosine", max_length=128, normalize=True, temperature=0.05)
    records = make_records(8)
    settings = config(
        bert, tmp_path, query_model=cosine, passage_model=bert, max_steps=1, pooling="mean", normalize=True
    )
    with caplog.at_level("WARNING"):
        trainer = Trainer(settings, records=records)
    assert "temperatures 0.05 (query) and 1.0 (passage): training with 0.05" in caplog.text
    assert trainer.qp.temperature == 0.05
    trainer.train(resume=False)
    assert json.loads((tmp_path / "run" / "last" / "dcsr_model.json").read_text())["temperature"] == 0.05
    assert DCSRModel.from_pretrained(str(tmp_path / "run" / "last"), use_gpu=False).temperature == 0.05
