"""The README's quick start and hybrid snippets run as written, twice in the same folder (a re-run
used to fail on the SQL database the first run left behind)."""

import os
import re
from pathlib import Path

from haystack.schema import Document

README = Path(__file__).resolve().parents[2] / "README.md"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "data" / "demo"


def snippet(heading: str) -> str:
    """The first ```python block after ``heading``."""
    text = README.read_text()
    return re.search(r"```python\n(.*?)```", text[text.index(heading) :], re.S).group(1)


def test_quick_start_runs_as_written_and_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        scope: dict = {}
        exec(snippet("## Haystack 1.x quick start"), scope)
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


def test_the_readme_is_a_product_page_and_its_links_resolve():
    """At most 300 lines; every relative link points at a file of the repository."""
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\(((?!http)[^)#]+)[^)]*\)", text)
    assert links, "the README links its docs"
    missing = [link for link in links if not (README.parent / link).exists()]
    assert not missing, missing
