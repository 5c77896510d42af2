"""Short fuzz run: mutated input files, a killed folder write, threads hammering one tracker.

The same campaigns run for longer with ``python tools/fuzz.py`` (see its docstring).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import fuzz  # noqa: E402


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    paths = fuzz.seed_files(folder)
    return paths, {k: p.read_bytes() for k, p in paths.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["trace", "profiles", "manifest", "model", "predictor"]), seed=st.integers(0, 2**32 - 1))
def test_mutated_files_are_read_or_refused_cleanly(seeds, kind, seed):
    paths, originals = seeds
    data = fuzz.mutate(originals[kind], random.Random(seed))
    path = paths[kind]
    path.write_bytes(data)
    try:
        outcome, detail = fuzz._call_with_limit(lambda: fuzz.readers()[kind](path), 30.0)
    finally:
        path.write_bytes(originals[kind])
    assert outcome in ("ok", "refused"), f"{outcome}: {detail}\ninput: {data[:300]!r}"


def test_tracker_hammer_short():
    assert fuzz.hammer(3.0, threads=8, seed=1) == []


def test_kill_trials_short():
    assert fuzz.kill_trials(2, seed=3) == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=12)   # invalid UTF-8 in the header: the fast reader used to accept what Trace.from_csv refuses
def test_the_two_trace_csv_readers_agree(seeds, tmp_path, seed):
    """The CLI's reader (pyarrow's fast path, falling back) and Trace.from_csv refuse or read alike."""
    from interfpred import Trace
    from interfpred.data.columnar import read_trace

    paths, originals = seeds
    data = fuzz.mutate(originals["trace"], random.Random(seed))
    path = tmp_path / f"t{seed}.csv"
    path.write_bytes(data)
    a = fuzz._call_with_limit(lambda: read_trace(path), 30.0)
    b = fuzz._call_with_limit(lambda: Trace.from_csv(path), 30.0)
    assert a[0] == b[0], f"read_trace {a}, Trace.from_csv {b}\ninput: {data[:300]!r}"
    if a[0] == "ok":
        assert read_trace(path) == Trace.from_csv(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["measurements", "trace_cli", "calibrated"]), seed=st.integers(0, 2**32 - 1))
def test_mutated_measurements_and_models_are_read_or_refused_cleanly(seeds, kind, seed):
    paths, originals = seeds
    data = fuzz.mutate(originals[kind], random.Random(seed))
    path = paths[kind]
    path.write_bytes(data)
    try:
        outcome, detail = fuzz._call_with_limit(lambda: fuzz.readers()[kind](path), 30.0)
    finally:
        path.write_bytes(originals[kind])
    assert outcome in ("ok", "refused"), f"{outcome}: {detail}\ninput: {data[:300]!r}"


def test_crafted_parquet_columns_are_refused_cleanly():
    pytest.importorskip("pyarrow")
    assert fuzz.fuzz_parquet(40, seed=1) == []


def test_model_file_cross_checks_refuse_every_changed_field():
    assert fuzz.fuzz_models(40, seed=2) == []


def test_random_fleet_calls_are_answered_or_refused():
    assert fuzz.fuzz_fleet(300, seed=3) == []


def test_console_script_campaign_short():
    res = fuzz.cli_campaign(16, seed=4, subprocesses=2)
    bad = res["traceback"] + res["hang"] + res["silent"] + res["not_one_line"]
    assert not bad, "\n".join(bad)
    assert len(res["refused"]) >= 13  # the crafted cases built to be refused were


#: One case of each hostile capture class (the full campaign: python tools/fuzz.py --captures 560).
CAPTURE_CASES = ("sql-_kernel-deviceId-0", "view-nvtx-1e10", "trigger-insert", "json-kernel-args.device-3",
                 "ckpt-latency-1", "ckpt-solo-100x", "ckpt-same-file-twice", "arg-gpu-newline")


def test_hostile_captures_are_refused_in_one_line_or_read_right():
    res = fuzz.capture_campaign(0, only=CAPTURE_CASES, time_limit=60.0)
    counts = res["counts"]
    assert counts["cases"] == len(CAPTURE_CASES), res
    assert counts["refused"] == 6 and counts["ok"] == 2, res  # the view bomb refused, the trigger harmless
    assert res["failures"] == [], res["failures"]
