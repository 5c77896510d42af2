"""E3 serving simulation: policy invariants and a tiny run of the section."""

from __future__ import annotations

import pytest

from interfpred import InterfpredError
from interfpred.experiments import scheduling
from interfpred.experiments.report import ReproduceContext
from interfpred.experiments.scheduling import POLICIES, fit_pair_models, simulate_serving
from interfpred.sim.contention import get_gpu_spec
from interfpred.sim.zoo import zoo_profiles


@pytest.fixture(scope="module")
def pair():
    return fit_pair_models(zoo_profiles("l4"), get_gpu_spec("l4"), batches=(1, 4, 16))


@pytest.mark.parametrize("policy", POLICIES)
def test_policy_invariants(policy, pair):
    r = simulate_serving(policy, 3.0, requests=300, seed=2, pair_models=pair)
    for v in (r.attainment, r.busy, r.dropped):
        assert 0.0 <= v <= 1.0
    assert r.attainment <= 1.0 - r.dropped + 1e-12        # a dropped request never meets its SLO
    assert r.p50_ms <= r.p99_ms
    if policy == "fifo":
        assert r.max_concurrency == 1 and r.mean_concurrency == pytest.approx(1.0)
    else:
        assert 1 <= r.max_concurrency <= get_gpu_spec("l4").max_concurrency
    again = simulate_serving(policy, 3.0, requests=300, seed=2, pair_models=pair)
    assert again.attainment == r.attainment and again.p99_ms == r.p99_ms   # deterministic


def test_oracle_without_noise_never_misses_a_launched_request(pair):
    spec = get_gpu_spec("l4", sigma=0.0)
    r = simulate_serving("oracle", 3.5, requests=400, seed=1, gpu=spec, pair_models=pair)
    # exact projection: every launched batch meets its deadline; only dropped requests miss
    assert r.attainment == pytest.approx(1.0 - r.dropped)
    assert r.max_concurrency > 1


def test_colocation_helps_under_load(pair):
    fifo = simulate_serving("fifo", 3.5, requests=600, seed=0, pair_models=pair)
    tracker = simulate_serving("tracker", 3.5, requests=600, seed=0, pair_models=pair)
    assert tracker.goodput_rps > fifo.goodput_rps
    assert tracker.tracker_error is not None and tracker.tracker_error < 0.5


def test_bad_policy_and_requests():
    with pytest.raises(InterfpredError, match="policy"):
        simulate_serving("lifo", 1.0, requests=10)
    with pytest.raises(InterfpredError, match="requests"):
        simulate_serving("fifo", 1.0, requests=0)


def test_run_e3_tiny(tmp_path, monkeypatch):
    monkeypatch.setattr(scheduling, "E3_QUICK_LOADS", (1.0, 3.5))
    monkeypatch.setattr(scheduling, "E3_QUICK_REQUESTS", 200)
    monkeypatch.setattr(scheduling, "E3_PAIR_BATCHES", (1, 8))
    msgs = []
    sec = scheduling.run_e3(ReproduceContext(tmp_path, seed=3, quick=True, progress=msgs.append))
    assert sec.title.startswith("E3")
    assert (tmp_path / "e3_slo_attainment.png").stat().st_size > 0
    assert sec.figures == ["e3_slo_attainment.png"]
    assert set(sec.data["results"]) == set(POLICIES)
    assert sec.data["loads"] == [1.0, 3.5] and sec.data["requests"] == 200
    for pol in POLICIES:
        assert all(0.0 <= r["attainment"] <= 1.0 for r in sec.data["results"][pol])
    assert "SLO attain." in sec.terminal and "| load |" in sec.markdown
    assert isinstance(sec.data["goals"]["met"], bool)
    assert msgs
