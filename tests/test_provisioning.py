"""MIG layouts, the plan (fewest GPUs under SLOs), its validator, the SLO and deployment parsers, the CLI.

The ParvaGPU checks recompute every rule from ParvaGPU's raw files with code of their own (the
latency from the throughput column, the slices each profile spans), not with the validator.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred.cli import main
from interfpred.constants import MIG_GPU_KINDS
from interfpred.data.datasets import parvagpu_a100
from interfpred.data.datasets.parvagpu import PARVAGPU_DIR, parvagpu_deployment, parvagpu_slo
from interfpred.errors import InputError, InterfpredError
from interfpred.provisioning import (
    MIG_GPUS,
    ConfigTable,
    Deployment,
    LatencyRule,
    Segment,
    check_layout,
    feasible,
    layout_sizes,
    mig_profile,
    place,
    plan,
    read_slo,
    simulate_plan,
    validate_plan,
)
from interfpred.provisioning.mig import _layouts

ROOT = Path(__file__).resolve().parents[1]
GPU = "a100-80gb"
PARVAGPU_GPUS = [2, 3, 5, 7, 13, 16]  # counted as (server, GPU) pairs in its plan files


# ------------------------------------------------------------------------------------------------ MIG tables
def test_profile_tables():
    for name, profiles in MIG_GPUS.items():
        assert [p.gpcs for p in profiles] == [1, 1, 2, 3, 4, 7], name
        assert [p.memory_slices for p in profiles] == [1, 2, 2, 4, 4, 8]
        assert profiles[3].placements == (0, 4) and profiles[0].placements == tuple(range(7))
    assert [p.sms for p in MIG_GPUS["a100-40gb"]] == [14, 14, 28, 42, 56, 98]
    assert tuple(MIG_GPUS) == MIG_GPU_KINDS        # the CLI's help names them without importing the planner
    assert [p.sms for p in MIG_GPUS["h200-141gb"]] == [16, 26, 32, 60, 64, 132]
    assert mig_profile(GPU, 1).name == "1g.10gb" and mig_profile(GPU, "1g.20gb").memory_slices == 2
    assert mig_profile("H100-80GB", "3") == mig_profile("h100-80gb", "3g.40gb")
    with pytest.raises(InterfpredError, match="partition 5 GPCs is not a MIG size on a100-80gb"):
        mig_profile(GPU, 5)
    with pytest.raises(InterfpredError, match="partition '3g.20gb' is not a MIG profile of a100-80gb"):
        mig_profile(GPU, "3g.20gb")
    with pytest.raises(InterfpredError, match="gpu 'v100' has no MIG profile table"):
        mig_profile("v100", 1)


def _naive_ok(instances):
    """The placement rule written out plainly: allowed first slice, no shared memory slice."""
    width = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}
    starts = {1: range(7), 2: (0, 2, 4), 3: (0, 4), 4: (0,), 7: (0,)}
    used = [s for g, start in instances for s in range(start, start + width[g])]
    return all(start in starts[g] for g, start in instances) and len(used) == len(set(used))


def test_layouts_are_valid_maximal_and_complete():
    lays = _layouts(GPU)
    assert all(not check_layout(GPU, lay) and _naive_ok(lay) for lay in lays)
    # maximal: no further instance fits any of them
    for lay in lays:
        for g, starts in ((1, range(7)), (2, (0, 2, 4)), (3, (0, 4)), (4, (0,)), (7, (0,))):
            assert not any(_naive_ok([*lay, (g, s)]) for s in starts)
    assert layout_sizes(GPU) == [(7,), (4, 3), (4, 2, 1), (4, 1, 1, 1), (3, 3), (3, 2, 2), (3, 2, 1, 1),
                                 (3, 1, 1, 1, 1), (2, 2, 2, 1), (2, 2, 1, 1, 1), (2, 1, 1, 1, 1, 1),
                                 (1, 1, 1, 1, 1, 1, 1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 7]), st.integers(0, 7)), max_size=6))
def test_check_layout_agrees_with_the_plain_rule(instances):
    assert (not check_layout(GPU, instances)) == _naive_ok(instances)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 7]), max_size=7))
def test_place_finds_a_layout_exactly_when_one_exists(sizes):
    got = place(GPU, sizes)
    exists = any(sorted(g for g, _ in sub) == sorted(sizes)
                 for lay in _layouts(GPU) for sub in _sublists(lay, len(sizes)))
    assert (got is not None) == exists
    if got is not None:
        assert sorted(g for g, _ in got) == sorted(sizes) and _naive_ok(got)


def _sublists(items, k):
    from itertools import combinations

    return combinations(items, k)


def test_layout_problems_are_named():
    assert check_layout(GPU, [(3, 2)]) == ["3 GPCs (3g.40gb) at slice 2: 3g.40gb may start only at slice 0, 4"]
    assert check_layout(GPU, [(4, 0), (2, 2)]) == [
        "2 GPCs (2g.20gb) at slice 2 overlaps 4 GPCs (4g.40gb) at slice 0 (slices 0-3)"]


# ------------------------------------------------------------------------------------------------ independent check
def _raw_table():
    lat = {}
    for path in (PARVAGPU_DIR / "prof_data").glob("*.csv"):
        with open(path, encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                thr = float(r["Throughput"])
                if thr > 0:
                    b = int(r["Batch size"])
                    lat[(path.stem, int(r["Mig instance"]), b, int(r["Workload Number"]))] = 1000 * b / thr
    return lat


def _independent_problems(rows, slo, fraction=1.0):
    """Every rule from the raw files, without the library's validator (batch latency within ``fraction`` x SLO)."""
    lat = _raw_table()
    width = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}
    starts = {1: range(7), 2: (0, 2, 4), 3: (0, 4), 4: (0,), 7: (0,)}
    served = defaultdict(float)
    used = defaultdict(set)
    bad = []
    for r in rows:
        key = (r["model"], r["partition"], r["batch_size"], r["processes"])
        ms = lat.get(key)
        if ms is None or ms > fraction * slo[r["model"]][1]:
            bad.append(("latency", key))
            continue
        served[r["model"]] += r["processes"] * r["batch_size"] * 1000 / ms
        cells = set(range(r["placement"], r["placement"] + width[r["partition"]]))
        if r["placement"] not in starts[r["partition"]] or cells & used[r["gpu"]]:
            bad.append(("placement", r["gpu"]))
        used[r["gpu"]] |= cells
    bad += [("rate", m) for m, (rate, _) in slo.items() if served[m] < rate]
    return bad


@pytest.fixture(scope="module")
def table():
    return ConfigTable.from_measurements(parvagpu_a100())


PARVAGPU_RULE = LatencyRule(max_exec_fraction=0.45)   # ParvaGPU's own: batch latency within 0.45 x the SLO


@pytest.fixture(scope="module")
def plans(table):
    return {k: plan(table, parvagpu_slo(k), gpu=GPU, rule=PARVAGPU_RULE) for k in range(1, 7)}


def test_under_parvagpus_rule_plans_need_no_more_gpus_than_parvagpu(plans, table):
    ours = []
    for k, p in plans.items():
        rows = [vars(s) for s in p.deployment.segments]
        assert _independent_problems(rows, parvagpu_slo(k), fraction=0.45) == [], k
        assert validate_plan(p.deployment, table, parvagpu_slo(k), gpu=GPU, rule=PARVAGPU_RULE).ok
        assert p.optimal and p.lower_bound <= p.deployment.n_gpus <= p.lower_bound + 1
        ours.append(p.deployment.n_gpus)
    assert all(o <= q for o, q in zip(ours, PARVAGPU_GPUS))
    assert sum(o < q for o, q in zip(ours, PARVAGPU_GPUS)) >= 2
    assert ours == [2, 3, 5, 7, 12, 15]


def test_the_whole_slo_for_the_batch_is_the_looser_rule(table):
    loose = LatencyRule(max_exec_fraction=1.0)
    ours = [plan(table, parvagpu_slo(k), gpu=GPU, rule=loose).deployment.n_gpus for k in range(1, 7)]
    assert ours == [2, 3, 4, 6, 11, 14]


@pytest.fixture(scope="module")
def end_to_end(table):
    return {k: plan(table, parvagpu_slo(k), gpu=GPU) for k in range(1, 7)}


def test_end_to_end_plans_meet_the_slo_for_99_percent_of_simulated_requests(end_to_end, table):
    for k, p in end_to_end.items():
        slo = parvagpu_slo(k)
        v = validate_plan(p.deployment, table, slo, gpu=GPU)
        assert v.ok, (k, v.problems)
        assert np.allclose(v.rates_rps, p.rates_rps)
        sim = simulate_plan(p.deployment, table, slo, p.rates_rps, requests=5000)
        assert feasible(sim) and min(sim.attainment.values()) >= 0.99, (k, sim.attainment)
        assert p.seconds <= 2.0
    assert [p.deployment.n_gpus for p in end_to_end.values()] == [2, 3, 5, 7, 14, 16]


def test_a_plan_by_the_loose_rule_is_not_feasible_in_simulation(table):
    slo = parvagpu_slo(5)
    p = plan(table, slo, gpu=GPU, rule=LatencyRule(max_exec_fraction=1.0))
    sim = simulate_plan(p.deployment, table, slo, p.rates_rps, requests=2000)
    assert not feasible(sim) and min(sim.attainment.values()) < 0.5


def test_parvagpu_plans_serve_their_slos_but_break_mig_placement_as_written(table):
    for k in range(1, 7):
        rows = parvagpu_deployment(k)
        d = Deployment.from_rows(rows)
        assert d.n_gpus == PARVAGPU_GPUS[k - 1]
        indep = _independent_problems(rows, parvagpu_slo(k), fraction=0.45)
        written = validate_plan(d, table, parvagpu_slo(k), gpu=GPU, rule=PARVAGPU_RULE)
        assert {kind for kind, _ in indep} <= {"placement"}
        assert bool(indep) == (not written.ok) == (k > 1)
        assert all("slice" in p for p in written.problems)
        assert validate_plan(d, table, parvagpu_slo(k), gpu=GPU, replace=True, rule=PARVAGPU_RULE).ok


# ------------------------------------------------------------------------------------------------ the validator
WHOLE_SLO = LatencyRule(max_exec_fraction=1.0)   # the batch may take the whole SLO: the brute force's rule
SMALL = ConfigTable.from_rows([("a", 1, 8, 1, 10.0), ("a", 2, 8, 1, 6.0), ("a", 7, 32, 2, 12.0),
                               ("b", 1, 4, 1, 20.0), ("b", 3, 16, 2, 25.0)])


def test_validator_names_each_broken_rule():
    slo = {"a": (1000.0, 11.0), "b": (100.0, 30.0)}
    d = Deployment((Segment(0, "a", 1, 0, 8, 1), Segment(0, "b", 3, 4, 16, 2), Segment(0, "a", 1, 6, 8, 1),
                    Segment(1, "a", 7, 0, 32, 2), Segment(1, "a", 2, 2, 16, 1), Segment(2, "c", 1, 0, 1, 1)))
    v = validate_plan(d, SMALL, slo, gpu=GPU, rule=WHOLE_SLO)
    assert v.n_gpus == 3 and not v.ok
    text = "\n".join(v.problems)
    assert "gpu 1 slice 0 (a, 7 GPCs, batch 32, 2 processes): latency 12 ms is not admitted under the SLO of 11 ms" in text
    assert "gpu 1 slice 2 (a, 2 GPCs, batch 16, 1 processes): configuration not in the measured table" in text
    assert "gpu 2 slice 0 (c, 1 GPCs, batch 1, 1 processes): model c has no SLO" in text
    assert "model a: serves 1600 requests/s of 1000 needed" not in text  # 2 x 800 served: enough
    assert "gpu 0: 1 GPCs (1g.10gb) at slice 6 overlaps 3 GPCs (3g.40gb) at slice 4 (slices 4-7)" in text
    assert "gpu 1: 2 GPCs (2g.20gb) at slice 2 overlaps 7 GPCs (7g.80gb) at slice 0 (slices 0-7)" in text
    short = validate_plan(Deployment((Segment(0, "a", 1, 0, 8, 1),)), SMALL, slo, gpu=GPU, rule=WHOLE_SLO)
    assert short.problems == ("model a: serves 800 requests/s of 1000 needed", "model b: serves 0 requests/s of "
                              "100 needed")


def test_plan_refusals_name_the_model():
    with pytest.raises(InterfpredError, match="model z: not in the profiles"):
        plan(SMALL, {"z": (1.0, 10.0)}, gpu=GPU)
    with pytest.raises(InterfpredError, match="model b: no configuration meets its latency SLO of 19 ms"):
        plan(SMALL, {"a": (1.0, 10.0), "b": (1.0, 19.0)}, gpu=GPU, rule=WHOLE_SLO)
    with pytest.raises(InterfpredError, match="model a: at 10 requests/s no batch fills in time to meet its latency "
                                              "SLO of 100 ms"):
        plan(SMALL, {"a": (10.0, 100.0)}, gpu=GPU)
    with pytest.raises(InterfpredError, match="no 'partition' column"):
        ConfigTable.from_measurements(_gavel())


def _gavel():
    from interfpred.data.datasets import gavel_v100

    return gavel_v100()


def test_small_plan_is_the_brute_force_optimum():
    # a: 1 GPC serves 800/s, 2 GPCs 1333/s; b: 1 GPC 200/s, 3 GPCs 1280/s. Rates needing several GPUs.
    slo = {"a": (6000.0, 15.0), "b": (3000.0, 30.0)}
    p = plan(SMALL, slo, gpu=GPU, rule=WHOLE_SLO)
    assert validate_plan(p.deployment, SMALL, slo, gpu=GPU, rule=WHOLE_SLO).ok
    best = _brute_force(slo)
    assert p.deployment.n_gpus == best


def _brute_force(slo):
    """Fewest GPUs by trying every multiset of maximal layouts and every split of their slots."""
    from itertools import combinations_with_replacement

    thr = {("a", 1): 800.0, ("a", 2): 8 * 1000 / 6.0, ("a", 7): 64 * 1000 / 12.0,
           ("b", 1): 200.0, ("b", 3): 32 * 1000 / 25.0}
    lays = layout_sizes(GPU)
    for n in range(1, 8):
        for combo in combinations_with_replacement(lays, n):
            slots = [g for lay in combo for g in lay]
            # each slot goes to a, b or nobody: feasible if the best split serves both rates
            if _split(slots, thr, slo):
                return n
    raise AssertionError("no plan within 7 GPUs")


def _split(slots, thr, slo):
    """Whether some split of the slots between a and b serves both rates (k slots of each size to a)."""
    from collections import Counter
    from itertools import product

    counts = sorted(Counter(slots).items())
    for ks in product(*(range(c + 1) for _, c in counts)):
        a = sum(k * thr.get(("a", g), 0.0) for (g, _), k in zip(counts, ks))
        b = sum((c - k) * thr.get(("b", g), 0.0) for (g, c), k in zip(counts, ks))
        if a >= slo["a"][0] and b >= slo["b"][0]:
            return True
    return False


# ------------------------------------------------------------------------------------------------ parsers
def test_read_slo_errors_are_located(tmp_path):
    f = tmp_path / "slo.csv"
    for text, msg in [("model,rate\n", "line 1: header"), ("model,rate_rps,latency_ms\n", "no SLO rows"),
                      ("model,rate_rps,latency_ms\na,1,x\n", "line 2: latency_ms 'x' is not a number"),
                      ("model,rate_rps,latency_ms\na,1,2\na,1,2\n", "line 3: model 'a' given twice"),
                      ("model,rate_rps,latency_ms\na,1\n", "line 2: 2 fields, expected 3"),
                      ("model,rate_rps,latency_ms\n,1,2\n", "line 2: empty model name"),
                      ("model,rate_rps,latency_ms\na,inf,2\n", "line 2: rate_rps 'inf' is not a number")]:
        f.write_text(text)
        with pytest.raises(InputError, match=msg):
            read_slo(f)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789,-.ab\n xe")), max_size=60))
def test_slo_parser_refuses_garbage_with_a_line(tmp_path_factory, body):
    f = tmp_path_factory.mktemp("s") / "slo.csv"
    f.write_text("model,rate_rps,latency_ms\n" + body)
    try:
        slo = read_slo(f)
    except InputError as exc:
        assert exc.path is not None
    else:
        assert all(r > 0 and lat > 0 for r, lat in slo.values())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["a", "b", "r-50"]), st.integers(1, 7),
                          st.integers(0, 7), st.integers(1, 256), st.integers(1, 5)), max_size=8))
def test_deployment_csv_round_trips(tmp_path_factory, rows):
    d = Deployment(tuple(Segment(*r) for r in rows))
    f = tmp_path_factory.mktemp("d") / "d.csv"
    d.to_csv(f)
    assert Deployment.read(f) == d


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789,-.ab\n x")), max_size=60))
def test_deployment_parser_refuses_garbage_with_a_line(tmp_path_factory, body):
    f = tmp_path_factory.mktemp("d") / "d.csv"
    f.write_text("gpu,model,partition,placement,batch_size,processes\n" + body)
    try:
        Deployment.read(f)
    except InputError as exc:
        assert exc.path is not None and exc.line is not None and exc.line >= 2


# ------------------------------------------------------------------------------------------------ the CLI
def test_cli_plans_checks_and_refuses(tmp_path, capsys):
    out = tmp_path / "dep.csv"
    args = ["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo3", "--gpu", GPU]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("5 GPUs (optimal)")
    assert "feasible, every model within its SLO for at least 99 % of requests" in printed
    assert main([*args, "--out", str(out)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    assert main([*args, "--check", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith("5 GPUs, feasible")
    parva = tmp_path / "parva.csv"
    Deployment.from_rows(parvagpu_deployment(3)).to_csv(parva)
    parvagpus = [*args, "--max-exec-fraction", "0.45", "--check", str(parva)]
    assert main(parvagpus) == 1
    assert "4 problem(s)" in capsys.readouterr().out
    assert main([*parvagpus, "--replace"]) in (0, 1)      # valid; the simulation says whether it is feasible
    assert "problem" not in capsys.readouterr().out
    capsys.readouterr()
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\nresnet50,100,1\n")
    proc = subprocess.run([sys.executable, "-m", "interfpred", "plan", "--profiles", "dataset:parvagpu_a100",
                           "--slo", str(slo), "--gpu", GPU, "--out", str(tmp_path / "x.csv")],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("interfpred: error: model resnet50: no configuration meets its latency SLO of 1 ms")
    assert not (tmp_path / "x.csv").exists()
    assert main(["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo9", "--gpu", GPU,
                 "--out", str(tmp_path / "y.csv")]) == 2
    assert "SLO set 9 does not exist" in capsys.readouterr().err
    assert main(["plan", "--profiles", "dataset:parvagpu_a100", "--slo", str(slo), "--gpu", "v100",
                 "--out", str(tmp_path / "y.csv")]) == 2
    assert "gpu 'v100' has no MIG profile table" in capsys.readouterr().err


def test_cli_plans_from_a_measurements_file(tmp_path, capsys):
    prof = tmp_path / "parva.csv"
    assert main(["datasets", "parvagpu_a100", "--out", str(prof)]) == 0
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\n" + "".join(f"{m},{r},{lat}\n" for m, (r, lat) in parvagpu_slo(4).items()))
    assert main(["plan", "--profiles", str(prof), "--slo", str(slo), "--gpu", GPU, "--out", str(tmp_path / "d.csv")]) == 0
    assert capsys.readouterr().out.startswith("7 GPUs (optimal)")
    assert Deployment.read(tmp_path / "d.csv").n_gpus == 7


def test_top_level_names():
    import interfpred

    assert interfpred.plan is plan and interfpred.validate_plan is validate_plan


def test_cli_reports_a_plan_that_fails_in_simulation_and_exits_1(tmp_path, capsys):
    out = tmp_path / "d.csv"
    args = ["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo5", "--gpu", GPU,
            "--max-exec-fraction", "1", "--sim-requests", "2000", "--out", str(out)]
    assert main(args) == 1
    printed = capsys.readouterr().out
    assert "11 GPUs (optimal)" in printed and "NOT feasible:" in printed and "(needed: 99 %)" in printed
    assert out.exists()                                   # written all the same: the user named it
    assert main(["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo5", "--gpu", GPU,
                 "--check", str(out), "--sim-requests", "2000"]) == 1
    assert "problem(s)" in capsys.readouterr().out       # the end-to-end rule refuses its configurations


def test_cli_plan_json_and_the_gpu_it_was_measured_on(tmp_path, capsys):
    import json

    base = ["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo1", "--sim-requests", "2000"]
    assert main([*base, "--gpu", GPU, "--json", "--out", str(tmp_path / "a.csv")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["gpus"] == 2 and got["feasible"] and got["rule"].startswith("request latency at p99")
    assert all(m["attainment"] >= 0.99 for m in got["models"])
    for other in ("h200-141gb", "h100-80gb", "a100-40gb"):
        assert main([*base, "--gpu", other, "--out", str(tmp_path / "b.csv")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "the profiles were measured on a100-80gb" in err
        assert "--scale-latency" in err and "GpuSpec" not in err
    assert not (tmp_path / "b.csv").exists()
    assert main([*base, "--gpu", "h200-141gb", "--scale-latency", "0.5", "--out", str(tmp_path / "c.csv")]) == 0
    assert main([*base, "--gpu", GPU, "--percentile", "100", "--out", str(tmp_path / "d.csv")]) == 2
