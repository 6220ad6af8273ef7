"""Metadata filters (Haystack's dict syntax, ``core.indexes.filters``) as Milvus boolean expressions over the
``meta`` JSON
field of ``milvus_index``'s layout, meaning what ``haystack1.filters.matcher`` means on every other store: an
empty ``$in`` selects nothing (``NO_ROW``, never the empty expression, which a delete reads as "every row"), ``$ne``
holds only where the field exists, a mixed ``$in`` list compares each kind with its own. What the checker refuses
(an empty logical clause, a null operand) never reaches the translation. Both Haystacks' Milvus stores filter
through it (2.x filters are turned into this syntax first).
"""

from typing import Any, Dict, List, Optional, Union

from haystack_dcsr.core.indexes.filters import LOGICAL, FilterError, check_filters
from haystack_dcsr.core.indexes.milvus_index import EVERY_ROW, NO_ROW, literal

STORE = "Milvus"  # named in refusals; the adapters check first and name their own store
OPERATORS = {
    "$eq": "==",
    "$ne": "!=",
    "$gt": ">",
    "$gte": ">=",
    "$lt": "<",
    "$lte": "<=",
    "$in": "in",
    "$nin": "not in",
}


def milvus_expression(filters: Optional[Dict[str, Any]]) -> str:
    """A filter as a Milvus boolean expression ("" for none), checked first (``check_filters``)."""
    if not filters:
        return ""
    check_filters(filters, numeric_ranges=STORE)
    return _conjunction(filters)


def _conjunction(clause: Union[Dict[str, Any], List[Any]]) -> str:
    parts = []
    for item in clause if isinstance(clause, list) else [clause]:
        for key, value in item.items():
            if key in LOGICAL:
                parts.append(_logical(key, value))
            else:
                parts.append(_comparisons(key, value))
    return _joined(parts, "and", EVERY_ROW)


def _logical(operator: str, value: Any) -> str:
    if operator == "$not":
        return f"not ({_conjunction(value)})"
    items = [{k: v} for k, v in value.items()] if isinstance(value, dict) else list(value)
    return _joined([_conjunction(item) for item in items], operator[1:], EVERY_ROW)  # never empty: checked


def _joined(parts: List[str], operator: str, empty: str) -> str:
    if not parts:
        return empty
    return f" {operator} ".join(f"({part})" for part in parts) if len(parts) > 1 else parts[0]


def _comparisons(field: str, value: Any) -> str:
    name = f"meta[{literal(field)}]"
    if not isinstance(value, dict):
        value = {"$in": value} if isinstance(value, list) else {"$eq": value}
    parts = []
    for operator, operand in value.items():
        if operator not in OPERATORS:
            raise FilterError(f"{STORE} cannot evaluate {operator!r} on field {field!r}")
        if operand is None or (isinstance(operand, list) and None in operand):
            raise FilterError(f"{STORE} cannot compare field {field!r} with null ({operator}): filter on a value")
        if operator in ("$in", "$nin"):
            kinds = _by_kind(operand)
            join = "or" if operator == "$in" else "and"
            none = NO_ROW if operator == "$in" else EVERY_ROW  # in no value; outside every one of none
            parts.append(_joined([f"{name} {OPERATORS[operator]} {literal(group)}" for group in kinds], join, none))
        elif operator == "$ne":  # a passage without the field is not "not equal" (Haystack's evaluator)
            parts.append(f"(exists {name}) and ({name} != {literal(operand)})")
        else:
            parts.append(f"{name} {OPERATORS[operator]} {literal(operand)}")
    return _joined(parts, "and", EVERY_ROW)


def _by_kind(values: List[Any]) -> List[List[Any]]:
    """``values`` grouped by kind (booleans, numbers, strings), in order: Milvus refuses a list that mixes them."""
    groups: Dict[str, List[Any]] = {}
    for value in values:
        kind = "bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "other"
        groups.setdefault(kind, []).append(value)
    return list(groups.values())
