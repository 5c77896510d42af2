"""Tests of the phase-structured ground truth: operator programs, Orion tables, hidden factors, engine."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_merge_phases, naive_ops_integrate

from interfpred.constants import ORION_DEMANDS, ORION_SMS
from interfpred.errors import InterfpredError
from interfpred.sim.contention import GPU_PRESETS, GpuSpec
from interfpred.sim.engine import simulate, simulate_programs, simulate_work
from interfpred.sim.operators import (
    NEUTRAL,
    HiddenFactors,
    PhaseZoo,
    Program,
    draw_hidden,
    merge_phases,
)
from interfpred.sim.orion import (
    ORION_MODELS,
    _shipped,
    orion_zoo,
    read_operator_table,
    read_orion_csv,
    scale_operators,
    synthetic_phase_zoo,
    to_orion_csv,
)
from interfpred.sim.phased import simulate_phased
from interfpred.sim.workload import mix_scenario, paper_scenario, write_scenario
from interfpred.sim.zoo import zoo_profiles

ROOT = Path(__file__).resolve().parents[1]
V100 = GPU_PRESETS["v100"]
SETTINGS = settings(max_examples=30, deadline=None)
SPECS = [V100, GpuSpec(name="tiny", l2_mb=1.0, kappa=3.0, theta=2.0, epsilon=0.1), GPU_PRESETS["l4"]]

op = st.tuples(st.floats(0.05, 3.0), st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 0.95), st.floats(0.0, 0.9)))
n_exec = 4
case = st.tuples(
    st.lists(st.lists(op, min_size=1, max_size=4), min_size=1, max_size=3),          # programs
    st.lists(st.integers(0, 2), min_size=n_exec, max_size=n_exec),                  # program of each
    st.lists(st.floats(0.8, 1.2), min_size=n_exec, max_size=n_exec),                # noise scale
    st.lists(st.floats(0.0, 4.0), min_size=n_exec, max_size=n_exec),                # footprint MB
    st.lists(st.floats(0.5, 2.0), min_size=n_exec, max_size=n_exec),                # hiding
    st.lists(st.floats(0.0, 4.0), min_size=n_exec, max_size=n_exec),                # times
    st.lists(st.integers(0, 1), min_size=n_exec, max_size=n_exec),                  # device
)


def _flat(programs):
    offsets = np.cumsum([0] + [len(p) for p in programs])
    dur = np.array([d for p in programs for d, _ in p])
    dem = np.array([u for p in programs for _, u in p])
    return offsets, dur, dem


# ---------------------------------------------------------------------------- engine
@SETTINGS
@given(case, st.booleans(), st.sampled_from(SPECS))
def test_operator_engine_agrees_with_brute_force_integrator(c, queue, spec):
    programs, prog, scale, foot, hide, times, dev = c
    prog = [p % len(programs) for p in prog]
    spec = spec.model_copy(update={"max_concurrency": 2})
    offsets, dur, dem = _flat(programs)
    s, e, events = simulate_programs(offsets, dur, dem, np.array(prog), np.array(times), np.array(dev),
                                     scale=np.array(scale), footprint_mb=np.array(foot), hiding=np.array(hide),
                                     spec=spec, queue=queue)
    limit = spec.max_concurrency if queue else n_exec
    s2, e2 = naive_ops_integrate(programs, prog, scale, foot, hide, times, dev, spec, limit, dt=0.05)
    np.testing.assert_allclose(s2, s, rtol=1e-6, atol=1e-9)
    lat = e - s
    np.testing.assert_allclose((np.array(e2) - s) / lat, np.ones(n_exec), rtol=1e-6)
    # Each execution's operator boundaries are distinct instants (durations > 0); boundaries of
    # different executions may coincide and then share one event.
    assert events >= max(len(programs[p]) for p in prog)


@SETTINGS
@given(st.lists(st.tuples(st.floats(0.1, 5.0), st.floats(0.0, 1.0), st.floats(0.0, 0.95), st.floats(0.0, 0.9),
                          st.floats(0.0, 5.0), st.integers(0, 1)), min_size=1, max_size=6), st.booleans())
def test_a_one_operator_model_is_the_fluid_simulation(rows, queue):
    work, sm, l2, dram, t, dev = (np.array(x) for x in zip(*rows))
    dem = np.column_stack([sm, l2, dram])
    s, e = simulate_work(work, dem, t, dev, spec="l4", queue=queue)
    offsets = np.arange(len(work) + 1)
    s2, e2, _ = simulate_programs(offsets, work, dem, np.arange(len(work)), t, dev, spec="l4", queue=queue)
    np.testing.assert_array_equal(s2, s)     # one engine: bit-identical, not only close
    np.testing.assert_array_equal(e2, e)


def test_synthetic_family_with_neutral_factors_reproduces_the_fluid_trace():
    z = synthetic_phase_zoo("l4")
    neutral = PhaseZoo(family="synthetic", gpu="l4", programs=z.programs, hidden={m: NEUTRAL for m in z.hidden})
    rng = np.random.default_rng(3)
    models = rng.choice(z.models, 60)
    batch = rng.integers(1, 33, 60)
    t = np.sort(rng.uniform(0, 200, 60))
    a = simulate(models, batch, t, spec="l4", seed=9)
    b = simulate_phased(models, batch, t, spec="l4", zoo=neutral, seed=9)
    for col in ("start_ms", "end_ms", "solo_ms"):
        np.testing.assert_array_equal(getattr(b.trace, col), getattr(a.trace, col))
    assert a.trace.model.tolist() == b.trace.model.tolist()


def test_same_seed_same_trace_and_different_seed_differs():
    args = (["resnet50", "bert", "retinanet", "mobilenetv2"] * 5, [4, 2, 1, 16] * 5, np.arange(20) * 3.0)
    a, b = simulate_phased(*args, seed=4), simulate_phased(*args, seed=4)
    c = simulate_phased(*args, seed=5)
    assert np.array_equal(a.trace.end_ms, b.trace.end_ms) and a.events == b.events
    assert not np.allclose(a.trace.end_ms, c.trace.end_ms)
    sc1 = paper_scenario("v100", executions=40, seed=2)
    sc2 = paper_scenario("v100", executions=40, seed=2)
    assert all(np.array_equal(sc1.traces[k].end_ms, sc2.traces[k].end_ms) for k in sc1.traces)


# ---------------------------------------------------------------------------- hidden structure
def _slowdown(zoo, model, other, spec="v100"):
    r = simulate_phased([model, other], [1, 1], [0.0, 0.0], spec=spec, zoo=zoo, queue=False, seed=0)
    return float(r.slowdown[r.trace.model.tolist().index(model)])


def test_identical_profiles_different_phases_get_different_slowdowns():
    # "flat" runs one steady demand; "phased" alternates compute- and memory-bound halves with the same
    # time average, so their solo profiles are identical.
    flat = Program([4.0], [[0.5, 0.45, 0.5]], [-1])
    phased = Program([1.0, 1.0, 1.0, 1.0], [[0.85, 0.45, 0.2], [0.15, 0.45, 0.8]] * 2, [1, 0, 1, 0])
    corunner = Program([4.0], [[0.6, 0.3, 0.3]], [-1])
    z = PhaseZoo.from_programs("toy", "v100", {("flat", 1): flat, ("phased", 1): phased, ("mem", 1): corunner},
                               hidden={"flat": NEUTRAL, "phased": NEUTRAL, "mem": NEUTRAL})
    p = z.profiles()
    a, b = p.lookup("flat", 1), p.lookup("phased", 1)
    assert np.allclose([a.solo_ms, a.sm, a.l2, a.dram], [b.solo_ms, b.sm, b.l2, b.dram])
    assert abs(_slowdown(z, "flat", "mem") - _slowdown(z, "phased", "mem")) > 0.05


@pytest.mark.parametrize("field, values", [("weights_mb", (0.5, 8.0)), ("hiding", (0.7, 1.4))])
def test_identical_profiles_different_hidden_factors_get_different_slowdowns(field, values):
    prog = Program([2.0, 2.0], [[0.8, 0.5, 0.3], [0.3, 0.5, 0.7]], [1, 0])
    other = Program([4.0], [[0.6, 0.5, 0.6]], [-1])
    base = dict(weights_mb=2.0, per_sample_mb=0.0, hiding=1.0)
    hid = {"a": HiddenFactors(**{**base, field: values[0]}), "b": HiddenFactors(**{**base, field: values[1]}),
           "o": HiddenFactors(**base)}
    z = PhaseZoo.from_programs("toy", "v100", {("a", 1): prog, ("b", 1): prog, ("o", 1): other}, hidden=hid)
    assert z.profiles().lookup("a", 1) == z.profiles().lookup("b", 1).model_copy(update={"model": "a"})
    sa, sb = _slowdown(z, "a", "o"), _slowdown(z, "b", "o")
    assert sb > sa * 1.03


def test_hidden_factors_are_drawn_once_per_model_and_stay_out_of_profiles():
    assert draw_hidden("resnet50") == orion_zoo().hidden["resnet50"] == orion_zoo(max_phases=0).hidden["resnet50"]
    h = [draw_hidden(m) for m in ORION_MODELS]
    assert len({x.hiding for x in h}) == len(h) and all(0.5 <= x.hiding <= 2.0 for x in h)
    header = orion_zoo().profiles().to_csv_text().splitlines()[0]
    assert header == "gpu,model,batch_size,solo_ms,sm,l2,dram,source"


# ---------------------------------------------------------------------------- profiles and reduction
def test_aggregate_profile_is_the_time_average_of_the_operators():
    z = orion_zoo(max_phases=0)
    prof = z.profiles()
    for m, (_, b0) in ORION_MODELS.items():
        t = _shipped(m)
        d = t.duration_ns / 1e6
        occ = t.sm_usage / (ORION_SMS * np.ceil(t.sm_usage / ORION_SMS))
        dem = occ[:, None] * np.array([ORION_DEMANDS[int(k)] for k in t.kind])
        p = prof.lookup(m, b0)
        np.testing.assert_allclose(p.solo_ms, d.sum(), rtol=1e-9)
        np.testing.assert_allclose([p.sm, p.l2, p.dram], d @ dem / d.sum(), rtol=1e-6, atol=1e-9)


def test_phase_reduction_keeps_work_and_time_average_and_matches_naive():
    full, red = orion_zoo(max_phases=0), orion_zoo()
    pf, pr = full.profiles(), red.profiles()
    np.testing.assert_allclose(pr.column("solo_ms"), pf.column("solo_ms"), rtol=1e-9)
    for c in ("sm", "l2", "dram"):
        np.testing.assert_allclose(pr.column(c), pf.column(c), rtol=1e-6, atol=1e-9)
    assert max(len(p) for p in red.programs.values()) == 32
    rng = np.random.default_rng(0)
    for n, k in ((12, 5), (30, 7), (9, 1)):
        d, u = rng.uniform(0.01, 1, n), rng.uniform(0, 0.9, (n, 3))
        q, group = merge_phases(Program(d, u, np.zeros(n, dtype=int)), k)
        nd, nu = naive_merge_phases(d, u, k)
        np.testing.assert_allclose(q.duration_ms, nd, rtol=1e-12)
        np.testing.assert_allclose(q.demand, nu, rtol=1e-9, atol=1e-12)
        assert np.all(np.diff(group) >= 0) and group[-1] == k - 1


def test_batch_scaling_rule():
    t = _shipped("resnet50")
    p4, p8, p1 = (scale_operators(t, 4, b) for b in (4, 8, 1))
    np.testing.assert_allclose(p4.duration_ms, t.duration_ns / 1e6)
    assert p8.solo_ms > p4.solo_ms > p1.solo_ms and p8.mean_demand[0] > p1.mean_demand[0]
    with pytest.raises(InterfpredError, match="batch_size 0"):
        scale_operators(t, 4, 0)


# ---------------------------------------------------------------------------- Orion conversion
@pytest.mark.parametrize("model", sorted(ORION_MODELS))
def test_orion_conversion_round_trips(model):
    t = _shipped(model)
    assert read_orion_csv(io.StringIO(to_orion_csv(t))) == t
    assert len(t) == len(orion_zoo(max_phases=0).program(model, ORION_MODELS[model][1]))


def test_conversion_script_regenerates_the_shipped_tables(tmp_path):
    src = tmp_path / "orion"
    src.mkdir()
    for m, (_, b0) in ORION_MODELS.items():
        (src / f"{m}_{b0}_fwd.csv").write_text(to_orion_csv(_shipped(m)), encoding="utf-8")
    (src / "LICENSE").write_text((ROOT / "interfpred/data/datasets/orion/LICENSE").read_text())
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(ROOT / "scripts/convert_orion.py"), str(src), "--out", str(out)],
                   check=True, capture_output=True)
    for fname, _ in ORION_MODELS.values():
        assert (out / fname).read_bytes() == (ROOT / "interfpred/data/datasets/orion" / fname).read_bytes()


def test_orion_bad_input():
    with pytest.raises(InterfpredError, match="header"):
        read_orion_csv(io.StringIO("Name,Kind\nConv,1\n"))
    with pytest.raises(InterfpredError, match="line 2: class 3"):
        read_orion_csv(io.StringIO("Name,Profile,Memory_footprint,SM_usage,Duration\nConv,3,0,1,5\n"))
    with pytest.raises(InterfpredError, match="line 3: op '5', expected 1"):
        read_operator_table(io.StringIO("op,name,kind,sm_usage,duration_ns\n0,a,1,1,5\n5,b,1,1,5\n"))
    with pytest.raises(InterfpredError, match="measured on a v100, not 'l4'"):
        orion_zoo("l4")
    with pytest.raises(InterfpredError, match="batch size 64 in the orion zoo; known batch sizes 1..32"):
        orion_zoo().program("bert", 64)


def test_engine_bad_input():
    one = (np.array([0, 1]), np.array([1.0]), np.array([[0.5, 0.5, 0.5]]))
    with pytest.raises(InterfpredError, match="offsets must rise"):
        simulate_programs(np.array([0, 2]), np.array([1.0]), np.array([[0.5, 0.5, 0.5]]), np.array([0]), [0.0])
    with pytest.raises(InterfpredError, match="program indices"):
        simulate_programs(*one, np.array([1]), [0.0])
    with pytest.raises(InterfpredError, match="hiding must be"):
        simulate_programs(*one, np.array([0]), [0.0], hiding=np.array([0.0]))
    with pytest.raises(InterfpredError, match="exceeds gpu 'l4' capacity_dram"):
        simulate_programs(one[0], one[1], np.array([[0.5, 0.5, 0.95]]), np.array([0]), [0.0], spec="l4")
    with pytest.raises(InterfpredError, match="unknown truth 'exact'"):
        paper_scenario("v100", executions=10, truth="exact")
    with pytest.raises(InterfpredError, match="measured on a v100, not 'l4'"):
        mix_scenario(["bert"], rho=0.5, spec="l4", truth="fluid", zoo="orion", executions=10)


def test_fluid_truth_on_the_orion_family_runs_its_profiles_without_phases_or_hidden_factors():
    sc = mix_scenario(["bert", "resnet50"], rho=0.8, spec="v100", truth="fluid", zoo="orion", executions=60,
                      batch_sizes=[1, 8])
    assert sc.truth == "fluid" and sc.source == "orion operators, derived demands"
    assert sc.profiles == orion_zoo().profiles()
    same = mix_scenario(["bert", "resnet50"], rho=0.8, spec="v100", truth="fluid", profiles=orion_zoo().profiles(),
                        executions=60, batch_sizes=[1, 8])
    assert same.traces["trace"] == sc.traces["trace"]
    phased = mix_scenario(["bert", "resnet50"], rho=0.8, spec="v100", zoo="orion", executions=60, batch_sizes=[1, 8])
    assert not np.allclose(phased.traces["trace"].end_ms, sc.traces["trace"].end_ms)


# ---------------------------------------------------------------------------- scenarios
def test_orion_paper_scenario_and_operator_profile_file(tmp_path):
    sc = paper_scenario("v100", executions=60, seed=1)
    assert sc.truth == "phases" and sc.zoo.family == "orion"
    assert sorted(set(sc.traces["test2"].model.tolist())) == ["efficientnet", "retinanet"]
    assert set(sc.traces["test3"].model.tolist()) <= set(ORION_MODELS)
    out = tmp_path / "sim"
    names = write_scenario(sc, out, operators=True)
    assert "operators.csv" in names
    man = json.loads((out / "scenario.json").read_text())
    assert man["truth"] == "phases" and man["source"] == "orion operators, derived demands"
    ops = np.genfromtxt(out / "operators.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
    used = {(m, b) for t in sc.traces.values() for m, b in zip(t.model.tolist(), t.batch_size.tolist())}
    assert {(str(m), int(b)) for m, b in zip(ops["model"], ops["batch_size"])} == used
    fluid = mix_scenario(["vgg19"], rho=0.5, executions=10, truth="fluid")
    with pytest.raises(InterfpredError, match="operator-level profile needs"):
        write_scenario(fluid, tmp_path / "f", operators=True)
    assert zoo_profiles("v100").lookup("vgg19", 1).extra["source"] == "synthetic"


# ---------------------------------------------------------------------------- CLI and reproduce
def test_cli_simulate_orion_with_operator_profile(tmp_path, capsys):
    from interfpred.cli import main
    from interfpred.data.profiles import ProfileTable
    from interfpred.data.trace import Trace

    out = tmp_path / "sim"
    assert main(["simulate", "--gpu", "v100", "--zoo", "orion", "--out", str(out), "--executions", "40",
                 "--operators"]) == 0
    said = capsys.readouterr().out
    assert "operators.csv" in said and "orion operators, derived demands, phases truth" in said
    sc = paper_scenario("v100", seed=0, executions=40)
    assert ProfileTable.from_csv(out / "profiles.csv") == sc.profiles
    assert Trace.from_csv(out / "test2.csv") == sc.traces["test2"]
    assert main(["simulate", "--gpu", "l4", "--zoo", "orion", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "measured on a v100, not 'l4'" in err
    assert main(["simulate", "--truth", "fluid", "--operators", "--out", str(tmp_path / "y"),
                 "--executions", "8"]) == 2
    assert "operator-level profile needs" in capsys.readouterr().err


def test_reproduce_keeps_the_fluid_truth_selectable(tmp_path):
    from interfpred.experiments.reproduce import reproduce

    reproduce(tmp_path / "f", executions=200, sections=["e2"], truth="fluid")
    report = (tmp_path / "f" / "report.md").read_text()
    assert "Ground truth of E1 and E2: fluid" in report and "simulated GPU l4" in report
    assert "convnext_b and yolov8n" in report and "baseline: pair mean" in report
    with pytest.raises(InterfpredError, match="measured on a v100, not 'l4'"):
        reproduce(tmp_path / "g", executions=200, truth="fluid", zoo="orion", gpu="l4")
    with pytest.raises(InterfpredError, match="unknown truth"):
        reproduce(tmp_path / "g", executions=200, truth="exact")


def test_pair_slowdowns_in_steady_state_follow_the_rates():
    from interfpred.sim.contention import rates
    from interfpred.sim.steady_pairs import pair_slowdowns

    spec = GPU_PRESETS["l4"].model_copy(update={"sigma": 0.0})
    z = synthetic_phase_zoo("l4")
    sd = pair_slowdowns(spec, zoo=z, truth="fluid", batch_sizes=(4, 32), models=("vgg19", "yolov8n"))
    items = [(m, b) for m in ("vgg19", "yolov8n") for b in (4, 32)]
    dem = {k: z.program(*k).mean_demand for k in items}
    want = [1.0 / rates([dem[a], dem[b]], spec)[0] for a in items for b in items]
    np.testing.assert_allclose(sd, want, rtol=1e-9)
    assert np.all(pair_slowdowns(spec, zoo=z, batch_sizes=(32,), models=("vgg19",)) > 1.0)


def test_truth_rates_with_hidden_factors_are_the_phase_engine():
    from interfpred.sim.contention import rates

    spec = GpuSpec(name="tiny", l2_mb=2.0, kappa=2.0)
    dem = np.array([[0.6, 0.5, 0.5], [0.5, 0.6, 0.6], [0.3, 0.2, 0.7]])
    foot, hide, work = np.array([1.0, 1.5, 0.8]), np.array([0.7, 1.0, 1.6]), np.array([5.0, 6.0, 7.0])
    r = rates(dem, spec, footprint_mb=foot, hiding=hide)
    _, e, _ = simulate_programs(np.arange(4), work, dem, np.arange(3), np.zeros(3), footprint_mb=foot, hiding=hide,
                                spec=spec, queue=False)
    assert abs(e.min() - (work / r).min()) <= 1e-9 * e.min()
    assert not np.allclose(r, rates(dem, spec))
