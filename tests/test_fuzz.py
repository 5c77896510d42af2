"""Short fuzz run: mutated input files, a killed folder write, threads hammering one tracker.

The same campaigns run for longer with ``python tools/fuzz.py`` (see its docstring).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
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
