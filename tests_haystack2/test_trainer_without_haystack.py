"""The standalone trainer needs no Haystack: ``dcsr-train build-model`` runs every stage (BM25 and dense
mining included) in a process where importing ``haystack`` fails, and its model ranks with the core alone."""

import json
import subprocess
import sys
from pathlib import Path

from corpus import tiny_squad
from tiny_models import make_tiny_bert

ROOT = Path(__file__).resolve().parents[1]
BLOCK_HAYSTACK = "import sys; sys.modules['haystack'] = None  # any `import haystack...` now raises ImportError\n"


def test_build_model_runs_every_stage_with_haystack_unimportable(tmp_path):
    base = make_tiny_bert(tmp_path / "base", max_length=128)
    data = tiny_squad(tmp_path / "train.json")
    out = tmp_path / "model"
    settings = ["base_model=" + str(base), "max_steps=2", "max_passage_length=64", "precision=fp32", "batch_size=8"]
    args = ["build-model", "--data", str(data), "--out", str(out)] + [a for s in settings for a in ("--set", s)]
    script = (
        BLOCK_HAYSTACK
        + "from haystack_dcsr.training.cli import main\n"
        + f"main({json.dumps(args)})\n"
        + "assert 'haystack_dcsr.haystack1' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    stages = {p.name for p in (out / "work").glob("*.done")}
    assert stages == {f"{s}.done" for s in ("data", "bm25", "first", "dense", "hard", "card")}
    mined = [json.loads(line) for line in (out / "work" / "train_hard.jsonl").read_text().splitlines()]
    assert len(mined) == 16 and all(r["hard_negative_ctxs"] for r in mined)
    assert all(r["answers"][0] not in n["text"] for r in mined for n in r["hard_negative_ctxs"])

    ranked = subprocess.run(
        [sys.executable, "-c", BLOCK_HAYSTACK + RANK.format(model=str(out))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ranked.returncode == 0, ranked.stderr[-3000:]
    assert json.loads(ranked.stdout) == {"passages": 16, "ranked": 5}


RANK = """
import json
from haystack_dcsr import DCSRModel
from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
model = DCSRModel.from_pretrained({model!r}, use_gpu=False)
texts = ["The capital of country %d is city %d. It rains." % (i, i) for i in range(16)]
units = model.passage_units(texts)
index = ExactSentenceIndex(model.encode_passages(units), [len(u) for u in units])
queries = model.encode_queries(["what is the capital of country 3?"])
ranked = index.rank_passage_numbers(queries, model.temperature, top_k=5)[0]
print(json.dumps({{"passages": len(units), "ranked": len(ranked.passages)}}))
"""
