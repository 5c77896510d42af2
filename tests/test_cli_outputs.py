"""The CLI's shared conventions: --out is never replaced without --force, MAPE in percent, --json,
evaluate --split --predictor, the member column, empty inputs named, progress lines, one default GPU."""

from __future__ import annotations

import csv
import io
import itertools
import json
import threading

import numpy as np
import pytest

from interfpred import constants
from interfpred.cli import build_parser, main
from interfpred.cli.common import Progress, refuse_existing, summary_row
from interfpred.errors import InterfpredError
from interfpred.evaluation.metrics import accuracy_summary


def _pairs(tmp_path, self_pair=False):
    """Measurement runs of three models (and, with ``self_pair``, ``a`` beside a copy of itself)."""
    rows = ["run,gpu,model,batch_size,member,solo_ms,observed_ms"]
    rng = np.random.default_rng(0)
    effect = {("a", "b"): 1.6, ("b", "a"): 1.2, ("a", "c"): 1.1, ("c", "a"): 1.3, ("b", "c"): 1.4, ("c", "b"): 1.05,
              ("a", "a"): 1.5}
    pairs = [("a", "b"), ("a", "c"), ("b", "c")] + ([("a", "a")] if self_pair else [])
    for r in range(24):
        x, y = pairs[r % len(pairs)]
        for k, (own, other) in enumerate(((x, y), (y, x))):
            solo = {"a": 4.0, "b": 8.0, "c": 2.0}[own]
            obs = solo * effect[(own, other)] * (1 + 0.01 * rng.standard_normal())
            rows.append(f"r{r},v100,{own},8,{own}{k},{solo},{obs!r}")
    p = tmp_path / "pairs.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def _trace_inputs(tmp_path):
    from interfpred.sim.workload import mix_scenario

    sc = mix_scenario(["vgg19", "resnet50"], rho=0.8, executions=60, seed=0)
    prof, tr = tmp_path / "profiles.csv", tmp_path / "trace.csv"
    sc.profiles.to_csv(prof)
    sc.traces["trace"].to_csv(tr)
    return prof, tr


def _err(capsys):
    return capsys.readouterr().err.strip().splitlines()


# ---------------------------------------------------------------------------- --force
def test_refuse_existing_names_the_file_and_the_flag(tmp_path):
    out = tmp_path / "m.json"
    refuse_existing(str(out), False)           # absent: fine
    out.write_text("x")
    refuse_existing(str(out), True)            # --force: fine
    with pytest.raises(InterfpredError, match=r"m\.json exists: pass --force to replace it"):
        refuse_existing(str(out), False)


def test_fit_and_predict_keep_an_existing_out_without_force(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    model = tmp_path / "model.json"
    model.write_text("a model that learned for hours")
    assert main(["fit", "--measurements", str(pairs), "--out", str(model)]) == 2
    assert _err(capsys) == [f"interfpred: error: {model} exists: pass --force to replace it"]
    assert model.read_text() == "a model that learned for hours"
    assert main(["fit", "--measurements", str(pairs), "--out", str(model), "--force"]) == 0
    assert json.loads(model.read_text())["kind"] == "interfpred.model.interference"
    capsys.readouterr()
    pred = tmp_path / "pred.csv"
    pred.write_text("keep")
    assert main(["predict", "--model-file", str(model), "--measurements", str(pairs), "--out", str(pred)]) == 2
    assert _err(capsys) == [f"interfpred: error: {pred} exists: pass --force to replace it"]
    assert pred.read_text() == "keep"
    assert main(["predict", "--model-file", str(model), "--measurements", str(pairs), "--out", str(pred),
                 "--force"]) == 0
    assert pred.read_text().startswith("run,member,")


def test_ingest_measurements_and_ingest_trace_share_the_refusal():
    import interfpred.cli.capture as capture

    # One helper for every writer: capture's commands call the shared one, not a copy of their own.
    assert capture.refuse_existing is refuse_existing
    assert not hasattr(capture, "_refuse_existing")


# ---------------------------------------------------------------------------- percent, --json
def test_summary_row_gives_relative_errors_and_shares_in_percent():
    s = accuracy_summary(np.array([1.1, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]))
    row = summary_row(s)
    assert list(row)[:3] == ["n", "mse", "mape_%"]
    assert row["mape_%"] == pytest.approx(100 * s.mape)
    assert row["within_10_%"] == pytest.approx(100 * s.within_10)
    assert row["p99_%"] == pytest.approx(100 * s.p99)
    assert row["n"] == 3 and row["mse"] == s.mse


def test_fit_and_evaluate_tables_and_json_give_mape_in_percent(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    model = tmp_path / "model.json"
    assert main(["fit", "--measurements", str(pairs), "--out", str(model)]) == 0
    out = capsys.readouterr().out
    assert "mape_%" in out and "\nmape " not in out
    assert main(["fit", "--measurements", str(pairs), "--out", str(model), "--force", "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)        # stdout is one JSON object, nothing else
    assert fit["command"] == "fit" and fit["out"] == str(model)
    train = fit["training"]["measurements"]
    assert set(train["baselines"]) == {"no_interference", "global_mean", "pair_mean"}
    ev_lib = __import__("interfpred").load_model(model).evaluate(
        measurements=__import__("interfpred").Measurements.read(pairs))
    assert train["model"]["mape_%"] == pytest.approx(100 * ev_lib.summary.mape)
    assert main(["evaluate", "--model-file", str(model), "--measurements", str(pairs), "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["rows"] == 48 and ev["data"] == "measurements" and ev["online"] is False
    assert ev["model"]["mape_%"] == pytest.approx(100 * ev_lib.summary.mape)
    assert ev["baselines"]["pair_mean"]["mape_%"] == pytest.approx(100 * ev_lib.baselines["pair_mean"].mape)


def test_predict_json_is_the_summary_not_the_rows(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    model, pred = tmp_path / "model.json", tmp_path / "pred.csv"
    assert main(["fit", "--measurements", str(pairs), "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", "--model-file", str(model), "--measurements", str(pairs), "--out", str(pred),
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == {"command": "predict", "model_file": str(model), "out": str(pred), "rows": 48,
                   "data": "measurements", "quantiles": []}
    assert len(pred.read_text().splitlines()) == 49


# ---------------------------------------------------------------------------- --split --predictor
def test_evaluate_split_takes_a_predictor_and_prints_percent(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    assert main(["evaluate", "--measurements", str(pairs), "--split", "pair", "--repeats", "2",
                 "--predictor", "offline_linear", "--param", "ridge=0.1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["split"] == "pair" and got["folds"] == 2
    labels = [m["method"] for m in got["methods"]]
    assert labels[0] == "model (offline_linear)" and len(labels) == 4
    for m in got["methods"]:
        assert len(m["mape_%"]) == 2 and m["min"] <= m["mean"] <= m["max"]
    assert main(["evaluate", "--measurements", str(pairs), "--split", "pair", "--repeats", "2",
                 "--predictor", "offline_linear"]) == 0
    table = capsys.readouterr().out
    assert "model (offline_linear)" in table and "MAPE mean ± std (%)" in table and "min (%)" in table
    first = got["methods"][0]
    assert f"{first['mean']:.2f} ± {first['std']:.2f}" in table


def test_evaluate_split_with_no_flags_scores_the_default_fit_chosen_inside_each_fold(tmp_path, capsys):
    from interfpred.data.measurements import Measurements
    from interfpred.evaluation import run_folds
    from interfpred.experiments.real import DEFAULT_FIT_LABEL, default_fit_mape

    pairs = _pairs(tmp_path)
    assert main(["evaluate", "--measurements", str(pairs), "--split", "pair", "--repeats", "2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [m["method"] for m in got["methods"]] == [DEFAULT_FIT_LABEL, "baseline: no interference",
                                                     "baseline: global mean", "baseline: pair mean"]
    # the same figures as fitting what `fit` chooses on each fold's training runs
    m = Measurements.from_csv(pairs)
    folds = run_folds(m, "pair", repeats=2, seed=0, train_share=0.7)
    want = [100 * default_fit_mape(m, None, f, online=False) for f in folds]
    np.testing.assert_allclose(got["methods"][0]["mape_%"], want, rtol=1e-9)


def test_evaluate_split_quantiles_scores_bounds_calibrated_inside_every_fold(tmp_path, capsys):
    from interfpred.data.measurements import Measurements
    from interfpred.evaluation import run_folds
    from interfpred.experiments.model_coverage import split_coverage

    pairs = _pairs(tmp_path)
    argv = ["evaluate", "--measurements", str(pairs), "--split", "pair", "--repeats", "2", "--quantiles", "0.9"]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["coverage"]
    assert [(r["quantile"], r["method"]) for r in got] == [(0.9, "model"), (0.9, "quantile baseline")]
    m = Measurements.from_csv(pairs)
    want = split_coverage(m, None, run_folds(m, "pair", repeats=2, seed=0, train_share=0.7), [0.9])
    assert got == want
    assert got[0]["fold_min"] <= got[0]["fold_mean"] <= got[0]["fold_max"] and got[0]["rows"] > 0
    assert main(argv) == 0
    assert "coverage (pooled)" in capsys.readouterr().out
    # a named predictor is calibrated in every fold; a model file must hold a calibrated model
    assert main([*argv, "--predictor", "rls"]) == 0
    capsys.readouterr()
    model = tmp_path / "plain.json"
    assert main(["fit", "--measurements", str(pairs), "--predictor", "rls", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main([*argv, "--model-file", str(model)]) == 2
    err = _err(capsys)
    assert len(err) == 1 and "needs a calibrated --model-file" in err[0]


def test_evaluate_refuses_predictor_without_split(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    assert main(["evaluate", "--model-file", "m.json", "--measurements", str(pairs), "--predictor", "rls"]) == 2
    assert "--predictor and --param apply to --split only" in _err(capsys)[0]


# ---------------------------------------------------------------------------- member column
def test_a_model_paired_with_itself_gives_two_told_apart_rows(tmp_path, capsys):
    pairs = _pairs(tmp_path, self_pair=True)
    model, pred = tmp_path / "model.json", tmp_path / "pred.csv"
    assert main(["fit", "--measurements", str(pairs), "--out", str(model)]) == 0
    assert main(["predict", "--model-file", str(model), "--measurements", str(pairs), "--out", str(pred)]) == 0
    rows = list(csv.DictReader(io.StringIO(pred.read_text())))
    self_runs = [r for r in rows if r["run"] == "r3"]
    assert [r["model"] for r in self_runs] == ["a", "a"]
    assert [r["member"] for r in self_runs] == ["a0", "a1"]


def test_member_is_the_position_in_the_run_without_labels(tmp_path):
    from interfpred import InterferenceModel, Measurements
    from interfpred.model.prediction_tables import write_measurement_predictions

    p = tmp_path / "m.csv"
    p.write_text("run,gpu,model,batch_size,solo_ms,observed_ms\n"
                 "1,g,a,1,2.0,3.0\n2,g,a,1,2.0,2.5\n1,g,b,1,1.0,1.5\n2,g,c,1,1.0,1.2\n1,g,c,1,1.0,1.4\n")
    m = Measurements.read(p)
    model = InterferenceModel().fit(measurements=m)
    out = tmp_path / "pred.csv"
    write_measurement_predictions(model, m, None, out)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(r["run"], r["member"]) for r in rows] == [("1", "0"), ("2", "0"), ("1", "1"), ("2", "1"), ("1", "2")]


# ---------------------------------------------------------------------------- empty inputs
@pytest.mark.parametrize("which", ["trace", "measurements", "profiles"])
@pytest.mark.parametrize("command", ["fit", "evaluate", "predict"])
def test_an_empty_or_header_only_input_is_named(tmp_path, capsys, which, command):
    prof, tr = _trace_inputs(tmp_path)
    headers = {"trace": "id,device,model,batch_size,start_ms,end_ms\n",
               "measurements": "run,gpu,model,batch_size,solo_ms,observed_ms\n",
               "profiles": "gpu,model,batch_size,solo_ms,sm,l2,dram\n"}
    for content in ("", headers[which]):
        bad = tmp_path / f"bad_{which}.csv"
        bad.write_text(content)
        data = (["--measurements", str(bad)] if which == "measurements" else
                ["--profiles", str(bad if which == "profiles" else prof),
                 "--trace", str(bad if which == "trace" else tr)])
        extra = {"fit": ["--out", str(tmp_path / "m.json")],
                 "evaluate": ["--model-file", str(tmp_path / "model.json")],
                 "predict": ["--model-file", str(tmp_path / "model.json"), "--out", str(tmp_path / "p.csv")]}
        if command != "fit" and not (tmp_path / "model.json").exists():
            assert main(["fit", "--profiles", str(prof), "--trace", str(tr), "--out",
                         str(tmp_path / "model.json")]) == 0
            capsys.readouterr()
        assert main([command, *data, *extra[command]]) == 2
        err = _err(capsys)
        assert len(err) == 1 and err[0].startswith(f"interfpred: error: {bad}: "), err


# ---------------------------------------------------------------------------- progress
def test_progress_is_quiet_before_the_threshold_then_once_per_interval():
    ticks = iter([0.0, 0.5, 1.9, 2.0, 2.4, 3.1, 3.2, 9.0])
    out = io.StringIO()
    p = Progress("evaluate", after_s=2.0, every_s=1.0, stream=out, clock=lambda: next(ticks))
    for i in range(7):
        p(f"step {i}")
    assert out.getvalue().splitlines() == ["evaluate: step 2 (2.0 s)", "evaluate: step 4 (3.1 s)",
                                           "evaluate: step 6 (9.0 s)"]


def test_progress_defaults_come_from_constants(monkeypatch):
    monkeypatch.setattr(constants, "PROGRESS_AFTER_S", 7.5)
    monkeypatch.setattr(constants, "PROGRESS_EVERY_S", 0.25)
    p = Progress("fit")
    assert (p.after_s, p.every_s) == (7.5, 0.25)


def test_the_heartbeat_repeats_the_current_step_once_no_line_came_for_its_interval():
    now = [0.0]
    out = io.StringIO()
    p = Progress("fit", after_s=2.0, every_s=1.0, heartbeat_s=1.5, stream=out, clock=lambda: now[0])
    p.tick()                                   # nothing to say yet
    now[0] = 3.0
    p.tick()                                   # no step named: still nothing
    p("validating")                            # 3.0: first line
    for t in (3.5, 4.4, 4.6, 5.0, 6.2):
        now[0] = t
        p.tick()
    assert out.getvalue().splitlines() == ["fit: validating (3.0 s)", "fit: validating (4.6 s)",
                                           "fit: validating (6.2 s)"]


def test_progress_rewrites_one_line_on_a_terminal_and_quiet_prints_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    now = [0.0]
    tty = Tty()
    p = Progress("reproduce", after_s=0.0, every_s=0.0, stream=tty, clock=lambda: now[0])
    p("E1")
    now[0] = 1.0
    p("E2")
    assert tty.getvalue() == "\r\x1b[Kreproduce: E1 (0.0 s)\r\x1b[Kreproduce: E2 (1.0 s)"
    p.close()
    assert tty.getvalue().endswith("(1.0 s)\n")
    quiet = io.StringIO()
    q = Progress("fit", after_s=0.0, every_s=0.0, stream=quiet, clock=lambda: now[0], quiet=True)
    q("a")
    q.tick()
    assert quiet.getvalue() == ""


def test_inside_a_command_the_heartbeat_thread_prints_and_stops_with_it():
    from interfpred.cli.common import progress_scope

    wrote = threading.Event()

    class Stream(io.StringIO):
        def write(self, s):
            n = super().write(s)
            if self.getvalue().count("\n") >= 2:
                wrote.set()
            return n

    clock = itertools.count(0.0)          # a fake clock: every reading one second later
    out = Stream()
    with pytest.raises(RuntimeError), progress_scope(quiet=False):
        p = Progress("evaluate", after_s=0.0, every_s=0.0, heartbeat_s=0.001, stream=out, clock=lambda: next(clock))
        p("a long step")
        assert wrote.wait(10.0)                # the thread repeated the step while this one waited
        raise RuntimeError("the command failed")
    assert p._thread is None                   # closed with the command, however it ended
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("evaluate: a long step (") for line in lines)


def test_quiet_silences_the_progress_of_every_command(tmp_path, capsys, monkeypatch):
    prof, tr = _trace_inputs(tmp_path)
    monkeypatch.setattr(constants, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(constants, "PROGRESS_EVERY_S", 0.0)
    model = tmp_path / "model.json"
    assert main(["fit", "--profiles", str(prof), "--trace", str(tr), "--out", str(model), "--quiet"]) == 0
    assert not [line for line in _err(capsys) if line.startswith("fit: ")]
    assert main(["simulate", "--scenario", "mix", "--models", "resnet50", "--rho", "0.5", "--executions", "40",
                 "--out", str(tmp_path / "sim")]) == 0
    assert [line for line in _err(capsys) if line.startswith("simulate: ")]
    assert main(["simulate", "--scenario", "mix", "--models", "resnet50", "--rho", "0.5", "--executions", "40",
                 "--out", str(tmp_path / "sim2"), "--quiet"]) == 0
    assert not [line for line in _err(capsys) if line.startswith("simulate: ")]
    parser = build_parser()
    for command in ("reproduce", "ingest-trace", "evaluate", "plan", "datasets"):
        assert "--quiet" in parser._subparsers._group_actions[0].choices[command].format_help()


@pytest.mark.parametrize("command", ["fit", "evaluate", "predict"])
def test_long_commands_print_progress_on_stderr(tmp_path, capsys, monkeypatch, command):
    prof, tr = _trace_inputs(tmp_path)
    model = tmp_path / "model.json"
    monkeypatch.setattr(constants, "PROGRESS_AFTER_S", 1e9)   # before the threshold: quiet, whatever the load
    assert main(["fit", "--profiles", str(prof), "--trace", str(tr), "--out", str(model)]) == 0
    assert not [line for line in _err(capsys) if line.startswith("fit: ")]
    monkeypatch.setattr(constants, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(constants, "PROGRESS_EVERY_S", 0.0)
    argv = {"fit": ["--out", str(model), "--force"], "evaluate": ["--model-file", str(model), "--online"],
            "predict": ["--model-file", str(model), "--out", str(tmp_path / "p.csv")]}[command]
    assert main([command, "--profiles", str(prof), "--trace", str(tr), *argv]) == 0
    lines = [line for line in _err(capsys) if line.startswith(f"{command}: ")]
    assert lines and all(line.endswith(" s)") for line in lines)
    if command == "evaluate":    # the model, then each of the three baselines
        assert any("0/4 predictors on 60 rows" in line for line in lines)
        assert any("3/4 predictors" in line for line in lines)
    if command == "fit":
        assert any("features of 60 rows computed" in line for line in lines)


# ---------------------------------------------------------------------------- one default GPU
def test_simulate_and_reproduce_default_to_the_same_gpu():
    from interfpred.sim.orion import default_gpu

    parser = build_parser()
    sim = parser.parse_args(["simulate", "--out", "x"])
    rep = parser.parse_args(["reproduce"])
    assert sim.gpu is None and rep.gpu is None       # both resolved by default_gpu
    assert default_gpu(sim.truth, sim.zoo) == default_gpu(rep.truth, rep.zoo) == "v100"
    assert default_gpu("fluid") == "l4"


def test_simulate_without_gpu_writes_a_v100_scenario(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", "--scenario", "mix", "--models", "resnet50", "--rho", "0.5", "--executions", "40",
                 "--out", str(out)]) == 0
    manifest = json.loads((out / "scenario.json").read_text())
    assert manifest["gpu"]["name"] == "v100"
    assert "gpu v100" in capsys.readouterr().out


# ---------------------------------------------------------------------------- Profile errors
def test_profile_out_of_range_is_an_interfpred_error():
    from interfpred import Profile

    with pytest.raises(InterfpredError, match=r"invalid profile: sm 70: .*less than or equal to 1"):
        Profile(gpu="l4", model="m", batch_size=1, solo_ms=1.0, sm=70)


def test_json_and_force_are_declared_where_documented():
    parser = build_parser()
    for argv, force in ((["fit", "--out", "m", "--json", "--force"], True), (["evaluate", "--json"], None),
                        (["predict", "--out", "p", "--json", "--force"], True)):
        ns = parser.parse_args(argv)
        assert ns.json is True and getattr(ns, "force", None) is force


# ---------------------------------------------------------------------------- every --out, one rule
#: A run of every subcommand that writes a file, with inputs that do not exist: a refusal of --out
#: must come before any input is read. Subcommands writing folders (simulate, reproduce) keep their
#: own rule (an existing non-empty folder needs --force).
_FILE_WRITERS = {
    "fit": ["fit", "--measurements", "absent.csv"],
    "predict": ["predict", "--model-file", "absent.json", "--measurements", "absent.csv"],
    "ingest-trace": ["ingest-trace", "absent.sqlite"],
    "ingest-measurements": ["ingest-measurements", "absent.ckpt"],
    "datasets": ["datasets", "gavel_v100"],
    "plan": ["plan", "--profiles", "absent.csv", "--slo", "absent.csv", "--gpu", "a100-80gb"],
    "advise": ["advise", "--slo", "absent.csv"],
}
_FOLDER_WRITERS = {"simulate", "reproduce"}
_MERGING_WRITERS = {"ingest"}  # --out merges into an existing file; --force replaces it
#: Writes a campaign folder: one holding a campaign is continued (--resume) or started over (--force);
#: one holding anything else is never written into, --force or not.
_CAMPAIGN_WRITERS = {"measure"}


def _writers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {name for name, p in sub.choices.items() if any("--out" in a.option_strings for a in p._actions)}


def test_the_output_tests_cover_every_subcommand_with_an_out():
    assert _writers() == set(_FILE_WRITERS) | _FOLDER_WRITERS | _MERGING_WRITERS | _CAMPAIGN_WRITERS


@pytest.mark.parametrize("command", sorted(_FILE_WRITERS))
def test_every_file_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "kept.csv"
    out.write_text("the user's file")
    assert main([*_FILE_WRITERS[command], "--out", str(out)]) == 2
    assert _err(capsys) == [f"interfpred: error: {out} exists: pass --force to replace it"]
    assert out.read_text() == "the user's file"
    folder = tmp_path / "adir"
    folder.mkdir()
    assert main([*_FILE_WRITERS[command], "--out", str(folder), "--force"]) == 2
    assert _err(capsys) == [f"interfpred: error: --out {folder} is a folder: name a file to write"]


def test_ingest_refuses_a_folder_out_before_reading(tmp_path, capsys):
    assert main(["ingest", "absent.csv", "--gpu", "a100", "--model", "m", "--batch-size", "1",
                 "--out", str(tmp_path)]) == 2
    assert _err(capsys) == [f"interfpred: error: --out {tmp_path} is a folder: name a file to write"]


def test_ingest_trace_profiles_out_is_refused_too(tmp_path, capsys):
    kept = tmp_path / "profiles.csv"
    kept.write_text("keep")
    assert main(["ingest-trace", "absent.sqlite", "--out", str(tmp_path / "t.csv"), "--profiles-out",
                 str(kept)]) == 2
    assert _err(capsys) == [f"interfpred: error: {kept} exists: pass --force to replace it"]
    assert not (tmp_path / "t.csv").exists()


def _format(path):
    head = path.read_bytes()[:8]
    return "parquet" if head.startswith(b"PAR1") else "arrow" if head.startswith(b"ARROW1") else "csv"


@pytest.mark.parametrize("suffix,fmt", [(".csv", "csv"), (".parquet", "parquet"), (".feather", "arrow")])
def test_every_writer_writes_the_format_its_suffix_names(tmp_path, capsys, suffix, fmt):
    pytest.importorskip("pyarrow")
    from interfpred.data.columnar import read_measurements, read_profiles, read_trace

    capture = "tests/data/capture/nsys_saxpy_mpi_a100.sqlite"
    ckpts = ["tests/data/capture/model_analyzer_concurrent_resnet50_vgg19.ckpt",
             "tests/data/capture/model_analyzer_solo_resnet50_trimmed.ckpt"]
    trace, prof = tmp_path / f"trace{suffix}", tmp_path / f"profiles{suffix}"
    meas, data = tmp_path / f"meas{suffix}", tmp_path / f"gavel{suffix}"
    assert main(["ingest-trace", capture, "--name-pattern", "{model}", "--batch-size", "1", "--out", str(trace),
                 "--profiles-out", str(prof)]) == 0
    assert main(["ingest-measurements", *ckpts, "--out", str(meas)]) == 0
    assert main(["datasets", "gavel_v100", "--out", str(data)]) == 0
    assert main(["ingest", "--example", "--out", str(tmp_path / f"ncu{suffix}")]) == 0
    capsys.readouterr()
    for path in (trace, prof, meas, data, tmp_path / f"ncu{suffix}"):
        assert _format(path) == fmt, path
    assert len(read_trace(trace)) == 5
    assert read_profiles(prof).gpus == ("NVIDIA A100-SXM4-40GB",)
    assert read_measurements(meas).n_runs == 12
    assert len(read_measurements(data)) == 660
    # ingest merges into the file it wrote, in its format
    assert main(["ingest", "--example", "--out", str(tmp_path / f"ncu{suffix}")]) == 0
    assert _format(tmp_path / f"ncu{suffix}") == fmt


@pytest.mark.parametrize("command", sorted(_FOLDER_WRITERS))
def test_every_folder_out_is_refused_before_any_work(tmp_path, capsys, command):
    argv = {"simulate": ["simulate", "--scenario", "paper"], "reproduce": ["reproduce", "--quick"]}[command]
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("the user's")
    assert main([*argv, "--out", str(kept)]) == 2
    err = _err(capsys)
    assert len(err) == 1 and "exists and is not empty; pass --force to replace it" in err[0]
    afile = tmp_path / "afile"
    afile.write_text("keep")
    assert main([*argv, "--out", str(afile), "--force"]) == 2
    err = _err(capsys)
    assert len(err) == 1 and "exists and is not a folder" in err[0]
    assert (kept / "notes.txt").read_text() == "the user's" and afile.read_text() == "keep"


def test_a_campaign_out_never_writes_into_a_folder_of_the_users(tmp_path, capsys):
    argv = ["measure", "--device", "fake", "--workload", "a:1", "--no-profiles"]
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("the user's")
    for force in ([], ["--force"]):
        assert main([*argv, "--out", str(kept), *force]) == 2
        err = _err(capsys)
        assert len(err) == 1 and "is not empty and holds no campaign (notes.txt)" in err[0]
    afile = tmp_path / "afile"
    afile.write_text("keep")
    assert main([*argv, "--out", str(afile), "--force"]) == 2
    err = _err(capsys)
    assert len(err) == 1 and "exists and is not a folder" in err[0]
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"] and afile.read_text() == "keep"


def test_on_a_terminal_other_output_starts_on_a_line_of_its_own(monkeypatch):
    import sys

    from interfpred.cli.common import progress_scope

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(sys, "stdout", tty)
    now = [0.0]
    with progress_scope(quiet=False):
        p = Progress("fit", after_s=0.0, every_s=0.0, heartbeat_s=1e9, clock=lambda: now[0])
        p("validating")
        print("chose entity_rls")              # the command's own output, on a line of its own
        p("fitting")
    assert sys.stdout is tty and sys.stderr is tty
    assert tty.getvalue() == ("\r\x1b[Kfit: validating (0.0 s)\nchose entity_rls\n"
                              "\r\x1b[Kfit: fitting (0.0 s)\n")


def test_a_closed_pipe_on_stdout_stops_quietly(monkeypatch, capsys, tmp_path):
    """``interfpred ... | head``: when the reader stops, the command stops with 141 and prints no error."""
    import io

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    capsys.readouterr()
    monkeypatch.setattr("sys.stdout", ClosedPipe())
    status = main(["plan", "--profiles", "dataset:parvagpu_a100", "--slo", "dataset:parvagpu_slo1",
                   "--gpu", "a100-80gb", "--out", str(tmp_path / "deployment.csv"), "--quiet"])
    assert status == 141
    assert capsys.readouterr().err == ""


def test_the_default_report_folder_is_ignored_in_a_checkout():
    import pathlib

    from interfpred.constants import REPRODUCE_DEFAULT_OUT

    lines = (pathlib.Path(__file__).resolve().parents[1] / ".gitignore").read_text().splitlines()
    assert f"/{REPRODUCE_DEFAULT_OUT}/" in lines   # the README's first command leaves no untracked folder behind


def test_bench_datasets_and_reproduce_print_their_tables_as_json(tmp_path, capsys):
    import json

    assert main(["bench", "--json", "--no-peers", "--widths", "6", "--calls", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == "bench" and out["rows"][0]["name"].startswith("RLS(") and out["rows"][0]["d"] == 6
    assert {"predict_one", "update_one", "predict_batch", "update_batch"} <= set(out["rows"][0])
    assert main(["datasets", "--json"]) == 0
    listed = {d["name"]: d for d in json.loads(capsys.readouterr().out)["datasets"]}
    assert listed["gavel_v100"]["rows"] == 660 and listed["gavel_v100"]["runs"] == 330
    assert main(["datasets", "gavel_v100", "--out", str(tmp_path / "g.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 660
