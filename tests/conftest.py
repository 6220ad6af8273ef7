"""Shared fixtures: a tiny random BERT (fast, deterministic) and a small corpus with known answers."""

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sys
from pathlib import Path

# the tests are folders by layer (core, haystack1, training, benchmarks, project); their helpers live in support/
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from worker_threads import share_cores_between_workers  # noqa: E402

share_cores_between_workers()  # before anything imports torch

# what only the benchmarks need (evaluation tables, significance tests) lives in benchmarks/lib/, importable here
sys.path.append(str(Path(__file__).resolve().parents[1] / "benchmarks" / "lib"))

import pytest  # noqa: E402
from corpus import CITIES, CORPUS, COUNTRIES, FILLER, QUESTIONS  # noqa: E402, F401  (tests import them from here)
from tiny_models import MINILM, make_tiny_bert  # noqa: E402, F401  (tests import MINILM from here)


@pytest.fixture(scope="module")
def int8_on_any_cpu():
    """int8 served even on a CPU where it does not pay (where ``quantize="int8"`` falls back to fp32): for
    the tests of the int8 path itself, which must pass on every CPU. Module-scoped, so that a module's one
    compiled int8 model (a module-scoped fixture) is built under it."""
    from haystack_dcsr.core.model.int8 import FORCE_INT8

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FORCE_INT8, "1")
        yield


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """Marker pooling, 64-token windows: small enough that a few sentences already need windowing."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_bert_mean(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert_mean"), pooling="mean", normalize=True, temperature=0.05)


@pytest.fixture
def corpus():
    from haystack.schema import Document  # Haystack 1.x: imported here so tests/core also runs in the 2.x environment

    return [Document(content=text, meta={"title": title}) for title, text in CORPUS]


def make_records(n=24, seed=0):
    """Synthetic QA records: each passage names one country's capital among filler sentences; the
    question asks for it; hard negatives are other countries' passages."""
    import random

    from haystack_dcsr.training.data import Passage, Record

    rng = random.Random(seed)
    passages = []
    for i in range(n):
        country, city = COUNTRIES[i % len(COUNTRIES)], CITIES[i % len(CITIES)]
        sentences = rng.sample(FILLER, 2) + [f"the capital of {country} is {city}."]
        rng.shuffle(sentences)
        passages.append(Passage(title=country, text=" ".join(s.capitalize() for s in sentences), passage_id=f"p{i}"))
    records = []
    for i, passage in enumerate(passages):
        others = [p for j, p in enumerate(passages) if j != i]
        records.append(
            Record(
                question=f"what is the capital of {COUNTRIES[i % len(COUNTRIES)]}?",
                answers=[CITIES[i % len(CITIES)]],
                positives=[passage],
                hard_negatives=rng.sample(others, 3),
            )
        )
    return records


def with_meqs(records, every=2):
    """Every ``every``-th record gets the next record as a stand-in MEQ (its gold differs)."""
    import dataclasses

    out = [dataclasses.replace(r) for r in records]
    for i in range(0, len(out) - 1, every):
        out[i].negative_questions = [dataclasses.replace(records[i + 1], hard_negatives=[])]
    return out
