"""Haystack 2.x suite: runs in its own environment (`.venv2`, haystack-ai), never beside farm-haystack."""

import os
import sys
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # helpers shared with 1.x
from worker_threads import share_cores_between_workers  # noqa: E402

share_cores_between_workers()

import pytest  # noqa: E402
from corpus import CORPUS, QUESTIONS  # noqa: E402, F401  (tests import them from here)
from haystack import Document  # noqa: E402


@pytest.fixture
def passages():
    return [
        Document(
            id=title, content=text, meta={"title": title, "kind": "city" if title in ("Paris", "Berlin") else "other"}
        )
        for title, text in CORPUS
    ]
