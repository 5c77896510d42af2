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


def _time(fn, rows, ys=None, repeats=3):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        if ys is None:
            for x in rows:
                fn(x)
        else:
            for x, t in zip(rows, ys):
                fn(x, t)
        best = min(best, (time.perf_counter() - t0) / len(rows))
    return best * 1e6


def bench(d: int, n: int) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    y = (1.0 + X @ rng.random(d)) * np.exp(0.05 * rng.standard_normal(n))
    rows, ys = list(X), y.tolist()
    out = []
    base = RLS().fit(X[:500], y[:500])
    up = _time(base.update, rows, ys)
    pr = _time(base.predict, rows)
    out.append(("RLS", up, pr, pr))
    for scale in ("relative", "std"):
        cal = Calibrated(RLS(), scale=scale).fit(X[:500], y[:500])
        cu = _time(cal.update, rows, ys)
        cq = _time(lambda x: cal.predict(x, quantile=0.99), rows)
        cp = _time(cal.predict, rows)
        out.append((f"Calibrated(RLS, scale={scale!r})", cu, cq, cp))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20_000)
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
