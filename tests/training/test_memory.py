"""Training memory: measured in every log line, bounded by the gradient cache."""

import pytest
import torch
from conftest import make_records, make_tiny_bert
from test_engine import config

from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.memory import SavedActivations
from haystack_dcsr.training.samples import batches


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("memory_bert"), max_length=128)


def test_saved_activations_peak_is_what_autograd_holds_and_falls_back_when_freed():
    x = torch.randn(256, 256, requires_grad=True)
    with SavedActivations() as meter:
        y = (x * x).sum()  # saves x twice: 2 x 256 KiB
        assert meter.live == meter.peak == 2 * 256 * 256 * 4
        y.backward()
        del y
    assert meter.live == 0 and meter.peak == 2 * 256 * 256 * 4


def test_gradient_cache_bounds_what_a_step_holds_by_the_chunk_not_the_batch(bert, tmp_path):
    records = make_records(32)
    peaks = {}
    for chunk in (None, 4):
        trainer = Trainer(config(bert, tmp_path / str(chunk), batch_size=16, grad_cache_chunk=chunk), records=records)
        samples = batches(trainer.builder.epoch(records, 0), 16)[:1]
        with SavedActivations() as meter:
            trainer.step(samples)
        peaks[chunk] = meter.peak
    # 16 questions and ~30 passages in one graph vs 4 windows at a time
    assert peaks[4] < peaks[None] / 4


def test_every_log_line_carries_the_peak_memory(bert, tmp_path):
    history = Trainer(config(bert, tmp_path, max_steps=2), records=make_records(16)).train(resume=False)
    assert all(0.05 < h["peak_memory_gb"] < 64 for h in history)
