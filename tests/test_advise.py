"""interfpred.advise and ``interfpred advise``: mechanisms ranked by simulated or predicted SLO attainment."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from interfpred import advise
from interfpred.cli import main
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.provisioning import Segment, check_layout, mig_instances
from interfpred.provisioning.advise import _mig_segments, mig_gpu_of, simulated_configs
from interfpred.sim import get_gpu_spec, zoo_profiles

ROOT = Path(__file__).resolve().parents[1]
SPEC = get_gpu_spec("a100")
#: Two small models, 20 ms SLOs, light load: every mechanism serves them; MPS overlaps them with the lowest tail.
LIGHT = {"resnet50": (400.0, 20.0), "yolov8n": (300.0, 20.0)}
#: Four models on one GPU, tight SLOs: time-slicing makes each batch wait for three other contexts.
CROWDED = {"resnet50": (300.0, 8.0), "yolov8n": (300.0, 8.0), "vit_b16": (200.0, 10.0), "roberta_base": (200.0, 10.0)}
#: A latency-critical model beside a heavy one: under MPS vgg19's batches slow resnet50's past its 6 ms; MIG
#: instances keep them apart.
ISOLATION = {"resnet50": (600.0, 6.0), "vgg19": (600.0, 100.0)}
#: Two heavy models on two GPUs.
HEAVY = {"resnet50": (1500.0, 30.0), "vgg19": (500.0, 60.0)}


def ranked(a) -> list[str]:
    return [s.mechanism for s in a.ranking]


@pytest.fixture(scope="module")
def light():
    return advise(LIGHT, spec="a100", duration_s=2.0)


def test_light_load_is_served_by_every_mechanism_and_mps_has_the_lowest_tail(light):
    assert ranked(light)[0] == "mps"
    for s in light.ranking:
        # within 2 % of the offered: batches still running at the window's end (time-slicing's switches hold more)
        assert s.attainment > 0.99 and abs(s.throughput_rps - s.offered_rps) < 0.02 * s.offered_rps
    assert light.ranking[0].p99_ms == min(s.p99_ms for s in light.ranking)


def test_crowded_gpu_favours_mps_and_punishes_time_slicing():
    a = advise(CROWDED, spec="a100", duration_s=2.0)
    by = {s.mechanism: s for s in a.ranking}
    assert ranked(a) == ["mps", "time_slicing", "mig"]
    assert by["mps"].attainment > 0.95 > 0.8 > by["time_slicing"].attainment
    assert by["time_slicing"].p99_ms > by["mps"].p99_ms
    assert a.mig_plan_gpus == 2            # four models within 8-10 ms do not fit one GPU's instances


def test_a_latency_critical_model_beside_a_heavy_one_favours_mig_isolation():
    a = advise(ISOLATION, spec="a100", duration_s=2.0)
    by = {s.mechanism: s for s in a.ranking}
    assert ranked(a) == ["mig", "mps", "time_slicing"]
    assert by["mig"].attainment > by["mps"].attainment + 0.05
    assert by["mig"].per_model["resnet50"] > by["mps"].per_model["resnet50"]


def test_one_model_alone_is_served_by_every_mechanism():
    a = advise({"vgg19": (50.0, 60.0)}, spec="a100", duration_s=2.0)
    assert all(s.attainment == 1.0 for s in a.ranking)


def test_each_mechanism_keeps_the_best_of_its_setups():
    from interfpred.constants import ADVISE_SLO_FRACTIONS

    a = advise(HEAVY, spec="a100", gpus=2, duration_s=2.0, mechanisms=["mps"])
    s = a.ranking[0]
    assert s.setup.startswith("batches within ")
    tried = []
    for f in ADVISE_SLO_FRACTIONS:
        from interfpred.provisioning.advise import _shared
        tried.append(_shared("mps", HEAVY, zoo_profiles("a100"), SPEC, 2, 2000.0, 0, None, 2.0, 0.05, f).attainment)
    assert s.attainment == max(tried)


def test_mig_layouts_are_valid_and_fill_the_gpus():
    for slo, gpus in ((LIGHT, 1), (CROWDED, 1), (HEAVY, 2), (HEAVY, 3)):
        segs, _ = _mig_segments(slo, simulated_configs(zoo_profiles("a100"), list(slo), spec=SPEC), SPEC, gpus, 0.5)
        assert {s.gpu for s in segs} == set(range(gpus))
        for g in range(gpus):
            mine = [s for s in segs if s.gpu == g]
            assert check_layout("a100-40gb", [(s.partition, s.placement) for s in mine]) == []
            assert sum(s.partition for s in mine) >= 6      # no maximal A100 layout leaves more than 1 GPC idle
        assert set(slo) <= {s.model for s in segs}


def test_simulated_configs_slow_down_with_processes_and_smaller_instances():
    t = simulated_configs(zoo_profiles("a100"), ["vgg19"], spec="a100", max_processes=2)
    for b in (1, 8, 32):
        assert t.latency_ms[("vgg19", 7, b, 1)] <= t.latency_ms[("vgg19", 3, b, 1)] <= t.latency_ms[("vgg19", 1, b, 1)]
        assert t.latency_ms[("vgg19", 3, b, 2)] > t.latency_ms[("vgg19", 3, b, 1)]
    alone = zoo_profiles("a100").lookup("vgg19", 8).solo_ms
    assert t.latency_ms[("vgg19", 7, 8, 1)] == pytest.approx(alone)   # the whole GPU: the solo profile


def test_mig_instances_checks_the_layout():
    inst = mig_instances("a100-40gb", [Segment(0, "a", 3, 0, 8, 2), Segment(0, "b", 3, 4, 8, 1)])
    assert [(i.name, round(i.sm_share, 4), i.mem_share, i.processes) for i in inst] == [
        ("gpu0/3g@0", round(42 / 98, 4), 0.5, 2), ("gpu0/3g@4", round(42 / 98, 4), 0.5, 1)]
    with pytest.raises(InterfpredError, match="gpu 0: 2 GPCs"):
        mig_instances("a100-40gb", [Segment(0, "a", 3, 0, 8, 1), Segment(0, "b", 2, 2, 8, 1)])


def test_outputs_round_trip(light):
    rows = list(csv.DictReader(light.to_csv_text().splitlines()))
    assert [r["mechanism"] for r in rows] == ranked(light)
    assert float(rows[0]["attainment"]) == light.ranking[0].attainment
    doc = json.loads(light.to_json_text())
    assert doc["ranking"][0]["per_model"].keys() == LIGHT.keys()
    from interfpred.cli.advise import advice_table

    lines = advice_table(light).splitlines()
    assert "SLO attainment (%)" in lines[0] and "p99 (ms)" in lines[0]
    assert lines[2].split()[:3] == ["1", light.ranking[0].mechanism, f"{100 * light.ranking[0].attainment:.1f}"]


def test_a_fitted_model_predicts_and_a_calibrated_one_bounds():
    from interfpred import RLS, Calibrated, InterferenceModel
    from interfpred.sim import mix_scenario

    sc = mix_scenario(["resnet50", "yolov8n", "vgg19"], rho=0.9, spec="a100", executions=600, truth="fluid", seed=1)
    point = InterferenceModel(predictor="rls").fit(sc.traces["trace"], sc.profiles)
    bound = InterferenceModel(point.extractor, Calibrated(RLS(target="rate"))).fit(sc.traces["trace"], sc.profiles)
    a = advise(LIGHT, spec="a100", duration_s=1.0, model=point)
    b = advise(LIGHT, spec="a100", duration_s=1.0, model=bound)
    src = {s.mechanism: s.source for s in a.ranking}
    assert src["mps"] == "model" and src["mig"] == "model" and src["time_slicing"].startswith("simulation")
    assert {s.mechanism: s.source for s in b.ranking}["mps"].startswith("model bound q=")
    pa = {s.mechanism: s.p99_ms for s in a.ranking}
    pb = {s.mechanism: s.p99_ms for s in b.ranking}
    assert pb["mps"] >= pa["mps"] and pb["mig"] >= pa["mig"]       # the bound is the conservative side


@pytest.mark.parametrize("slo, kwargs, match", [
    ({"bert": (10.0, 10.0)}, {}, "no profile for model 'bert' on gpu 'a100-40gb'"),
    ({"vgg19": (-1.0, 10.0)}, {}, "model 'vgg19': rate_rps -1 must be a number in"),
    ({"vgg19": (10.0, 10.0)}, {"gpus": 0}, "gpus 0 must be a positive integer"),
    ({"vgg19": (10.0, 10.0)}, {"mechanisms": ["streams"]}, "mechanism 'streams' is not one of"),
    ({"vgg19": (10.0, 10.0)}, {"spec": "l4"}, "gpu 'l4' has no MIG"),
    ({}, {}, "the SLO table is empty"),
    ({"vgg19": (10.0, 10.0)}, {"seed": -1}, "seed -1 must be a non-negative integer"),
    ({"vgg19": (10.0, 10.0)}, {"quantum_ms": 0.0}, "quantum_ms 0.0 must be a positive"),
    ({"vgg19": (10.0, 10.0)}, {"duration_s": float("nan")}, "duration_s nan must be a positive"),
    ({"vgg19": (1e9, 10.0)}, {}, "ADVISE_REQUESTS_MAX"),
    ({"m": (10.0, 10.0)}, {"profiles": ProfileTable.from_columns(gpu=["a100"], model=["m"], batch_size=[1],
                                                                  solo_ms=[1.0], sm=[0.5], l2=[None], dram=[0.1])},
     "model m: its profile on gpu 'a100-40gb' lacks l2"),
])
def test_refusals_are_one_line(slo, kwargs, match):
    with pytest.raises(InterfpredError, match=match) as exc:
        advise(slo, **{"duration_s": 1.0, **kwargs})
    assert "\n" not in str(exc.value)


def test_mig_gpu_of_names_the_table():
    assert mig_gpu_of("a100") == "a100-40gb"


# ------------------------------------------------------------------------------------------------ the CLI
def test_cli_advises_writes_and_refuses(tmp_path, capsys):
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\nresnet50,400,20\nyolov8n,300,20\n")
    out = tmp_path / "advice.csv"
    args = ["advise", "--slo", str(slo), "--duration-s", "1"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["rank", "mechanism", "SLO", "attainment", "(%)", "throughput", "(req/s)", "offered",
                                  "(req/s)", "p99", "(ms)", "source"]
    assert printed[2].split()[2].replace(".", "").isdigit()
    rows = list(csv.DictReader(out.open()))
    assert sorted(r["mechanism"] for r in rows) == ["mig", "mps", "time_slicing"]
    assert main([*args, "--out", str(out)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    js = tmp_path / "advice.json"
    assert main([*args, "--mechanisms", "mps", "--out", str(js)]) == 0
    assert [r["mechanism"] for r in json.loads(js.read_text())["ranking"]] == ["mps"]
    capsys.readouterr()
    assert main([*args, "--mechanisms", "mps", "time_slicing", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)       # one JSON object, no table
    assert [r["mechanism"] for r in shown["ranking"]] == [r["mechanism"] for r in rows if r["mechanism"] != "mig"]
    assert shown["verdict"] and set(shown["ranking"][0]["per_model"]) == {"resnet50", "yolov8n"}
    assert main([*args, "--out", str(tmp_path / "a.parquet")]) == 2
    assert "written as CSV or JSON" in capsys.readouterr().err
    assert not (tmp_path / "a.parquet").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("model,rate_rps,latency_ms\nbert,400,20\n")
    proc = subprocess.run([sys.executable, "-m", "interfpred", "advise", "--slo", str(bad), "--out",
                           str(tmp_path / "x.csv")], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("interfpred: error: no profile for model 'bert'")
    assert not (tmp_path / "x.csv").exists()
    bad.write_text("model,rate_rps,latency_ms\nvgg19,400,-2\n")
    assert main(["advise", "--slo", str(bad)]) == 2
    assert "bad.csv line 2: latency_ms -2 must be a number in (0, " in capsys.readouterr().err
    assert main(["advise", "--slo", str(slo), "--gpu", "l4"]) == 2
    assert "rank the others without it" in capsys.readouterr().err
    assert np.isfinite(float(rows[0]["p99_ms"]))


def test_cli_takes_a_fitted_model_file(tmp_path, capsys):
    from interfpred import InterferenceModel
    from interfpred.sim import mix_scenario

    sc = mix_scenario(["resnet50", "yolov8n"], rho=0.9, spec="a100", executions=300, truth="fluid", seed=2)
    path = tmp_path / "model.json"
    InterferenceModel(predictor="rls").fit(sc.traces["trace"], sc.profiles).save(path)
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\nresnet50,400,20\nyolov8n,300,20\n")
    assert main(["advise", "--slo", str(slo), "--duration-s", "1", "--mechanisms", "mps", "time_slicing",
                 "--model-file", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    sources = {ln.split()[1]: " ".join(ln.split()[6:]) for ln in lines[2:4]}
    assert sources == {"mps": "model", "time_slicing": "simulation (no cross-context co-running to predict)"}


# ------------------------------------------------------------------------------------------------ what plan shares
def test_advise_runs_the_workload_plan_runs(tmp_path, capsys):
    """The same dataset, SLO set and GPU name as plan; the overloaded set's verdict names the GPUs it needs."""
    args = ["advise", "--slo", "dataset:parvagpu_slo1", "--profiles", "dataset:parvagpu_a100", "--gpu", "a100-80gb",
            "--duration-s", "1", "--mechanisms", "mig"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "verdict: overloaded: on 1 GPU the best mechanism (mig)" in out and "give --gpus 2" in out
    assert main([*args, "--gpus", "2"]) == 0
    assert "verdict: served" in capsys.readouterr().out


def test_profiles_from_a_mig_table_are_the_whole_gpu_alone():
    from interfpred.data.datasets import parvagpu_a100
    from interfpred.provisioning import ConfigTable
    from interfpred.provisioning.sources import profiles_from_configs

    table = ConfigTable.from_measurements(parvagpu_a100())
    prof = profiles_from_configs(table)
    assert prof.gpus == ("a100-80gb",)
    row = prof.lookup("resnet50", 8)
    assert row.solo_ms == pytest.approx(table.latency_ms[("resnet50", 7, 8, 1)])
    assert 0.0 < row.sm <= 1.0 and row.l2 == 0.0


@pytest.mark.parametrize("argv, match", [
    (["--profiles", "dataset:parvagpu_a100", "--gpu", "h200-141gb"],
     "gpu 'h200-141gb': the profiles were measured on a100-80gb; advise for that GPU or give profiles measured on "
     "h200-141gb"),
    (["--profiles", "dataset:nope"], "no dataset named 'nope'"),
    (["--gpu", "h100-80gb"], "the synthetic zoo has profiles for a100-40gb, a100-80gb, l4, v100 only"),
])
def test_cli_refusals_are_one_line_and_never_suggest_a_gpuspec(argv, match, capsys):
    assert main(["advise", "--slo", "dataset:parvagpu_slo1", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1 and "GpuSpec" not in err


def test_an_slo_no_mechanism_meets_exits_2_naming_the_model(tmp_path, capsys):
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\nresnet50,100,1\nvgg19,10,500\n")
    assert main(["advise", "--slo", str(slo), "--duration-s", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("interfpred: error: model resnet50: its fastest profiled batch") and "no sharing mechanism" in err


def test_h200_profiles_and_the_kernel_contention_model(tmp_path, capsys):
    slo = tmp_path / "slo.csv"
    slo.write_text("model,rate_rps,latency_ms\nbert_base,200,20\ntriad,100,20\n")
    base = ["advise", "--slo", str(slo), "--profiles", "dataset:h200_streams", "--duration-s", "1", "--mechanisms",
            "mps"]
    assert main(base) == 0
    fluid = capsys.readouterr().out
    assert main([*base, "--contention", "kernels"]) == 0
    kernels = capsys.readouterr().out
    p99 = [float(text.splitlines()[2].split()[5]) for text in (fluid, kernels)]
    assert p99[1] > 5 * p99[0]       # bert's short kernels wait behind triad's long one: the fluid truth cannot see it


def test_the_switch_cost_is_the_one_measured_on_the_h200():
    from interfpred.constants import H200_TIMESLICE_KEPT, SIM_CONTEXT_SWITCH_MS, SIM_TIMESLICE_QUANTUM_MS
    from interfpred.sim import switch_cost_ms

    assert round(switch_cost_ms(H200_TIMESLICE_KEPT, SIM_TIMESLICE_QUANTUM_MS), 3) == SIM_CONTEXT_SWITCH_MS
    # two always-busy contexts then keep that share of one's throughput in the simulator
    from interfpred.sim import simulate_mechanism

    spec = get_gpu_spec("a100", sigma=0.0)

    def span(counts):
        rows = [m for m, n in counts.items() for _ in range(n)]
        res = simulate_mechanism(rows, [8] * len(rows), [0.0] * len(rows), mechanism="time_slicing", spec=spec,
                                 seed=0)
        return float(res.trace.end_ms.max())

    a = span({"resnet50": 400})
    n_b = round(400 * a / span({"vgg19": 400}))       # as much vgg19 work as resnet50: both busy to the end
    kept = (a + span({"vgg19": n_b})) / span({"resnet50": 400, "vgg19": n_b})
    assert kept == pytest.approx(H200_TIMESLICE_KEPT, abs=0.01)


def test_the_fluid_truth_against_the_h200_runs_loses_to_the_per_pair_mean():
    """Reported as it is: on real spatial sharing the fluid truth errs more than a held-out per-pair mean."""
    from interfpred.experiments.advise_check import spatial_sharing_check

    r = spatial_sharing_check()
    assert r.rows == 98
    assert r.error["per-pair mean"] < r.error["fluid"] < r.error["no interference"] < r.error["global mean"]
    assert round(r.error["fluid"], 3) == 1.347 and round(r.error["per-pair mean"], 3) == 0.974
