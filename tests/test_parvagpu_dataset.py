"""The shipped ParvaGPU A100-80GB profiles, SLO sets and plans: counts, conversions, bad input."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest

from interfpred.cli import main
from interfpred.data.datasets import load_dataset, parvagpu_a100
from interfpred.data.datasets.parvagpu import (
    PARVAGPU_DIR,
    parvagpu_deployment,
    parvagpu_measurements,
    parvagpu_slo,
)
from interfpred.data.measurements import Measurements
from interfpred.errors import InputError, InterfpredError


def _raw(model: str) -> list[dict[str, str]]:
    with open(PARVAGPU_DIR / "prof_data" / f"{model}.csv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_measured_row_becomes_a_run_with_its_processes_as_members():
    m = parvagpu_a100()
    cols = m.columns()
    raw = [r for model in m.models for r in _raw(model)]
    measured = [r for r in raw if float(r["Throughput"]) > 0]
    assert m.n_runs == len(measured) == 1747 and len(raw) == 2475
    assert len(m) == sum(int(r["Workload Number"]) for r in measured)
    # members of a run: as many as processes, all with the same observed latency
    for run in range(0, m.n_runs, 7):
        rows = m.run_members(run)
        assert len(rows) == int(cols["processes"][rows[0]])
        assert len(set(m.observed_ms[rows].tolist())) == 1


def test_latency_is_batch_over_throughput_and_agrees_with_the_rounded_column():
    m = parvagpu_measurements()
    cols = m.columns()
    raw = {(int(r["Mig instance"]), int(r["Batch size"]), int(r["Workload Number"])): r for r in _raw("resnet50")}
    sel = np.flatnonzero(m.model == "resnet50")
    for i in sel:
        key = (int(cols["partition"][i]), int(m.batch_size[i]), int(cols["processes"][i]))
        r = raw[key]
        assert m.observed_ms[i] == pytest.approx(1000 * key[1] / float(r["Throughput"]))
        assert abs(m.observed_ms[i] - 1000 * float(r["Latency"])) <= 0.5 + 1e-6 * m.observed_ms[i] * 1000
        solo = raw[(key[0], key[1], 1)]
        assert m.solo_ms[i] == pytest.approx(1000 * key[1] / float(solo["Throughput"]))
    assert set(cols["mechanism"].tolist()) == {"mig"}
    # one process alone has slowdown exactly 1; more processes share the instance
    one = cols["processes"] == "1"
    assert np.allclose(m.slowdown[one], 1.0) and float(np.median(m.slowdown[~one])) > 1.0


def test_slo_sets_and_plans():
    assert parvagpu_slo(2)["vgg19"] == (354.0, 396.5)
    assert parvagpu_slo(6)["bert"] == (1264.0, 6434.0)
    assert set(parvagpu_slo(1)) == {"bert", "densenet121", "inceptionv3", "mobilenetv2", "resnet50", "vgg19"}
    # servers of 8 GPUs: sets 5 and 6 spill onto a second server
    gpus = [len({r["gpu"] for r in parvagpu_deployment(k)}) for k in range(1, 7)]
    assert gpus == [2, 3, 5, 7, 13, 16]
    first = parvagpu_deployment(1)[0]
    assert first == {"gpu": 0, "model": "resnet50", "partition": 3, "placement": 4, "batch_size": 64, "processes": 2}
    for bad in (0, 7, "1"):
        with pytest.raises(InterfpredError, match="SLO set .* does not exist"):
            parvagpu_slo(bad)  # type: ignore[arg-type]


@pytest.fixture()
def copy(tmp_path):
    dst = tmp_path / "parva"
    shutil.copytree(PARVAGPU_DIR, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_bad_profile_rows_are_located(copy):
    path = copy / "prof_data" / "bert.csv"
    lines = path.read_text().splitlines()
    lines[2] = "1,1,2,abc,0.019"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bert.csv line 3: Throughput 'abc' is not a number"):
        parvagpu_measurements(copy)
    lines[2] = "1,1,2,0,0.019"  # a zero throughput with a latency is not the 'not run' marker
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 3: Throughput '0' must be a positive finite number"):
        parvagpu_measurements(copy)
    lines[2] = lines[1]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 3: duplicate row for 1 GPCs, batch 1, 1 processes"):
        parvagpu_measurements(copy)
    path.write_text("gpcs,batch\n1,1\n")
    with pytest.raises(InputError, match=r"bert.csv line 1: header"):
        parvagpu_measurements(copy)


def test_bad_plan_and_slo_rows_are_located(copy):
    plan = copy / "deployment" / "slo1.csv"
    lines = plan.read_text().splitlines()
    lines[1] = lines[1].replace(",4,3,", ",-1,3,")
    plan.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"slo1.csv line 2: Placement '-1' must be an index"):
        parvagpu_deployment(1, copy)
    slo = copy / "SLO" / "SLO_latency.csv"
    slo.write_text("1,2,3\n")
    with pytest.raises(InputError, match=r"SLO_latency.csv line 1: 3 fields, expected one per model \(11\)"):
        parvagpu_slo(1, copy)


def test_through_the_cli(tmp_path, capsys):
    assert main(["datasets"]) == 0
    assert "parvagpu_a100: 4937 rows, 1747 runs" in capsys.readouterr().out
    assert main(["datasets", "parvagpu_a100", "--out", str(tmp_path / "p.csv")]) == 0
    back = Measurements.read(tmp_path / "p.csv")
    assert back == load_dataset("parvagpu_a100")
    assert (PARVAGPU_DIR / "LICENSE").read_text().startswith("MIT License")
