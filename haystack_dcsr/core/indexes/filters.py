"""Metadata filters in Haystack's dict syntax (``{"year": {"$gt": 1800}}``, ``$and``/``$or``/``$not``), checked
once before any store reads them.

Stores disagree on what they do with a filter they cannot read: Haystack 1.x's SQL parser skips an unknown
operator (``$regex``), so a filter could silently mean "everything", and SQL compares JSON values as text
(``"79" > "1000"``). ``check_filters`` refuses such a filter by name before anything is searched, read or deleted;
each engine then evaluates it with one meaning (``haystack1.filters.matcher`` in Python, ``milvus_filters`` on a
Milvus server). Haystack 2.x's syntax (``{"field": "meta.year", "operator": ">", ...}``) is turned into this one
and checked here too (``haystack2.filters``) before a 2.x store translates it.

The rules every engine follows, because this checker refuses the rest by name:

- a logical operator (``$and``, ``$or``, ``$not``) over no conditions is refused: stores read it as "everything"
  or "nothing" as they please, and a delete that reads it as "everything" loses the corpus;
- a comparison's operand is a string, a number or a boolean (a list of them for ``$in``/``$nin``): ``None`` and
  dicts mean different things on every store;
- a delete's filter names at least one field (``check_delete_filters``): ``{}`` is refused, never "delete all".
"""

from typing import Any, Dict, List, Optional, Set, Union

LOGICAL = ("$and", "$or", "$not")
COMPARISON = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte")
_LISTS = ("$in", "$nin")
_RANGES = ("$gt", "$gte", "$lt", "$lte")


class FilterError(ValueError):
    """A filter that no store would read as written; the message names the part."""


def check_filters(filters: Optional[Dict[str, Any]], numeric_ranges: Optional[str] = None) -> None:
    """Refuse a filter with an unknown operator, an empty clause, a list given to a range operator or
    a scalar given to ``$in``/``$nin``: each would be skipped or misread by some store.
    ``numeric_ranges`` names a store that compares ranges on numbers only (Qdrant): a string operand
    of ``$gt`` & co. is then an error naming that store."""
    if filters is None:
        return
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be a dict (Haystack 1.x syntax), got {type(filters).__name__}")
    _check_clause(filters, "filters", numeric_ranges)


def _check_clause(clause: Any, where: str, numeric_ranges: Optional[str]) -> None:
    items = clause if isinstance(clause, list) else [clause]
    for item in items:
        if not isinstance(item, dict):
            raise FilterError(f"{where}: expected a dict of fields and operators, got {item!r}")
        for key, value in item.items():
            if key in LOGICAL and not value:
                meaning = {"$and": "requires nothing", "$or": "offers no alternative", "$not": "negates nothing"}[key]
                raise FilterError(
                    f"{where}.{key}: {meaning} (an empty clause, which stores read as everything or nothing); "
                    "give its conditions, or leave the operator out"
                )
            if key in LOGICAL:
                _check_clause(value, f"{where}.{key}", numeric_ranges)
            elif key.startswith("$"):
                raise FilterError(
                    f"{where}: unknown operator {key!r} (logical: {', '.join(LOGICAL)}; "
                    f"comparison: {', '.join(COMPARISON)})"
                )
            else:
                _check_comparison(key, value, f"{where}.{key}", numeric_ranges)


def _check_comparison(field: str, value: Any, where: str, numeric_ranges: Optional[str]) -> None:
    if not isinstance(value, dict):  # a value ($eq) or a list ($in)
        _check_operand(field, "$in" if isinstance(value, list) else "$eq", value, where)
        return
    if not value:
        raise FilterError(f"{where}: no operator given for field {field!r}")
    for operator, operand in value.items():
        if operator not in COMPARISON:
            raise FilterError(
                f"{where}: unknown comparison operator {operator!r} for field {field!r} "
                f"(supported: {', '.join(COMPARISON)})"
            )
        if operator in _LISTS and not isinstance(operand, list):
            raise FilterError(f"{where}: {operator} takes a list, got {operand!r}")
        if operator in _RANGES and (isinstance(operand, (list, dict, bool)) or operand is None):
            raise FilterError(f"{where}: {operator} takes a number or a string, got {operand!r}")
        if operator in _RANGES and numeric_ranges and not isinstance(operand, (int, float)):
            raise FilterError(f"{where}: {numeric_ranges} compares {operator} on numbers only, got {operand!r}")
        _check_operand(field, operator, operand, where)


SCALARS = (str, int, float, bool)


def _check_operand(field: str, operator: str, operand: Any, where: str) -> None:
    """An operand every engine compares the same way: a string, a number or a boolean (a list of them for
    ``$in``/``$nin``)."""
    values = operand if operator in _LISTS and isinstance(operand, list) else [operand]
    for value in values:
        if value is None:
            raise FilterError(
                f"{where}: {operator} compares field {field!r} with null, which stores read differently: filter on "
                "a value (a string, a number or a boolean)"
            )
        if not isinstance(value, SCALARS):
            raise FilterError(
                f"{where}: {operator} on field {field!r} takes a string, a number or a boolean"
                f"{' (or a list of them)' if operator in _LISTS else ''}, got {value!r}"
            )


def refuse_empty_delete_filter(filters: Any) -> None:
    """A delete's filter that names no field (``{}``, in either Haystack's syntax) selects every document: refused,
    so that a delete never reads a mistake as "all" (``None``, no filter, is the caller's own explicit choice)."""
    if filters is not None and not filters:
        raise FilterError(
            f"filters={filters!r} names no field, so it would select every document: a delete refuses it. Give the "
            "fields to match, or delete by ids"
        )


def check_delete_filters(filters: Optional[Dict[str, Any]], numeric_ranges: Optional[str] = None) -> None:
    """``check_filters`` for a delete, which also refuses ``{}`` (``refuse_empty_delete_filter``)."""
    refuse_empty_delete_filter(filters)
    check_filters(filters, numeric_ranges)


def per_query_filters(
    filters: Union[None, Dict[str, Any], List[Optional[Dict[str, Any]]]], count: int
) -> List[Optional[Dict[str, Any]]]:
    """Haystack's ``retrieve_batch`` filters as one per query: a list is taken as one per query (and must be
    that long), anything else applies to every query."""
    per_query = filters if isinstance(filters, list) else [filters] * count
    if len(per_query) != count:
        raise ValueError(f"Got {len(per_query)} filters for {count} queries")
    return per_query


def filter_fields(filters: Dict[str, Any]) -> Set[str]:
    """The meta field names a (checked) filter reads."""
    found: Set[str] = set()
    for item in filters if isinstance(filters, list) else [filters]:
        for key, value in item.items():
            if key in LOGICAL:
                found |= filter_fields(value) if isinstance(value, (dict, list)) else set()
            else:
                found.add(key)
    return found


def mixed_kinds(filters: Dict[str, Any], error: TypeError) -> FilterError:
    """The error for a filter that compares a number with a string (Python's ``TypeError``), wherever
    the comparison ran: here, or inside ``InMemoryDocumentStore``."""
    return FilterError(f"filters {filters!r} compare values of different kinds ({error})")
