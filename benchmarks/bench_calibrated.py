"""Overhead of the Calibrated wrapper per single-row update and predict, over the wrapped RLS, in one run.

Run from the repository root: ``python benchmarks/bench_calibrated.py [--n 20000] [--d 6 16]``.
Goal: the wrapper adds <= 0.5 us per update and per predict (single row) over the wrapped
predictor. Rows: plain RLS, then Calibrated(RLS) with the relative and the std scale (window
1000, ACI, three quantiles); ``predict`` of the wrapper is timed at a quantile (the bound) and
without one (the point prediction, passed through).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred import RLS, Calibrated  # noqa: E402


def _once(fn, rows, ys=None):
    t0 = time.perf_counter()
    if ys is None:
        for x in rows:
            fn(x)
    else:
        for x, t in zip(rows, ys):
            fn(x, t)
    return (time.perf_counter() - t0) / len(rows) * 1e6


def bench(d: int, n: int, repeats: int = 7) -> list[tuple[str, float, float, float]]:
    """Best of ``repeats`` interleaved rounds (the wrapper and RLS alternate, so load on a shared
    machine hits both alike): us per single-row update, bound predict and point predict."""
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    y = (1.0 + X @ rng.random(d)) * np.exp(0.05 * rng.standard_normal(n))
    rows, ys = list(X), y.tolist()
    subjects = [("RLS", RLS().fit(X[:500], y[:500]))]
    for scale in ("relative", "std"):
        subjects.append((f"Calibrated(RLS, scale={scale!r})", Calibrated(RLS(), scale=scale).fit(X[:500], y[:500])))
    best = {name: [np.inf, np.inf, np.inf] for name, _ in subjects}
    for _ in range(repeats):
        for name, p in subjects:
            b = best[name]
            b[0] = min(b[0], _once(p.update, rows, ys))
            b[2] = min(b[2], _once(p.predict, rows))
            if isinstance(p, Calibrated):
                b[1] = min(b[1], _once(lambda x: p.predict(x, quantile=0.99), rows))
            else:
                b[1] = b[2]
    return [(name, *best[name]) for name, _ in subjects]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5_000)
    ap.add_argument("--d", type=int, nargs="+", default=[6, 16])
    a = ap.parse_args()
    Calibrated(RLS()).fit(np.random.default_rng(1).random((50, 2)), np.ones(50))  # compile / load the kernels
    print(f"{'d':>3}  {'predictor':34}  {'update us':>9}  {'+ over RLS':>10}  {'predict@q us':>12}  "
          f"{'+ over RLS':>10}  {'predict us':>10}  {'+ over RLS':>10}")
    for d in a.d:
        res = bench(d, a.n)
        _, bu, bp, _ = res[0]
        for name, u, q, p in res:
            print(f"{d:>3}  {name:34}  {u:9.3f}  {u - bu:+10.3f}  {q:12.3f}  {q - bp:+10.3f}  {p:10.3f}  {p - bp:+10.3f}")
    print("goal: the wrapper adds <= 0.5 us per single-row update and predict over the wrapped predictor")
