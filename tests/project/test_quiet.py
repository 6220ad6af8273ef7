"""Importing the package and loading YAML never tries to download nltk data, online or offline."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_and_yaml_load_print_nothing_and_download_nothing(tmp_path):
    code = f"""
import nltk
def download(*args, **kwargs):
    print("DOWNLOAD CALLED", args)
    return False
nltk.download = download  # what an online machine would run
import haystack_dcsr
from haystack_dcsr import load_pipeline
load_pipeline({str(ROOT / "examples/pipelines/indexing.haystack-pipeline.yml")!r}, pipeline_name="indexing")
print("LOADED")
"""
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
            "HAYSTACK_TELEMETRY_ENABLED": "False",
        },
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "LOADED" in result.stdout and "DOWNLOAD CALLED" not in result.stdout
    assert "nltk_data" not in result.stderr and "punkt" not in result.stderr
