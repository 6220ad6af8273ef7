"""Evidence a reader can check: which sentence of a returned passage best answers, and an HTML view.

``meta["dcsr_sentences"]`` lists the sentences that retrieved a passage, scored *in context*: a
sentence can score high because of its neighbours, so the first of them is not always the one that
states the answer. ``answer_sentence`` is a second, cheap pass that scores every sentence of a
returned passage *alone* against the query (the query tower and the passage tower, no context) and
marks the best one. ``render_html`` shows passages with their supporting sentences highlighted by
probability and the answer sentence marked, for notebooks and demos. Framework-free: both Haystack
adapters pass their Documents (anything with ``content`` and ``meta``).
"""

import html
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from haystack_dcsr.core.text.sentence_units import SUPPORT

ANSWER = "dcsr_answer_sentence"  # meta key: {"sentence_index", "text", "score"}


def answer_sentence(query_vector: np.ndarray, sentences: Sequence[str], sentence_vectors: np.ndarray) -> Dict:
    """The sentence whose vector, encoded alone, scores highest against the query."""
    scores = np.asarray(sentence_vectors, dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)
    best = int(np.argmax(scores))
    return {"sentence_index": best, "text": sentences[best], "score": float(scores[best])}


def mark_answer_sentences(
    encode_queries: Callable, encode_passages: Callable, query: str, passages: Sequence[Any], sentences_of: Callable
) -> None:
    """Set ``meta["dcsr_answer_sentence"]`` on each passage. ``encode_queries`` and ``encode_passages``
    are the two towers' (e.g. a ``DCSRModel``'s methods); ``sentences_of(passage)`` gives its sentence texts."""
    if not passages:
        return
    texts = [list(sentences_of(passage)) for passage in passages]
    query_vector = encode_queries([query])[0]
    alone = encode_passages([[sentence] for passage in texts for sentence in passage])  # each in isolation
    row = 0
    for passage, sentences in zip(passages, texts):
        passage.meta[ANSWER] = answer_sentence(query_vector, sentences, alone[row : row + len(sentences)])
        row += len(sentences)


def render_html(query: str, passages: Sequence[Any], title: Optional[str] = None) -> str:
    """A self-contained HTML page: the query, then each passage (rank, id, HasAns) with its supporting
    sentences highlighted (opacity = probability) and the answer sentence, when marked, underlined.
    Every text is escaped."""
    blocks: List[str] = []
    for rank, passage in enumerate(passages, 1):
        content = str(passage.content)
        support = {s["text"]: s for s in (passage.meta or {}).get(SUPPORT, [])}
        answer = ((passage.meta or {}).get(ANSWER) or {}).get("text")
        pieces, cursor = [], 0
        spans = sorted(
            ((content.find(text), text) for text in set(support) | ({answer} if answer else set())),
            key=lambda item: item[0],
        )
        for start, text in spans:
            if start < cursor:
                continue  # not found (-1) or overlapping an earlier span
            pieces.append(html.escape(content[cursor:start]))
            probability = support[text]["probability"] if text in support else 0.0
            classes = "support" + (" answer" if text == answer else "")
            pieces.append(
                f'<span class="{classes}" data-probability="{probability:.4f}" '
                f'style="background: rgba(255, 170, 0, {min(max(probability, 0.08), 1.0):.3f})" '
                f'title="p = {probability:.3f}">{html.escape(text)}</span>'
            )
            cursor = start + len(text)
        pieces.append(html.escape(content[cursor:]))
        score = "" if passage.score is None else f"HasAns {float(passage.score):.3f}"
        blocks.append(
            f'<div class="passage" data-rank="{rank}"><div class="head">#{rank} '
            f"{html.escape(str(passage.id))} <b>{score}</b></div><p>{''.join(pieces)}</p></div>"
        )
    heading = html.escape(title or "DCSR: passages and the sentences that support them")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{heading}</title>
<style>
body {{ font-family: sans-serif; max-width: 56em; margin: 1.5em auto; color: #222; }}
.query {{ font-size: 1.2em; margin-bottom: 1em; }}
.passage {{ border-left: 4px solid #ffaa00; padding: 0.3em 0.8em; margin: 0.8em 0; }}
.head {{ color: #666; font-size: 0.9em; }}
.answer {{ text-decoration: underline; text-decoration-thickness: 3px; text-decoration-color: #0050c8; }}
</style></head>
<body><h3>{heading}</h3><div class="query">Query: <i>{html.escape(query)}</i></div>
{"".join(blocks)}
</body></html>
"""
