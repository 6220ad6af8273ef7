"""The paired McNemar test: scipy's binomtest against the exact big-integer sum it replaced, side by side.

.venv/bin/python benchmarks/studies/binomtest_speed.py   # -> benchmarks/results/binomtest_speed.json
"""

import argparse
import json
import math
import timeit
from fractions import Fraction
from pathlib import Path

from scipy.stats import binomtest


def exact(wins: int, n: int) -> float:
    tail = sum(math.comb(n, i) for i in range(min(wins, n - wins) + 1))
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rows = []
    for wins, n in [(180, 400), (900, 2000), (4990, 10000)]:
        big_int = timeit.timeit(lambda: exact(wins, n), number=10) / 10
        scipy = timeit.timeit(lambda: binomtest(wins, n).pvalue, number=10) / 10
        rows.append(
            {
                "discordant": n,
                "exact_ms": round(1e3 * big_int, 2),
                "scipy_ms": round(1e3 * scipy, 2),
                "speedup": round(big_int / scipy, 1),
                "relative_difference": abs(binomtest(wins, n).pvalue - exact(wins, n)) / exact(wins, n),
            }
        )
    out = Path(__file__).resolve().parents[1] / "results" / "binomtest_speed.json"
    out.write_text(json.dumps(rows, indent=1))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
