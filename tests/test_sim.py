"""Tests of the ground-truth simulator (interfpred.sim): rate model, engine, zoo, workloads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_sim_integrate, naive_sim_rates

from interfpred.errors import InterfpredError
from interfpred.sim.arrivals import offered_load, poisson_arrivals, simulate_arrivals
from interfpred.sim.contention import (
    GPU_PRESETS,
    GpuSpec,
    effective_demands,
    get_gpu_spec,
    rates,
)
from interfpred.sim.engine import simulate, simulate_work
from interfpred.sim.workload import mix_scenario, paper_scenario
from interfpred.sim.zoo import PAPER_NEW_MODELS, PAPER_TRAIN_MODELS, ZOO_MODELS, zoo_profiles

L4 = GPU_PRESETS["l4"]
SPECS = [GPU_PRESETS["l4"], GPU_PRESETS["a100"], GpuSpec(name="x", theta=3.0, epsilon=0.1)]
SETTINGS = settings(max_examples=40, deadline=None)


def demand_rows(min_value=0.0, max_k=6):
    """(k, 3) demands within every preset's capacities (dram <= 0.9)."""
    row = st.tuples(st.floats(min_value, 1.0), st.floats(min_value, 0.95), st.floats(min_value, 0.9))
    return st.lists(row, min_size=1, max_size=max_k)


def segments(start, end, members_of=None):
    """Segments of one GPU from launch/end times: (t0, t1, running indices)."""
    cuts = np.unique(np.concatenate([start, end]))
    out = []
    for t0, t1 in zip(cuts[:-1], cuts[1:]):
        run = np.flatnonzero((start <= t0) & (end >= t1))
        if run.size:
            out.append((t0, t1, run))
    return out


# ---------------------------------------------------------------------------- rates
@SETTINGS
@given(demand_rows(), st.sampled_from(SPECS))
def test_rates_match_naive_and_respect_capacity(d, spec):
    d = np.array(d)
    r = rates(d, spec)
    ref = naive_sim_rates(d.tolist(), spec.capacities, spec.theta, spec.epsilon)
    np.testing.assert_allclose(r, ref, rtol=1e-9, atol=1e-12)
    assert np.all(r > 0) and np.all(r <= 1.0)
    load = (r[:, None] * effective_demands(d, spec)).sum(axis=0)
    assert np.all(load <= np.array(spec.capacities) * (1 + 1e-9))


@SETTINGS
@given(demand_rows(), st.data(), st.sampled_from(SPECS))
def test_rates_with_hidden_factors_match_naive(d, data, spec):
    k = len(d)
    foot = data.draw(st.lists(st.floats(0.0, 60.0), min_size=k, max_size=k))
    hide = data.draw(st.lists(st.floats(0.5, 2.0), min_size=k, max_size=k))
    r = rates(np.array(d), spec, footprint_mb=foot, hiding=hide)
    over = min(1.0, max(0.0, sum(foot) / spec.l2_mb - 1.0))
    fair = naive_sim_rates(d, spec.capacities, spec.theta * (1.0 + spec.kappa * over), spec.epsilon)
    np.testing.assert_allclose(r, [x ** h for x, h in zip(fair, hide)], rtol=1e-9, atol=1e-12)


@SETTINGS
@given(demand_rows(min_value=1e-3, max_k=5), demand_rows(min_value=1e-3, max_k=3), st.sampled_from(SPECS))
def test_adding_a_corunner_never_speeds_anyone_up(base, extra, spec):
    a = np.array(base)
    both = np.vstack([a, np.array(extra)])
    assert np.all(rates(both, spec)[: len(a)] <= rates(a, spec) * (1 + 1e-12))


def test_zero_demand_counterexample_of_max_min_fairness_is_documented():
    # With a zero demand, max-min fairness can speed an execution up when a co-runner joins
    # (docs/simulator.md, "Monotonicity"): B is pinned by a DRAM hog, freeing SMs for A.
    spec = GpuSpec(name="x", theta=0.0, epsilon=0.0)
    a, b, hog = [0.8, 0.0, 0.0], [0.8, 0.0, 0.9], [0.0, 0.0, 0.9]
    before = rates([a, b], spec)
    after = rates([a, b, hog], spec)
    assert after[0] > before[0]


@SETTINGS
@given(demand_rows(max_k=3), st.integers(2, 4), st.sampled_from(SPECS))
def test_identical_executions_get_equal_rates(others, copies, spec):
    twin = [others[0]] * copies
    r = rates(np.array(twin + others[1:]), spec)
    assert np.all(r[:copies] == r[0])


def test_rates_bad_input():
    with pytest.raises(InterfpredError, match="shape"):
        rates([[0.1, 0.2]], L4)
    with pytest.raises(InterfpredError, match="fraction of peak"):
        rates([[0.1, 0.2, 1.5]], L4)
    with pytest.raises(InterfpredError, match="known presets: a100, l4, v100"):
        rates([[0.1, 0.2, 0.3]], "h100")
    assert rates(np.zeros((0, 3)), L4).shape == (0,)
    with pytest.raises(InterfpredError, match=r"footprint_mb must be \(1,\) finite values >= 0"):
        rates([[0.1, 0.2, 0.3]], L4, footprint_mb=[-1.0])
    with pytest.raises(InterfpredError, match=r"hiding must be \(1,\) finite values > 0"):
        rates([[0.1, 0.2, 0.3]], L4, hiding=[0.0, 1.0])


def test_gpu_spec_presets_differ_and_validate():
    l4, a100 = get_gpu_spec("l4"), get_gpu_spec("a100")
    assert l4.capacities != a100.capacities and l4.theta != a100.theta and l4.epsilon != a100.epsilon
    assert l4.max_concurrency == 4
    with pytest.raises(InterfpredError, match="unknown GpuSpec field"):
        get_gpu_spec("l4", thetta=1.0)
    with pytest.raises(ValueError):
        get_gpu_spec("l4", theta=-1.0)


# ---------------------------------------------------------------------------- engine
@SETTINGS
@given(st.floats(0.01, 100.0), st.floats(0.0, 1e4), st.integers(0, 2**31))
def test_lone_execution_takes_exactly_its_noisy_solo_work(work, t0, seed):
    s, e = simulate_work([work], [[0.7, 0.5, 0.4]], [t0])
    assert s[0] == t0
    assert e[0] - s[0] == pytest.approx(work, rel=1e-12)
    # Through the zoo and the noise too, with executions that never overlap.
    res = simulate(["vgg19", "yolov8n"], [4, 32], [0.0, 1000.0], seed=seed)
    np.testing.assert_allclose(res.trace.latency_ms, res.trace.solo_ms, rtol=1e-12)


case = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0.5, 20.0), min_size=n, max_size=n),
    st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 0.95), st.floats(0.01, 0.9)), min_size=n, max_size=n),
    st.lists(st.floats(0.0, 30.0), min_size=n, max_size=n),
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
))


@SETTINGS
@given(case, st.booleans(), st.sampled_from(SPECS))
def test_engine_agrees_with_brute_force_integrator(c, queue, spec):
    work, dem, times, dev = (np.array(x) for x in c)
    spec = spec.model_copy(update={"max_concurrency": 2})  # make the queue bind on small cases
    s, e = simulate_work(work, dem, times, dev, spec=spec, queue=queue)
    limit = spec.max_concurrency if queue else len(work)
    s2, e2 = naive_sim_integrate(work.tolist(), dem.tolist(), times.tolist(), dev.tolist(), spec.capacities,
                                 spec.theta, spec.epsilon, limit, dt=0.05)
    np.testing.assert_allclose(s2, s, rtol=1e-6, atol=0)
    lat = e - s
    np.testing.assert_allclose((np.array(e2) - s) / lat, lat / lat, rtol=1e-6)
    if not queue:
        assert np.array_equal(s, times)


def test_fixed_step_integrator_converges_to_the_engine():
    rng = np.random.default_rng(5)
    work, dem, times = rng.uniform(1, 5, 4), rng.uniform(0.1, 0.8, (4, 3)), np.array([0.0, 0.5, 1.0, 2.0])
    _, e = simulate_work(work, dem, times, spec=L4, queue=False)
    errs = []
    for dt in (1e-2, 1e-3):
        _, e2 = naive_sim_integrate(work.tolist(), dem.tolist(), times.tolist(), [0] * 4, L4.capacities,
                                    L4.theta, L4.epsilon, 4, dt=dt, clip_to_events=False)
        errs.append(np.max(np.abs(np.array(e2) - e)))
    assert errs[1] < 10 * 1e-3 and errs[1] < errs[0]


@SETTINGS
@given(case, st.sampled_from(SPECS))
def test_every_segment_within_capacity_and_progress_adds_up_to_the_work(c, spec):
    work, dem, times, dev = (np.array(x) for x in c)
    s, e = simulate_work(work, dem, times, dev, spec=spec, queue=True)
    done = np.zeros(len(work))
    for g in np.unique(dev):
        idx = np.flatnonzero(dev == g)
        for t0, t1, run in segments(s[idx], e[idx]):
            members = idx[run]
            assert len(members) <= spec.max_concurrency
            r = np.array(naive_sim_rates(dem[members].tolist(), spec.capacities, spec.theta, spec.epsilon))
            load = (r[:, None] * effective_demands(dem[members], spec)).sum(axis=0)
            assert np.all(load <= 1 + 1e-9) and np.all(load <= np.array(spec.capacities) * (1 + 1e-9))
            done[members] += r * (t1 - t0)
    np.testing.assert_allclose(done, work, rtol=1e-9)


@SETTINGS
@given(case, st.tuples(st.floats(0.5, 20.0), st.floats(0.01, 1.0), st.floats(0.01, 0.95), st.floats(0.01, 0.9),
                       st.floats(0.0, 30.0)))
def test_an_added_corunner_never_makes_anyone_finish_earlier(c, extra):
    work, dem, times, _ = (np.array(x) for x in c)
    _, e = simulate_work(work, dem, times, spec=L4, queue=False)
    w2 = np.append(work, extra[0])
    d2 = np.vstack([dem, extra[1:4]])
    t2 = np.append(times, extra[4])
    _, e2 = simulate_work(w2, d2, t2, spec=L4, queue=False)
    assert np.all(e2[:-1] >= e * (1 - 1e-12))


@SETTINGS
@given(st.integers(2, 4), st.floats(0.5, 20.0), st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 0.95),
                                                          st.floats(0.01, 0.9)), case)
def test_identical_executions_started_together_finish_together(copies, work, d, others):
    ow, od, ot, _ = (np.array(x) for x in others)
    w = np.concatenate([[work] * copies, ow])
    dem = np.vstack([[d] * copies, od])
    t = np.concatenate([[3.0] * copies, ot])
    _, e = simulate_work(w, dem, t, spec=L4, queue=False)
    assert np.all(e[:copies] == e[0])


def test_queue_is_fifo_with_the_concurrency_limit():
    n = 7
    res = simulate(["resnet50"] * n, [8] * n, np.arange(n) * 0.1, seed=0)
    tr = res.trace
    assert np.array_equal(tr.id, np.arange(n))          # launched in arrival order
    assert np.array_equal(res.arrival_ms, np.arange(n) * 0.1)
    assert np.all(res.wait_ms[:4] == 0) and np.all(res.wait_ms[4:] > 0)
    # at most 4 running at any launch instant
    for t in tr.start_ms:
        assert np.sum((tr.start_ms <= t) & (tr.end_ms > t)) <= 4
    # a waiting execution launches exactly when one finishes
    assert set(tr.start_ms[4:]) <= set(tr.end_ms)


def test_gpus_are_independent():
    one = simulate(["vgg19"] * 2, [8, 8], [0.0, 0.0], device=["a", "b"], seed=1).trace
    np.testing.assert_allclose(one.latency_ms, one.solo_ms, rtol=1e-12)
    assert one.devices == ("a", "b")




def test_same_seed_same_trace_and_different_seed_differs():
    a = paper_scenario("l4", seed=3, executions=300)
    b = paper_scenario("l4", seed=3, executions=300)
    c = paper_scenario("l4", seed=4, executions=300)
    for k in a.traces:
        assert a.traces[k] == b.traces[k]
        assert np.array_equal(a.arrival_ms[k], b.arrival_ms[k])
        assert not a.traces[k] == c.traces[k]


def test_simulate_bad_input():
    with pytest.raises(InterfpredError, match="known models: convnext_b, resnet50"):
        simulate(["bert"], [1], [0.0])
    with pytest.raises(InterfpredError, match="outside the profiled range 1..32"):
        simulate(["vgg19"], [33], [0.0])
    with pytest.raises(InterfpredError, match="must be a finite time >= 0"):
        simulate(["vgg19"], [1], [-1.0])
    with pytest.raises(InterfpredError, match="positive integer"):
        simulate(["vgg19"], [1.5], [0.0])
    with pytest.raises(InterfpredError, match="known presets"):
        simulate(["vgg19"], [1], [0.0], spec="tpu")
    with pytest.raises(InterfpredError, match="exceeds gpu 'tiny' capacity_sm"):
        simulate(["vgg19"], [32], [0.0], spec=GpuSpec(name="l4", capacity_sm=0.5).model_copy(update={"name": "tiny"}),
                 profiles=zoo_profiles("l4").merge(_renamed_zoo("tiny")))
    with pytest.raises(InterfpredError, match="work_ms"):
        simulate_work([0.0], [[0.1, 0.1, 0.1]], [0.0])


def _renamed_zoo(gpu):
    z = zoo_profiles("l4")
    from interfpred.data.profiles import ProfileTable
    return ProfileTable.from_columns(**{k: (list(z.column(k)) if k != "gpu" else [gpu] * len(z))
                                        for k in ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram")})


# ---------------------------------------------------------------------------- zoo
@pytest.mark.parametrize("gpu", ["l4", "a100"])
def test_zoo_shapes(gpu):
    z = zoo_profiles(gpu)
    spec = GPU_PRESETS[gpu]
    assert z.models == tuple(sorted(ZOO_MODELS)) and len(z) == 6 * 32
    assert set(z.column("source")) == {"synthetic"}
    for m in z.models:
        p = z.lookup_arrays([m] * 32, np.arange(1, 33), gpus=gpu)
        solo, sm = p["solo_ms"], p["sm"]
        assert np.all(np.diff(solo) > 0)
        assert solo[1] / solo[0] < 1.5 and solo[31] / solo[15] > 1.8   # flat at small batch, then ~linear
        slope_hi = solo[31] - solo[30]
        assert abs((solo[23] - solo[22]) - slope_hi) < 0.1 * slope_hi   # linear at large batch
        assert np.all(np.diff(sm) > 0) and sm[31] - sm[30] < 0.25 * (sm[1] - sm[0])  # saturating
        for r, cap in zip(("sm", "l2", "dram"), spec.capacities):
            assert np.all((p[r] > 0) & (p[r] <= cap))
    if gpu == "l4":
        for m in ("roberta_base", "vit_b16", "yolov8n"):
            one, big = z.lookup(m, 1), z.lookup(m, 32)
            assert one.dram > one.sm and big.sm > big.dram      # memory-bound only at small batch
        assert 1.0 < z.lookup("resnet50", 1).solo_ms < 10.0 and 10.0 < z.lookup("vgg19", 32).solo_ms < 200.0


def test_a100_is_its_own_faster_zoo():
    l4, a100 = zoo_profiles("l4"), zoo_profiles("a100")
    assert a100.gpus == ("a100",)
    for m in ZOO_MODELS:
        assert a100.lookup(m, 16).solo_ms < l4.lookup(m, 16).solo_ms
        assert a100.lookup(m, 1).dram < l4.lookup(m, 1).dram


# ---------------------------------------------------------------------------- workload
def test_poisson_arrivals_hit_the_requested_load():
    z = zoo_profiles("l4")
    for rho in (0.3, 1.2):
        a = poisson_arrivals(["resnet50", "vit_b16"], rho=rho, executions=4000, batch_sizes=[1, 8, 32],
                             n_devices=2, seed=11)
        assert offered_load(a, z) == pytest.approx(rho, rel=0.08)
        assert np.all(np.diff(a.time_ms) >= 0) and set(a.device) == {"gpu0", "gpu1"}
        assert set(a.batch_size.tolist()) == {1, 8, 32}
    a = poisson_arrivals(["resnet50", "vit_b16"], rho=1.0, executions=4000, weights={"resnet50": 3, "vit_b16": 1},
                         batch_sizes={"resnet50": [4], "vit_b16": {2: 1.0, 16: 0.0}}, seed=1)
    solo = z.lookup_arrays(a.model, a.batch_size)["solo_ms"]
    share = solo[a.model == "resnet50"].sum() / solo.sum()
    assert share == pytest.approx(0.75, abs=0.03)
    assert set(a.batch_size[a.model == "vit_b16"].tolist()) == {2}


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho=0.0), "rho 0.0 must be in"), (dict(rho=-1.0), "rho -1.0"), (dict(rho=float("nan")), "rho nan"),
    (dict(rho=50.0), "above max_concurrency"), (dict(rho="x"), "not a number"),
    (dict(batch_sizes=[64]), "batch size 64 of model 'vgg19' is outside the profiled range 1..32"),
    (dict(batch_sizes=[0]), "outside the profiled range"),
    (dict(models=["vgg19", "gpt"]), "known models"), (dict(spec="h100"), "known presets"),
    (dict(start_ms=-3.0), "start_ms -3.0"), (dict(weights={"bert": 1.0}), "not in models"),
    (dict(executions=-1), "executions"), (dict(n_devices=0), "n_devices"),
])
def test_poisson_arrivals_bad_input(kwargs, match):
    args = dict(models=["vgg19"], rho=0.5, executions=10)
    args.update(kwargs)
    models = args.pop("models")
    with pytest.raises(InterfpredError, match=match):
        poisson_arrivals(models, **args)


def test_paper_scenario_sets_follow_design():
    sc = paper_scenario("l4", seed=0, executions=800)
    tr = sc.traces
    assert set(tr["train"].model) == set(PAPER_TRAIN_MODELS) == set(tr["test1"].model)
    assert set(tr["test2"].model) == set(PAPER_NEW_MODELS)
    assert set(tr["test3"].model) == set(PAPER_TRAIN_MODELS) | set(PAPER_NEW_MODELS)
    assert max(tr["train"].batch_size) <= 16 and max(tr["test3"].batch_size) > 16
    assert [p["rho"] for p in sc.sets["test1"]["phases"]] == [0.3, 1.4]
    assert len({p["rho"] for p in sc.sets["test3"]["phases"]}) == 3
    ids = np.concatenate([t.id for t in tr.values()])
    assert len(np.unique(ids)) == len(ids)               # ids unique across sets
    for name, t in tr.items():
        assert len(t) == 800 and t.solo_ms is not None
        assert np.all(t.start_ms >= sc.arrival_ms[name]) and np.all(np.diff(t.start_ms) >= 0)
    # stress slows executions more than light load
    t1, ph = tr["test1"], sc.sets["test1"]["phases"]
    light = t1.id < ph[1]["first_id"]
    sd = t1.latency_ms / t1.solo_ms
    assert sd[~light].mean() > sd[light].mean() + 0.3
    assert paper_scenario("a100", executions=40).profiles.gpus == ("a100",)
    with pytest.raises(InterfpredError, match="executions"):
        paper_scenario(executions=2)


def test_simulate_arrivals_keeps_ids_and_arrivals():
    a = poisson_arrivals(["roberta_base"], rho=1.5, executions=300, seed=2)
    r = simulate_arrivals(a, seed=2)
    order = np.argsort(r.trace.id)
    np.testing.assert_array_equal(r.arrival_ms[order], a.time_ms)
    assert np.all(r.wait_ms >= 0) and r.wait_ms.max() > 0


def test_docs_zoo_table_is_current():
    from pathlib import Path

    from interfpred.sim.zoo import zoo_markdown

    text = (Path(__file__).resolve().parents[1] / "docs" / "simulator.md").read_text()
    assert zoo_markdown("l4") in text


def test_offered_load_and_scenario_device_count():
    a = poisson_arrivals(["resnet50"], rho=0.6, executions=500, seed=2, n_devices=2)
    z = zoo_profiles("l4")
    solo = z.lookup_arrays(a.model, a.batch_size, gpus="l4")["solo_ms"]
    want = solo.sum() / (a.time_ms.max() * 2)      # total solo work / (span x devices)
    assert offered_load(a, z, spec="l4") == pytest.approx(want, rel=1e-12)
    assert offered_load(a, z, spec=get_gpu_spec("l4")) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(0.6, rel=0.2)      # near the rho asked for
    sc = mix_scenario(["vgg19"], rho=0.5, executions=40, seed=1, n_devices=2)
    assert sc.sets["trace"]["gpus"] == 2
    assert sorted(set(sc.traces["trace"].device.tolist())) == ["gpu0", "gpu1"]
