"""Run one of ``benchmarks/lib``'s measurement scripts as a subcommand of an entry point.

``python benchmarks/scale.py ann --help`` runs ``lib/ann_latency.py`` with ``--help``, as if it had been called
directly: each measurement keeps its own arguments and ``--help``; the entry point only lists them.
"""

import runpy
import sys
from pathlib import Path
from typing import Dict, Tuple

LIB = Path(__file__).resolve().parent


def dispatch(entry_point: str, summary: str, commands: Dict[str, Tuple[str, str]]) -> None:
    """``commands``: subcommand -> (script in lib/, one line on what it measures)."""
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help") or args[0] not in commands:
        width = max(map(len, commands))
        lines = [f"usage: {entry_point} {{{','.join(commands)}}} [ARGS...]", "", summary, "", "subcommands:"]
        lines += [f"  {name:<{width}}  {about}" for name, (_, about) in commands.items()]
        lines += ["", f"{entry_point} SUBCOMMAND --help shows a subcommand's own arguments."]
        print("\n".join(lines))
        if args and args[0] not in ("-h", "--help"):
            print(f"\nerror: unknown subcommand {args[0]!r}", file=sys.stderr)
            sys.exit(2)
        return
    script = LIB / commands[args[0]][0]
    sys.argv = [f"{entry_point} {args[0]}", *args[1:]]
    runpy.run_path(str(script), run_name="__main__")
