"""How much faster int8 makes the towers and the reranker on a CPU, and what it costs in accuracy.

python benchmarks/speed.py --help
python benchmarks/speed.py towers --help
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))

from subcommands import dispatch  # noqa: E402

COMMANDS = {
    "towers": ("tower_int8.py", "fp32 vs int8 DCSR towers: encoding speed and SQuAD top-k, side by side"),
    "reranker": ("cross_encoder_int8.py", "fp32 vs int8 cross-encoder: scoring speed and its pairwise choices"),
}

if __name__ == "__main__":
    dispatch("speed.py", __doc__.split("\n\n")[0], COMMANDS)
