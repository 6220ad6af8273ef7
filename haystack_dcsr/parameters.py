"""Checks of retriever parameters shared by the Haystack 1.x node and the 2.x component.

Both fail at construction, not at the first query: YAML loading constructs components, so a
misspelt or out-of-range value is reported when the pipeline loads.
"""


def check_parameters(**values) -> None:
    """Reject values that would only fail at the first query (YAML loading runs __init__)."""
    rules = {
        "top_k": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
        "top_n_sentences": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
        "temperature": (lambda v: v is None or (isinstance(v, (int, float)) and v > 0), "a number > 0, or null"),
        "max_seq_len": (lambda v: v is None or (isinstance(v, int) and v >= 8), "an integer >= 8, or null"),
        "max_query_len": (lambda v: v is None or (isinstance(v, int) and v >= 4), "an integer >= 4, or null"),
        "batch_size": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
        "passage_cache_size": (lambda v: isinstance(v, int) and v >= 0, "an integer >= 0"),
    }
    for name, value in values.items():
        valid, expected = rules[name]
        if isinstance(value, bool) or not valid(value):
            raise ValueError(f"DCSRRetriever: {name} must be {expected}, got {value!r}")
