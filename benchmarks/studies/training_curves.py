"""Loss curves of trainer runs, for the README: copies each run's log.jsonl into
benchmarks/results/training/, writes a summary JSON and an SVG of the (10-step moving average) loss.

    .venv/bin/python benchmarks/studies/training_curves.py DCSR=runs/cpu_dcsr DPR=runs/cpu_dpr
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]

from plot import line_chart  # noqa: E402

OUT = Path("benchmarks/results/training")


def moving_average(values, window: int = 10):
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def main(specs) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    curves, summary = {}, {}
    for spec in specs:
        name, _, run = spec.partition("=")
        lines = [json.loads(line) for line in (Path(run) / "log.jsonl").read_text().splitlines() if line.strip()]
        steps = [r for r in lines if "loss" in r]
        shutil.copy(Path(run) / "log.jsonl", OUT / f"{name.lower()}.log.jsonl")
        losses = [r["loss"] for r in steps]
        curves[name] = ([r["step"] for r in steps], moving_average(losses))
        summary[name] = {
            "run": run,
            "steps": len(steps),
            "loss_first_10": sum(losses[:10]) / 10,
            "loss_last_10": sum(losses[-10:]) / 10,
            "validation": [r for r in lines if any(k.startswith("dev_") for k in r)],
        }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    (OUT / "loss.svg").write_text(
        line_chart(
            curves,
            title="Training loss (QP, 10-step moving average)",
            x_label="step (32 questions each)",
            y_label="loss",
            markers=False,
        )
    )
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR", help="a label and a trainer run folder")
    main(parser.parse_args().runs)
