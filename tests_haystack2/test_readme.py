"""The README's Haystack 2.x quick start runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_haystack2_quick_start_runs_as_written():
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text[text.index("## Haystack 2.x quick start") :], re.S).group(1)
    scope: dict = {}
    exec(code, scope)
    best = scope["best"]
    assert best[0].content == "Paris is the capital of France. The Eiffel Tower was completed in 1889."
    assert 0.5 < best[0].score <= 1.0 and best[1].score < best[0].score
    assert (
        max(best[0].meta["dcsr_sentences"], key=lambda s: s["score"])["text"]
        == "The Eiffel Tower was completed in 1889."
    )
