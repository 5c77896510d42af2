"""interfpred measure on the simulated device: every window scheduled, the known slowdowns written in the
measurement format ``fit`` reads, resumption after a real kill, profiles within their time limit, refusals."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interfpred import Measurements, ProfileTable
from interfpred.cli import main
from interfpred.errors import InterfpredError
from interfpred.measure.backend import HostGroup
from interfpred.measure.fake import fake_params
from interfpred.measure.hosts import ProcessHosts
from interfpred.measure.journal import read_log
from interfpred.measure.spec import build_plan, parse_set, parse_workload

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--device", "fake", "--window-s", "0.01", "--margin-s", "0.002"]
THREE = ["--workload", "resnet50:8", "--workload", "vgg19:4", "--workload", "bert:16:fp32"]


@pytest.fixture(autouse=True)
def _no_mps_daemon(tmp_path, monkeypatch):
    """No MPS daemon unless a test makes one: an empty pipe folder."""
    pipes = tmp_path / "mps_pipes"
    pipes.mkdir()
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(pipes))
    return pipes


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _demand(label):
    return fake_params(parse_workload(label)).demand


# ------------------------------------------------------------------------------------------------ the plan
def test_plan_has_every_solo_pair_self_pair_and_set_in_three_solo_phases():
    ws = [parse_workload(t) for t in ("a:1", "b:2", "c:4", "d:8")]
    sets = [parse_set("a:1,b:2,c:4", ws), parse_set("a:1,a:1,d:8", ws)]
    plan = build_plan(ws, ["streams", "time_slicing"], sets=sets, seed=3)
    keys = [w.key for w in plan.windows]
    assert len(keys) == len(set(keys))
    for mech in ("streams", "time_slicing"):
        wins = [w for w in plan.windows if w.mechanism == mech]
        runs = [w for w in wins if w.kind == "run"]
        labels = sorted(tuple(sorted(m.split("#")[0] for m in r.members)) for r in runs)
        pairs = sorted(tuple(sorted((x.label, y.label))) for i, x in enumerate(ws) for y in ws[i:])
        assert labels == sorted(pairs + [("a:1:fp16", "b:2:fp16", "c:4:fp16"), ("a:1:fp16", "a:1:fp16", "d:8:fp16")])
        kinds = [w.kind for w in wins]
        assert kinds[:4] == ["solo"] * 4 and kinds[-4:] == ["solo"] * 4
        between = [i for i, w in enumerate(wins) if w.phase == "between"]
        assert len(between) == 4 and 4 < between[0] and between[-1] < len(wins) - 4
        assert {w.members[0] for w in wins if w.kind == "solo"} == {f"{w.label}#0" for w in ws}
        triple_with_copy = next(r for r in runs if "d:8:fp16#0" in r.members and len(r.members) == 3)
        assert triple_with_copy.members == ("a:1:fp16#0", "a:1:fp16#1", "d:8:fp16#0")
    order = [w.members for w in plan.windows if w.kind == "run" and w.mechanism == "streams"]
    again = build_plan(ws, ["streams"], sets=sets, seed=3)
    assert [w.members for w in again.windows if w.kind == "run"] == order
    other = build_plan(ws, ["streams"], sets=sets, seed=4)
    assert [w.members for w in other.windows if w.kind == "run"] != order


def test_plan_under_mig_binds_position_to_instance_and_solos_every_copy():
    ws = [parse_workload("a:1"), parse_workload("b:1")]
    plan = build_plan(ws, ["mig"], mig_slots=2)
    runs = [w.members for w in plan.windows if w.kind == "run"]
    assert sorted(runs) == sorted([("a:1:fp16#0", "b:1:fp16#1"), ("a:1:fp16#0", "a:1:fp16#1"),
                                   ("b:1:fp16#0", "b:1:fp16#1")])
    solos = {w.members[0] for w in plan.windows if w.kind == "solo"}
    assert solos == {"a:1:fp16#0", "a:1:fp16#1", "b:1:fp16#0", "b:1:fp16#1"}
    with pytest.raises(InterfpredError, match="needs its own MIG instance: the largest run has 2 members, 1 MIG"):
        build_plan(ws, ["mig"], mig_slots=1)


# ------------------------------------------------------------------------------------------------ a campaign
def test_streams_campaign_writes_known_slowdowns_that_fit_reads(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["measure", *FAST, *THREE, "--set", "resnet50:8,vgg19:4,bert:16:fp32", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "runs 1 of 16, about" in err and "runs 16 of 16, about 0 s left" in err
    assert "wrote" in err and "16 of 16 windows done" in err and "3 of 3 workloads profiled" in err
    log = read_log(out / "runs.jsonl")
    plan_keys = [r["key"] for r in log if r["type"] == "window"]
    assert len(plan_keys) == 16 == len(set(plan_keys))
    m = Measurements.read(out / "measurements.csv")
    assert m.n_runs == 7 and len(m) == 3 * 2 + 3 * 2 + 3          # pairs, self pairs, the triple
    rows = _rows(out / "measurements.csv")
    assert {r["mechanism"] for r in rows} == {"streams"} and {r["gpu"] for r in rows} == {"fake"}
    assert {r["processes"] for r in rows} == {"1"} and {r["graph"] for r in rows} == {"1"}
    labels = {"resnet50": "resnet50:8:fp16", "vgg19": "vgg19:4:fp16", "bert": "bert:16:fp32"}
    by_run: dict[str, list[dict]] = {}
    for r in rows:
        by_run.setdefault(r["run"], []).append(r)
    for members in by_run.values():
        expected = max(1.0, sum(_demand(labels[r["model"]]) for r in members))
        for r in members:
            assert float(r["observed_ms"]) / float(r["solo_ms"]) == pytest.approx(expected, rel=5e-3)
            assert float(r["exec_ms"]) == pytest.approx(float(r["observed_ms"]))
            assert float(r["exec_p90_ms"]) >= float(r["exec_ms"])
    # solo_ms is the median of the three solo windows (before, between, after) of that workload
    solo = _rows(out / "solo.csv")
    assert len(solo) == 3 and {r["windows"] for r in solo} == {"3"}
    for s in solo:
        times = [r["results"][s["instance"]]["observed_ms"] for r in log if r["type"] == "window"
                 and r["kind"] == "solo" and r["members"] == [s["instance"]]]
        assert [r["phase"] for r in log if r.get("members") == [s["instance"]]] == ["before", "between", "after"]
        assert float(s["solo_ms"]) == pytest.approx(sorted(times)[1])
        assert 0 < float(s["spread_pct"]) < 0.3
        solo_p = fake_params(parse_workload(s["instance"].split("#")[0])).solo_ms
        assert float(s["solo_ms"]) == pytest.approx(solo_p, rel=2e-3)
    prof = ProfileTable.from_csv(out / "profiles.csv")
    assert sorted(prof.models) == ["bert", "resnet50", "vgg19"]
    assert prof.lookup("bert", 16).solo_ms == pytest.approx(fake_params(parse_workload("bert:16:fp32")).solo_ms,
                                                           rel=1e-4)
    model = tmp_path / "model.json"
    assert main(["fit", "--measurements", str(out / "measurements.csv"), "--out", str(model)]) == 0
    assert model.exists()


def test_time_slicing_and_mps_layouts_and_their_slowdowns(tmp_path, capsys, _no_mps_daemon):
    two = ["--workload", "a:8", "--workload", "b:8", "--no-self-pairs", "--no-profiles"]
    ts = tmp_path / "ts"
    assert main(["measure", *FAST, *two, "--mechanism", "time_slicing", "--out", str(ts)]) == 0
    (row_a, row_b) = _rows(ts / "measurements.csv")
    for r in (row_a, row_b):
        assert r["mechanism"] == "time_slicing" and r["processes"] == "2" and r["share"] == "100.0"
        assert float(r["observed_ms"]) / float(r["solo_ms"]) == pytest.approx(2.1, rel=5e-3)
        assert float(r["exec_ms"]) / float(r["solo_exec_ms"]) == pytest.approx(1.0, abs=5e-3)  # events see no wait
    assert len(list((ts / "logs").glob("worker-time_slicing-*.log"))) == 2    # one process per workload
    os.mkfifo(_no_mps_daemon / "control")                                       # the daemon's pipe: it runs
    mps = tmp_path / "mps"
    assert main(["measure", *FAST, *two, "--mechanism", "mps", "--mps-share", "30", "--mps-share", "45",
                 "--out", str(mps)]) == 0
    rows = _rows(mps / "measurements.csv")
    assert [r["share"] for r in rows] == ["30.0", "45.0"]
    expected = max(1.0, min(_demand("a:8:fp16"), 0.30) + min(_demand("b:8:fp16"), 0.45))
    for r in rows:
        assert float(r["observed_ms"]) / float(r["solo_ms"]) == pytest.approx(expected, rel=5e-3)
    assert main(["measure", *FAST, *two, "--mechanism", "time_slicing", "--out", str(tmp_path / "ts2")]) == 2
    assert "an MPS control daemon is running" in capsys.readouterr().err


def test_mig_campaign_records_each_members_instance_and_each_mechanism_has_its_file(tmp_path):
    out = tmp_path / "mig"
    assert main(["measure", *FAST, "--workload", "a:8", "--workload", "b:4", "--mechanism", "mig", "--no-profiles",
                 "--mechanism", "streams", "--mig-instance", "MIG-one", "--mig-instance", "MIG-two",
                 "--out", str(out)]) == 0
    rows = _rows(out / "measurements_mig.csv")
    assert {r["mechanism"] for r in rows} == {"mig"} and len(rows) == 6
    assert {(r["member"], r["partition"]) for r in rows} == {("0", "MIG-one"), ("1", "MIG-two")}
    assert all(float(r["observed_ms"]) / float(r["solo_ms"]) == pytest.approx(1.0, rel=5e-3) for r in rows)
    streams = _rows(out / "measurements_streams.csv")
    assert {r["mechanism"] for r in streams} == {"streams"} and {r["partition"] for r in streams} == {""}
    assert len(_rows(out / "measurements.csv")) == len(rows) + len(streams) == 12
    solo = _rows(out / "solo.csv")
    assert sum(r["mechanism"] == "mig" for r in solo) == 4       # each copy alone in its own instance
    assert sum(r["mechanism"] == "streams" for r in solo) == 2


# ------------------------------------------------------------------------------------------------ kill and resume
def test_a_campaign_killed_mid_run_resumes_to_the_same_files(tmp_path, capsys):
    args = ["measure", "--device", "fake", "--window-s", "0.04", "--margin-s", "0.01", *THREE, "--no-profiles"]
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "interfpred", *args, "--out", str(killed)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = killed / "runs.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or log.read_text().count("\n") < 7):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = [r["key"] for r in read_log(log)]
    assert 7 <= len(done_before) < 15, "the kill must land mid-campaign"
    partial = Measurements.read(killed / "measurements.csv")      # what was written so far is a valid file
    assert 0 < len(partial) and set(partial.run) <= {f"streams-{k.split('|')[2]}" for k in done_before
                                                     if "|run|" in k}
    assert main([*args, "--out", str(killed)]) == 2                      # neither --resume nor --force
    assert f"holds a campaign ({len(done_before)} of its windows done)" in capsys.readouterr().err
    assert main([*args, "--out", str(killed), "--resume"]) == 0
    err = capsys.readouterr().err
    assert f"runs {len(done_before) + 1} of 15" in err                   # nothing done is measured again
    keys = [r["key"] for r in read_log(log)]
    assert keys[:len(done_before)] == done_before and len(keys) == 15 == len(set(keys))
    whole = tmp_path / "whole"
    assert main([*args, "--out", str(whole)]) == 0
    # the fake device's numbers depend on the window, never on when it ran: the same files either way
    assert (killed / "measurements.csv").read_text() == (whole / "measurements.csv").read_text()
    assert (killed / "solo.csv").read_text() == (whole / "solo.csv").read_text()


def test_resume_refuses_other_options_and_force_keeps_what_is_not_the_campaigns(tmp_path, capsys):
    out = tmp_path / "c"
    base = ["measure", *FAST, "--workload", "a:1", "--workload", "b:1", "--no-profiles"]
    assert main([*base, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*base, "--seed", "5", "--out", str(out), "--resume"]) == 2
    assert "was started with seed 0, not 5" in capsys.readouterr().err
    mine = out / "notes.txt"
    mine.write_text("the user's\n")
    assert main([*base, "--out", str(out), "--force"]) == 0
    assert mine.read_text() == "the user's\n" and (out / "measurements.csv").exists()
    stranger = tmp_path / "other"
    stranger.mkdir()
    (stranger / "data.csv").write_text("x\n")
    assert main([*base, "--out", str(stranger), "--force"]) == 2
    assert "is not empty and holds no campaign (data.csv)" in capsys.readouterr().err
    assert (stranger / "data.csv").read_text() == "x\n"


# ------------------------------------------------------------------------------------------------ profiles
def test_a_profile_past_its_time_limit_is_reported_not_truncated(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["measure", *FAST, "--workload", "small:2", "--workload", "huge:4000", "--ncu-timeout-s", "1",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "huge:4000:fp16: the profiler did not finish within 1 s" in err and "left out of profiles.csv" in err
    assert "1 of 2 workloads profiled" in err
    assert ProfileTable.from_csv(out / "profiles.csv").models == ("small",)
    statuses = {r["label"]: r["status"] for r in read_log(out / "runs.jsonl") if r["type"] == "profile"}
    assert statuses == {"small:2:fp16": "ok", "huge:4000:fp16": "timeout"}
    report = (out / "ncu" / "01_huge_b4000_fp16.csv").read_text()
    assert "Trying to shutdown" in report and "Disconnected" not in report
    # resumed with --allow-truncated, the stopped profile is taken again and kept, marked truncated
    assert main(["measure", *FAST, "--workload", "small:2", "--workload", "huge:4000", "--ncu-timeout-s", "1",
                 "--allow-truncated", "--resume", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "kept as asked, marked truncated=1" in err and "2 of 2 workloads profiled" in err
    rows = {r["model"]: r for r in _rows(out / "profiles.csv")}
    assert rows["huge"]["truncated"] == "1" and rows["small"]["truncated"] == "0"
    assert 0 < float(rows["huge"]["kernels"]) < fake_params(parse_workload("huge:4000")).kernels


def _running(marker):
    """Processes whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_campaign_stopped_while_profiling_leaves_no_profiler_running(tmp_path):
    marker = f"huge{os.getpid()}x{time.monotonic_ns() % 10**6}"
    out = tmp_path / "p"
    proc = subprocess.Popen([sys.executable, "-m", "interfpred", "measure", *FAST, "--workload", f"{marker}:4000",
                             "--no-self-pairs", "--workload", "small:2", "--ncu-timeout-s", "60", "--out", str(out)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p != proc.pid for p in _running(f"profile {marker}:")):
        time.sleep(0.02)
    assert _running(f"profile {marker}:"), "the profiler never started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 130 and "interrupted" in proc.stderr.read()
    assert not _running(f"profile {marker}:")
    assert not [r for r in read_log(out / "runs.jsonl") if r["type"] == "profile"]   # nothing half-recorded


# ------------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("argv, message", [
    (["--workload", "resnet50:0"], "batch size 0 must be in 1.."),
    (["--workload", "resnet50:8:fp12"], "data type 'fp12' is not one of fp16, bf16, fp32"),
    (["--workload", "resnet50"], "no batch size"),
    (["--workload", "no_such_module_xyz:build:8"], "cannot import module 'no_such_module_xyz'"),
    (["--workload", "os.path:no_such_fn:8"], "os.path has no function 'no_such_fn'"),
    (["--workload", "a:1", "--workload", "a:1"], "workload 'a:1:fp16' is given twice"),
    (["--workload", "a:1", "--no-self-pairs"], "one workload without self pairs makes no run"),
    (["--workload", "a:1", "--set", "a:1,b:1"], "'b:1:fp16' is not among the --workload given"),
    (["--workload", "a:1", "--mechanism", "mps"], "no MPS control daemon is running"),
    (["--workload", "a:1", "--mechanism", "mps", "--mechanism", "time_slicing"], "cannot be measured in one campaign"),
    (["--workload", "a:1", "--mechanism", "mig"], "needs its own MIG instance"),
    (["--workload", "a:1", "--mig-instance", "MIG-x"], "MIG instances apply under mechanism mig only"),
    (["--workload", "a:1", "--workload", "b:1", "--mps-share", "50", "--mps-share", "60", "--mps-share", "70"],
     "--mps-share given 3 times for 2 workloads"),
    (["--workload", "a:1", "--window-s", "0.2", "--margin-s", "0.1"], "must be longer than twice its margin"),
    (["--workload", "a:1", "--mechanism", "nvlink"], "invalid choice: 'nvlink'"),
    (["--workload", "a:1", "--resume", "--force"], "give one"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    try:
        status = main(["measure", "--device", "fake", *argv, "--out", str(out)])
    except SystemExit as exc:      # argparse's own refusals (an unknown choice) exit from inside the parser
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_without_torch_the_gpu_device_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["measure", "--workload", "resnet50:8", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "interfpred[measure]"' in err and len(err.strip().splitlines()) == 1


def test_a_worker_that_dies_is_one_error_naming_it(tmp_path):
    group = HostGroup(("a:1:fp16#0",), (parse_workload("a:1"),))
    with pytest.raises(InterfpredError, match=r"worker of a:1:fp16#0 exited \(status 3\) before answering ready .*: boom \(log: "):
        ProcessHosts([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"], [group],
                     "streams", str(tmp_path))


def test_a_worker_that_stops_answering_is_given_up(tmp_path, monkeypatch):
    import interfpred.measure.hosts as hosts

    monkeypatch.setattr(hosts, "MEASURE_ANSWER_GRACE_S", 0.3)
    mute = ("import json, sys, time\nsys.stdin.readline()\n"
            "print(json.dumps({'ready': {'a:1:fp16#0': True}}), flush=True)\ntime.sleep(30)\n")
    group = HostGroup(("a:1:fp16#0",), (parse_workload("a:1"),))
    with ProcessHosts([sys.executable, "-c", mute], [group], "streams", str(tmp_path)) as h:
        t = time.monotonic()
        with pytest.raises(InterfpredError, match="did not answer a run within"):
            h.run(["a:1:fp16#0"], 0.01, 0.0)
        assert time.monotonic() - t < 5


def test_example_workload_module_loads_without_torch(tmp_path):
    spec = f"{ROOT / 'examples' / 'measure_workloads.py'}:gemm:1:bf16"
    out = tmp_path / "ex"
    assert main(["measure", *FAST, "--workload", spec, "--workload", "resnet50:8", "--no-profiles",
                 "--out", str(out)]) == 0
    assert {r["model"] for r in _rows(out / "measurements.csv")} == {"gemm", "resnet50"}
    assert json.loads((out / "campaign.json").read_text())["options"]["workloads"][0].endswith(":gemm:1:bf16")
