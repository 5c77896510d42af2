"""The ``interfpred simulate`` command: files in users' formats, atomic folder, one-line errors."""

from __future__ import annotations

import json
import os

import pytest

from interfpred.cli import main
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.sim.workload import paper_scenario


def test_simulate_writes_profiles_and_one_trace_per_set(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", "--scenario", "paper", "--gpu", "l4", "--seed", "0", "--out", str(out),
                 "--executions", "60"]) == 0
    assert sorted(os.listdir(out)) == ["profiles.csv", "scenario.json", "test1.csv", "test2.csv", "test3.csv",
                                       "train.csv"]
    assert "train.csv (60 executions)" in capsys.readouterr().out
    sc = paper_scenario("l4", seed=0, executions=60)
    assert ProfileTable.from_csv(out / "profiles.csv") == sc.profiles
    for name, trace in sc.traces.items():
        assert Trace.from_csv(out / f"{name}.csv") == trace     # full-precision round trip
    manifest = json.loads((out / "scenario.json").read_text())
    assert manifest["source"] == "synthetic" and manifest["gpu"]["name"] == "l4"
    assert [p["rho"] for p in manifest["sets"]["test1"]["phases"]] == [0.3, 1.4]
    assert [p.name for p in tmp_path.iterdir()] == ["sim"]      # no temporary folder left


def test_simulate_refuses_a_non_empty_out_unless_forced(tmp_path, capsys):
    out = tmp_path / "sim"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert main(["simulate", "--out", str(out), "--executions", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty" in err and (out / "keep.txt").exists()
    assert main(["simulate", "--out", str(out), "--executions", "8", "--force", "--gpu", "a100"]) == 0
    assert not (out / "keep.txt").exists()
    assert ProfileTable.from_csv(out / "profiles.csv").gpus == ("a100",)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["simulate", "--out", str(empty), "--executions", "8"]) == 0


def test_simulate_mix(tmp_path):
    out = tmp_path / "mix"
    assert main(["simulate", "--scenario", "mix", "--gpu", "l4", "--models", "vgg19,yolov8n", "--rho", "0.8",
                 "--batch-sizes", "2,32", "--out", str(out), "--executions", "50", "--devices", "2"]) == 0
    t = Trace.from_csv(out / "trace.csv")
    assert len(t) == 50 and set(t.batch_size.tolist()) <= {2, 32} and set(t.device) <= {"gpu0", "gpu1"}


@pytest.mark.parametrize("argv, match", [
    (["--gpu", "h100"], "known presets: a100, l4, v100"),
    (["--scenario", "mix", "--gpu", "l4", "--models", "vgg19,bert", "--rho", "1"], "known models: convnext_b"),
    (["--scenario", "mix", "--models", "vgg19", "--rho", "0"], "rho 0.0 must be in (0, 4]"),
    (["--scenario", "mix", "--models", "vgg19", "--rho", "1e9"], "rho 1000000000.0 must be in"),
    (["--scenario", "mix", "--gpu", "l4", "--models", "vgg19", "--rho", "1", "--batch-sizes", "1,64"],
     "outside the profiled"),
    (["--scenario", "mix", "--models", "vgg19", "--rho", "1", "--batch-sizes", "a"], "comma-separated integers"),
    (["--scenario", "mix", "--models", "vgg19"], "needs --models and --rho"),
    (["--rho", "1"], "apply only to --scenario mix"),
    (["--executions", "-5"], "executions -5"),
    (["--devices", "0"], "--devices 0 must be a positive integer"),
])
def test_simulate_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, match):
    out = tmp_path / "sim"
    assert main(["simulate", "--out", str(out), "--executions", "8", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and err.strip().count("\n") == 0
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_failure_while_writing_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    def boom(self, path):
        raise OSError("disk full")

    monkeypatch.setattr(Trace, "to_csv", boom)
    out = tmp_path / "sim"
    assert main(["simulate", "--out", str(out), "--executions", "8"]) == 2
    assert "disk full" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    # an existing folder replaced with --force survives a failed write unchanged
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert main(["simulate", "--out", str(out), "--executions", "8", "--force"]) == 2
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and sorted(p.name for p in tmp_path.iterdir()) == ["sim"]


def test_unknown_scenario_is_an_argparse_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--out", str(tmp_path / "x"), "--scenario", "nope"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
