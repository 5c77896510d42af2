"""Tests of interfpred.experiments.reproduce and ``interfpred reproduce``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from interfpred.cli import main
from interfpred.errors import InterfpredError
from interfpred.experiments import paper, selection
from interfpred.experiments import reproduce as rmod
from interfpred.experiments.report import Part, ReproduceContext, Section, SplitSection
from interfpred.experiments.reproduce import DEFAULT_SECTIONS, reproduce

N = 400


def _tiny_section(ctx):
    (ctx.out_dir / "tiny.png").write_bytes(b"x" * 10)
    return Section(title="Tiny", markdown="body of tiny", terminal="tiny table", figures=["tiny.png"],
                   data={"value": 1.5, "seed": ctx.seed})


def test_reproduce_writes_report(small_report):
    out, sections = small_report          # reproduce(out, executions=400, seed=2, command=...), tests/conftest.py
    titles = [s.title for s in sections]
    assert titles[:4] == ["E1: co-location dynamics", "E2: workload change",
                          "E3: SLO-aware scheduling with co-location",
                          "E4: real co-location measurements (Gavel V100 pairs)"]
    assert "Coverage of calibrated latency bounds (E2 sets)" in titles
    assert "E4 coverage: calibrated latency bounds on real pairs (Gavel V100)" in titles
    assert "E5: N processes of one model in one MIG instance (ParvaGPU A100-80GB)" in titles
    report = (out / "report.md").read_text()
    assert "`interfpred reproduce --test`" in report and "seed 2" in report and "runtime:" in report
    assert "## E1: co-location dynamics" in report and "## E2: workload change" in report
    assert "## E3: SLO-aware scheduling with co-location" in report
    assert "## E4: real co-location measurements (Gavel V100 pairs)" in report and "baseline: pair mean" in report
    results = json.loads((out / "results.json").read_text())
    assert results["seed"] == 2 and "E2: workload change" in results["sections"]
    for s in sections:
        for f in s.figures:
            assert (out / f).exists() and f"]({f})" in report
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp")]


def test_refuses_existing_report_unless_force(tmp_path):
    out = tmp_path / "rep"
    reproduce(out, sections=[_tiny_section])
    before = (out / "report.md").read_text()
    with pytest.raises(InterfpredError, match="already holds a report"):
        reproduce(out, sections=[_tiny_section], seed=5)
    assert (out / "report.md").read_text() == before
    reproduce(out, sections=[_tiny_section], seed=5, force=True)
    assert json.loads((out / "results.json").read_text())["sections"]["Tiny"]["seed"] == 5


def test_refuses_non_empty_folder_and_bad_parent(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(InterfpredError, match="not empty"):
        reproduce(tmp_path / "full", sections=[_tiny_section])
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    (tmp_path / "file").write_text("x")
    with pytest.raises(InterfpredError, match="cannot write"):
        reproduce(tmp_path / "file" / "out", sections=[_tiny_section])
    with pytest.raises(InterfpredError, match="not a folder"):
        reproduce(tmp_path / "file", sections=[_tiny_section])


def test_sections_by_name_and_unknown(tmp_path):
    with pytest.raises(InterfpredError, match="unknown section 'e9'"):
        reproduce(tmp_path / "a", sections=["e9"])
    with pytest.raises(InterfpredError, match="unknown GPU preset"):
        reproduce(tmp_path / "a", sections=[_tiny_section], gpu="h100")
    assert not (tmp_path / "a").exists()
    assert DEFAULT_SECTIONS[:2] == [paper.run_e1, paper.run_e2]


def _square_piece(ctx, k):
    return k * k + ctx.seed, os.getpid()


def _square_parts(ctx):
    ctx.progress("squaring")
    return [Part(_square_piece, (k,), cost=float(k)) for k in range(6)]


def _square_assemble(ctx, results):
    return Section(title="Squares", markdown="squares", terminal="squares",
                   data={"squares": [v for v, _ in results], "pids": sorted({p for _, p in results})})


SQUARES = SplitSection("run_squares", _square_parts, _square_assemble)


def test_workers_give_the_numbers_of_one_process(small_report, tmp_path):
    # E1 and E5 (plain sections) and a split section on two worker processes: the same data as in
    # this process (small_report: jobs=1, same seed and sizes), every field but the runtimes; the
    # split section's pieces come back in order although the longest start first
    _, alone = small_report
    want = {s.title: s for s in alone}
    progress: list[str] = []
    got = reproduce(tmp_path / "w", executions=400, seed=2, sections=["e1", "e5", SQUARES], jobs=2,
                    progress=progress.append)
    assert [s.title for s in got] == ["E1: co-location dynamics",
                                      "E5: N processes of one model in one MIG instance (ParvaGPU A100-80GB)",
                                      "Squares"]
    for s in got[:2]:
        a = {k: v for k, v in want[s.title].data.items() if k != "runtime_s"}
        b = {k: v for k, v in s.data.items() if k != "runtime_s"}
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
        assert s.markdown == want[s.title].markdown and s.terminal == want[s.title].terminal
    squares = got[2].data
    assert squares["squares"] == [k * k + 2 for k in range(6)] and os.getpid() not in squares["pids"]
    assert SQUARES(ReproduceContext(out_dir=tmp_path, seed=2)).data["squares"] == squares["squares"]
    assert any(m.startswith("E1:") for m in progress)     # the workers' messages came back
    steps = [m for m in progress if m.startswith("step ")]
    n = 2 + 6                                              # two whole sections and the six squares
    assert progress.index(f"{n} steps on 2 worker processes") < progress.index(steps[0])
    assert [int(m.split()[1]) for m in steps] == list(range(1, n + 1))
    assert all(f" of {n} done" in m for m in steps)
    assert all("s left" in m for m in steps[:-1]) and steps[-1].endswith(" s)")
    with pytest.raises(InterfpredError, match="jobs 0 must be a positive integer"):
        reproduce(tmp_path / "z", sections=[_tiny_section], jobs=0)


def _boom_section(ctx):
    raise InterfpredError(f"boom in a worker, seed {ctx.seed}")


def test_a_failing_piece_in_a_worker_fails_the_run_and_leaves_nothing(tmp_path):
    with pytest.raises(InterfpredError, match="boom in a worker, seed 4"):
        reproduce(tmp_path / "out", sections=[_tiny_section, _boom_section], jobs=2, seed=4)
    assert list(tmp_path.iterdir()) == []


def test_failing_section_leaves_nothing(tmp_path):
    def boom(ctx):
        raise InterfpredError("boom")
    with pytest.raises(InterfpredError, match="boom"):
        reproduce(tmp_path / "out", sections=[_tiny_section, boom])
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_skips_figures(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib -> ImportError
    sections = reproduce(tmp_path / "r", executions=N, sections=["e1"])
    assert sections[0].figures == []
    assert "figure skipped: matplotlib is not installed" in (tmp_path / "r" / "report.md").read_text()


def test_pyplot_is_none_and_the_placeholder_names_the_plot_extra_when_matplotlib_is_missing(monkeypatch):
    from interfpred.experiments.plotting import NO_MPL, pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib -> ImportError
    assert pyplot() is None
    assert '.[plot]' in NO_MPL


def test_cli_quick_and_refusal(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(selection, "REPRODUCE_QUICK_EXECUTIONS", N)
    monkeypatch.setattr(rmod, "DEFAULT_SECTIONS", [paper.run_e1, paper.run_e2])
    out = tmp_path / "r"
    assert main(["reproduce", "--quick", "--out", str(out), "--seed", "3", "--jobs", "1"]) == 0
    cap = capsys.readouterr()
    assert "MSE of slowdown" in cap.out and "within 10 % (% of rows)" in cap.out
    assert "simulating the paper scenario" in cap.err
    report = (out / "report.md").read_text()
    assert f"interfpred reproduce --quick --out {out} --seed 3" in report and "quick run" in report
    assert main(["reproduce", "--quick", "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "already holds a report" in err and len(err.strip().splitlines()) == 1


def test_cli_unknown_gpu_one_line():
    proc = subprocess.run([sys.executable, "-m", "interfpred", "reproduce", "--gpu", "nope", "--out", "/tmp/x-never"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "unknown GPU preset 'nope'" in proc.stderr


def test_one_process_says_step_k_of_n_with_the_time_left(tmp_path):
    progress: list[str] = []
    reproduce(tmp_path / "one", sections=[_tiny_section, _tiny_section, _tiny_section], jobs=1,
              progress=progress.append)
    steps = [m for m in progress if m.startswith("step ")]
    assert steps[0] == "step 1 of 3: _tiny_section" and len(steps) == 6
    assert steps[1].startswith("step 1 of 3 done, about ") and steps[1].endswith(" s left")
    assert steps[-1].startswith("step 3 of 3 done (")


def test_reproduce_json_prints_results_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(rmod, "reproduce", lambda *a, **kw: reproduce(*a, **{**kw, "sections": [_tiny_section]}))
    out = tmp_path / "rep"
    assert main(["reproduce", "--quick", "--out", str(out), "--json", "--jobs", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "results.json").read_text())
    assert printed["command"] == "reproduce" and printed["sections"] == saved["sections"]
    assert printed["sections"]["Tiny"]["value"] == 1.5


def test_a_goal_not_met_line_is_explained_once():
    from interfpred.experiments.reproduce import GOAL_NOTE, format_terminal

    missed = Section(title="A", markdown="", terminal="Goal NOT met (x within 2 points): 3 points", data={})
    fine = Section(title="B", markdown="", terminal="table", data={})
    assert format_terminal([missed, fine, missed]).count(GOAL_NOTE) == 1
    assert GOAL_NOTE not in format_terminal([fine])
