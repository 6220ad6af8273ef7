"""The scaling-out guide's engine snippets, run as written by both suites (each Haystack in its own environment):
the block is taken from the guide, pointed at the test server and a fresh collection or table, and its answer
checked."""

import re
import uuid
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "scaling-out.md"


def run_guide_snippet(first_line: str, uri: str = "http://localhost:19530") -> None:
    """Run the guide's Python block that starts with ``first_line`` against the Milvus server at ``uri`` (a
    pgvector block reads its server from ``PG_CONN_STR``, as pgvector-haystack does)."""
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    code = next(block for block in blocks if block.startswith(first_line))
    code = code.replace("http://localhost:19530", uri).replace('"dcsr_sentences"', f'"guide_{uuid.uuid4().hex[:8]}"')
    scope: dict = {}
    exec(code, scope)
    best = scope["best"]
    assert [d.id for d in best] == ["eiffel"] and "completed in 1889" in best[0].content
    support = {s["text"] for s in best[0].meta["dcsr_sentences"]}
    assert support == {"The Eiffel Tower is in Paris.", "It was completed in 1889."}
