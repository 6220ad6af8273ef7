"""The store contract every engine passes, under both Haystacks: each case is one function of an ``Engine`` (a thin
wrapper over a store and its DCSR retriever), so that an engine added later runs the same cases as every other.
Ranking equality lives beside it in ``index_contract``; faults of server engines (SIGSTOP, kill -9, restarts) in
each engine's fault module.

- filters: an empty logical clause (``$and``/``$or``/``$not``; 2.x ``conditions``), a null or dict operand and an
  unknown operator are refused by name on a search and on a delete, and ``{}`` on a delete; nothing is deleted.
  Nested logic answers what a plain evaluation keeps, on every engine.
- content: a NUL character in a passage's text, meta or id is refused naming the passage; nothing stored changes.
"""

from typing import Any, Callable, Dict, List, Optional, Protocol

import pytest

PASSAGES = {  # id -> (text, meta): six passages, two sentences each
    f"c{n}": (f"Passage {n} is about {kind}. It was written in {year}.", {"kind": kind, "year": year})
    for n, (kind, year) in enumerate(
        [("city", 1800), ("city", 1950), ("river", 1890), ("river", 2001), ("war", 1914), ("art", 1503)]
    )
}
NESTED = {  # (1.x syntax, 2.x syntax, what a plain evaluation keeps): $and of an $or and a $not
    "1.x": {"$and": [{"$or": [{"kind": "city"}, {"year": {"$gt": 1900}}]}, {"$not": {"kind": "war"}}]},
    "2.x": {
        "operator": "AND",
        "conditions": [
            {
                "operator": "OR",
                "conditions": [
                    {"field": "meta.kind", "operator": "==", "value": "city"},
                    {"field": "meta.year", "operator": ">", "value": 1900},
                ],
            },
            {"operator": "NOT", "conditions": [{"field": "meta.kind", "operator": "==", "value": "war"}]},
        ],
    },
}
NESTED_KEEPS = {pid for pid, (_, meta) in PASSAGES.items() if (meta["kind"] == "city" or meta["year"] > 1900)} - {"c4"}
EMPTY = {
    "1.x": [{"$and": []}, {"$or": []}, {"$not": []}, {"$not": {}}, {"$and": [{"kind": "city"}, {"$or": []}]}],
    "2.x": [
        {"operator": "AND", "conditions": []},
        {"operator": "OR", "conditions": []},
        {"operator": "NOT", "conditions": []},
        {"operator": "AND", "conditions": [{"operator": "OR", "conditions": []}]},
    ],
}
BAD_OPERANDS = {
    "1.x": [({"kind": None}, "null"), ({"kind": {"$eq": {"a": 1}}}, "takes a string"), ({"kind": {"$re": "a"}}, "$re")],
    "2.x": [
        ({"field": "meta.kind", "operator": "==", "value": None}, "null"),
        ({"field": "meta.kind", "operator": "==", "value": {"a": 1}}, "takes a string"),
        ({"field": "meta.kind", "operator": "like", "value": "a"}, "like"),
    ],
}


class Engine(Protocol):
    syntax: str  # "1.x" or "2.x": the filter syntax its retriever takes

    def write(self, passages: Dict[str, tuple]) -> None:
        """Split, embed and write these passages (id -> (text, meta)) through DCSR's components."""

    def passages(self) -> Dict[str, str]:
        """Every stored passage, id -> text, as the retriever serves them."""

    def search(self, filters: Any) -> List[str]:
        """The passage ids a query with these filters returns (top_k past the corpus)."""

    def delete(self, filters: Any) -> None:
        """``delete_passages(filters=...)`` of the engine's retriever."""

    store_delete: Optional[Callable[[Any], None]]  # the store's own delete by filters, where it has one


def load(engine: Engine) -> None:
    engine.write(PASSAGES)
    assert engine.passages() == {pid: text for pid, (text, _) in PASSAGES.items()}


def check_empty_clauses_are_refused_and_delete_nothing(engine: Engine) -> None:
    before = engine.passages()
    deletes = [engine.delete] + ([engine.store_delete] if engine.store_delete else [])
    for empty in EMPTY[engine.syntax]:
        with pytest.raises(ValueError, match="empty|conditions"):
            engine.search(empty)
        for delete in deletes:
            with pytest.raises(ValueError, match="empty|conditions"):
                delete(empty)
    for delete in deletes:
        with pytest.raises(ValueError, match="names no field"):
            delete({})
    assert engine.passages() == before


def check_bad_operands_are_refused(engine: Engine) -> None:
    before = engine.passages()
    for filters, named in BAD_OPERANDS[engine.syntax]:
        with pytest.raises(ValueError, match=named.replace("$", r"\$")):
            engine.search(filters)
        with pytest.raises(ValueError, match=named.replace("$", r"\$")):
            engine.delete(filters)
    assert engine.passages() == before


def check_nested_logic_answers_one_way(engine: Engine) -> None:
    assert set(engine.search(NESTED[engine.syntax])) == NESTED_KEEPS


def check_nul_is_refused_naming_the_passage(engine: Engine) -> None:
    before = engine.passages()
    for pid, text, meta in [
        ("nul-text", "A sentence with a \x00 inside. Another one.", {}),
        ("nul-meta", "A clean sentence. Another one.", {"kind": "a\x00b"}),
        ("nul\x00id", "A clean sentence. Another one.", {}),
    ]:
        with pytest.raises(ValueError, match="NUL character"):
            engine.write({pid: (text, meta)})
    changed = {"c0": ("Passage zero \x00 rewritten. Still two.", {"kind": "city", "year": 1800})}
    with pytest.raises(ValueError, match="'c0'.*NUL character"):
        engine.write(changed)
    assert engine.passages() == before


CASES = [
    check_empty_clauses_are_refused_and_delete_nothing,
    check_bad_operands_are_refused,
    check_nested_logic_answers_one_way,
    check_nul_is_refused_naming_the_passage,
]
