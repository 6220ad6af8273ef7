"""BM25 mining through a real ElasticsearchDocumentStore; runs only where ELASTICSEARCH_URL is set."""

import json
import os

import pytest

from haystack_dcsr.haystack1.mining import bm25_retriever
from haystack_dcsr.training.data import Passage, Record
from haystack_dcsr.training.mining import mine_hard_negatives, retriever_search

URL = os.environ.get("ELASTICSEARCH_URL")
pytestmark = [
    pytest.mark.elasticsearch,
    pytest.mark.skipif(not URL, reason="ELASTICSEARCH_URL is not set: no Elasticsearch server to mine against"),
]


def test_elasticsearch_and_embedded_bm25_mine_the_same_negatives(tmp_path):
    texts = [
        "the cat sat on the mat",
        "a dog chased the cat",
        "stock markets fell sharply today",
        "the mat was red",
        "dogs and cats are pets",
        "markets rallied after the news",
    ]
    passages = [Passage("t", text, f"d{i}") for i, text in enumerate(texts)]
    records = [Record("where did the cat sit?", ["mat"], [passages[0]]), Record("what fell?", ["stock"], [passages[2]])]
    outputs = {}
    for name, url in [("es", URL), ("embedded", None)]:
        retriever = bm25_retriever(passages, elasticsearch_url=url, index=f"dcsr_test_{name}")
        search = retriever_search(retriever)
        mine_hard_negatives(records, search, tmp_path / f"{name}.jsonl", top_k=3, progress_bar=False)
        outputs[name] = [
            [c["passage_id"] for c in json.loads(line)["hard_negative_ctxs"]]
            for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()
        ]
    assert outputs["es"] == outputs["embedded"]
