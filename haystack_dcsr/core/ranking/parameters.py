"""Checks of component parameters shared by the adapters' components (each names itself in the errors).

Both fail at construction, not at the first query: YAML loading constructs components, so a
misspelt or out-of-range value is reported when the pipeline loads.
"""

import warnings
from typing import Any, Dict, Optional, Sequence

from haystack_dcsr.core.indexes.filters import refuse_empty_delete_filter
from haystack_dcsr.core.indexes.vector_search import SEARCH_PARAMETERS
from haystack_dcsr.core.model.int8 import QUANTIZE_MODES

MAX_COUNT = 2**31 - 1  # top_k and top_n: what every engine's limit (a SQL LIMIT, a FAISS k) takes


def check_parameters(owner: str, optional: Sequence[str] = (), **values) -> None:
    """Reject values that would only fail at the first query (YAML loading runs __init__); ``owner``
    names the component in the error, and a name in ``optional`` may also be None."""
    rules = {
        "top_k": (lambda v: isinstance(v, int) and 1 <= v <= MAX_COUNT, f"an integer in [1, {MAX_COUNT}]"),
        "top_n_sentences": (lambda v: isinstance(v, int) and 1 <= v <= MAX_COUNT, f"an integer in [1, {MAX_COUNT}]"),
        "temperature": (lambda v: v is None or (isinstance(v, (int, float)) and v > 0), "a number > 0, or null"),
        "max_seq_len_passage": (lambda v: v is None or (isinstance(v, int) and v >= 8), "an integer >= 8, or null"),
        "max_seq_len_query": (lambda v: v is None or (isinstance(v, int) and v >= 4), "an integer >= 4, or null"),
        "batch_size": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
        "passage_cache_size": (lambda v: isinstance(v, int) and v >= 0, "an integer >= 0"),
        "first_stage_weight": (lambda v: isinstance(v, (int, float)) and 0.0 <= v <= 1.0, "within [0, 1]"),
        "quantize": (lambda v: v in QUANTIZE_MODES, " or ".join(map(repr, QUANTIZE_MODES))),
    }
    for name, value in values.items():
        if name in optional and value is None:
            continue
        valid, expected = rules[name]
        if isinstance(value, bool) or not valid(value):
            expected += ", or null" if name in optional else ""
            raise ValueError(f"{owner}: {name} must be {expected}, got {value!r}")


def renamed(owner: str, new_name: str, new_value: Any, old_name: str, old_value: Any) -> Any:
    """The value of a parameter that has a new name: the new one, or the old one with a DeprecationWarning naming
    both (both given is an error)."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"{owner}: give {new_name} ({old_name} is its old name), not both")
    warnings.warn(f"{owner}: {old_name} is now called {new_name}", DeprecationWarning, stacklevel=3)
    return old_value


def check_quantize_device(owner: str, quantize: Optional[str], device: Optional[str]) -> None:
    """int8 inference runs on the CPU: asking for it on a GPU fails when the pipeline loads, although the
    2.x components build their models lazily (at ``warm_up`` or the first run)."""
    if quantize is not None and device is not None and not str(device).startswith("cpu"):
        raise ValueError(f"{owner}: quantize={quantize!r} runs on the CPU, got device={device!r}")


def first_device(owner: str, device: Optional[str], devices: Optional[Sequence[str]]) -> Optional[str]:
    """Haystack's ``devices`` list beside this package's ``device``: the first of the list, refused
    when both are given or the list is empty."""
    if devices is None:
        return device
    if device is not None:
        raise ValueError(f"{owner}: give device or devices, not both")
    if not devices:
        raise ValueError(f"{owner}: devices is an empty list; give e.g. ['cpu'] or ['cuda:0'], or leave it out")
    if len(devices) > 1:
        import logging

        logging.getLogger(__name__).warning("%s runs on one device: using %s of %s", owner, devices[0], devices)
    return str(devices[0])


def check_search_params(params: Optional[Dict[str, float]]) -> Dict[str, float]:
    """FAISS search parameters by name (``nprobe``, ``efSearch``, ``k_factor``), each a number > 0."""
    params = dict(params or {})
    for name, value in params.items():
        if name not in SEARCH_PARAMETERS:
            raise ValueError(f"search_params accepts {', '.join(SEARCH_PARAMETERS)}, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"search_params[{name!r}] must be a number > 0, got {value!r}")
    return params


def check_passages_or_filters(passage_ids: Optional[Sequence[str]], filters: Optional[Dict[str, Any]]) -> None:
    """``delete_passages`` (both Haystacks, every store) deletes by passage ids or by filters: exactly one."""
    if (passage_ids is None) == (filters is None):
        raise ValueError("delete_passages() takes passage_ids or filters (one of them)")
    refuse_empty_delete_filter(filters)
