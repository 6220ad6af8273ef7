"""A request body limit for both servers (the 1.x REST app and Hayhooks for 2.x), as plain ASGI middleware.

A DCSR request is a query, a ``top_k`` and a filter: a few kB. A larger body is refused with 413 before the
application sees it, whether the client declares its size (``Content-Length``) or streams it in chunks without one:
the body is read here, counted as it arrives, and handed to the application only once it is known to be within the
limit.
"""

import json
from typing import Any, Awaitable, Callable, Dict

MAX_BODY_BYTES = 1 << 20  # the one limit both servers document

Message = Dict[str, Any]


class BodyLimit:
    """Wrap an ASGI application: HTTP request bodies over ``max_bytes`` are answered 413 naming the limit."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.app, self.max_bytes = app, max_bytes

    def __getattr__(self, name):  # the wrapped application's attributes (FastAPI's ``routes``, ``state``, ...)
        return getattr(self.app, name)

    async def __call__(self, scope, receive: Callable[[], Awaitable[Message]], send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(send, f"{int(declared)} bytes")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._refuse(send, f"more than {self.max_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def _refuse(self, send, size: str) -> None:
        body = json.dumps({"detail": f"request body: {size}, more than the {self.max_bytes} allowed"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
