"""Haystack 2.x filters (``{"field": "meta.year", "operator": ">", "value": 1800}``, ``AND``/``OR``/``NOT`` over
``conditions``) in the dict syntax that ``core.indexes.filters`` checks and the engines' translators read, keeping 2.x's
meaning: ``!=`` and ``not in`` hold for a document that lacks the field (as in ``InMemoryDocumentStore``), so they
become the negation of ``==`` / ``in`` rather than ``$ne`` / ``$nin``, which need the field to exist.

Only the passages' meta can be filtered (a sentence carries its passage's meta): ``id``, ``content`` or a field
outside ``meta.`` is refused by name, as is a filter in 1.x syntax.
"""

from typing import Any, Dict, Optional

from haystack_dcsr.core.indexes.filters import FilterError, check_filters

COMPARISONS = {"==": "$eq", ">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte", "in": "$in"}
NEGATED = {"!=": "$eq", "not in": "$in"}  # 2.x: true where the field is missing
LOGICAL = {"AND": "$and", "OR": "$or"}


def dict_syntax(filters: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """``filters`` (2.x syntax) in ``core.indexes.filters``' syntax; None for none."""
    if not filters:
        return None
    if not isinstance(filters, dict) or "operator" not in filters:
        raise FilterError(
            f"filters must use Haystack 2.x syntax ({{'field': 'meta.year', 'operator': '>', 'value': 1800}} or "
            f"{{'operator': 'AND', 'conditions': [...]}}), got {filters!r}"
        )
    operator = filters["operator"]
    if "conditions" in filters:
        if not isinstance(filters["conditions"], list) or not filters["conditions"]:
            raise FilterError(
                f"{operator} filter with 'conditions' {filters['conditions']!r}: give a non-empty list of conditions "
                "(an empty one is read as everything or nothing, depending on the store)"
            )
        conditions = [dict_syntax(condition) for condition in filters["conditions"]]
        if operator == "NOT":  # 2.x: not all of the conditions
            return {"$not": {"$and": conditions}}
        if operator not in LOGICAL:
            raise FilterError(f"unknown logical operator {operator!r} (AND, OR, NOT)")
        return {LOGICAL[operator]: conditions}
    field = filters.get("field", "")
    if not field.startswith("meta."):
        raise FilterError(
            f"filter field {field!r}: DCSR sentence stores filter on the passages' meta only ('meta.<name>')"
        )
    name, value = field[len("meta.") :], filters.get("value")
    if operator in NEGATED:
        return {"$not": {name: {NEGATED[operator]: value}}}
    if operator not in COMPARISONS:
        raise FilterError(
            f"unknown comparison operator {operator!r} for {field!r} (supported: {', '.join([*COMPARISONS, *NEGATED])})"
        )
    return {name: {COMPARISONS[operator]: value}}


def checked(filters: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """``filters`` (2.x syntax) as given, once the one checker (``core.indexes.filters``) accepts them: every 2.x
    store then translates only filters that every engine reads alike."""
    check_filters(dict_syntax(filters))
    return filters
