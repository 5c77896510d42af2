"""Tests of the launch-time co-runner keys the experiments' per-pair mean uses."""

from __future__ import annotations

import numpy as np

from interfpred.experiments.launch_keys import launch_entities, launch_keys
from interfpred.sim.engine import simulate


def test_launch_keys_match_a_direct_scan():
    rng = np.random.default_rng(2)
    n = 80
    models = rng.choice(["vgg19", "resnet50", "yolov8n"], n)
    res = simulate(models, rng.integers(1, 9, n), np.sort(rng.uniform(0, 300, n)), device=rng.choice(["a", "b"], n),
                   spec="l4", seed=1)
    t = res.trace
    keys = launch_keys(t)
    ent = launch_entities(t)
    for i in range(n):
        others = [j for j in range(n) if j != i and t.start_ms[j] <= t.start_ms[i] < t.end_ms[j]
                  and t.device[j] == t.device[i]]
        assert keys[i] == (t.model[i], tuple(sorted(set(t.model[others].tolist()))))
        own, co = ent.row(i)
        assert own == t.model[i] and sum(co.values()) == len(others)
    assert ent.pair_keys() == keys
