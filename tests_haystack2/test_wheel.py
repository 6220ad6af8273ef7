"""The wheel installed in a clean environment beside haystack-ai runs the README's 2.x quick start
(offline; see ``tests/wheel_check.py``)."""

import re

from wheel_check import ROOT, build, clean_venv, run_in


def test_the_installed_wheel_runs_the_2x_quick_start(tmp_path):
    wheel, _ = build(tmp_path / "dist")
    python = clean_venv(tmp_path / "venv", wheel)
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Haystack 2.x quick start")
    quick_start = re.search(r"```python\n(.*?)```", readme[start:], re.S).group(1)
    code = (
        "import haystack_dcsr\n"
        f"assert haystack_dcsr.__file__.startswith({str(tmp_path / 'venv')!r}), haystack_dcsr.__file__\n"
        + quick_start
        + "\nprint('TOP', best[0].content)\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    result = run_in(python, code, cwd=work)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "TOP Paris is the capital of France. The Eiffel Tower was completed in 1889." in result.stdout
