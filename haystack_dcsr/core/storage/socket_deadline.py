"""A deadline on a blocking database call, enforced on the client: when it passes, the connection's socket is shut
down, so the call fails at once with the driver's own connection error instead of waiting for a server that holds
the connection and answers nothing (a process stopped with SIGSTOP, a hung host).

A server-side ``statement_timeout`` cannot end such a wait (the server is not running to enforce it), and TCP
keepalives and ``tcp_user_timeout`` cannot either (a stopped process's kernel still acknowledges every packet).
Shutting the socket down from a timer thread is what ends the blocked read; the connection is then unusable and the
caller replaces it.
"""

import os
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Optional


class Deadline:
    """Whether a ``socket_deadline`` ended its call."""

    def __init__(self) -> None:
        self.passed = False


@contextmanager
def socket_deadline(fileno: Callable[[], Optional[int]], seconds: float) -> Iterator[Deadline]:
    """Run the block with a deadline: after ``seconds`` the socket ``fileno()`` names (None: no connection yet) is
    shut down for reading and writing. ``Deadline.passed`` tells the caller, once the block has raised, that the
    deadline (not the server) ended it."""
    deadline = Deadline()

    def expire() -> None:
        try:
            number = fileno()
        except Exception:  # noqa: BLE001 - a connection closed meanwhile has no socket to shut
            return
        if number is None:
            return
        deadline.passed = True
        try:
            with socket.socket(fileno=os.dup(number)) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield deadline
    finally:
        timer.cancel()
