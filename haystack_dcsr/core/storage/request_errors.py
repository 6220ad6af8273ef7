"""How a server answers a request that failed, by the kind of error: the one policy of both serving paths
(``python -m haystack_dcsr.serve`` for Haystack 1.x, the Hayhooks wrapper for 2.x), so that a client sees the same
status for the same fault whichever Haystack serves it."""

RETRY_AFTER_S = 5  # what a 503 asks clients to wait before trying again


def request_status(error: BaseException) -> int:
    """503 for an engine that is down or did not answer (a ``ConnectionError``: Milvus, a SQL server; a
    ``TimeoutError``), 422 for a request the components refuse (a bad value, a filter comparing kinds), 500 for
    anything else."""
    if isinstance(error, (ConnectionError, TimeoutError)):
        return 503
    if isinstance(error, (ValueError, TypeError, KeyError)) or _is_filter_error(error):
        return 422
    return 500


def _is_filter_error(error: BaseException) -> bool:
    """A store's own refusal of a filter: Haystack 2.x's ``haystack.errors.FilterError`` is not a ``ValueError``,
    and this module imports no framework, so it is known by name."""
    return any(kind.__name__ == "FilterError" for kind in type(error).__mro__)


def first_line(error: BaseException) -> str:
    """The error's first line (its type's name when it has no message): what a client is shown."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
