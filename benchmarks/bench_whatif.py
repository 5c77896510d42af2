"""What-if latency of ColocationTracker: 8 running executions and 1 candidate (goal <= 50 us median).

Also times predict_finish, Fleet.choose_gpu, start + finish (with learning) and the generic path (a predictor the
tracker cannot read as affine, one predict call per projected segment), and a plain-Python
projection of the same question as the peer, and prints ratios.

Run: python benchmarks/bench_whatif.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from interfpred import RLS, ColocationTracker, Fleet, TimeWeighted
from interfpred.sim.zoo import zoo_profiles


class _Opaque:
    """An RLS the tracker cannot see through: forces the generic (Python per-segment) path."""

    def __init__(self, inner):
        self.inner = inner

    def predict(self, X):
        return self.inner.predict(X)

    def update(self, X, y):
        self.inner.update(X, y)


def _median_us(fn, repeat: int) -> float:
    for _ in range(min(200, repeat)):
        fn()
    times = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        times[i] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def _setup(predictor):
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(0)
    tr = ColocationTracker(prof, predictor, TimeWeighted(feature_map="rich", target="rate"))
    models = prof.models
    for i in range(8):
        tr.start(i, models[i % 6], int(rng.integers(1, 33)), float(i))
    return tr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5000)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    rls = RLS()
    X = rng.random((200, 16))
    rls.update(X, 1.0 - 0.1 * X[:, 9] - 0.05 * X[:, 15])      # a trained, non-trivial model
    tr = _setup(rls)
    cand = [("c", "vgg19", 8)]
    t = 10.0
    rows = []
    wi = _median_us(lambda: tr.what_if(cand, t), args.repeat)
    rows.append(("what_if 8 running + 1 candidate (RLS, compiled path)", wi))
    rows.append(("predict_finish 8 running (RLS)", _median_us(lambda: tr.predict_finish(t), args.repeat)))

    counter = [100]
    clock = [t]
    seen0 = rls.n_seen_

    def cycle():
        # Each execution runs 5 ms beside the 8 others, so finish has a real latency to learn from.
        i = counter[0]
        counter[0] += 1
        t0 = clock[0]
        clock[0] = t0 + 5.0
        tr.start(i, "resnet50", 4, t0)
        if not tr.finish(i, t0 + 5.0).learned:
            raise RuntimeError("start + finish did not learn")

    rows.append(("start + finish (learn) with 8 running", _median_us(cycle, args.repeat)))
    print(f"start + finish learned {rls.n_seen_ - seen0} observations")
    fleet = Fleet({g: ColocationTracker(zoo_profiles("l4"), rls) for g in ("g0", "g1")})
    for i in range(8):
        fleet.start(f"g{i % 2}", i, zoo_profiles("l4").models[i % 6], 4 + i, float(i), deadline=1e6)
    rows.append(("Fleet.choose_gpu, 2 GPUs x 4 running", _median_us(lambda: fleet.choose_gpu(("c", "vgg19", 8), 1e6, t),
                                                                    max(args.repeat // 2, 200))))
    opaque = _setup(_Opaque(rls))
    gen = _median_us(lambda: opaque.what_if(cand, t), max(args.repeat // 5, 200))
    rows.append(("what_if 8 + 1, generic path (opaque predictor)", gen))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  median_us")
    print("-" * width + "  ---------")
    for name, us in rows:
        print(f"{name:<{width}}  {us:9.2f}")
    print(f"\ngoal what_if <= 50 us: {'met' if wi <= 50 else 'NOT met'} ({wi:.1f} us)")
    print(f"compiled path speed-up over the generic path: {gen / wi:.1f}x")


if __name__ == "__main__":
    main()
