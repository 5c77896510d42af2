"""Cost of EntityRLS (d = 16 plus entity terms, 50 entities, rank 0 and 2) beside RLS and river, with ratios.

Single-row predict and update through the public API, each row with its own ``Entities`` (one model and 1-2
co-runners among 50, all seen during the warm-up), and batches of 1,000 rows; river's ``LinearRegression``
(``predict_one``/``learn_one``) at the same width is the peer. Goals: update <= 2 us, predict <= 1 us.

Run from the repository root: ``python benchmarks/bench_entity.py [--n 20000]``.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred import RLS, EntityRLS
from interfpred.experiments.benchmarking import format_bench, run_bench

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=16)
    a = ap.parse_args()
    rows = run_bench([a.d], [RLS(), EntityRLS(), EntityRLS(rank=2)], n=a.n, repeats=3, peers=True)
    rows = [r for r in rows if r.name.startswith(("RLS", "EntityRLS", "river"))]
    print(format_bench(rows))
    river = next((r for r in rows if r.name.startswith("river")), None)
    for r in rows:
        if r.name.startswith("EntityRLS"):
            line = (f"{r.name}: update {r.update_one:.2f} us (goal <= 2: {'met' if r.update_one <= 2 else 'NOT met'}), "
                    f"predict {r.predict_one:.2f} us (goal <= 1: {'met' if r.predict_one <= 1 else 'NOT met'})")
            if river is not None:
                line += (f"; time / river's: update {r.update_one / river.update_one:.2f}x, "
                         f"predict {r.predict_one / river.predict_one:.2f}x")
            print(line)
