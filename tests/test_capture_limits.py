"""Capture readers against hostile files: typed columns, refused views, bounded JSON, conflicts, the CLI's one line."""

from __future__ import annotations

import gzip
import json
import pathlib
import shutil
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred._core.atomic import atomic_write_text
from interfpred._core.limits import parse_capture_json, read_capture_bytes
from interfpred.cli import main
from interfpred.data.ingest.capture import read_capture_trace
from interfpred.data.ingest.gpu_ranges import CaptureFormatError
from interfpred.data.ingest.model_analyzer import read_model_analyzer
from interfpred.errors import InputError, InterfpredError

DATA = pathlib.Path(__file__).parent / "data" / "capture"
SAXPY = DATA / "nsys_saxpy_mpi_a100.sqlite"
SAMPLED = DATA / "kineto_sampled_rank0.json.gz"
MA_CONC = DATA / "model_analyzer_concurrent_resnet50_vgg19.ckpt"
MA_SOLO = DATA / "model_analyzer_solo_resnet50_trimmed.ckpt"
RANGES = {"name_pattern": "{model}", "batch_size": 1}


def mutated(tmp_path, *sql):
    path = tmp_path / "m.sqlite"
    shutil.copyfile(SAXPY, path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'")
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    for stmt in sql:
        con.execute(stmt)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize(("value", "words"), [("NULL", "has deviceId NULL"), ("'abc'", "has deviceId str 'abc'"),
                                              ("1.5", "has deviceId 1.5"), ("99999", "has deviceId 99999")])
def test_nsys_device_must_be_an_ordinal(tmp_path, value, words):
    path = mutated(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = {value} WHERE rowid = 1")
    with pytest.raises(CaptureFormatError, match=f"table CUPTI_ACTIVITY_KIND_KERNEL row 1 {words}"):
        read_capture_trace(path, **RANGES)


def test_nsys_time_beyond_the_horizon_is_refused(tmp_path):
    path = mutated(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9223372036854775807 WHERE rowid = 1")
    with pytest.raises(CaptureFormatError, match=r"table CUPTI_ACTIVITY_KIND_KERNEL row 1 has start 9223372036854775807, not an integer time \(ns\) within"):
        read_capture_trace(path, kernels=True)


def test_nsys_view_is_refused_without_running_it(tmp_path):
    bomb = ("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000000000) "
            "SELECT x AS start, x + 1 AS end, 59 AS eventType, 'a' AS text, 0 AS globalTid FROM n")
    path = mutated(tmp_path, "ALTER TABLE NVTX_EVENTS RENAME TO real_nvtx", f"CREATE VIEW NVTX_EVENTS AS {bomb}")
    with pytest.raises(CaptureFormatError, match="has NVTX_EVENTS as a view, not a table"):
        read_capture_trace(path, **RANGES)


def test_nsys_trigger_does_not_change_the_result(tmp_path):
    path = mutated(tmp_path, "CREATE TRIGGER t AFTER INSERT ON NVTX_EVENTS BEGIN DELETE FROM NVTX_EVENTS; END")
    assert read_capture_trace(path, **RANGES) == read_capture_trace(SAXPY, **RANGES)


def test_nsys_kernel_long_before_its_launch_is_refused(tmp_path):
    path = mutated(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start - 5000000000")
    with pytest.raises(CaptureFormatError, match="before the CUDA call that launched it"):
        read_capture_trace(path, **RANGES)


def test_nsys_long_name_is_refused_before_fetching(tmp_path, monkeypatch):
    path = mutated(tmp_path, "INSERT INTO StringIds VALUES (999999, printf('%.*c', 100000, 'k'))",
                   "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999999")
    with pytest.raises(InterfpredError, match="NAME_MAX_CHARS=65536"):
        read_capture_trace(path, kernels=True)
    monkeypatch.setenv("INTERFPRED_NAME_MAX_CHARS", "200000")
    assert read_capture_trace(path, kernels=True).model[0] == "k" * 100000


def kineto(tmp_path, edit, raw=None):
    doc = json.loads(gzip.decompress(SAMPLED.read_bytes()))
    ev = next(e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("cat") == "kernel")
    edit(ev)
    text = json.dumps(doc)
    if raw is not None:
        text = text.replace('"__VALUE__"', raw)
    path = tmp_path / "k.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "1180591620717411303424", "true", "1.5", '"3"'])
def test_kineto_device_must_be_an_ordinal(tmp_path, raw):
    path = kineto(tmp_path, lambda ev: ev["args"].__setitem__("device", "__VALUE__"), raw)
    with pytest.raises(CaptureFormatError, match="has device .*, not an integer in \\[0, 4095\\]"):
        read_capture_trace(path, kernels=True)


def test_kineto_lone_surrogate_name_is_refused(tmp_path):
    path = kineto(tmp_path, lambda ev: ev.__setitem__("name", "__VALUE__"), '"a\\ud800"')
    with pytest.raises(CaptureFormatError, match="lone surrogate"):
        read_capture_trace(path, kernels=True)


def test_gzip_bomb_stops_at_the_inflated_limit(tmp_path, monkeypatch):
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"[" + b" " * 5_000_000 + b"]"))
    monkeypatch.setenv("INTERFPRED_INFLATED_MAX_BYTES", "1000000")
    with pytest.raises(CaptureFormatError, match="INFLATED_MAX_BYTES=1000000"):
        read_capture_trace(path, kernels=True)


def test_json_over_the_input_cap_is_refused_from_its_size(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text("[" + " " * 5000 + "]")
    monkeypatch.setenv("INTERFPRED_INPUT_MAX_BYTES", "1000")
    with pytest.raises(InputError, match="INPUT_MAX_BYTES=1000"):
        read_capture_bytes(path, "a trace")


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}",:0123456789.-eEtrunlfaNIiy \\', max_size=200).map(str.encode))
def test_parse_capture_json_parses_or_refuses(raw):
    try:
        parse_capture_json(raw, "t.json", "a trace")
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("t.json")


def ckpt_with(tmp_path, name, scale):
    doc = json.loads(MA_SOLO.read_text())
    for variants in doc["ResultManager.results"]["_results"].values():
        for _run_config, measurements in variants.values():
            for meas in measurements.values():
                for mem in meas["_model_config_measurements"]:
                    for item in mem["_non_gpu_data"]:
                        if item[0] == "perf_latency_avg":
                            item[1]["_value"] *= scale
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_conflicting_solo_measurements_are_refused_with_both_values(tmp_path):
    with pytest.raises(InputError, match=r"disagree: .* ms \(in .*solo_resnet50_trimmed.ckpt\) and .* ms"):
        read_model_analyzer([MA_CONC, MA_SOLO, ckpt_with(tmp_path, "x100.ckpt", 100.0)])


def test_a_file_twice_or_an_identical_copy_reads_as_once(tmp_path):
    once = read_model_analyzer([MA_CONC, MA_SOLO])
    assert read_model_analyzer([MA_CONC, MA_SOLO, MA_SOLO, MA_CONC]) == once
    assert read_model_analyzer([MA_CONC, MA_SOLO, ckpt_with(tmp_path, "copy.ckpt", 1.0)]) == once


@pytest.mark.parametrize("raw", ["Infinity", "1.5", "true", "0"])
def test_checkpoint_batch_size_must_be_a_positive_integer(tmp_path, raw):
    doc = json.loads(MA_SOLO.read_text())
    first = next(iter(doc["ResultManager.results"]["_results"].values()))
    _run_config, measurements = next(iter(first.values()))
    next(iter(measurements.values()))["_model_config_measurements"][0]["_model_specific_pa_params"][
        "batch-size"] = "__VALUE__"
    path = tmp_path / "b.ckpt"
    path.write_text(json.dumps(doc).replace('"__VALUE__"', raw))
    with pytest.raises(CaptureFormatError, match="has batch-size .*, not an integer in \\[1, "):
        read_model_analyzer([MA_CONC, path])


def test_cli_refuses_existing_out_before_reading(tmp_path, capsys):
    out = tmp_path / "t.csv"
    out.write_text("keep")
    assert main(["ingest-trace", str(tmp_path / "missing.sqlite"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists: pass --force" in err and out.read_text() == "keep"


@pytest.mark.parametrize("gpu", ["L4\nx", "", "\t"])
def test_cli_refuses_a_bad_gpu_name(tmp_path, capsys, gpu):
    code = main(["ingest-measurements", str(MA_CONC), str(MA_SOLO), "--gpu", gpu, "--out", str(tmp_path / "m.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--gpu" in err


def test_cli_holds_warnings_back_on_error(tmp_path, capsys, monkeypatch):
    import warnings

    import interfpred.cli.capture as capture_cli

    def warn_then_fail(args):
        warnings.warn("overflow encountered", RuntimeWarning, stacklevel=1)
        raise InterfpredError("bad input")

    monkeypatch.setattr(capture_cli, "run_ingest_trace", warn_then_fail)  # bound when main builds the parser
    assert main(["ingest-trace", "x", "--out", str(tmp_path / "o.csv")]) == 2
    assert capsys.readouterr().err == "interfpred: error: bad input\n"


@pytest.mark.parametrize("n", [240, 255])
def test_long_output_names_are_written(tmp_path, n):
    path = tmp_path / ("o" * (n - 4) + ".csv")
    atomic_write_text(path, "x")
    assert path.read_text() == "x"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_nsys_text_that_is_not_utf8_is_refused(tmp_path):
    path = mutated(tmp_path, "UPDATE NVTX_EVENTS SET text = CAST(X'f58b' AS TEXT) WHERE text LIKE 'saxpy%'")
    with pytest.raises(CaptureFormatError, match="UTF-8"):
        read_capture_trace(path, **RANGES)
