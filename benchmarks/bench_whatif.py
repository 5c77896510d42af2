"""What-if latency of ColocationTracker: 8 and 64 running executions and 1 candidate; choose_device over 64 devices.

Goals: what_if <= 50 us at 8 running; <= 25 us and <= 2.5x its cost at 8 when 64 are running;
Fleet.choose_device over 64 devices with 4 running each <= 300 us; through Calibrated(RLS()), the
bound at quantile 0.99 costs at most 2x the mean what_if at 8 and at 64 running (both compiled).

Also times predict_finish, Fleet.choose_device, start + finish (with learning), the same events
with a late window kept and with a finish reported late (replayed), and the generic path (a
predictor the tracker cannot read as affine, one predict call per projected segment), and a
plain-Python projection of the same question as the peer, and prints ratios.

Run: python benchmarks/bench_whatif.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from interfpred import RLS, Calibrated, ColocationTracker, Entities, EntityRLS, Fleet, KernelBlocking, TimeWeighted
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


class _OpaqueCalibrated(_Opaque):
    """A Calibrated predictor the tracker cannot see through: its bounds take the general path."""

    def predict(self, X, quantile=None):
        return self.inner.predict(X, quantile=quantile)


def _setup(predictor, k=8, late_window_ms=0.0, feature_map="rich"):
    prof = zoo_profiles("l4")
    rng = np.random.default_rng(0)
    tr = ColocationTracker(prof, predictor, TimeWeighted(feature_map=feature_map, target="rate"),
                           late_window_ms=late_window_ms)
    models = prof.models
    for i in range(k):
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
    tr64 = _setup(rls, 64)
    wi64 = _median_us(lambda: tr64.what_if(cand, 70.0), args.repeat)
    rows.append(("what_if 64 running + 1 candidate (RLS)", wi64))
    rows.append(("predict_finish 64 running (RLS)", _median_us(lambda: tr64.predict_finish(70.0), args.repeat)))
    prof = zoo_profiles("l4")
    big = Fleet({f"g{g}": ColocationTracker(prof, rls) for g in range(64)})
    for g in range(64):
        for j in range(4):
            big.start(f"g{g}", (g, j), prof.models[(g + j) % 6], 4 + 4 * j, 0.1 * j, deadline=1e6)
    ch64 = _median_us(lambda: big.choose_device(("c", "vgg19", 8), 1e6, t), max(args.repeat // 10, 200))
    rows.append(("Fleet.choose_device, 64 devices x 4 running", ch64))
    per_device = _median_us(lambda: big.assess("g0", ("c", "vgg19", 8), 1e6, t), args.repeat)
    rows.append(("  one device assessed alone (what_if + predict_finish)", per_device))

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
    # Late completions: two executions, the first one's finish reported after the second one's start
    # (one event replayed), beside the same events in order; and the cost of keeping the window.
    def pair(trk, late):
        clock = [100.0]
        counter = [10_000]

        def run():
            i, t0 = counter[0], clock[0]
            counter[0] += 2
            clock[0] = t0 + 5.0
            trk.start(i, "resnet50", 4, t0)
            if late:
                trk.start(i + 1, "vgg19", 4, t0 + 1.0)
                trk.finish(i, t0 + 0.5)
            else:
                trk.finish(i, t0 + 0.5)
                trk.start(i + 1, "vgg19", 4, t0 + 1.0)
            trk.finish(i + 1, t0 + 5.0)
        return run

    in_order = _median_us(pair(_setup(rls), False), args.repeat)
    kept = _median_us(pair(_setup(rls, late_window_ms=50.0), False), args.repeat)
    replayed = _median_us(pair(_setup(rls, late_window_ms=50.0), True), args.repeat)
    rows.append(("2 starts + 2 finishes with 8 running, in order", in_order))
    rows.append(("  the same with late_window_ms=50 (events logged)", kept))
    rows.append(("  the first finish reported late (one event replayed)", replayed))
    fleet = Fleet({g: ColocationTracker(zoo_profiles("l4"), rls) for g in ("g0", "g1")})
    for i in range(8):
        fleet.start(f"g{i % 2}", i, zoo_profiles("l4").models[i % 6], 4 + i, float(i), deadline=1e6)
    rows.append(("Fleet.choose_device, 2 devices x 4 running", _median_us(lambda: fleet.choose_device(("c", "vgg19", 8), 1e6, t),
                                                                    max(args.repeat // 2, 200))))
    ent_pred = EntityRLS()
    zoo = zoo_profiles("l4").models
    own = rng.choice(zoo, 200)
    ent_pred.fit(X, 1.0 - 0.1 * X[:, 9] - 0.05 * X[:, 15],
                 entities=Entities.from_lists(own, [{zoo[(i * 5) % 6]: 1.0, zoo[i % 6]: 1.0} for i in range(200)]))
    etr = _setup(ent_pred)
    ewi = _median_us(lambda: etr.what_if(cand, t), args.repeat)
    rows.append(("what_if 8 running + 1 candidate (EntityRLS, compiled path)", ewi))
    etr64 = _setup(ent_pred, 64)
    ewi64 = _median_us(lambda: etr64.what_if(cand, 70.0), args.repeat)
    rows.append(("what_if 64 running + 1 candidate (EntityRLS, 55 distinct entities)", ewi64))
    # what fit chooses by default: EntityRLS (interfpred fit --calibrate: inside Calibrated) on real pairs,
    # KernelBlocking on spatial-sharing runs with kernel profiles
    ecal = Calibrated(EntityRLS(), quantiles=(0.99,))
    ecal.fit(X, 1.0 - 0.1 * X[:, 9] - 0.05 * X[:, 15] + 0.02 * rng.standard_normal(200),
             entities=Entities.from_lists(own, [{zoo[(i * 5) % 6]: 1.0, zoo[i % 6]: 1.0} for i in range(200)]))
    ecal_us = {}
    for k, tk in ((8, t), (64, 70.0)):
        ctr = _setup(ecal, k)
        ecal_us[k] = _median_us(lambda: ctr.what_if(cand, tk), args.repeat)
        rows.append((f"what_if {k} + 1, Calibrated(EntityRLS()) mean (compiled path)", ecal_us[k]))
    blk = KernelBlocking(target="rate")
    n_others = rng.integers(1, 4, 200).astype(float)[:, None]
    blk.fit(n_others, 1.0 / (1.0 + 0.3 * n_others[:, 0] * rng.uniform(0.5, 1.5, 200)),
            entities=Entities.from_lists(own, [{zoo[(i * 5) % 6]: 1.0, zoo[i % 6]: 1.0} for i in range(200)]))
    blk_us = {}
    for k, tk in ((8, t), (64, 70.0)):
        btr = _setup(blk, k, feature_map="corunners")
        blk_us[k] = _median_us(lambda: btr.what_if(cand, tk), args.repeat)
        rows.append((f"what_if {k} + 1, KernelBlocking (compiled path)", blk_us[k]))
    opaque = _setup(_Opaque(rls))
    gen = _median_us(lambda: opaque.what_if(cand, t), max(args.repeat // 5, 200))
    rows.append(("what_if 8 + 1, generic path (opaque predictor)", gen))
    # Calibrated(RLS()) (std score scale), trained on the same rows, calibrated at 0.99 (and 0.01 for the rate target)
    cal = Calibrated(RLS(), quantiles=(0.99,))
    cal.update(X, 1.0 - 0.1 * X[:, 9] - 0.05 * X[:, 15] + 0.02 * rng.standard_normal(200))
    cal_us = {}
    for k, tk in ((8, t), (64, 70.0)):
        ctr = _setup(cal, k)
        cal_us[k] = (_median_us(lambda: ctr.what_if(cand, tk), args.repeat),
                     _median_us(lambda: ctr.what_if(cand, tk, quantile=0.99), args.repeat))
        rows.append((f"what_if {k} + 1, Calibrated(RLS()) mean (compiled path)", cal_us[k][0]))
        rows.append((f"what_if {k} + 1, Calibrated(RLS()) quantile=0.99 (compiled path)", cal_us[k][1]))
    ocal = _setup(_OpaqueCalibrated(cal))
    cal_gen = _median_us(lambda: ocal.what_if(cand, t, quantile=0.99), max(args.repeat // 20, 100))
    rows.append(("what_if 8 + 1, quantile=0.99, general path (opaque Calibrated)", cal_gen))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  median_us")
    print("-" * width + "  ---------")
    for name, us in rows:
        print(f"{name:<{width}}  {us:9.2f}")
    print()
    goals = [("what_if at 8 running <= 50 us", wi, wi <= 50),
             ("what_if at 64 running <= 25 us", wi64, wi64 <= 25),
             ("what_if 64 / what_if 8 <= 2.5x", wi64 / wi, wi64 / wi <= 2.5),
             ("choose_device over 64 devices x 4 running <= 300 us", ch64, ch64 <= 300),
             ("choose_device 64 devices vs 64 one-by-one assessments (x faster)", 64 * per_device / ch64, True),
             ("Calibrated quantile / mean what_if at 8 running <= 2x", cal_us[8][1] / cal_us[8][0],
              cal_us[8][1] / cal_us[8][0] <= 2),
             ("Calibrated quantile / mean what_if at 64 running <= 2x", cal_us[64][1] / cal_us[64][0],
              cal_us[64][1] / cal_us[64][0] <= 2),
             ("default model (EntityRLS) what_if at 64 running <= 25 us", ewi64, ewi64 <= 25),
             ("default model (EntityRLS) / RLS what_if at 8 running <= 1.5x", ewi / wi, ewi / wi <= 1.5),
             ("default model (EntityRLS) / RLS what_if at 64 running <= 1.5x", ewi64 / wi64, ewi64 / wi64 <= 1.5)]
    for name, val, ok in goals:
        print(f"goal {name:<62} measured {val:9.2f}  {'met' if ok else 'NOT met'}")
    print(f"compiled path speed-up over the generic path: {gen / wi:.1f}x")
    print(f"EntityRLS what_if / RLS what_if: {ewi / wi:.2f}x at 8 running, {ewi64 / wi64:.2f}x at 64 (goal <= 1.5x)")
    print(f"Calibrated(EntityRLS()) what_if / RLS what_if: {ecal_us[8] / wi:.2f}x at 8 running, "
          f"{ecal_us[64] / wi64:.2f}x at 64")
    print(f"KernelBlocking what_if / RLS what_if: {blk_us[8] / wi:.2f}x at 8 running, {blk_us[64] / wi64:.2f}x at 64")
    print(f"late window kept / in order: {kept / in_order:.2f}x; late finish replayed / in order: "
          f"{replayed / in_order:.2f}x")
    print(f"Calibrated(RLS()) mean what_if / RLS what_if: {cal_us[8][0] / wi:.2f}x at 8 running, "
          f"{cal_us[64][0] / wi64:.2f}x at 64")
    print(f"Calibrated quantile what_if, compiled vs general path at 8 running: {cal_gen / cal_us[8][1]:.1f}x faster")


if __name__ == "__main__":
    main()
