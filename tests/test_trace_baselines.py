"""Tests of the experiments' trivial baselines (no interference, global mean, per-pair mean)."""

from __future__ import annotations

import numpy as np

from interfpred.experiments.trace_baselines import (
    BASELINES,
    baseline_slowdowns,
    launch_keys,
)
from interfpred.sim.engine import simulate
from interfpred.trace import Trace


def test_per_pair_mean_falls_back_from_pair_to_model_batch_to_model_to_global():
    t = Trace(id=range(6), gpu=["g"] * 6, model=["a", "b", "a", "a", "a", "c"], batch_size=[1, 1, 1, 2, 1, 1],
              start_ms=[0.0, 0.0, 10, 20, 30, 40], end_ms=[2.0, 4.0, 12, 23, 30.5, 41], solo_ms=[1.0] * 6)
    sd = t.latency_ms / t.solo_ms
    train, test = slice(0, 3), slice(3, 6)
    p = baseline_slowdowns(t, train, t, test, sd)
    assert list(p) == list(BASELINES)
    # row 3: (a, 2) never seen -> mean of model a (rows 0 and 2: 2.0, 2.0); row 4: (a, 1, ()) seen at row 2;
    # row 5: model c never seen -> global mean of the training rows (2, 4, 2).
    np.testing.assert_allclose(p["per-pair mean"], [2.0, 2.0, 8.0 / 3.0])
    np.testing.assert_allclose(p["global mean"], [8.0 / 3.0] * 3)
    np.testing.assert_allclose(p["no interference"], [1.0] * 3)


def test_launch_keys_match_a_direct_scan():
    rng = np.random.default_rng(2)
    n = 80
    models = rng.choice(["x", "y", "z"], n)
    res = simulate(np.where(models == "x", "vgg19", np.where(models == "y", "resnet50", "yolov8n")),
                   rng.integers(1, 9, n), np.sort(rng.uniform(0, 300, n)), spec="l4", seed=1)
    t = res.trace
    keys = launch_keys(t)
    for i in range(n):
        others = [j for j in range(n) if j != i and t.start_ms[j] <= t.start_ms[i] < t.end_ms[j]
                  and t.gpu[j] == t.gpu[i]]
        assert keys[i] == (t.model[i], int(t.batch_size[i]), tuple(sorted(t.model[others].tolist())))
