"""benchmarks/ as a user meets it: a few entry points that answer --help, studies apart, no recipe values outside
trainer/configs/, and nothing that describes one particular remote machine instead of "a machine with CUDA torch"."""

import ast
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
ENTRY_POINTS = sorted(p for p in BENCHMARKS.iterdir() if p.suffix in (".py", ".sh"))
SCRIPTS = sorted(p for p in BENCHMARKS.rglob("*") if p.suffix in (".py", ".sh") and "results" not in p.parts)
RECIPE_KEYS = ("lr", "head_lr", "marker_lr", "warmup_steps", "marker_warmup_steps", "max_steps", "epochs", "batch_size")


def test_a_few_entry_points_each_listed_in_the_readme():
    names = [p.name for p in ENTRY_POINTS]
    assert 1 <= len(names) <= 8, names
    readme = (BENCHMARKS / "README.md").read_text()
    assert [name for name in names if name not in readme] == []


def test_every_entry_point_answers_help():
    def help_of(path: Path):
        command = ["bash", str(path)] if path.suffix == ".sh" else [sys.executable, str(path)]
        done = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=300, cwd=ROOT)
        return path.name, done.returncode, done.stdout

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(help_of, ENTRY_POINTS))
    for name, code, text in answers:
        assert code == 0 and len(text.split()) > 10, (name, code, text[-500:])
    subcommands = dict((name, text) for name, _, text in answers)
    assert "ann" in subcommands["scale.py"] and "towers" in subcommands["speed.py"]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_every_script_has_help(path):
    """Studies and the parts in lib/ are checked by reading them (running each would import torch 30 times)."""
    text = path.read_text()
    if path.suffix == ".sh":
        sourced = path.parent.name == "lib"  # sourced by the scripts, never run
        assert sourced or '"${1:-}" == --help' in text, f"{path.name} does not answer --help"
        return
    tree = ast.parse(text)
    runs = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    if runs:
        assert "ArgumentParser(" in text or "dispatch(" in text, f"{path.name} runs without an argument parser"


def _recipe_values(path: Path):
    """(line, text) of every learning rate, warm-up, step count, epoch count or batch size a script writes itself."""
    text = path.read_text()
    found = []
    if path.suffix == ".sh":
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(rf"--set ({'|'.join(RECIPE_KEYS)})=[\"']?[0-9]", code):
                found.append((number, line.strip()))
        return found
    for node in ast.walk(ast.parse(text)):
        pairs = []
        if isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            training = callee in ("dict", "TrainConfig", "CrossEncoderTrainConfig")
            keys = [key for key in RECIPE_KEYS if training or key != "batch_size"]  # elsewhere: inference batches
            pairs = [(k.arg, k.value) for k in node.keywords if k.arg in keys]
        elif isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
            pairs = [(k, v) for k, v in pairs if k in RECIPE_KEYS]
        for key, value in pairs:
            if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and value.value not in (0, 1):
                found.append((node.lineno, f"{key}={value.value}"))
    return found


def test_no_recipe_value_outside_trainer_configs():
    written = {str(p.relative_to(ROOT)): _recipe_values(p) for p in SCRIPTS}
    assert {name: lines for name, lines in written.items() if lines} == {}


def test_the_recipe_check_finds_a_written_value(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("config = dict(lr=3e-5, batch_size=32)\nencode(texts, batch_size=256)\n")
    shell = tmp_path / "x.sh"
    shell.write_text("dcsr-train train --set warmup_steps=20  # --set lr=1 in a comment is fine\n")
    assert _recipe_values(script) == [(1, "lr=3e-05"), (1, "batch_size=32")]
    assert _recipe_values(shell) == [(1, "dcsr-train train --set warmup_steps=20  # --set lr=1 in a comment is fine")]


# written in two parts so that this file does not match itself
REMOTE_PHRASES = ["dev" + "ice tool", "carry" + r" \.", r"\$" + "OUT", "dev" + "ice machine", "dev" + "ice call"]


def test_nothing_names_a_remote_execution_setup():
    listed = subprocess.run(
        ["git", "grep", "-nE", "|".join(REMOTE_PHRASES)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert listed.stdout == ""


def test_cost_growth_without_the_ann_cache_says_which_command_makes_it(monkeypatch, tmp_path, capsys):
    from benchmark_scripts import load_benchmark

    cost_growth = load_benchmark("cost_growth")
    monkeypatch.setattr(cost_growth, "VECTORS", cost_growth.ROOT / "benchmarks" / "cache" / "no-such" / "v.npy")
    monkeypatch.setattr("sys.argv", ["cost_growth.py", "--sizes", "1000", "--out", str(tmp_path / "r.json")])
    with pytest.raises(SystemExit) as stop:
        cost_growth.main()
    assert stop.value.code == 2
    assert "scale.py presets --prepare-only" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


def test_scale_report_tables_the_growth_report_and_leaves_side_studies_alone(monkeypatch, tmp_path):
    """`scale.py report` on the shipped results: the growth table from cost_growth.json (one row a size, the 1M
    build's peak RAM in it), and a side study with its own layout beside it (cost_growth_200k_columns.json) is
    not read as a growth report."""
    import shutil

    from benchmark_scripts import load_benchmark

    for name in ("cost_growth.json", "cost_growth_200k_columns.json"):
        shutil.copy(BENCHMARKS / "results" / name, tmp_path / name)
    scale_report = load_benchmark("scale_report")
    monkeypatch.setattr(scale_report, "RESULTS", tmp_path)
    monkeypatch.setattr("sys.argv", ["scale_report.py"])
    scale_report.main()
    rows = [line for line in (tmp_path / "cost_growth.md").read_text().splitlines() if line.startswith("| 1,000,000")]
    report = json.loads((tmp_path / "cost_growth.json").read_text())
    million = next(r for r in report["rows"] if r["size"] == 1_000_000)["build"]["build_peak_rss_gib"]
    assert len(rows) == 1 and f"| {million} |" in rows[0] and million <= 8
    assert (tmp_path / "cost_growth.svg").read_text().lstrip().startswith("<?xml")


def test_results_hold_only_what_the_documentation_cites():
    """benchmarks/results/ keeps the files the README and the product docs cite (plus the data a report is rebuilt
    from), at most 60; the research notes name older files, which git history keeps."""
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert 0 < len(tracked) <= 60
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    pages += [p for p in (ROOT / "docs").rglob("*.md") if "research" not in p.parts]
    cited = "\n".join(p.read_text() for p in pages)
    report_inputs = {"ann_study.json", "cost_growth.md", "squad_open_zero_shot.json", "README.md"}
    uncited = [
        path
        for path in tracked
        if path.removeprefix("benchmarks/results/") not in cited
        and path.removeprefix("benchmarks/results/") not in report_inputs
    ]
    assert uncited == []
