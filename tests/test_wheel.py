"""The wheel and the sdist build, and the wheel installed in a clean environment runs the README's
1.x quick start, ``dcsr-train`` and ``python -m haystack_dcsr.serve`` (offline; see ``wheel_check``)."""

import re
import subprocess

import pytest
from wheel_check import build, clean_venv, quick_start_in, wheel_metadata, wheel_names


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheel")
    wheel, sdist = build(folder / "dist")
    return wheel, sdist, clean_venv(folder / "venv", wheel), folder


def test_the_wheel_holds_the_package_its_entry_point_and_extras(installed):
    wheel, sdist, _, _ = installed
    names = wheel_names(wheel)
    assert "haystack_dcsr/haystack1/retriever.py" in names and "haystack_dcsr/haystack2/retriever.py" in names
    assert "haystack_dcsr/training/cli.py" in names
    assert not any(name.startswith(("tests/", "benchmarks/", "examples/")) for name in names)
    assert "dcsr-train = haystack_dcsr.training.cli:main" in wheel_metadata(wheel, "entry_points.txt")
    metadata = wheel_metadata(wheel, "METADATA")
    for extra in ("haystack1", "haystack2", "haystack2-qdrant", "postgres"):
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
