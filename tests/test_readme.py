"""The README's quick start and hybrid snippets run as written, twice in the same folder (a re-run
used to fail on the SQL database the first run left behind)."""

import os
import re
from pathlib import Path

from haystack.schema import Document

README = Path(__file__).resolve().parents[1] / "README.md"
DEMO = Path(__file__).resolve().parents[1] / "examples" / "data" / "demo"


def snippet(heading: str) -> str:
    """The first ```python block after ``heading``."""
    text = README.read_text()
    return re.search(r"```python\n(.*?)```", text[text.index(heading) :], re.S).group(1)


def test_quick_start_runs_as_written_and_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        scope: dict = {}
        exec(snippet("## Quick start"), scope)
        best = scope["best"]
        assert "Eiffel Tower was completed in 1889" in best[0].content
        assert 0.5 < best[0].score <= 1.0
        assert best[0].meta["dcsr_sentences"][0]["text"] == "The Eiffel Tower was completed in 1889."
    assert os.listdir(tmp_path) == []  # nothing left behind to trip the next run


def test_hybrid_snippet_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    passages = [
        Document(content=p.strip(), meta={"name": f.stem})
        for f in sorted(DEMO.glob("*.txt"))
        for p in f.read_text().split("\n\n")
        if p.strip()
    ]
    code = snippet("### Hybrid search").replace('"Who discovered penicillin?"', '"Who decoded the waggle dance?"')
    code = code.replace("hybrid.run(query=", "answer = hybrid.run(query=")
    scope = {"passages": passages}
    exec(code, scope)
    documents = scope["answer"]
    assert len(documents) == 10
    assert "Karl von Frisch" in " ".join(d.content for d in documents[:3])
    assert all("#" not in d.id for d in documents)  # passages, never BM25 over sentence ids
    assert documents[0].meta["dcsr_sentences"]  # DCSR's supporting sentences survive the join


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_contents_links_every_section_and_only_real_ones():
    text = README.read_text()
    contents = text[text.index("**Contents:**") : text.index("## Two commands")]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    body = re.sub(r"```.*?```", "", text, flags=re.S)  # a "## " inside a code block is not a heading
    anchors = {github_anchor(h) for h in re.findall(r"^#{2,3} (.+)$", body, re.M)}
    assert set(links) <= anchors, sorted(set(links) - anchors)
    sections = [github_anchor(h) for h in re.findall(r"^## (.+)$", body, re.M)]
    assert [a for a in links if a in sections] == sections  # every section, in order
