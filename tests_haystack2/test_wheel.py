"""The wheel installed with ``[haystack2]`` and its dependencies in an isolated environment runs the README's 2.x
quick start (offline; see ``tests/support/wheel_check.py``)."""

from wheel_check import build, clean_venv, quick_start_in


def test_the_installed_wheel_runs_the_2x_quick_start(tmp_path):
    wheel, _ = build(tmp_path / "dist")
    python = clean_venv(tmp_path / "venv", wheel, ("haystack2",))
    work = tmp_path / "work"
    work.mkdir()
    result = quick_start_in(
        python, "## Haystack 2.x quick start", tmp_path / "venv", "print('TOP', best[0].content)", work
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "TOP Paris is the capital of France. The Eiffel Tower was completed in 1889." in result.stdout
