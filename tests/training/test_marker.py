"""The <sent> marker's own start, learning rate and warm-up (training/marker.py)."""

import pytest
import torch
from conftest import make_records, make_tiny_bert
from test_engine import config  # the same small CPU settings
from transformers import get_linear_schedule_with_warmup

from haystack_dcsr.core.model.encoder import PassageTower, QueryTower
from haystack_dcsr.training.engine import Trainer
from haystack_dcsr.training.marker import MarkerOffset, initialise_marker, learning_rate_schedule


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("marker_bert"), max_length=128)


def marker_row(tower):
    return tower.model.get_input_embeddings().weight[tower.marker_id].detach().clone()


def test_without_a_marker_warmup_the_schedule_is_transformers_linear_one():
    params = [torch.nn.Parameter(torch.zeros(1))]
    ours = learning_rate_schedule(torch.optim.SGD(params, lr=1.0), warmup_steps=4, total_steps=20)
    theirs = get_linear_schedule_with_warmup(torch.optim.SGD(params, lr=1.0), 4, 20)
    for _ in range(22):
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr())
        ours.step(), theirs.step()


def test_marker_warmup_holds_the_towers_at_zero_while_the_marker_group_warms_up():
    groups = [{"params": [torch.nn.Parameter(torch.zeros(1))]}, {"params": [torch.nn.Parameter(torch.zeros(1))]}]
    schedule = learning_rate_schedule(torch.optim.SGD(groups, lr=1.0), 2, 12, marker_warmup_steps=4)
    seen = []
    for _ in range(12):
        seen.append(schedule.get_last_lr())
        schedule.step()
    assert [towers for towers, _ in seen[:5]] == [0, 0, 0, 0, 0]  # 4 marker-only steps, then a warm-up from 0
    assert seen[5][0] == pytest.approx(0.5) and seen[6][0] == pytest.approx(1.0)
    assert [marker for _, marker in seen[:3]] == pytest.approx([0, 0.5, 1.0])


def test_initialisation_choices(bert):
    tower = QueryTower(bert, pooling="marker", device="cpu")
    weight = tower.model.get_input_embeddings().weight
    initialise_marker(tower, "mean")
    others = torch.cat([weight[: tower.marker_id], weight[tower.marker_id + 1 :]])
    torch.testing.assert_close(marker_row(tower), others.mean(0))
    initialise_marker(tower, "cls")
    torch.testing.assert_close(marker_row(tower), weight[tower.tokenizer.cls_token_id].detach())
    initialise_marker(tower, "random", torch.Generator().manual_seed(0))
    assert 0.005 < float(marker_row(tower).std()) < 0.05  # initializer_range 0.02
    with pytest.raises(ValueError, match="marker_init must be one of"):
        initialise_marker(tower, "zeros")


def test_the_offset_moves_only_the_marker_and_folds_back_bit_for_bit(bert):
    tower = PassageTower(bert, pooling="marker", device="cpu")
    offset = MarkerOffset(tower)
    before = tower.encode([["First sentence here.", "Second one there."]])
    shift = torch.randn(offset.offset.shape, generator=torch.Generator().manual_seed(0))  # a constant would
    with torch.no_grad():  # vanish in the embeddings' LayerNorm
        offset.offset += shift
    moved = tower.encode([["First sentence here.", "Second one there."]])
    assert abs(moved - before).max() > 1e-3
    row = marker_row(tower)
    with offset.folded():  # what a saved tower holds: the offset in the row, the hook off
        torch.testing.assert_close(marker_row(tower), row + shift)
        torch.testing.assert_close(tower.encode([["First sentence here.", "Second one there."]]), moved)
    assert torch.equal(marker_row(tower), row)
    torch.testing.assert_close(tower.encode([["First sentence here.", "Second one there."]]), moved)


def test_marker_warmup_trains_only_the_marker_then_everything_and_saves_what_it_trained(bert, tmp_path):
    records = make_records(24)
    settings = dict(max_steps=6, marker_lr=5e-2, marker_warmup_steps=3, lr=1e-3)
    trainer = Trainer(config(bert, tmp_path, **settings), records=records, dev_records=records)
    start = {k: v.clone() for k, v in trainer.query.model.state_dict().items()}
    trainer.total_steps = 3
    trainer.train(resume=False)
    assert all(torch.equal(v, start[k]) for k, v in trainer.query.model.state_dict().items())  # towers frozen
    offsets = {name: m.offset.detach().clone() for name, m in trainer.markers.items()}
    assert all(float(o.norm()) > 0.05 for o in offsets.values())  # ~marker_lr per coordinate and step
    trainer.total_steps = 6
    trainer.train(resume=True)
    changed = [k for k, v in trainer.query.model.state_dict().items() if not torch.equal(v, start[k])]
    assert len(changed) > 10  # then the towers train too
    served = QueryTower(str(tmp_path / "run" / "last" / "query_encoder"), device="cpu")
    trainer.model.eval()
    torch.testing.assert_close(
        served.encode(["what is the capital of France?"]), trainer.query.encode(["what is the capital of France?"])
    )
    assert torch.equal(marker_row(served), marker_row(trainer.query) + trainer.markers["query"].offset.detach())


def test_resumed_run_restores_the_marker_offsets(bert, tmp_path):
    records = make_records(24)
    settings = dict(max_steps=4, checkpoint_every=2, marker_lr=1e-2)
    straight = Trainer(config(bert, tmp_path / "a", **settings), records=records)
    straight.train(resume=False)
    first = Trainer(config(bert, tmp_path / "b", **settings), records=records)
    first.total_steps = 2
    first.train(resume=False)
    resumed = Trainer(config(bert, tmp_path / "b", **settings), records=records)
    resumed.train(resume=True)
    assert set(resumed.markers) == {"query", "passage"}
    for name, marker in straight.markers.items():
        assert float(marker.offset.norm()) > 0
        torch.testing.assert_close(resumed.markers[name].offset, marker.offset, rtol=0, atol=1e-6)


def test_marker_init_applies_to_new_markers_only(bert, tmp_path):
    records = make_records(16)
    first = Trainer(config(bert, tmp_path / "a", max_steps=1, marker_init="mean"), records=records)
    first.train(resume=False)
    trained_row = marker_row(first.query)
    second = Trainer(
        config(bert, tmp_path / "b", base_model=str(tmp_path / "a" / "run" / "last"), marker_init="random"),
        records=records,
    )
    assert torch.equal(marker_row(second.query), trained_row)  # a trained marker is kept


def test_marker_knobs_need_marker_pooling(bert, tmp_path):
    with pytest.raises(ValueError, match="need pooling 'marker', not 'mean'"):
        config(bert, tmp_path, pooling="mean", marker_lr=1e-3)
    with pytest.raises(ValueError, match="marker_init must be"):
        config(bert, tmp_path, marker_init="zeros")
