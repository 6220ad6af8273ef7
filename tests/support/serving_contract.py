"""The serving contract both servers pass (the 1.x REST app, ``python -m haystack_dcsr.serve``; Hayhooks for 2.x,
``python -m haystack_dcsr.haystack2.serve``), checked against a real server process: one error policy for one fault,
whichever Haystack serves it (``core.storage.request_errors``, ``core.storage.body_limit``).

- 422 naming the fault for a bad filter (an empty logical clause, an unknown operator, a dict or null value, the
  other Haystack's syntax) or a bad parameter (``top_k`` 0 or past 2^31 - 1);
- 413 for a body past the limit, declared (``Content-Length``) or streamed in chunks without a length;
- 503 with ``Retry-After`` for an engine that is hung (SIGSTOP), within the engine's timeout, and an answer again
  once it runs.
"""

import json
import time
from typing import Callable, Dict, Optional

from haystack_dcsr.core.storage.body_limit import MAX_BODY_BYTES

BAD_FILTERS = {  # (the fault, the words its 422 names) per filter syntax
    "2.x": [
        ({"operator": "OR", "conditions": []}, "conditions"),
        ({"operator": "AND", "conditions": [{"operator": "NOT", "conditions": []}]}, "conditions"),
        ({"field": "meta.kind", "operator": "~=", "value": "a"}, "unknown comparison operator"),
        ({"field": "meta.kind", "operator": "==", "value": {"$gt": 1}}, "takes a string, a number or a boolean"),
        ({"field": "meta.kind", "operator": "==", "value": None}, "null"),
        ({"kind": "city"}, "Haystack 2.x syntax"),
    ],
    "1.x": [
        ({"$or": []}, "empty clause"),
        ({"$and": [{"$not": {}}]}, "empty clause"),
        ({"kind": {"$regex": "a"}}, "unknown comparison operator"),
        ({"kind": {"$eq": {"$gt": 1}}}, "takes a string, a number or a boolean"),
        ({"kind": None}, "null"),
        ({"field": "meta.kind", "operator": "==", "value": "a"}, "field"),
    ],
}
BAD_TOP_K = [(0, "top_k"), (2**63, "top_k"), (-1, "top_k")]

Send = Callable[[str, Optional[bytes], Dict[str, str]], tuple]  # (path, body, headers) -> (status, headers, body)


def check_serving_contract(
    send: Send,
    query_path: str,
    body: Callable[..., dict],
    syntax: str,
    hang: Callable[[], None],
    resume: Callable[[], None],
    hung_within: float,
) -> None:
    """``body(filters=..., top_k=...)``: the server's request body for a query with those (omitted when not given);
    ``hang``/``resume``: stop and continue the engine behind ``query_path``."""
    json_headers = {"Content-Type": "application/json"}

    def post(fields: dict):
        return send(query_path, json.dumps(body(**fields)).encode(), json_headers)

    status, _, answer = post({})
    assert status == 200, answer[:300]
    for filters, named in BAD_FILTERS[syntax]:
        status, _, answer = post({"filters": filters})
        assert status == 422 and named.lower() in answer.decode().lower(), (filters, status, answer[:300])
    for top_k, named in BAD_TOP_K:
        status, _, answer = post({"top_k": top_k})
        assert status == 422 and named in answer.decode(), (top_k, status, answer[:300])
    padding = "x" * (MAX_BODY_BYTES + 10)
    status, _, answer = send(query_path, json.dumps({**body(), "padding": padding}).encode(), json_headers)
    assert status == 413, (status, answer[:300])
    chunks = (padding[i : i + 65536].encode() for i in range(0, len(padding), 65536))
    status, _, answer = send(query_path, chunks, json_headers)
    assert status == 413 and str(MAX_BODY_BYTES) in answer.decode(), (status, answer[:300])
    hang()
    try:
        started = time.monotonic()
        status, headers, answer = post({})
        waited = time.monotonic() - started
    finally:
        resume()
    assert status == 503 and {k.lower(): v for k, v in headers.items()}.get("retry-after"), (status, answer[:300])
    assert waited < hung_within, f"a hung engine took {waited:.1f} s to answer 503"
    deadline = time.monotonic() + 60
    while (status := post({})[0]) != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert status == 200, "the server did not answer again once the engine ran"
