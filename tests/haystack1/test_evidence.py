"""Evidence the user can read: the answer-sentence pass marks the sentence that states the answer, and
the HTML view shows supporting sentences highlighted by probability, checked in headless Chromium from
a screenshot (highlighted spans present, stronger for the likelier sentence, in passage order)."""

import shutil
import subprocess

import numpy as np
import pytest
from haystack.document_stores import InMemoryDocumentStore
from haystack.schema import Document

from haystack_dcsr import DCSRRetriever, SentencePreprocessor
from haystack_dcsr.core.text.evidence import ANSWER, render_html

PASSAGE = (
    "Movable type was first invented in China around 1040 by Bi Sheng. Clay type was fragile and hard to use. "
    "Later printers in Korea cast type in bronze."
)


@pytest.fixture(scope="module")
def retriever():
    store = InMemoryDocumentStore(embedding_dim=384, similarity="dot_product")
    passages = [
        Document(id="type", content=PASSAGE),
        Document(id="paris", content="Paris is the capital of France. The Eiffel Tower was completed in 1889."),
    ]
    store.write_documents(SentencePreprocessor(progress_bar=False).process(passages)["documents"])
    retriever = DCSRRetriever(document_store=store, progress_bar=False, mark_answer_sentence=True, top_k=2)
    store.update_embeddings(retriever)
    return retriever


def test_the_answer_sentence_is_marked_by_scoring_each_sentence_alone(retriever):
    top = retriever.retrieve("Who invented movable type?")[0]
    assert top.id == "type"
    assert top.meta[ANSWER]["sentence_index"] == 0 and top.meta[ANSWER]["text"].startswith("Movable type was first")
    assert "_dcsr_sentence_texts" not in top.meta  # the pass's working data does not leak into results
    plain = DCSRRetriever(document_store=retriever.document_store, progress_bar=False)
    assert ANSWER not in plain.retrieve("Who invented movable type?")[0].meta  # off by default


def test_the_html_view_escapes_and_marks_spans(retriever):
    passages = retriever.retrieve("Who invented movable type?")
    passages[1].content = passages[1].content + " <script>alert(1)</script>"
    page = render_html("Who invented <b>movable</b> type?", passages)
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "&lt;b&gt;movable" in page
    assert page.count('class="support') >= 2 and 'class="support answer"' in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_headless_chromium_shows_highlights_by_probability_in_order(tmp_path):
    from PIL import Image

    passage = Document(
        id="p",
        content="First sentence is likely. Middle sentence is not retrieved. Last sentence is less likely.",
        score=0.9,
        meta={
            "dcsr_sentences": [
                {"sentence_index": 0, "text": "First sentence is likely.", "score": 3.0, "probability": 0.9},
                {"sentence_index": 2, "text": "Last sentence is less likely.", "score": 1.0, "probability": 0.3},
            ]
        },
    )
    (tmp_path / "view.html").write_text(render_html("a query", [passage]))
    shot = tmp_path / "view.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--hide-scrollbars",
            "--window-size=1000,400",
            f"--screenshot={shot}",
            f"file://{tmp_path / 'view.html'}",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    r, b = pixels[..., 0], pixels[..., 2]
    # the highlight is orange over white: red stays high, blue drops with the probability (opacity)
    orange = (r > 200) & (b < 235) & (r - b > 20)
    strong, faint = orange & (b < 80), orange & (b >= 80)
    assert strong.sum() > 200 and faint.sum() > 200  # both highlighted spans are drawn
    columns_strong = np.flatnonzero(strong.any(axis=0))
    columns_faint = np.flatnonzero(faint.any(axis=0))
    # on one line, in passage order: the likelier first sentence left of the less likely last one
    assert columns_strong.mean() < columns_faint.mean()
    # and the middle sentence between them is not highlighted
    gap = range(columns_strong.max() + 5, columns_faint.min() - 5)
    assert len(gap) > 50 and not orange[:, list(gap)].any()
