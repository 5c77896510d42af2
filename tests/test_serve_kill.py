"""``kill -9`` of a loaded ``interfpred serve``, several times: each restart answers as the library fed every
acknowledged event (benchmarks/kill_serve.py runs the same campaign for as many trials as asked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[1]


def _kill_serve():
    spec = importlib.util.spec_from_file_location("kill_serve", ROOT / "benchmarks" / "kill_serve.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kill_minus_nine_loses_no_acknowledged_event(tmp_path):
    ks = _kill_serve()
    model_file, fleet_file = ks.make_inputs(tmp_path)
    # Kills between 10 ms and 0.4 s into each load; a snapshot every 3 events so kills land in snapshots too.
    stats = ks.campaign(model_file, fleet_file, tmp_path / "state", trials=8, seed=1, snapshot_every=3,
                        kill_after_s=(0.01, 0.4))
    assert stats["trials"] == 8 and stats["acknowledged"] >= 16
