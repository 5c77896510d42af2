"""Reproduce speed: the prequential loop per row, and wall time of ``reproduce`` quick and full.

The prequential loop (interfpred.model.interference.prequential: predict at launch, learn at finish) is
compared with the floor of the same public calls in a bare Python loop (no feedback delay, no
bookkeeping): predictor.predict(row) then predictor.update(row, y). Goal: within 1.5x of it.
``reproduce`` targets: --quick <= 45 s and full <= 7 min on 2 cores, cold numba cache included
(the rest of the issue's 60 s / 10 min is left for E3). Run: ``python benchmarks/bench_reproduce.py``
(add ``--no-reproduce`` to time only the loop). Measure cold starts by deleting the numba cache
first (``interfpred._core.jit.cache_dir()``, or ``NUMBA_CACHE_DIR`` when set), or run with
``NUMBA_CACHE_DIR`` pointing at an empty folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
import numpy as np  # noqa: E402

from interfpred import RLS, OnlineSGD  # noqa: E402
from interfpred.evaluation import prequential  # noqa: E402


def bare_loop(p, X, y):
    out = np.empty(len(y))
    rows, ys = list(X), y.tolist()
    for i in range(len(ys)):
        out[i] = p.predict(rows[i])
        p.update(rows[i], ys[i])
    return out


def best_of(f, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="Prequential loop cost against a bare predict/update loop, "
                                     "and the wall time of reproduce --quick and full.")
    parser.add_argument("--no-reproduce", action="store_true", help="skip timing the reproduce runs")
    args = parser.parse_args()
    n, d = 50_000, 16
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    y = 1.0 + X @ rng.random(d) + 0.01 * rng.standard_normal(n)
    start = np.cumsum(rng.exponential(1.0, n))
    end = start + rng.exponential(3.0, n)
    print(f"prequential over {n} rows, d={d} (us per row, best of 3)")
    print(f"{'predictor':10s} {'bare loop':>10s} {'prequential':>12s} {'delayed':>10s} {'ratio':>6s}")
    for name, make in (("RLS", RLS), ("OnlineSGD", OnlineSGD)):
        make().fit(X[:10], y[:10])  # compile / load the numba cache
        bare = best_of(lambda: bare_loop(make().fit(X[:10], y[:10]), X, y)) / n * 1e6
        pq = best_of(lambda: prequential(make().fit(X[:10], y[:10]), X, y)) / n * 1e6
        dl = best_of(lambda: prequential(make().fit(X[:10], y[:10]), X, y, start_ms=start, end_ms=end)) / n * 1e6
        print(f"{name:10s} {bare:10.2f} {pq:12.2f} {dl:10.2f} {dl / bare:6.2f}")
    if args.no_reproduce:
        return
    from interfpred.experiments.reproduce import reproduce

    with tempfile.TemporaryDirectory() as tmp:
        for quick in (True, False):
            t = time.perf_counter()
            reproduce(os.path.join(tmp, f"r{int(quick)}"), quick=quick)
            print(f"reproduce {'--quick' if quick else '(full)'}: {time.perf_counter() - t:.1f} s "
                  f"(goal {'<= 60 s' if quick else '<= 600 s'}; this process, numba cache as found)")


if __name__ == "__main__":
    main()
