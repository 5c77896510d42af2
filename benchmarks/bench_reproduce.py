"""Wall time of ``interfpred reproduce --quick``, cold and warm, against its goals; and the prequential loop.

Cold: a new process with an empty numba cache folder (``NUMBA_CACHE_DIR`` pointing at a new temporary
folder, which interfpred honours before its per-user cache; see ``interfpred._core.jit``), so every
kernel compiles. Warm: the same command again in a new process with that folder now filled. Goals:
<= 60 s cold and <= 40 s warm on two cores; each figure is printed with its ratio to its goal, and the
warm run's ratio to the cold one. ``--full`` also times the full run (goal <= 600 s, warm cache).

The prequential loop (``interfpred.evaluation.prequential``: predict at launch, learn at finish) is
compared with the floor of the same public calls in a bare Python loop (no feedback delay, no
bookkeeping): ``predictor.predict(row)`` then ``predictor.update(row, y)``; goal within 1.5x of it
(``--no-reproduce`` times only the loop).

Run from the repository root: ``python benchmarks/bench_reproduce.py [--no-reproduce] [--full]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout
import numpy as np  # noqa: E402

from interfpred import RLS, OnlineSGD  # noqa: E402
from interfpred.evaluation import prequential  # noqa: E402

QUICK_COLD_GOAL_S, QUICK_WARM_GOAL_S, FULL_GOAL_S = 60.0, 40.0, 600.0


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


def loop_costs() -> None:
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


def timed_reproduce(out: str, cache: str, *extra: str) -> float:
    """Seconds of one ``interfpred reproduce`` in a new process with numba's cache in ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "interfpred", "reproduce", "--out", out, "--force", "--quiet", *extra],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-reproduce", action="store_true", help="time only the prequential loop")
    parser.add_argument("--no-loop", action="store_true", help="time only reproduce")
    parser.add_argument("--full", action="store_true", help="also time the full reproduce (minutes)")
    args = parser.parse_args()
    if not args.no_loop:
        loop_costs()
    if args.no_reproduce:
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "numba-cache")
        os.mkdir(cache)
        out = os.path.join(tmp, "report")
        cold = timed_reproduce(out, cache, "--quick")
        warm = timed_reproduce(out, cache, "--quick")
        print(f"reproduce --quick, cold (empty numba cache): {cold:6.1f} s = {cold / QUICK_COLD_GOAL_S:.2f} x the "
              f"{QUICK_COLD_GOAL_S:g} s goal ({'met' if cold <= QUICK_COLD_GOAL_S else 'NOT met'})")
        print(f"reproduce --quick, warm (cache filled):      {warm:6.1f} s = {warm / QUICK_WARM_GOAL_S:.2f} x the "
              f"{QUICK_WARM_GOAL_S:g} s goal ({'met' if warm <= QUICK_WARM_GOAL_S else 'NOT met'}); "
              f"warm / cold {warm / cold:.2f}")
        if args.full:
            full = timed_reproduce(out, cache)
            print(f"reproduce (full), warm: {full:6.1f} s = {full / FULL_GOAL_S:.2f} x the {FULL_GOAL_S:g} s goal "
                  f"({'met' if full <= FULL_GOAL_S else 'NOT met'})")


if __name__ == "__main__":
    main()
