"""The wheel and the sdist build, and the wheel installed with its dependencies in an isolated environment runs
the README's 1.x quick start, ``dcsr-train build-model`` (a plan and a tiny build, outside the clone) and
``python -m haystack_dcsr.serve`` answering a query over HTTP (offline; see ``wheel_check``)."""

import json
import re
import subprocess
import zipfile

import pytest
from wheel_check import build, clean_venv, dependency_closure, quick_start_in, wheel_metadata, wheel_names

EXTRAS = ("haystack1", "serve")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheel")
    wheel, sdist = build(folder / "dist")
    return wheel, sdist, clean_venv(folder / "venv", wheel, EXTRAS), folder


def test_the_wheel_holds_the_package_its_entry_point_and_extras(installed):
    wheel, sdist, _, _ = installed
    names = wheel_names(wheel)
    assert "haystack_dcsr/haystack1/retriever.py" in names and "haystack_dcsr/haystack2/retriever.py" in names
    assert "haystack_dcsr/training/cli.py" in names
    assert {"haystack_dcsr/training/recipes/build_model.yaml", "haystack_dcsr/training/recipes/squad_dcsr.yaml"} <= set(
        names
    )  # the trainer's recipes ship with it
    assert "haystack_dcsr/training/recipes/studies.yaml" not in names  # the studies' stages stay in the clone
    assert not any(name.startswith(("tests/", "benchmarks/", "examples/")) for name in names)
    assert "dcsr-train = haystack_dcsr.training.cli:main" in wheel_metadata(wheel, "entry_points.txt")
    metadata = wheel_metadata(wheel, "METADATA")
    for extra in ("haystack1", "haystack2", "haystack2-qdrant", "haystack2-pgvector", "serve"):
        assert f"Provides-Extra: {extra}" in metadata
    assert re.search(r"Requires-Dist: farm-haystack.*extra == .haystack1.", metadata)
    assert re.search(r"Requires-Dist: haystack-ai.*extra == .haystack2.", metadata)
    assert sdist.name.startswith("haystack_dcsr-") and sdist.stat().st_size > 10_000


def test_the_installed_wheel_runs_the_quick_start_and_the_commands(installed, tmp_path):
    _, _, python, folder = installed
    check = "print('TOP', best[0].meta['dcsr_sentences'][0]['text'])"
    result = quick_start_in(python, "## Haystack 1.x quick start", folder / "venv", check, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "TOP The Eiffel Tower was completed in 1889." in result.stdout
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    help_text = subprocess.run(["dcsr-train", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert help_text.returncode == 0 and "build-contrast-set" in help_text.stdout
    serve = subprocess.run(
        [str(python), "-m", "haystack_dcsr.serve", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert serve.returncode == 0 and "127.0.0.1" in serve.stdout


def test_the_closure_follows_pyproject(installed, tmp_path):
    """The isolated install sees only what the wheel's metadata asks for: drop a dependency from it and the
    closure (hence the venv) lacks it. (cachetools and safetensors: direct dependencies the package imports.)"""
    wheel = installed[0]
    closure = {name.lower() for name in dependency_closure(wheel, EXTRAS)}
    assert {"cachetools", "safetensors", "farm-haystack", "fastapi", "uvicorn", "torch"} <= closure
    assert "pymilvus" not in closure and "pytest" not in closure  # extras not asked for stay out
    stripped = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(stripped, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                data = re.sub(rb"Requires-Dist: cachetools[^\n]*\n", b"", data)
            target.writestr(item, data)
    assert "cachetools" not in {name.lower() for name in dependency_closure(stripped, EXTRAS)}


def test_build_model_from_the_installed_wheel_outside_the_clone(installed, tmp_path, tiny_bert):
    """The shipped recipe, found with no trainer/configs/ around: --dry-run plans every stage, then a tiny build
    (2 steps a stage on a tiny BERT) writes a model directory."""
    from corpus import tiny_squad

    _, _, python, _ = installed
    data = tiny_squad(tmp_path / "train.json")
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = ["dcsr-train", "build-model", "--data", str(data), "--out", str(tmp_path / "model")]
    plan = subprocess.run([*command, "--dry-run"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert [line.split()[0] for line in plan.stdout.splitlines()] == [
        "data",
        "bm25",
        "first",
        "dense",
        "hard",
        "card",
        "total",
    ]
    assert "100 steps at 9 s (the recipe's seconds_per_step)" in plan.stdout and "for 16 of 16 questions" in plan.stdout
    tiny = ["base_model=" + tiny_bert, "max_steps=2", "max_passage_length=64", "precision=fp32", "batch_size=8"]
    tiny += ["retrieval_dev_passages=0"]
    built = subprocess.run(
        [*command, *[arg for setting in tiny for arg in ("--set", setting)]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    model = tmp_path / "model"
    assert json.loads((model / "dcsr_model.json").read_text())["level"]
    assert {p.stem for p in (model / "work").glob("*.done")} == {"data", "bm25", "first", "dense", "hard", "card"}


def test_the_installed_server_answers_a_query_over_http(installed, tmp_path, tiny_bert):
    from corpus import QUESTIONS
    from rest_server import Server, answers_in_process, ranked, saved_folder

    _, _, python, _ = installed
    path = saved_folder(tmp_path / "site", tiny_bert)
    server = Server(path, python=str(python), cwd=tmp_path).start()
    try:
        question = QUESTIONS[1][0]
        status, body = server.post("/query", {"query": question})
        assert status == 200 and ranked(body["documents"]) == answers_in_process(path)[question]
    finally:
        server.stop()
