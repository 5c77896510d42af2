"""Microseconds per sample of predict/update for every predictor and its peers, with ratios vs RLS.

Run from the repository root: ``python benchmarks/bench_update.py [--n 20000]``.
Goals: RLS single-row update <= 1.0 us at d = 6, batched <= 0.15 us/sample,
single-row predict <= 0.5 us.  The same table: ``python -m interfpred bench``.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred.experiments.benchmarking import first_call_seconds, format_bench, run_bench  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, nargs="+", default=[6, 12, 24])
    a = ap.parse_args()
    first = first_call_seconds()
    print(f"first RLS update+predict in this process (compile or numba cache load): {first * 1e3:.1f} ms")
    print(format_bench(run_bench(a.d, n=a.n)))
