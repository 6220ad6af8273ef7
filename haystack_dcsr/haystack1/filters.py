"""Haystack 1.x metadata filters evaluated in Python with Haystack's own evaluator, on every store alike.

Haystack's SQL stores (``FAISSDocumentStore`` included) keep meta values as JSON text and compare them in SQL;
``InMemoryDocumentStore`` evaluates the same filters in Python on typed values. DCSR checks every filter first
(``core.indexes.filters``) and, on SQL stores, evaluates it in Python on the decoded meta values with Haystack's own
evaluator: numbers compare as numbers, and every store kind agrees with ``InMemoryDocumentStore``.
"""

from typing import Any, Callable, Dict, Iterable

from haystack_dcsr.core.indexes.filters import check_filters, mixed_kinds


def matcher(filters: Dict[str, Any]) -> Callable[[Dict[str, Any]], bool]:
    """A predicate on a document's meta dict with ``InMemoryDocumentStore``'s semantics (Haystack's
    own evaluator on typed values); comparing values of different kinds (a number with a string) is a
    ``FilterError`` rather than an arbitrary answer."""
    from haystack.document_stores.filter_utils import LogicalFilterClause

    check_filters(filters)
    clause = LogicalFilterClause.parse(filters)

    def match(meta: Dict[str, Any]) -> bool:
        try:
            return bool(clause.evaluate(meta))
        except TypeError as error:
            raise mixed_kinds(filters, error) from None

    return match


def matching(filters: Dict[str, Any], metas: Iterable[tuple]) -> list:
    """The keys of ``(key, meta)`` pairs whose meta passes ``filters``."""
    match = matcher(filters)
    return [key for key, meta in metas if match(meta)]
