"""Seconds per query-side tuning step of one code tree, to compare two commits side by side in one run.

    git worktree add /tmp/before <commit>
    for t in /tmp/before . /tmp/before .; do .venv/bin/python benchmarks/studies/query_side_step_time.py $t 100; done

The tree is put first on ``sys.path`` (checked), trainer/configs/squad_dcsr_query_side.yaml is read from
the current directory, the frozen index is encoded outside the timed part, no dev check, no checkpoints
but the final save. Prints one JSON line per run.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("tree", type=Path, help="a checkout of the repository (its haystack_dcsr is timed)")
parser.add_argument("steps", type=int, help="training steps to time")
_args = parser.parse_args()
tree, steps = str(_args.tree.resolve()), _args.steps
sys.path.insert(0, tree)
import haystack_dcsr  # noqa: E402

assert haystack_dcsr.__file__.startswith(tree), f"{haystack_dcsr.__file__} is not under {tree}"
from haystack_dcsr.training.config import TrainConfig  # noqa: E402
from haystack_dcsr.training.engine import Trainer  # noqa: E402

with tempfile.TemporaryDirectory() as out:
    overrides = [f"max_steps={steps}", "dev_file=null", f"output_dir={out}", "checkpoint_every=0", "log_every=1000"]
    config = TrainConfig.from_yaml("trainer/configs/squad_dcsr_query_side.yaml", overrides)
    start = time.perf_counter()
    trainer = Trainer(config)
    indexed = time.perf_counter()
    trainer.train(resume=False)
    done = time.perf_counter()
print(
    json.dumps(
        {
            "tree": tree,
            "index_s": round(indexed - start, 1),
            "steps": steps,
            "s_per_step": round((done - indexed) / steps, 3),
        }
    )
)
