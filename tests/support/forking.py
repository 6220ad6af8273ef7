"""Child processes for fault tests, forked from the test process instead of started fresh.

A fresh interpreter spends ~13 s importing Haystack 1.x before it can do anything; a fork starts
with the test process's imports. The child talks back through a pipe, computes on one thread (the
parent's OpenMP thread pool does not survive a fork) and leaves with ``os._exit``, so it never
returns into pytest. Kill it, or wait for its exit status, with the usual ``os`` calls.
"""

import os
import traceback
from pathlib import Path
from typing import Callable, TextIO, Tuple

import torch


def forked(work: Callable[[TextIO], None], cwd: Path) -> Tuple[int, TextIO]:
    """Runs ``work(out)`` in a forked child in ``cwd``; returns (its pid, the read end of ``out``).

    The child's exit status is 0 when ``work`` returns, the code of a ``SystemExit`` it raises, else 1.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read)
            os.chdir(cwd)
            torch.set_num_threads(1)
            with os.fdopen(write, "w", buffering=1) as out:
                work(out)
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write)
    return pid, os.fdopen(read)


def exit_code(pid: int) -> int:
    """Waits for the child; its exit code, or minus the signal that ended it (as ``Popen.returncode``)."""
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
