"""Capture readers: Nsight Systems exports, PyTorch profiler traces, Model Analyzer results, the CLI."""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import shlex
import shutil
import sqlite3
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred.cli import main
from interfpred.constants import MAX_BATCH_SIZE
from interfpred.data.ingest.batch_names import NamePattern, parse_batch_name
from interfpred.data.ingest.capture import read_capture_trace
from interfpred.data.ingest.gpu_ranges import CaptureFormatError, CaptureReport
from interfpred.data.ingest.model_analyzer import read_model_analyzer
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

ROOT = pathlib.Path(__file__).parent.parent
DATA = pathlib.Path(__file__).parent / "data" / "capture"
SAXPY = DATA / "nsys_saxpy_mpi_a100.sqlite"
NVFUSER = DATA / "nsys_nvfuser_h200.sqlite"
REPORT = DATA / "nsys_nvfuser_h200.nsys-rep"
SAMPLED = DATA / "kineto_sampled_rank0.json.gz"
NCCL = DATA / "kineto_nccl_data.json.gz"
MA_CONC = DATA / "model_analyzer_concurrent_resnet50_vgg19.ckpt"
MA_SOLO = DATA / "model_analyzer_solo_resnet50_trimmed.ckpt"
MA_CSV = DATA / "model_analyzer_concurrent_metrics-model-inference.csv"
MA_GPU_CSV = DATA / "model_analyzer_concurrent_metrics-model-gpu.csv"
PROFILES = DATA / "saxpy_a100_profiles.csv"
SHIFT_NS = 5_000_000  # the merged export's second process runs 5 ms after the first
ANY_NAME = "{model}"  # a pattern taking every range's whole name as its model


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, path):
    assert code == 2
    assert err.startswith("interfpred: error: ") and err.count("\n") == 1, err
    assert str(path) in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- independent queries
def sql(path, query):
    con = sqlite3.connect(path)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def sql_kernels(path):
    return sql(path, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start, end")


def sql_projected_ranges(path):
    """(start_ns, end_ns) of every NVTX range that launched GPU work, straight from the tables."""
    ops = " UNION ALL ".join(
        f"SELECT start, end, correlationId, (globalPid >> 24) & 16777215 AS pid FROM {t}"
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        if sql(path, f"SELECT count(*) FROM sqlite_master WHERE name = '{t}'")[0][0])
    return sql(path, f"""
        SELECT MIN(o.start), MAX(o.end) FROM NVTX_EVENTS n
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start >= n.start AND r.end <= n.end
        JOIN ({ops}) o ON o.correlationId = r.correlationId AND o.pid = (r.globalTid >> 24) & 16777215
        WHERE n.end IS NOT NULL AND n.eventType IN (59, 60)
        GROUP BY n.rowid ORDER BY 1, 2""")


def kineto_events(path):
    with gzip.open(path) as fh:
        return json.load(fh)["traceEvents"]


def overlapping_pairs(starts, ends):
    n = len(starts)
    return {(i, j) for i in range(n) for j in range(i + 1, n) if starts[i] < ends[j] and starts[j] < ends[i]}


# ---------------------------------------------------------------- Nsight Systems
@pytest.mark.parametrize("path", [SAXPY, NVFUSER])
def test_nsys_kernels_match_an_independent_query(path):
    report = CaptureReport(source="nsys")
    t = read_capture_trace(path, kernels=True, report=report)
    expect = np.array(sql_kernels(path), dtype=np.float64) / 1e6
    assert len(t) == len(expect) == sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    np.testing.assert_array_equal(np.c_[t.start_ms, t.end_ms], expect)
    names = {r[0] for r in sql(path, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                                     "ON s.id = k.shortName")}
    assert set(t.model) == names and set(t.batch_size) == {1}
    assert t.devices == ("gpu0",)
    assert report.n_executions == len(t)


@pytest.mark.parametrize("path, n_ranges", [(SAXPY, 22), (NVFUSER, 652)])
def test_nsys_ranges_match_an_independent_query(path, n_ranges):
    report = CaptureReport(source="nsys")
    t = read_capture_trace(path, name_pattern=ANY_NAME, batch_size=1, report=report)
    expect = np.array(sql_projected_ranges(path), dtype=np.float64) / 1e6
    assert len(t) == len(expect) > 0
    np.testing.assert_array_equal(np.c_[t.start_ms, t.end_ms], expect)
    assert report.n_ranges == n_ranges == sql(path, "SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND "
                                                    "eventType IN (59, 60)")[0][0]
    assert report.n_empty == n_ranges - len(t)


def test_nsys_twin_launch_rows_share_a_correlation_id():
    twins = sql(SAXPY, "SELECT correlationId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN "
                       "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL) GROUP BY 1")
    assert twins and all(n == 2 for _, n in twins)
    t = read_capture_trace(SAXPY, name_pattern="{model}", batch_size=1)
    np.testing.assert_array_equal(np.c_[t.start_ms, t.end_ms], np.array(sql_kernels(SAXPY)) / 1e6)
    assert set(t.model) == {"saxpy"}


def test_nsys_names_by_text_id_and_text():
    # The 2022 export names MPI ranges through textId (StringIds), saxpy ranges through text.
    got = sql(SAXPY, "SELECT count(*), count(text), count(textId) FROM NVTX_EVENTS WHERE eventType = 59")[0]
    assert got[1] > 0 and got[2] > 0
    report = CaptureReport(source="nsys")
    read_capture_trace(SAXPY, name_pattern="{model}", batch_size=1, report=report)
    assert report.n_unparsed == 0  # every range got a name, by text or textId


# ---------------------------------------------------------------- merged two-process export
def merge_with_shifted_copy(src, dst, shift_ns=SHIFT_NS):
    """The export plus a copy of its CUDA and NVTX rows as another process (pid + 1), shifted in time,
    on the same device: two processes sharing one GPU."""
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    con = sqlite3.connect(dst)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                  "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"):
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        expr = [f'"{c}" + {shift_ns}' if c in ("start", "end")
                else f'"{c}" + {1 << 24}' if c in ("globalPid", "globalTid", "endGlobalTid") else f'"{c}"'
                for c in cols]
        con.execute(f'INSERT INTO "{table}" ({", ".join(f"{c!r}" for c in cols)}) '
                    f'SELECT {", ".join(expr)} FROM "{table}"')
    con.commit()
    con.close()
    return dst


@pytest.fixture
def merged(tmp_path):
    return merge_with_shifted_copy(SAXPY, tmp_path / "merged.sqlite")


def test_merged_export_yields_its_overlaps(merged):
    t = read_capture_trace(merged, name_pattern=ANY_NAME, batch_size=1)
    assert len(t) == 10 and t.devices == ("gpu0",)
    # Independently: kernels of the two processes, and which of them overlap.
    rows = sql(merged, "SELECT start, end, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL "
                       "ORDER BY start")
    assert len({r[2] for r in rows}) == 2
    ks, ke = np.array([r[0] for r in rows]) / 1e6, np.array([r[1] for r in rows]) / 1e6
    expect = overlapping_pairs(ks, ke)
    assert len(expect) == 5  # each batch overlaps its copy, 5 ms later, and nothing else
    assert overlapping_pairs(t.start_ms, t.end_ms) == expect
    np.testing.assert_array_equal(t.start_ms, ks)


def test_merged_export_fits_and_evaluates(merged, tmp_path, capsys):
    trace_csv, model = tmp_path / "trace.csv", tmp_path / "model.json"
    code, _, err = run(capsys, "ingest-trace", merged, "--name-pattern", ANY_NAME, "--batch-size", "1",
                       "--out", trace_csv)
    assert code == 0, err
    assert "10 executions from 44 ranges" in err
    assert len(Trace.from_csv(trace_csv)) == 10
    code, out, err = run(capsys, "fit", "--trace", trace_csv, "--profiles", PROFILES, "--out", model)
    assert code == 0, err
    assert "fit on 10 executions" in out and model.exists()
    code, out, err = run(capsys, "evaluate", "--model-file", model, "--trace", trace_csv, "--profiles", PROFILES)
    assert code == 0, err
    assert "on 10 executions" in out and "baseline: no interference" in out


def test_processes_keep_their_own_correlation_ids(merged):
    # Both processes reuse the same correlation ids; joining on the id alone would give each range
    # the other process's kernel too (spanning both), the process keeps them apart.
    t = read_capture_trace(merged, name_pattern=ANY_NAME, batch_size=1)
    np.testing.assert_allclose(t.latency_ms, np.repeat(np.diff(np.array(sql_kernels(SAXPY)), axis=1)[:, 0] / 1e6, 2))


# ---------------------------------------------------------------- PyTorch profiler (Kineto)
@pytest.mark.parametrize("path, n", [(SAMPLED, 1154), (NCCL, 2700)])
def test_kineto_kernels_match_the_json(path, n):
    events = kineto_events(path)
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")
    t = read_capture_trace(path, kernels=True)
    assert len(t) == len(kernels) == n
    k = np.array(kernels)
    np.testing.assert_allclose(np.c_[t.start_ms, t.end_ms] - t.start_ms[0], (k - k[0, 0]) / 1000.0, rtol=0, atol=1e-9)
    assert len(set(t.devices)) == len({e["args"]["device"] for e in events if e.get("cat") == "kernel"})


def test_kineto_gpu_user_annotations_are_batches():
    events = kineto_events(NCCL)
    ann = [e for e in events if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation"]
    groups = {}
    for e in ann:
        s, f = groups.get(e["args"]["External id"], (np.inf, -np.inf))
        groups[e["args"]["External id"]] = (min(s, e["ts"]), max(f, e["ts"] + e["dur"]))
    report = CaptureReport(source="kineto")
    t = read_capture_trace(NCCL, name_pattern=ANY_NAME, batch_size=1, report=report)
    assert len(t) == len(groups) == report.n_ranges
    expect = np.array(sorted(groups.values()))
    np.testing.assert_allclose(np.c_[t.start_ms, t.end_ms] - t.start_ms[0], (expect - expect[0, 0]) / 1000.0,
                               rtol=0, atol=1e-9)


def test_kineto_user_annotations_are_projected_by_their_launches():
    events = [e for e in kineto_events(SAMPLED) if e.get("ph") == "X"]
    gpu = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
    expect = []
    for r in (e for e in events if e.get("cat") == "user_annotation"):
        inside = [gpu[x["args"]["correlation"]] for x in launches
                  if (x["pid"], x["tid"]) == (r["pid"], r["tid"]) and x["ts"] >= r["ts"]
                  and x["ts"] + x["dur"] <= r["ts"] + r["dur"] and x["args"]["correlation"] in gpu]
        if inside:
            expect.append((min(g["ts"] for g in inside), max(g["ts"] + g["dur"] for g in inside)))
    expect = np.array(sorted(expect))
    t = read_capture_trace(SAMPLED, name_pattern=ANY_NAME, batch_size=1)
    assert len(t) == len(expect) > 0
    np.testing.assert_allclose(np.c_[t.start_ms, t.end_ms] - t.start_ms[0], (expect - expect[0, 0]) / 1000.0,
                               rtol=0, atol=1e-9)


def test_kineto_plain_json_reads_like_gzip(tmp_path):
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(SAMPLED.read_bytes()))
    assert read_capture_trace(plain, kernels=True) == read_capture_trace(SAMPLED, kernels=True)


# ---------------------------------------------------------------- malformed and unsupported inputs
def make_sqlite(path, script):
    con = sqlite3.connect(path)
    con.executescript(script)
    con.commit()
    con.close()
    return path


KERNEL_TABLE = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, correlationId INT, globalPid INT,
    shortName INT);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000000, 3000000, 0, 5, 16777216, 1);
"""
RUNTIME_TABLE = """
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, correlationId INT);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000000, 1100000, 16777217, 5);
"""


def bad_inputs(tmp):
    """(path, extra CLI arguments, words the message must hold) for each malformed input."""
    tmp = pathlib.Path(tmp)
    truncated_gz = tmp / "truncated.json.gz"
    truncated_gz.write_bytes(SAMPLED.read_bytes()[:50_000])
    truncated_json = tmp / "truncated.json"
    truncated_json.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1')
    not_trace = tmp / "list.json"
    not_trace.write_text('{"hello": 1}')
    garbage = tmp / "garbage.sqlite"
    garbage.write_bytes(b"\x00\x01 not a database" * 10)
    truncated_db = tmp / "truncated.sqlite"
    truncated_db.write_bytes(SAXPY.read_bytes()[:200_000])
    no_ranges = tmp / "ranges_without_kernels.sqlite"
    make_sqlite(no_ranges, KERNEL_TABLE + RUNTIME_TABLE + """
        CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, globalTid INT);
        INSERT INTO NVTX_EVENTS VALUES (5000000, 6000000, 59, 'resnet50:8', 16777217);""")
    return [
        (REPORT, [], "nsys export --type sqlite"),
        (garbage, [], "not an SQLite database"),
        (truncated_db, [], "SQLite"),
        (make_sqlite(tmp / "other.sqlite", "CREATE TABLE t (a INT);"), [], "not an Nsight Systems export"),
        (make_sqlite(tmp / "no_kernels.sqlite", "CREATE TABLE StringIds (id INT, value TEXT);"), [],
         "no GPU operation"),
        (make_sqlite(tmp / "no_nvtx.sqlite", KERNEL_TABLE + RUNTIME_TABLE), [], "no NVTX_EVENTS table"),
        (make_sqlite(tmp / "no_runtime.sqlite", KERNEL_TABLE + "CREATE TABLE NVTX_EVENTS (start INT, end INT, "
                     "eventType INT, text TEXT, globalTid INT);"), [], "CUPTI_ACTIVITY_KIND_RUNTIME"),
        (make_sqlite(tmp / "bad_columns.sqlite", "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INT);"), [],
         "no column"),
        (no_ranges, [], "launched a GPU operation"),
        (SAXPY, [], "none of its 22 ranges names a batch"),  # unknown model name format
        (SAXPY, ["--name-pattern", ANY_NAME, "--batch-size", "1", "--strict"], "launched no GPU operation"),
        (NVFUSER, ["--strict"], "does not parse as a batch"),
        (truncated_gz, [], "truncated"),
        (truncated_json, [], "not valid JSON"),
        (not_trace, [], "not a PyTorch profiler trace"),
        (PROFILES, [], "neither an Nsight Systems SQLite export nor a PyTorch profiler"),
    ]


def test_every_malformed_trace_input_is_one_line_naming_the_file(tmp_path, capsys):
    for path, extra, words in bad_inputs(tmp_path):
        out = tmp_path / "out.csv"
        code, _, err = run(capsys, "ingest-trace", path, *extra, "--out", out)
        assert_one_line_error(code, err, path)
        assert words in err, (path, err)
        assert not out.exists()
        with pytest.raises(CaptureFormatError):
            read_capture_trace(path, **({"strict": True} if "--strict" in extra else {}),
                               **({"name_pattern": ANY_NAME, "batch_size": 1} if "--name-pattern" in extra else {}))


def test_refuses_to_replace_out_without_force(tmp_path, capsys):
    out = tmp_path / "trace.csv"
    out.write_text("keep me")
    code, _, err = run(capsys, "ingest-trace", SAXPY, "--kernels", "--out", out)
    assert_one_line_error(code, err, out)
    assert "--force" in err and out.read_text() == "keep me"
    code, _, err = run(capsys, "ingest-trace", SAXPY, "--kernels", "--out", out, "--force")
    assert code == 0 and len(Trace.from_csv(out)) == 5


def test_option_conflicts_are_errors():
    with pytest.raises(InterfpredError, match="--batch-size applies"):
        read_capture_trace(SAXPY, batch_size=4)
    with pytest.raises(InterfpredError, match="give one"):
        read_capture_trace(SAXPY, kernels=True, name_pattern=ANY_NAME)
    with pytest.raises(InterfpredError, match="without \\{batch\\}"):
        read_capture_trace(SAXPY, name_pattern=ANY_NAME)


# ---------------------------------------------------------------- Model Analyzer
def ckpt_latency(path, tag, models_key=None):
    """{(run variants, concurrencies, model): latency} straight from a checkpoint's JSON."""
    doc = json.loads(pathlib.Path(path).read_text())
    out = {}
    for key, variants in doc["ResultManager.results"]["_results"].items():
        if models_key is not None and key != models_key:
            continue
        for vk, (cfg, meas) in variants.items():
            for m in meas.values():
                members = m["_model_config_measurements"]
                concs = ",".join(str(x["_model_specific_pa_params"]["concurrency-range"]) for x in members)
                for c, x in zip(cfg["_model_run_configs"], members):
                    out[(f"{vk} c={concs}", c["_model_name"])] = dict(x["_non_gpu_data"])[tag]["_value"]
    return out


def test_model_analyzer_checkpoints_become_runs():
    m = read_model_analyzer([MA_CONC, MA_SOLO])
    conc = ckpt_latency(MA_CONC, "perf_latency_avg", "resnet50_libtorch,vgg19_libtorch")
    assert len(m) == len(conc) == 24 and m.n_runs == 12
    got = {(r, mo): o for r, mo, o in zip(m.run, m.model, m.observed_ms)}
    assert got == conc
    assert set(m.gpu) == {"NVIDIA TITAN RTX"}
    # The default configurations' solo latencies are the solo checkpoint's, at the same concurrency.
    solo = ckpt_latency(MA_SOLO, "perf_latency_avg")
    for run, model, s in zip(m.run, m.model, m.solo_ms):
        if run.startswith("resnet50_libtorch_config_default"):
            c = run.split("c=")[1].split(",")[0]
            assert s == solo[(f"{model}_config_default c={c}", model)]


def test_model_analyzer_csv_with_p99(tmp_path, capsys):
    m = read_model_analyzer([MA_CSV, MA_SOLO], latency="p99", gpu="NVIDIA TITAN RTX")
    assert len(m) == 24
    first = next(i for i, r in enumerate(m.run) if r == "resnet50_libtorch_config_5,vgg19_libtorch_config_4 c=4,4")
    assert m.observed_ms[first] == 23.9 and m.observed_ms[first + 1] == 17.4  # "20.7, [23.9,17.4]"
    solo = ckpt_latency(MA_SOLO, "perf_latency_p99")
    assert m.solo_ms[first] == solo[("resnet50_libtorch_config_9 c=4", "resnet50_libtorch")]


def test_model_analyzer_errors_name_the_file(tmp_path, capsys):
    truncated = tmp_path / "0.ckpt"
    truncated.write_text(MA_CONC.read_text()[:5000])
    cases = [
        ([MA_CONC], [], MA_CONC, "no solo measurement of resnet50_libtorch"),
        ([MA_CSV, MA_SOLO], [], MA_CSV, "--latency p99"),
        ([MA_CSV, MA_SOLO], ["--latency", "p99"], MA_CSV, "--gpu"),
        ([MA_GPU_CSV], [], MA_GPU_CSV, "not a Model Analyzer inference metrics CSV"),
        ([truncated], [], truncated, "not valid JSON"),
        ([MA_SOLO], [], MA_SOLO, "no concurrent measurement"),
        ([SAXPY], [], SAXPY, "binary file"),
    ]
    for files, extra, named, words in cases:
        out = tmp_path / "m.csv"
        code, _, err = run(capsys, "ingest-measurements", *files, *extra, "--out", out)
        assert_one_line_error(code, err, named)
        assert words in err, err
        assert not out.exists()


def test_ingest_measurements_then_fit(tmp_path, capsys):
    out, model = tmp_path / "m.csv", tmp_path / "model.json"
    code, _, err = run(capsys, "ingest-measurements", MA_CONC, MA_SOLO, "--out", out)
    assert code == 0, err and "12 runs" in err
    code, out_text, err = run(capsys, "fit", "--measurements", out, "--out", model)
    assert code == 0, err
    assert "fit on 24 measurement rows" in out_text


# ---------------------------------------------------------------- docs/capture.md runs as written
def test_capture_doc_pipeline_runs(tmp_path, capsys, monkeypatch):
    text = (ROOT / "docs" / "capture.md").read_text()
    block = text.split("## Try it on the shipped files", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line[2:]) for line in block.splitlines() if line.startswith("$ interfpred ")]
    assert len(commands) == 6
    (tmp_path / "tests" / "data").mkdir(parents=True)
    os.symlink(DATA, tmp_path / "tests" / "data" / "capture")
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        code, _, err = run(capsys, *argv[1:])
        assert code == 0, (argv, err)
        if argv[1] == "ingest-trace":
            assert "5 executions from 22 ranges" in err
        if argv[1] == "ingest-measurements":
            assert "wrote 12 runs" in err
    assert (tmp_path / "model.json").exists() and (tmp_path / "model_ma.json").exists()


# ---------------------------------------------------------------- the name parser (property tests)
MODEL_CHARS = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc"),
                                    blacklist_characters=":=,;"), min_size=1, max_size=20)
BATCHES = st.integers(min_value=1, max_value=4096)


@given(MODEL_CHARS, BATCHES, st.sampled_from(["{m}:{b}", "{m} : {b}", "{m} bs={b}", "{m}, batch_size={b}",
                                               "{m};batch:{b}", " {m} BS{b} ", "{m} batch-size = {b}"]))
def test_convention_round_trips(model, batch, form):
    name = form.format(m=model, b=batch)
    if any(c.isspace() for c in model):
        return
    assert parse_batch_name(name) == (model, batch)


@given(st.text(max_size=40))
def test_convention_never_raises_and_finds_digits(name):
    got = parse_batch_name(name)
    if got is not None:
        assert got[1] >= 1 and str(got[1]) in name and got[0] in name


def pattern_regex(pattern):
    """The reference: the template as a Python regular expression (greedy, backtracking)."""
    alts = []
    for alt in pattern.split("|"):
        parts = re.split(r"(\{model\}|\{batch\}|\*)", alt)
        rx = "".join({"{model}": "(?P<model>.+)", "{batch}": "(?P<batch>[0-9]+)", "*": ".*"}.get(p, re.escape(p))
                     for p in parts)
        alts.append(re.compile(rx, re.DOTALL))
    return alts


TEMPLATES = st.lists(st.sampled_from(["{model}", "{batch}", "*", "/", "bs", "-", "a", ":"]), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(TEMPLATES, st.text(alphabet="ab/-:s0123456789", max_size=16))
def test_pattern_matches_like_a_regular_expression(parts, name):
    holes = sum(p in ("*", "{model}", "{batch}") for p in parts)
    if parts.count("{model}") != 1 or parts.count("{batch}") > 1 or holes > 4:
        return
    template = "".join(parts)
    ref = None
    for rx in pattern_regex(template):
        m = rx.fullmatch(name)
        if m is None:
            continue
        digits = m.groupdict().get("batch")
        batch = 3 if digits is None else int(digits)
        if 0 < batch <= MAX_BATCH_SIZE:
            ref = (m.group("model"), batch)
            break
    assert NamePattern(template, batch_size=3).match(name) == ref


@given(MODEL_CHARS, BATCHES)
def test_pattern_round_trips(model, batch):
    if "/" in model or "\\" in model or "*" in model or "|" in model or "{" in model or "}" in model:
        return
    assert NamePattern("infer/{model}/bs{batch}").match(f"infer/{model}/bs{batch}") == (model, batch)


def test_pattern_cost_is_bounded():
    pattern = NamePattern("*a{model}*a{batch}")
    start = time.perf_counter()
    assert pattern.match("a" * 256 + "b") is None
    assert pattern.match("a" * 10_000) is None  # longer than the cap: not even looked at
    assert time.perf_counter() - start < 5.0
    with pytest.raises(InterfpredError, match="CAPTURE_PATTERN_MAX"):
        NamePattern("{model}" + "a" * 300)
    with pytest.raises(InterfpredError, match="CAPTURE_PATTERN_HOLES"):
        NamePattern("{model}*{batch}***")
