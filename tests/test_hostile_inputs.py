"""Bad input to plan, advise, ingest-trace --profiles-out, fit/evaluate --dask and model files: every
case is refused with exit status 2 and one line naming the input, quickly, and leaves no output behind.

The strict number reader that these commands (and every numeric option) share is property-tested
against Python's own readers: it agrees with them on plain ASCII numbers and refuses everything
else in one ``InputError``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import socket
import sqlite3
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred._core.numbers import is_int_text, parse_float, parse_int
from interfpred.cli import main
from interfpred.errors import InputError, InterfpredError

CAPTURES = "tests/data/capture"
PLAN = ["plan", "--profiles", "dataset:parvagpu_a100", "--gpu", "a100-80gb"]
#: Every refusal here must come well within this many seconds (the campaign's bound is 10 s).
FAST_S = 10.0


def refused(capsys, argv, *must_contain):
    """Run the CLI in process: exit status 2, one line on stderr naming the input, within FAST_S."""
    t0 = time.perf_counter()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's refusal of an option's value: "interfpred advise: error: ..."
        code = exc.code
    took = time.perf_counter() - t0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("interfpred") and ": error: " in lines[0], err
    assert "internal error" not in err and "Traceback" not in err
    for part in must_contain:
        assert part in lines[0], (part, lines[0])
    assert took < FAST_S, took
    return lines[0]


def slo_file(tmp_path, rate="200", latency="50", model="resnet50", name="slo.csv"):
    f = tmp_path / name
    f.write_text(f"model,rate_rps,latency_ms\n{model},{rate},{latency}\n", encoding="utf-8")
    return f


# ------------------------------------------------------------------------------------------------ the strict reader
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_parse_int_reads_ascii_integers_and_refuses_everything_else_in_one_error(text):
    try:
        value = parse_int(text, "n")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    t = text.strip()
    assert t.lstrip("+-").isascii() and t.lstrip("+-").isdigit()
    assert value == int(t) and is_int_text(text)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_parse_int_agrees_with_int_on_plain_integers(n):
    assert parse_int(str(n), "n") == n


@settings(max_examples=300, deadline=None)
@given(st.characters(categories=["Nd", "No"]).filter(lambda c: not c.isascii()))
def test_digits_of_other_scripts_and_superscripts_are_refused(c):
    # '²'.isdigit() is True and int('٣') is 3: neither is read as a number here
    for text in (c, "1" + c, c + "0"):
        with pytest.raises(InputError, match="is not an integer"):
            parse_int(text, "partition")
        with pytest.raises(InputError, match="is not a number"):
            parse_float(text, "rate_rps")
        assert not is_int_text(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_parse_float_returns_a_finite_float_or_one_input_error(text):
    try:
        value = parse_float(text, "x")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert math.isfinite(value) and value == float(text.strip())
    assert "_" not in text and text.strip().isascii()


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_parse_float_agrees_with_float_on_finite_numbers(x):
    assert parse_float(repr(x), "x") == x


@pytest.mark.parametrize("text", ["8_29", "８２９", "1e999", "nan", "inf", "-inf", "0x10", "1" * 41, "", " "])
def test_parse_float_refuses_what_float_accepts_or_overflows(text):
    with pytest.raises(InputError):
        parse_float(text, "rate_rps")


def test_integer_options_use_the_strict_reader(capsys, tmp_path):
    slo = slo_file(tmp_path)
    refused(capsys, ["advise", "--slo", slo, "--gpus", "２"], "--gpus", "is not an integer")
    refused(capsys, ["advise", "--slo", slo, "--seed", "1_0"], "--seed", "is not an integer")
    refused(capsys, ["advise", "--slo", slo, "--duration-s", "1_0"], "--duration-s", "is not a number")


# ------------------------------------------------------------------------------------------------ plan
def test_plan_check_refuses_a_superscript_and_a_5000_digit_cell(capsys, tmp_path):
    header = "gpu,model,partition,placement,batch_size,processes\n"
    d = tmp_path / "d.csv"
    d.write_text(header + "0,resnet50,²,4,32,4\n", encoding="utf-8")
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo1", "--check", d], "d.csv line 2", "partition '²'")
    d.write_text(header + "0,resnet50," + "9" * 5000 + ",4,32,4\n")
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo1", "--check", d], "d.csv line 2", "partition")
    d.write_text(header + "0,resnet50,1,0,32,٣\n", encoding="utf-8")
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo1", "--check", d], "d.csv line 2", "processes")


@pytest.mark.parametrize("column, cell", [("partition", "²"), ("processes", "²"), ("processes", "9" * 5000)])
def test_plan_profiles_with_a_bad_count_are_refused_by_run(capsys, tmp_path, column, cell):
    from interfpred.data.datasets import load_dataset

    m = load_dataset("parvagpu_a100")
    f = tmp_path / "m.csv"
    m.to_csv(f)
    lines = f.read_text().splitlines()
    cols = lines[0].split(",")
    row = lines[1].split(",")
    row[cols.index(column)] = cell
    f.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n", encoding="utf-8")
    refused(capsys, [*PLAN, "--profiles", f, "--slo", "dataset:parvagpu_slo1", "--out", tmp_path / "o.csv"],
            column)
    assert not (tmp_path / "o.csv").exists()


def test_plan_slo_dataset_suffix_must_be_ascii_digits(capsys, tmp_path):
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo²", "--out", tmp_path / "o.csv"], "dataset:parvagpu_slo²")
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo" + "9" * 5000, "--out", tmp_path / "o.csv"], "--slo")


@pytest.mark.parametrize("rate, expected", [
    ("1e10", "rate_rps 1e+10 must be a number in [0.001, 1e+09]"),
    ("1e12", "rate_rps 1e+12"),
    ("1e300", "rate_rps 1e+300"),
    ("1e-300", "rate_rps 1e-300"),
    ("1e9", "PLAN_INSTANCES_MAX"),
    ("8_29", "rate_rps '8_29' is not a number"),
    ("８２９", "rate_rps '８２９' is not a number"),
    ("nan", "rate_rps 'nan' is not a number"),
])
def test_plan_refuses_rates_out_of_bounds_quickly(capsys, tmp_path, rate, expected):
    slo = slo_file(tmp_path, rate=rate)
    out = tmp_path / "o.csv"
    refused(capsys, [*PLAN, "--slo", slo, "--out", out], expected)
    assert not out.exists()


def test_plan_refuses_a_day_long_latency_slo_and_a_control_character_in_a_model(capsys, tmp_path):
    refused(capsys, [*PLAN, "--slo", slo_file(tmp_path, latency="1e300"), "--out", tmp_path / "o.csv"], "latency_ms")
    refused(capsys, [*PLAN, "--slo", slo_file(tmp_path, model="res\x1b[31mnet"), "--out", tmp_path / "o.csv"],
            "model name")


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "pq", "feather"])
def test_plan_writes_csv_only(capsys, tmp_path, suffix):
    out = tmp_path / f"x.{suffix}"
    refused(capsys, [*PLAN, "--slo", "dataset:parvagpu_slo1", "--out", out], "written as CSV")
    assert not out.exists()


def test_plan_compares_gpu_with_the_profiles(capsys, tmp_path):
    refused(capsys, ["plan", "--profiles", "dataset:parvagpu_a100", "--gpu", "h200-141gb", "--slo",
                     "dataset:parvagpu_slo1", "--out", tmp_path / "o.csv"],
            "h200-141gb", "measured on a100-80gb")
    refused(capsys, ["plan", "--profiles", "dataset:parvagpu_a100", "--gpu", "a100-40gb", "--slo",
                     "dataset:parvagpu_slo1", "--check", tmp_path / "missing.csv"])


def test_plan_lays_out_many_instances_in_linear_time(tmp_path):
    """90,000 instances: the layout took minutes when it popped from the front of a list."""
    from interfpred.provisioning import ConfigTable, LatencyRule, plan

    table = ConfigTable.from_rows([("a", 1, 8, 1, 10.0), ("a", 7, 8, 1, 5.0)])
    t0 = time.perf_counter()
    p = plan(table, {"a": (800.0 * 90_000, 15.0)}, gpu="a100-80gb", rule=LatencyRule(max_exec_fraction=1.0))
    assert len(p.deployment.segments) >= 90_000
    assert time.perf_counter() - t0 < FAST_S


# ------------------------------------------------------------------------------------------------ advise
@pytest.mark.parametrize("extra, expected", [
    (["--gpus", "1000000000"], "GPUS_MAX"),
    (["--quantum-ms", "1e-6"], "switch_ms 0.581 is longer than the quantum_ms 1e-06"),
    (["--quantum-ms", "1e-6", "--switch-ms", "0"], "QUANTA_MAX"),
    (["--switch-ms", "1e300"], "switch_ms 1e+300 is longer than the quantum_ms"),
    (["--duration-s", "1e-300"], "fewer than 1 request(s)"),
    (["--duration-s", "1e300"], "ADVISE_REQUESTS_MAX"),
    (["--quantum-ms", "0"], "quantum_ms 0.0 must be a positive"),
])
def test_advise_refuses_unbounded_or_degenerate_runs(capsys, tmp_path, extra, expected):
    refused(capsys, ["advise", "--slo", slo_file(tmp_path), *extra], expected)


def test_advise_refuses_a_rate_below_the_minimum(capsys, tmp_path):
    refused(capsys, ["advise", "--slo", slo_file(tmp_path, rate="1e-300")], "slo.csv line 2", "rate_rps 1e-300")


@pytest.mark.parametrize("solo, expected", [("1e6", "QUANTA_MAX"), ("1e-300", "solo_ms 1e-300 is outside"),
                                            ("1e300", "solo_ms 1e+300 is outside")])
def test_advise_refuses_absurd_solo_latencies(capsys, tmp_path, solo, expected):
    from interfpred.sim.zoo import zoo_profiles

    prof = tmp_path / "p.csv"
    zoo_profiles("a100").to_csv(prof)
    lines = prof.read_text().splitlines()
    col = lines[0].split(",").index("solo_ms")
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        if cells[1] == "resnet50":
            cells[col] = solo
        out.append(",".join(cells))
    prof.write_text("\n".join(out) + "\n")
    # an SLO the 1e6 ms batch could meet, so that the bound on simulated quanta is what refuses it
    refused(capsys, ["advise", "--slo", slo_file(tmp_path, latency="1e7"), "--profiles", prof], expected)


# ------------------------------------------------------------------------------------------------ --dask
def _dask_args(tmp_path, command):
    if command == "fit":
        return ["fit", "--profiles", "p.parquet", "--trace", "t.parquet", "--out", tmp_path / "m.json",
                "--predictor", "rls", "--feature-map", "rich", "--target", "rate"]
    return ["evaluate", "--model-file", "m.json", "--profiles", "p.parquet", "--trace", "t.parquet"]


@pytest.mark.parametrize("command", ["fit", "evaluate"])
@pytest.mark.parametrize("address", ["not a url", "inproc://x", "file:///etc/passwd", "tcp://host", "tcp://h:0",
                                     "tcp://h:99999", "ucx://h:1", "tcp://" + "a" * 400 + ":1", "h:８７"])
def test_dask_addresses_are_checked_before_anything_is_read(capsys, tmp_path, command, address):
    refused(capsys, [*_dask_args(tmp_path, command), "--dask", address], "is not a Dask scheduler address")


@pytest.mark.parametrize("workers, expected", [("100000", "DASK_WORKERS_MAX"), ("0", "--workers"),
                                               ("1_0", "--workers")])
def test_dask_workers_are_bounded(capsys, tmp_path, workers, expected):
    # refused before any input is read: the files named need not exist
    refused(capsys, [*_dask_args(tmp_path, "fit"), "--dask", "--workers", workers], expected)


def test_a_scheduler_answering_garbage_is_one_line(capsys, tmp_path):
    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.sendall(b"\xff" * 64 + b"garbage" * 1000)
                    stop.wait(8.0)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        from interfpred.model.distributed import connect

        t0 = time.perf_counter()
        with pytest.raises(InterfpredError, match=f"127.0.0.1:{port}") as exc:
            with connect(f"tcp://127.0.0.1:{port}"):
                pass
        assert "\n" not in str(exc.value) and time.perf_counter() - t0 < FAST_S
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_local_cluster_leaves_no_scratch_space(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import tempfile

    from interfpred.model.distributed import connect

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with connect(n_workers=1) as client:
        assert client.submit(sum, [1, 2]).result() == 3
    assert sorted(os.listdir(tmp_path)) == []


# ------------------------------------------------------------------------------------------------ ingest-trace
SIM = f"{CAPTURES}/nsys_sim_colocated_v100.sqlite"


def test_a_failing_profiles_out_leaves_the_old_out_in_place(capsys, tmp_path, monkeypatch):
    import interfpred.cli.capture as capture_cli
    from interfpred.data.profiles import ProfileTable

    out, prof = tmp_path / "o.csv", tmp_path / "p.csv"
    out.write_text("old trace\n")
    real = capture_cli.write_output

    def second_fails(value, path):
        if isinstance(value, ProfileTable):
            raise InterfpredError(f"cannot write {path}")
        real(value, path)

    monkeypatch.setattr(capture_cli, "write_output", second_fails)
    refused(capsys, ["ingest-trace", SIM, "--out", out, "--profiles-out", prof, "--force"], "cannot write")
    assert out.read_text() == "old trace\n" and not prof.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]


def test_profiles_out_is_named_in_its_refusals(capsys, tmp_path):
    out = tmp_path / "o.csv"
    (tmp_path / "dir").mkdir()
    refused(capsys, ["ingest-trace", SIM, "--out", out, "--profiles-out", tmp_path / "dir", "--force"],
            "--profiles-out", "is a folder")
    refused(capsys, ["ingest-trace", SIM, "--out", out, "--profiles-out", "/dev/null", "--force"], "--profiles-out")
    assert not out.exists()


def test_both_outputs_are_written_and_replaced_together(capsys, tmp_path):
    out, prof = tmp_path / "o.csv", tmp_path / "p.arrow"
    out.write_text("old\n")
    prof.write_text("old\n")
    assert main(["ingest-trace", SIM, "--out", str(out), "--profiles-out", str(prof), "--force"]) == 0
    capsys.readouterr()
    assert out.read_text().startswith("id,") and prof.read_bytes()[:6] == b"ARROW1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "p.arrow"]


def _damaged_export(tmp_path, *sql, params=()):
    db = tmp_path / "cap.sqlite"
    shutil.copyfile(SIM, db)
    os.chmod(db, 0o644)
    con = sqlite3.connect(db)
    for i, statement in enumerate(sql):
        con.execute(statement, params if i == len(sql) - 1 else ())
    con.commit()
    con.close()
    return db


@pytest.mark.parametrize("view, expected", [
    # a recursive view counting to 10^12 and a cross join: reading either ran for minutes, took gigabytes
    ("CREATE VIEW TARGET_INFO_GPU AS WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n "
     "WHERE i < 1000000000000) SELECT i AS id, i AS cuDevice, 'gpu' AS name FROM n", "as a view"),
    ("CREATE VIEW TARGET_INFO_GPU AS SELECT a.rowid AS id, 0 AS cuDevice, 'x' AS name FROM "
     "CUPTI_ACTIVITY_KIND_KERNEL a, CUPTI_ACTIVITY_KIND_KERNEL b, CUPTI_ACTIVITY_KIND_KERNEL c", "as a view"),
])
def test_target_info_gpu_is_read_only_as_a_table(capsys, tmp_path, view, expected):
    db = _damaged_export(tmp_path, "DROP TABLE TARGET_INFO_GPU", view)
    out, prof = tmp_path / "o.csv", tmp_path / "p.csv"
    refused(capsys, ["ingest-trace", db, "--out", out, "--profiles-out", prof], "TARGET_INFO_GPU", expected)
    assert not out.exists() and not prof.exists()


@pytest.mark.parametrize("name, expected", [
    (b"\x00\xffA", "type blob, not text"),
    ("N" * 100_000, "100000 characters, longer than CAPTURE_GPU_NAME_MAX"),
    ("NVIDIA \x1b[31mA100", "not printable"),
    ("=HYPERLINK(\"http://x\")", "spreadsheet formula"),
    ("   ", "empty GPU name"),
])
def test_gpu_names_from_an_export_are_bounded_and_clean(capsys, tmp_path, name, expected):
    db = _damaged_export(tmp_path, "UPDATE TARGET_INFO_GPU SET name = ?", params=(name,))
    out, prof = tmp_path / "o.csv", tmp_path / "p.csv"
    refused(capsys, ["ingest-trace", db, "--out", out, "--profiles-out", prof], "TARGET_INFO_GPU", expected)
    assert not out.exists() and not prof.exists()


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=300))
def test_a_gpu_name_is_kept_clean_or_refused_in_one_line(name):
    from interfpred.data.ingest.capture_checks import gpu_type_name

    try:
        kept = gpu_type_name(name, "t.sqlite", "table TARGET_INFO_GPU device 0")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert kept == name.strip() and kept.isprintable() and 0 < len(kept) <= 256
    assert kept[0] not in "=+-@"


def test_kineto_device_names_are_checked_the_same_way(tmp_path):
    from interfpred.data.ingest.solo import capture_gpu_types

    with gzip.open(f"{CAPTURES}/kineto_nccl_data.json.gz", "rt") as fh:
        doc = json.load(fh)
    doc["deviceProperties"][0]["name"] = "A100\x1b]0;pwned\x07"
    bad = tmp_path / "k.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="deviceProperties of device 0 has a GPU name holding the character"):
        capture_gpu_types(bad)


def test_a_metric_id_named_twice_is_refused_not_summed(capsys, tmp_path):
    from test_solo_profiles import _NAMES, _TYPE, with_gpu_metrics

    db = with_gpu_metrics(SIM, tmp_path / "m.sqlite", [(1_000_000 * k, k % 4, 30) for k in range(8)])
    con = sqlite3.connect(db)
    con.execute("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, 'GV100 (test)', 1, ?)", (_TYPE, _NAMES[2]))
    con.commit()
    con.close()
    refused(capsys, ["ingest-trace", db, "--out", tmp_path / "o.csv", "--profiles-out", tmp_path / "p.csv"],
            "names metric id 1 twice", "SMs Active", "DRAM Read Bandwidth")


# ------------------------------------------------------------------------------------------------ model files
@pytest.fixture(scope="module")
def model_state():
    from interfpred.model.interference import InterferenceModel
    from interfpred.sim.workload import mix_scenario

    sc = mix_scenario(["resnet50", "vgg19"], rho=0.8, executions=200, seed=0, truth="fluid")
    model = InterferenceModel({"aggregation": "time_weighted", "feature_map": "rich", "target": "rate"}, "rls")
    trace = sc.traces["trace"]
    model.fit(trace, sc.profiles)
    return model.to_state(), (trace, sc.profiles)


@pytest.mark.parametrize("value, expected", [(1e300, "is 1e+300, not a finite number"), (float("nan"), "is nan"),
                                             (float("inf"), "is inf"), (-1e31, "-1e+31")])
def test_a_corrupted_model_file_is_refused_on_load(capsys, tmp_path, model_state, value, expected):
    state, (trace_data, profiles) = model_state
    bad = json.loads(json.dumps(state))
    buf = bad["predictor"]["state"]["buffer"]
    for i in range(8, 25):
        buf[i] = value
    f = tmp_path / "m.json"
    f.write_text(json.dumps(bad))  # NaN and Infinity as Python writes them
    prof, trace = tmp_path / "p.csv", tmp_path / "t.csv"
    profiles.to_csv(prof)
    trace_data.to_csv(trace)
    line = refused(capsys, ["evaluate", "--model-file", f, "--profiles", prof, "--trace", trace],
                   "m.json: predictor: state.buffer[8]", "MODEL_STATE_ABS_MAX")
    assert expected in line


def test_a_sound_model_file_still_loads(tmp_path, model_state):
    from interfpred.model.interference import load_model

    state, _ = model_state
    f = tmp_path / "m.json"
    f.write_text(json.dumps(state))
    assert load_model(f).predictor.n_features_in_ == 16
