"""The end-to-end latency rule against a plain Monte-Carlo of its queueing model, and the batching simulator.

The reference simulates one instance request by request with a heap of processes (no closed
forms); the rule must never promise less latency than it finds, nor be wildly above it.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from interfpred.errors import InterfpredError
from interfpred.provisioning import LatencyRule, admitted_rates, request_latency_ms
from interfpred.sim.batching import BatchingInstance, simulate_batching


def _monte_carlo_p99(latency_ms, batch, processes, rate_rps, sigma, n=60_000, seed=1):
    rng = np.random.default_rng(seed)
    arrive = np.cumsum(rng.exponential(1000.0 / rate_rps, n))
    full = n // batch * batch
    arrive = arrive[:full]
    free = [0.0] * processes
    lat = []
    for k in range(full // batch):
        members = arrive[k * batch:(k + 1) * batch]
        start = max(heapq.heappop(free), members[-1])
        end = start + latency_ms * math.exp(sigma * rng.standard_normal())
        heapq.heappush(free, end)
        lat.extend(end - members)
    return float(np.percentile(lat, 99))


CASES = [(10.0, 8, 1, 400.0), (10.0, 8, 1, 700.0), (10.0, 1, 1, 80.0), (10.0, 1, 2, 150.0),
         (20.0, 16, 3, 2000.0), (5.0, 4, 2, 1400.0), (10.0, 8, 1, 100.0)]


@pytest.mark.parametrize(("latency", "batch", "procs", "rate"), CASES)
def test_rule_bounds_the_monte_carlo_p99_from_above_and_not_far(latency, batch, procs, rate):
    rule = LatencyRule(exec_sigma=0.1)
    ours = float(request_latency_ms(latency, batch, procs, rate, rule))
    ref = _monte_carlo_p99(latency, batch, procs, rate, 0.1)
    assert ref <= ours <= 1.6 * ref, (ours, ref)


def test_rule_is_infinite_when_the_processes_cannot_keep_up():
    rule = LatencyRule(exec_sigma=0.0)
    assert math.isinf(float(request_latency_ms(10.0, 8, 1, 800.0, rule)))   # utilisation 1
    assert math.isinf(float(request_latency_ms(10.0, 8, 1, 0.0, rule)))


def test_admitted_interval_is_where_the_rule_holds():
    rule = LatencyRule()
    lo, hi = admitted_rates([10.0, 10.0, 50.0], [8, 1, 8], [1, 2, 1], [60.0, 30.0, 20.0], rule)
    assert 0 < lo[0] < hi[0] < 800.0 and lo[1] == 0.0 and np.isnan(lo[2]) and np.isnan(hi[2])
    for r in (lo[0], hi[0], (lo[0] + hi[0]) / 2):
        assert float(request_latency_ms(10.0, 8, 1, r, rule)) <= 60.0 + 1e-9
    assert float(request_latency_ms(10.0, 8, 1, lo[0] * 0.99, rule)) > 60.0
    assert float(request_latency_ms(10.0, 8, 1, hi[0] * 1.01, rule)) > 60.0


def test_execution_share_rule_is_the_batch_latency_alone():
    lo, hi = admitted_rates([10.0, 30.0], [8, 8], [2, 1], [60.0, 60.0], LatencyRule(max_exec_fraction=0.45))
    assert lo[0] == 0.0 and hi[0] == pytest.approx(1600.0) and np.isnan(hi[1])


@pytest.mark.parametrize("kwargs", [{"percentile": 100.0}, {"exec_sigma": -1.0}, {"max_exec_fraction": 0.0},
                                    {"max_exec_fraction": float("nan")}])
def test_bad_rules_are_refused(kwargs):
    with pytest.raises(InterfpredError, match="must be a number"):
        LatencyRule(**kwargs)


def test_batching_simulation_agrees_with_the_reference_and_sees_overload():
    inst = [BatchingInstance("a", 8, 1, 10.0, 400.0)]
    r = simulate_batching(inst, {"a": 1e9}, exec_sigma=0.1, requests=60_000, seed=1)
    assert r.p99_ms["a"] == pytest.approx(_monte_carlo_p99(10.0, 8, 1, 400.0, 0.1), rel=0.1)
    slow = simulate_batching([BatchingInstance("a", 8, 1, 10.0, 790.0)], {"a": 40.0}, exec_sigma=0.1,
                             requests=20_000, seed=1)
    assert slow.attainment["a"] < 0.5      # utilisation above 1 with the spread: the queue grows
    split = simulate_batching([BatchingInstance("a", 1, 1, 1.0, 300.0), BatchingInstance("a", 1, 1, 1.0, 100.0)],
                              {"a": 1e9}, exec_sigma=0.0, requests=10_000, seed=3)
    assert split.requests["a"] == 10_000
    with pytest.raises(InterfpredError, match="model b: no instance"):
        simulate_batching(inst, {"a": 10.0, "b": 10.0}, exec_sigma=0.0, requests=10, seed=0)
