"""E3 serving simulation: policy invariants and a tiny run of the section."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred import InterfpredError, Static
from interfpred.experiments.report import ReproduceContext
from interfpred.experiments.scheduling import experiment as scheduling
from interfpred.experiments.scheduling.dispatch import Batch, Dispatcher, project_truth
from interfpred.experiments.scheduling.experiment import POLICIES, fit_pair_models, simulate_serving
from interfpred.experiments.scheduling.policies import FifoPolicy, GpuletsPolicy, OraclePolicy
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
    r = simulate_serving("oracle", 3.5, requests=400, seed=1, spec=spec, pair_models=pair)
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
    assert "SLO attain. (%)" in sec.terminal and "| load |" in sec.markdown and "p99 (ms)" in sec.markdown
    first = sec.data["results"]["fifo"][0]["attainment"]
    assert f"| (a) one at a time, FIFO | {100 * first:.4g} |" in sec.markdown   # a share, shown in percent
    goals = sec.data["goals"]
    assert [r["load"] for r in goals["per_load"]] == [1.0, 3.5]
    for r, a, c, d in zip(goals["per_load"], *(sec.data["results"][p] for p in ("fifo", "tracker", "oracle"))):
        assert r["fifo"] == pytest.approx(a["attainment"]) and r["tracker"] == pytest.approx(c["attainment"])
        assert r["goodput_ratio"] == pytest.approx(c["goodput_rps"] / d["goodput_rps"])
        assert r["met"] is (r["fifo"] < 0.90 and r["tracker"] >= 0.99 and r["goodput_ratio"] >= 0.90)
    assert goals["met"] is any(r["met"] for r in goals["per_load"])
    assert goals["loads_met"] == [r["load"] for r in goals["per_load"] if r["met"]]
    assert ("Goal met at load(s)" if goals["met"] else "Goal NOT met at any measured load") in sec.markdown
    assert msgs == ["E3: fitting gpulets and the warm RLS on simulated pairs",
                    "E3: serving 200 requests at load 1 with 5 policies",
                    "E3: serving 200 requests at load 3.5 with 5 policies"]


# ---------------------------------------------------------------------------- policy decisions
def _serving(running_on: tuple[int, ...], n_devices: int = 2):
    """A serving state whose GPUs in ``running_on`` each run one vgg19 batch of 16 launched at 0."""
    prof, spec = zoo_profiles("l4"), get_gpu_spec("l4")
    sim = Dispatcher(prof, spec, n_devices, {m: 1e9 for m in prof.models}, np.random.default_rng(0), 32)
    sm, l2, dr, solo = sim.profile("vgg19", 16)
    for g in running_on:
        sim.devices[g].running.append(Batch(g, "vgg19", 16, np.array([g]), 1e6, 0.0, np.array([sm, l2, dr]), solo,
                                         solo, solo))
    return sim


def _oracle_added(sim, g, model, size, t):
    """Added latency of launching (model, size) on GPU g at t, from the true projection."""
    sm, l2, dr, solo = sim.profile(model, size)
    running = sim.devices[g].running
    dem = np.array([b.demand for b in running] + [[sm, l2, dr]])
    rem = np.array([b.remaining for b in running] + [solo])
    with_c = project_truth(sim.spec, dem, rem, t)
    base = project_truth(sim.spec, dem[:-1], rem[:-1], t) if running else np.empty(0)
    return with_c[-1] - t + float(np.sum(with_c[:-1] - base)), with_c


def test_fifo_places_only_on_an_idle_gpu():
    assert FifoPolicy(_serving((0,))).place(1, "resnet50", 8, 1e6, 0.0) == 1
    assert FifoPolicy(_serving((0, 1))).place(1, "resnet50", 8, 1e6, 0.0) is None


def test_oracle_places_where_the_launch_adds_least_latency():
    sim = _serving((0,))
    added0, _ = _oracle_added(sim, 0, "resnet50", 8, 0.0)
    added1, _ = _oracle_added(sim, 1, "resnet50", 8, 0.0)
    assert added1 < added0                               # beside vgg19 both slow down
    assert OraclePolicy(sim).place(1, "resnet50", 8, 1e6, 0.0) == 1
    # both busy: the one with the least added latency, though both are feasible
    sim = _serving((0, 1))
    sim.devices[1].running[0].remaining *= 0.25             # GPU 1's batch is nearly done: less to delay
    added = [_oracle_added(sim, g, "resnet50", 8, 0.0)[0] for g in (0, 1)]
    assert added[1] < added[0]
    assert OraclePolicy(sim).place(1, "resnet50", 8, 1e6, 0.0) == 1


def test_oracle_refuses_a_launch_that_would_break_a_deadline():
    sim = _serving((0, 1))
    _, with_c = _oracle_added(sim, 0, "resnet50", 8, 0.0)
    sim.devices[0].running[0].deadline = sim.devices[1].running[0].deadline = 0.5 * (with_c[0] + sim.devices[0].running[0].solo)
    assert with_c[0] > sim.devices[0].running[0].deadline      # the running batch would be late beside the candidate
    assert OraclePolicy(sim).place(1, "resnet50", 8, 1e6, 0.0) is None   # no idle GPU to fall back on
    sim.devices[1].running.clear()
    assert OraclePolicy(sim).place(1, "resnet50", 8, 1e6, 0.0) == 1


def test_gpulets_admits_on_its_static_prediction(pair):
    g = pair[0]
    sim = _serving((0, 1))
    sm, l2, dr, solo = sim.profile("resnet50", 1)
    light = sim.devices[1].running[0]
    light.model, light.size, light.demand, light.solo = "resnet50", 1, np.array([sm, l2, dr]), solo
    ex = Static(feature_map="gpulets", combine="max", target="slowdown")

    def ends(members):   # gpulets: each member takes solo x max(1, predicted slowdown) from its own start
        a = g.predict(ex.map_running_set(np.array([m[0] for m in members])))
        return np.array([m[2] + m[1] * max(1.0, float(x)) for m, x in zip(members, a)])

    cand = (np.array(sim.profile("resnet50", 8)[:3]), sim.profile("resnet50", 8)[3], 0.0)
    added = []
    for dev in sim.devices:
        running = [(b.demand, b.solo, b.start) for b in dev.running]
        with_c = ends(running + [cand])
        added.append(with_c[-1] + float(np.sum(with_c[:-1] - ends(running))))
    pol = GpuletsPolicy(sim, g, 0.05)
    assert pol.place(1, "resnet50", 8, 1e6, 0.0) == int(np.argmin(added))
    assert pol.place(1, "resnet50", 8, cand[1], 0.0) is None   # solo latency alone breaks the 5% margin


# ---------------------------------------------------------------------------- the engine's policy hook
def test_the_policy_hook_with_a_fifo_policy_is_the_compiled_engines_fifo_queue():
    """A policy that launches arrivals in order while fewer than max_concurrency run gives the launch and
    end times of the compiled engine's own FIFO queue (same truth rates, exact integration)."""
    from collections import deque

    from interfpred.sim.engine import Execution, PolicyEngine, simulate_work

    rng = np.random.default_rng(5)
    n = 60
    work = rng.uniform(2.0, 9.0, n)
    dem = rng.uniform(0.05, 0.6, (n, 3))
    arrival = np.sort(rng.uniform(0.0, 80.0, n))
    spec = get_gpu_spec("l4")

    class Fifo:
        def __init__(self, engine):
            self.engine, self.queue = engine, deque()
            self.start, self.end = np.full(n, np.nan), np.full(n, np.nan)
            self.ids = {}

        def arrive(self, i, t):
            self.queue.append(i)

        def finished(self, g, x, t):
            self.end[self.ids[id(x)]] = t

        def dispatch(self, t):
            while self.queue and len(self.engine.devices[0].running) < spec.max_concurrency:
                i = self.queue.popleft()
                x = Execution(dem[i], work[i], work[i])
                self.ids[id(x)] = i
                self.start[i] = t
                self.engine.launch(0, x, t)

    engine = PolicyEngine(spec, 1)
    pol = Fifo(engine)
    end = engine.run(arrival, pol)
    s, e = simulate_work(work, dem, arrival, spec=spec, queue=True)
    np.testing.assert_allclose(pol.start, s, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(pol.end, e, rtol=1e-9, atol=1e-9)
    assert end == pytest.approx(e.max(), rel=1e-12)
    dev = engine.devices[0]
    assert dev.max_running == spec.max_concurrency and not dev.running and dev.busy_since is None
