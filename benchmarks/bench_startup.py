"""Start-up time of the command line: ``interfpred --help`` / ``--version`` against ``python -c "import argparse"``.

The goal is ``interfpred --help`` within 3x of a bare Python start that imports argparse:
the package imports numba, numpy-heavy modules and pydantic models only when a command
needs them. Run from the repository root::

    PYTHONPATH=$PWD python benchmarks/bench_startup.py [--repeats 15]

Prints the median wall time of each command and the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def median_seconds(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    base = median_seconds([sys.executable, "-c", "import argparse"], args.repeats)
    print(f"{'command':<36}{'median ms':>10}{'x argparse':>12}")
    label = 'python -c "import argparse"'
    print(f"{label:<36}{base * 1e3:>10.1f}{1.0:>12.2f}")
    for label, extra in (("interfpred --help", ["--help"]), ("interfpred --version", ["--version"])):
        t = median_seconds([sys.executable, "-m", "interfpred", *extra], args.repeats)
        print(f"{label:<36}{t * 1e3:>10.1f}{t / base:>12.2f}")


if __name__ == "__main__":
    main()
