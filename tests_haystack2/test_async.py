"""``run_async`` on the DCSR components, in pipelines run with ``Pipeline.run_async``: concurrent queries answer
what the synchronous components answer, indexing stores the same vectors, and queries running beside an async
writer each see the store before or after a write, never inside one."""

import asyncio

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from test_components import MODEL, indexing

from haystack_dcsr.haystack2 import (
    DCSRDocumentEmbedder,
    DCSREmbeddingRetriever,
    DCSRRetriever,
    DCSRSentenceSplitter,
    DCSRTextEmbedder,
)

QUESTIONS = [
    "When was the Eiffel Tower completed?",
    "Who discovered penicillin?",
    "What is the capital of Germany?",
    "Where is the Eiffel Tower?",
]


def answer(documents):
    return [(d.id, round(d.score, 6), d.content) for d in documents]


def test_concurrent_async_queries_answer_as_the_sync_components(passages):
    store = InMemoryDocumentStore()
    asyncio.run(indexing(store).run_async({"split": {"documents": passages}}))  # run_async on each component
    synced = InMemoryDocumentStore()
    indexing(synced).run({"split": {"documents": passages}})
    by_id = {d.id: d.embedding for d in synced.filter_documents()}
    assert {d.id for d in store.filter_documents()} == set(by_id)
    assert all(np.allclose(d.embedding, by_id[d.id], atol=1e-5) for d in store.filter_documents())

    sync = DCSRRetriever(document_store=store, model=MODEL, top_k=3)
    expected = {q: answer(sync.run(query=q)["documents"]) for q in QUESTIONS}
    one = Pipeline()
    one.add_component("retrieve", DCSRRetriever(document_store=store, model=MODEL, top_k=3))
    split = Pipeline()
    split.add_component("embed", DCSRTextEmbedder(model=MODEL))
    split.add_component("retrieve", DCSREmbeddingRetriever(document_store=store, model=MODEL, top_k=3))
    split.connect("embed.embedding", "retrieve.query_embedding")

    async def ask_all():
        runs = [one.run_async({"retrieve": {"query": q}}) for q in QUESTIONS * 2]
        runs += [split.run_async({"embed": {"text": q}}) for q in QUESTIONS * 2]
        return await asyncio.gather(*runs)

    results = asyncio.run(ask_all())
    for question, result in zip(QUESTIONS * 4, results):
        assert answer(result["retrieve"]["documents"]) == expected[question]


def test_async_queries_beside_an_async_writer_see_the_store_between_writes(passages):
    """A writer re-writes "Paris" between two versions through ``DocumentWriter.run_async`` while queries run
    through ``run_async``: each answer equals the answer over one version or the other."""
    store = InMemoryDocumentStore()
    indexing(store).run({"split": {"documents": passages}})
    versions = [
        next(p for p in passages if p.id == "Paris"),
        Document(
            id="Paris",
            content="Paris is the capital of France. The Eiffel Tower was finished in 1889.",
            meta={"title": "Paris", "kind": "city"},
        ),
    ]
    question = "When was the Eiffel Tower completed?"
    retriever = DCSRRetriever(document_store=store, model=MODEL, top_k=3)
    splitter, embedder = DCSRSentenceSplitter(model=MODEL), DCSRDocumentEmbedder(model=MODEL)
    sentences = [embedder.run(splitter.run([v])["documents"])["documents"] for v in versions]
    writer = DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE)
    possible = []
    for version in sentences:
        writer.run(version)
        possible.append(answer(retriever.run(query=question)["documents"]))
    assert possible[0] != possible[1]

    async def soak():
        stop, answers = asyncio.Event(), []

        async def write():
            for round_ in range(12):
                await writer.run_async(sentences[round_ % 2])
                await asyncio.sleep(0)
            stop.set()

        async def ask():
            while not stop.is_set():
                answers.append(answer((await retriever.run_async(query=question))["documents"]))

        await asyncio.gather(write(), ask(), ask(), ask())
        return answers

    answers = asyncio.run(soak())
    assert answers and all(got in possible for got in answers)


def test_run_async_is_declared_with_the_same_inputs_as_run():
    for component in (DCSRRetriever, DCSREmbeddingRetriever, DCSRTextEmbedder, DCSRDocumentEmbedder):
        assert asyncio.iscoroutinefunction(component.run_async)
    pipeline = Pipeline()
    pipeline.add_component("embed", DCSRTextEmbedder(model=MODEL))
    with pytest.raises(TypeError, match="one string"):
        asyncio.run(pipeline.get_component("embed").run_async(text=["two", "strings"]))
