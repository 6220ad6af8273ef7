"""benchmarks/scale.py presets --only: the named settings, and a mistyped one refused before any work."""

import re
import sys
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

SCALE_DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "scale.md"


@pytest.fixture(scope="module")
def ann_study():
    return load_benchmark("ann_study")


def test_the_settings_the_docs_pass_to_only_are_ones_it_measures(ann_study):
    command = re.search(r"scale\.py presets --model \"DCSR-ft CPU=[^\n]*\n[^\n]*", SCALE_DOC.read_text()).group(0)
    named = re.findall(r'--only "([^"]+)"', command)
    assert named == ["Flat (top_n=1000)", "HNSW32,SQ8 (efSearch=1000, top_n=1000)"]
    assert set(named) <= {ann_study.label(*s) for s in ann_study.FT_SETTINGS}


def test_a_mistyped_setting_is_refused_naming_the_ones_there_are(ann_study, monkeypatch, capsys):
    monkeypatch.setattr(ann_study, "load_squad", lambda **_: pytest.fail("loaded data for a refused command"))
    monkeypatch.setattr(sys, "argv", ["ann_study.py", "--settings", "ft", "--only", "Flat (top_n=100)"])
    with pytest.raises(SystemExit) as stop:
        ann_study.main()
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "--only ['Flat (top_n=100)']: not in --settings ft (Flat (top_n=3000), Flat (top_n=1000)," in error
