"""Reliability regressions: no hang, no lost state, non-physical input refused, clean errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from interfpred import RLS, ColocationTracker, OnlineSGD, ProfileTable
from interfpred.errors import InterfpredError


def _profiles():
    return ProfileTable.from_columns(gpu=["t"] * 2, model=["a", "b"], batch_size=[1, 1], solo_ms=[2.0, 4.0],
                                     sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])


def _within(seconds, fn):
    """Run ``fn`` in a thread; fail if it has not returned after ``seconds`` (a hang)."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), f"did not return within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


class _Opaque:
    """A predictor the tracker cannot read as affine: it takes the generic projection loop."""

    def __init__(self, value=np.nan, fail_update=False):
        self.value = value
        self.fail_update = fail_update
        self.updates = 0

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return self.value if X.ndim == 1 else np.full(X.shape[0], self.value)

    def update(self, X, y):
        if self.fail_update:
            raise InterfpredError("update failed on purpose")
        self.updates += 1


# ---------------------------------------------------------------------------- projection never hangs
@pytest.mark.parametrize("target", ["rate", "slowdown"])
def test_nan_prediction_raises_instead_of_hanging(target):
    from interfpred import TimeWeighted

    ex = TimeWeighted(feature_map="rich", target=target)
    tr = ColocationTracker(_profiles(), _Opaque(1.0), ex)
    tr.start("x", "a", 1, 0.0)
    tr.predictor.value = np.nan
    with pytest.raises(InterfpredError, match="predictions must be finite"):
        _within(20, lambda: tr.what_if([("y", "b", 1)], 1.0))
    with pytest.raises(InterfpredError, match="predictions must be finite"):
        _within(20, lambda: tr.predict_finish(1.0))
    # the lock was released: another thread can use the tracker
    tr.predictor.value = 1.0
    assert _within(20, lambda: tr.predict_finish(1.0)) == {"x": pytest.approx(2.0)}


def test_nan_state_in_fast_path_raises_instead_of_hanging():
    rls = RLS().fit(np.full((4, 16), 0.1), np.ones(4))
    tr = ColocationTracker(_profiles(), rls)
    tr.start("x", "a", 1, 0.0)
    rls._buf[8] = np.nan  # a corrupted weight
    with pytest.raises(InterfpredError, match="must be finite"):
        _within(20, lambda: tr.what_if([("y", "b", 1)], 1.0))


def test_affine_projection_is_bounded_for_nan_rates():
    from interfpred.serving.projection.affine import project_affine_unchecked

    dem = np.array([[0.5, 0.5, 0.25], [0.25, 0.5, 0.5]])
    w = np.full(16, np.nan)
    with pytest.raises(InterfpredError, match="not finite"):
        _within(60, lambda: project_affine_unchecked(dem, np.array([1.0, 2.0]), 0.0, 2, 0, w, 1.0, -np.inf, True,
                                                     0.01, 1.0, 1e-12))


# ---------------------------------------------------------------------------- finish is atomic
def test_finish_restores_the_execution_when_update_raises():
    tr = ColocationTracker(_profiles(), _Opaque(1.0, fail_update=True))
    tr.start("x", "a", 1, 0.0)
    tr.start("y", "b", 1, 1.0)
    before = (tr.running, tr.now, tr.remaining_ms(), tr.predict_finish(1.0))
    with pytest.raises(InterfpredError, match="on purpose"):
        tr.finish("x", 3.0)
    assert (tr.running, tr.now, tr.remaining_ms(), tr.predict_finish(1.0)) == before
    tr.predictor.fail_update = False
    done = tr.finish("x", 3.0)  # the same call succeeds once the predictor works
    assert done.learned and tr.running == ["y"] and tr.predictor.updates == 1


def test_finish_refuses_nan_prediction_and_keeps_the_execution():
    tr = ColocationTracker(_profiles(), _Opaque(1.0))
    tr.start("x", "a", 1, 0.0)
    tr.what_if([], 1.0)  # caches the running set's rates
    tr.predictor.value = np.nan
    with pytest.raises(InterfpredError, match="predictions must be finite.*still running"):
        tr.finish("x", 2.0)
    assert tr.running == ["x"]


def test_glitched_latency_is_not_learned():
    rls = RLS()
    tr = ColocationTracker(_profiles(), rls)
    tr.start("x", "a", 1, 0.0)
    done = tr.finish("x", 1e-300)  # latency 1e-300 ms: rate 2e300
    assert not done.learned and rls.n_seen_ == 0
    tr.start("y", "a", 1, 1.0)
    assert tr.finish("y", 3.5).learned


# ---------------------------------------------------------------------------- non-physical input
@pytest.mark.parametrize("make", [RLS, OnlineSGD, lambda: OnlineSGD(schedule="constant", learning_rate=1e3)])
@pytest.mark.parametrize("X, y, match", [
    ([0.5, 0.5], 1e300, "beyond"),
    ([1e300, 0.5], 1.0, "beyond"),
    ([1e50, 1e50], 2.0, "beyond"),
])
def test_predictors_refuse_non_physical_input_and_keep_state(make, X, y, match):
    p = make()
    p.update(np.array([[0.1, 0.2], [0.3, 0.1]]), np.array([1.1, 1.2]))
    before = p.to_state()
    for args in [(np.array(X, dtype=float), float(y)), (np.array([X], dtype=float), np.array([y], dtype=float)),
                 ([X], [y])]:
        with pytest.raises(InterfpredError, match=match):
            p.update(*args)
        assert p.to_state() == before


def test_sgd_refuses_huge_learning_rate_and_never_stores_nonfinite(tmp_path):
    with pytest.raises(InterfpredError, match="learning_rate must be at most"):
        OnlineSGD(learning_rate=1e308)
    with pytest.raises(InterfpredError, match="delta must be at most"):
        RLS(delta=1e200)
    p = OnlineSGD(schedule="constant", learning_rate=1e3)
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(200):
        x = rng.random(3) * 1e3
        try:
            p.update(x, float(rng.random() * 1e3))
        except InterfpredError as exc:
            assert "non-finite" in str(exc)
            refused += 1
        assert np.isfinite(p._buf).all()
    assert refused > 0
    p.save(tmp_path / "sgd.json")  # a state that stays finite can always be saved


def test_rls_bursts_keep_covariance_positive_definite(tmp_path):
    p = RLS(forgetting=0.99)
    rng = np.random.default_rng(1)
    for i in range(500):
        x = rng.random(3) * (1e6 if i % 50 == 0 else 1.0)
        try:
            p.update(x, float(1.0 + rng.random()))
        except InterfpredError:
            pass
        assert np.isfinite(p._buf).all()
    assert (np.linalg.eigvalsh(p.covariance_) > 0).all()
    p.save(tmp_path / "rls.json")


def test_offline_fit_refuses_non_physical_targets():
    from interfpred import OfflineLinear

    with pytest.raises(InterfpredError, match="beyond"):
        OfflineLinear().fit([[0.1], [0.2]], [1.0, 1e300])


# ---------------------------------------------------------------------------- crash-safe output
_KILL_BETWEEN_RENAMES = r"""
import os, signal, sys
real = os.rename
def rename(src, dst):
    real(src, dst)
    if str(dst).endswith(".old"):        # the old folder is aside, the new one not yet in place
        os.kill(os.getpid(), signal.SIGKILL)
os.rename = rename
from interfpred.sim.workload import mix_scenario, write_scenario
write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=20, seed=2), sys.argv[1], force=True)
"""

_KILL_INSIDE_ATOMIC_WRITE = r"""
import os, signal, sys
from interfpred._core.atomic import atomic_open
with atomic_open(sys.argv[1]) as fh:
    fh.write("partial")
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _run_killed(code, *args):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(__import__("pathlib").Path(__file__).parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()


def test_killed_folder_swap_is_recovered_by_the_next_run(tmp_path):
    from interfpred.sim.workload import mix_scenario, write_scenario

    out = tmp_path / "sim"
    write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10, seed=1), out)
    before = (out / "trace.csv").read_text()
    _run_killed(_KILL_BETWEEN_RENAMES, out)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "sim" not in names and any(n.endswith(".old") for n in names)  # the window the kill hit
    from interfpred._core.atomic import recover

    recover(out)  # what every later write to ``out`` does first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sim"]
    assert (out / "trace.csv").read_text() == before
    _run_killed(_KILL_BETWEEN_RENAMES, out)
    write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10, seed=3), out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sim"]


def test_killed_atomic_write_leaves_nothing_after_the_next_write(tmp_path):
    from interfpred._core.atomic import atomic_write_text

    target = tmp_path / "profiles.csv"
    target.write_text("old")
    for _ in range(3):
        _run_killed(_KILL_INSIDE_ATOMIC_WRITE, target)
    # each killed run removed the previous one's leftover: they never accumulate
    assert target.read_text() == "old" and len(list(tmp_path.iterdir())) == 2
    atomic_write_text(target, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["profiles.csv"] and target.read_text() == "new"


def test_live_writers_leftovers_are_not_touched(tmp_path):
    import os

    from interfpred._core.atomic import atomic_open, recover

    with atomic_open(tmp_path / "out") as fh:
        fh.write("in progress")
        [mine] = [p for p in tmp_path.iterdir() if p.name != "out"]
        recover(tmp_path / "out")           # this process is alive: its temporary file stays
        assert mine.exists() and str(os.getpid()) in mine.name


def test_unwritable_out_names_the_target(tmp_path, capsys):
    from interfpred._core.atomic import atomic_write_text
    from interfpred.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "out.csv"  # its "folder" is a file: no temporary file can be made there
    with pytest.raises(OSError) as info:
        atomic_write_text(target, "x")
    assert info.value.filename == str(target)
    assert main(["ingest", "--example", "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the "example: PATH" note
    assert err.startswith(f"interfpred: error: {target}:") and ".tmp" not in err


# ---------------------------------------------------------------------------- bounded sweep
def test_everything_overlapping_is_refused_during_the_sweep():
    import tracemalloc

    from interfpred import Trace, build_timeline
    from interfpred.constants import MAX_RUNNING_SET

    n = 20_000
    t = Trace(id=np.arange(n), device=["g"] * n, model=["m"] * n, batch_size=[1] * n,
              start_ms=np.arange(n, dtype=float), end_ms=np.full(n, 1e9))
    tracemalloc.start()
    try:
        with pytest.raises(InterfpredError, match=f"row {MAX_RUNNING_SET}: {MAX_RUNNING_SET + 1} executions run"):
            build_timeline(t)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 512 * 2**20  # the O(n^2) members (1.6 GB) were never built


def test_member_cap_refuses_long_dense_traces(monkeypatch):
    from interfpred import Trace, build_timeline
    from interfpred.features import timeline as tl

    monkeypatch.setattr(tl, "TIMELINE_MAX_MEMBERS", 100)
    n = 200
    t = Trace(id=np.arange(n), device=["g"] * n, model=["m"] * n, batch_size=[1] * n,
              start_ms=np.arange(n, dtype=float), end_ms=np.arange(n, dtype=float) + 3.5)
    with pytest.raises(InterfpredError, match="TIMELINE_MAX_MEMBERS=100"):
        build_timeline(t)


# ---------------------------------------------------------------------------- numba cache fallback
def test_import_works_when_numba_cannot_cache():
    import os
    import pathlib
    import subprocess
    import sys

    code = (
        "import warnings\n"
        "from numba.core import caching\n"
        "caching.CacheImpl._locator_classes = []   # as with a read-only package folder and HOME\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import interfpred, numpy as np\n"
        "    from interfpred import RLS, build_timeline, Trace\n"
        "    import interfpred.serving.tracker, interfpred.sim.engine, interfpred.sim.contention\n"
        "    RLS().update(np.ones(2), 1.0)\n"
        "msgs = [str(x.message) for x in w if 'cannot cache' in str(x.message)]\n"
        "assert len(msgs) == 1, msgs\n"
        "print('ok')\n")
    root = pathlib.Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# ---------------------------------------------------------------------------- one clean line, exit 2
_PROFILES = "gpu,model,batch_size,solo_ms,sm,l2,dram\nl4,vgg19,1,2.0,0.5,0.25,0.5\nl4,vgg19,8,9.0,0.7,0.3,0.6\n"
_TRACE_HEAD = "id,device,model,batch_size,start_ms,end_ms\n"


def _cli(args, capsys):
    from interfpred.cli import main

    code = main([str(a) for a in args])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("name, profiles, trace, match", [
    ("batch 2^63 in profiles", _PROFILES + f"l4,vgg19,{2**63},9.0,0.7,0.3,0.6\n", None,
     "profiles.csv line 4: batch_size .* MAX_BATCH_SIZE"),
    ("batch 2^63 in trace", _PROFILES, _TRACE_HEAD + f"1,l4,vgg19,{2**63},0.0,1.0\n",
     "trace.csv line 2: batch_size .* MAX_BATCH_SIZE"),
    ("batch 1e23 in trace", _PROFILES, _TRACE_HEAD + "1,l4,vgg19,1e23,0.0,1.0\n", "trace.csv line 2: batch_size"),
    ("huge field in trace", _PROFILES, _TRACE_HEAD + "1,l4," + "v" * 140_000 + ",1,0.0,1.0\n",
     "trace.csv line 2: not a readable CSV: field larger than field limit"),
    ("huge field in profiles", _PROFILES + "l4," + "v" * 140_000 + ",1,1,1,1,1\n", None,
     "profiles.csv line 4: not a readable CSV"),
    ("header-only profiles", "gpu,model,batch_size,solo_ms,sm,l2,dram\n", None,
     "profiles.csv: has a header but no profile rows"),
])
def test_bad_inputs_give_one_line_naming_file_and_line(tmp_path, capsys, name, profiles, trace, match):
    import re

    (tmp_path / "profiles.csv").write_text(profiles)
    (tmp_path / "trace.csv").write_text(trace or _TRACE_HEAD + "1,l4,vgg19,1,0.0,2.5\n2,l4,vgg19,8,0.5,12.0\n")
    code, err = _cli(["fit", "--profiles", tmp_path / "profiles.csv", "--trace", tmp_path / "trace.csv",
                      "--out", tmp_path / "m.json"], capsys)
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    assert re.search(match, err), err


def test_bom_and_lone_cr_are_accepted(tmp_path, capsys):
    (tmp_path / "profiles.csv").write_bytes(b"\xef\xbb\xbf" + _PROFILES.replace("\n", "\r").encode())
    (tmp_path / "trace.csv").write_bytes(b"\xef\xbb\xbf" + (_TRACE_HEAD + "1,l4,vgg19,1,0.0,2.5\n"
                                                           "2,l4,vgg19,8,0.5,12.0\n").encode())
    code, err = _cli(["fit", "--profiles", tmp_path / "profiles.csv", "--trace", tmp_path / "trace.csv",
                      "--out", tmp_path / "m.json"], capsys)
    assert code == 0, err


def test_bom_and_lone_cr_in_manifest(tmp_path):
    from interfpred.data.ingest import read_manifest

    (tmp_path / "run.csv").write_text("")
    (tmp_path / "m.csv").write_bytes(b"\xef\xbb\xbffile,gpu,model,batch_size\rrun.csv,l4,m,2\r")
    [entry] = read_manifest(tmp_path / "m.csv")
    assert entry.batch_size == 2 and entry.line == 2
    (tmp_path / "m.csv").write_text("file,gpu,model,batch_size\nrun.csv,l4,m,1e23\n")
    with pytest.raises(InterfpredError, match="m.csv line 2: batch_size '1e23' is larger than MAX_BATCH_SIZE"):
        read_manifest(tmp_path / "m.csv")


def test_huge_ids_stay_exact():
    from interfpred import Trace

    path_ids = [str(2**63), "1e23", "5"]
    t = Trace(id=np.array(path_ids), device=["g"] * 3, model=["m"] * 3, batch_size=[1] * 3,
              start_ms=[0.0, 1.0, 2.0], end_ms=[1.0, 2.0, 3.0])
    assert t.id.tolist() == path_ids
    with pytest.raises(InterfpredError, match="does not fit in a 64-bit"):
        Trace(id=np.array([2**63], dtype=np.uint64), device=["g"], model=["m"], batch_size=[1], start_ms=[0.0],
              end_ms=[1.0])


def test_huge_ids_in_csv_are_kept_as_strings(tmp_path):
    from interfpred import Trace

    (tmp_path / "t.csv").write_text(_TRACE_HEAD + f"{2**63},g,m,1,0.0,1.0\n3,g,m,1,0.5,1.5\n")
    assert Trace.from_csv(tmp_path / "t.csv").id.tolist() == [str(2**63), "3"]


def test_simulate_negative_seed_and_bench_huge_width(tmp_path, capsys):
    code, err = _cli(["simulate", "--scenario", "mix", "--gpu", "l4", "--models", "vgg19", "--rho", "0.5", "--executions", "10",
                      "--seed", "-1", "--out", tmp_path / "sim"], capsys)
    assert code == 2 and "seed -1 must be a non-negative integer" in err and "\n" not in err
    code, err = _cli(["bench", "--widths", "100000", "--no-peers", "--calls", "10"], capsys)
    assert code == 2 and "BENCH_MAX_WIDTH" in err and "\n" not in err


def test_bench_says_when_a_peer_is_missing(monkeypatch, capsys):
    from interfpred.experiments import benchmarking

    monkeypatch.setattr(benchmarking, "missing_peers", lambda: ["padasip"])
    monkeypatch.setattr(benchmarking, "_padasip", lambda d, n, repeats: None)
    code, err = _cli(["bench", "--widths", "2", "--calls", "20", "--predictor", "rls"], capsys)
    assert code == 0 and "padasip is not installed" in err


@pytest.mark.parametrize("index, value, match", [
    (0, -1.0, "observation count"), (0, 0.5, "observation count"), (5, -1.0, "noise variance"),
    (7, 0.5, "cycle position"), (8, 0.0, "")])
def test_corrupt_rls_header_is_refused(tmp_path, index, value, match):
    import json

    from interfpred import load_predictor

    p = RLS().fit(np.random.default_rng(0).random((10, 2)), np.ones(10))
    state = p.to_state()
    state["state"]["buffer"][index] = value
    path = tmp_path / "rls.json"
    path.write_text(json.dumps(state))
    if not match:  # a weight may be anything finite
        load_predictor(path)
        return
    with pytest.raises(InterfpredError, match=f"rls.json: .*{match}"):
        load_predictor(path)


def test_corrupt_rls_covariance_is_refused(tmp_path):
    import json

    from interfpred import load_predictor

    p = RLS().fit(np.random.default_rng(0).random((10, 2)), np.ones(10))
    state = p.to_state()
    state["state"]["buffer"][8 + 2 * 3] = -1.0  # P[0, 0] (m = 3: w and w0 come first)
    (tmp_path / "rls.json").write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match="positive diagonal"):
        load_predictor(tmp_path / "rls.json")


# ---------------------------------------------------------------------------- core-only install
_NO_MATPLOTLIB = r"""
import sys, importlib.abc

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Block())
from interfpred.experiments.reproduce import reproduce
reproduce(sys.argv[1], executions=400, seed=2)      # as tests/conftest.py's small_report
"""


def _small_reproduce(out, **extra_env):
    """``reproduce(out, executions=400, seed=2)`` without matplotlib, in a fresh interpreter."""
    import os
    import pathlib
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[1]), **extra_env}
    return subprocess.run([sys.executable, "-c", _NO_MATPLOTLIB, str(out)], env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def small_reproduce(tmp_path_factory):
    """``(proc, out, narrow)``: the session's small report (tests/conftest.py) again in a fresh interpreter,
    without matplotlib and on narrower SIMD and BLAS kernels where numpy allows (``narrow``), for two tests:
    the figures it skips, and its numbers against the in-process run (each reproduce takes minutes)."""
    out = tmp_path_factory.mktemp("small") / "r"
    proc = _small_reproduce(out, NPY_DISABLE_CPU_FEATURES=_NO_AVX512, OPENBLAS_CORETYPE="Haswell")
    if proc.returncode != 0 and "NPY_DISABLE_CPU_FEATURES" in proc.stderr:   # this numpy cannot: default kernels
        return _small_reproduce(out), out, False
    return proc, out, True


def test_reproduce_without_matplotlib_skips_every_figure(small_reproduce):
    proc, out, _ = small_reproduce
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert report.count("figure skipped: matplotlib is not installed") == 3  # E1, E2 and E3
    assert not list(out.glob("*.png"))


# ---------------------------------------------------------------------------- messages
def test_ingest_messages(tmp_path, capsys):
    out = tmp_path / "p.csv"
    code, err = _cli(["ingest", "--example", "--out", out], capsys)
    assert code == 0 and "wrote 1 profile to" in err and "example: " in err
    assert "superbenchmark_cublaslt_b200_details.log" in err
    lines = out.read_text().splitlines()
    lines.insert(1, "b200,other,1,1.0,0.1,0.1,0.1" + "," * (lines[0].count(",") - 6))  # kernel columns empty
    lines[2] = lines[2].replace("0.40624", "9.5")
    out.write_text("\n".join(lines) + "\n")
    before = out.read_bytes()
    code, err = _cli(["ingest", "--example", "--out", out], capsys)
    err = err.splitlines()[-1]  # after the "example: PATH" note
    assert code == 2 and err.startswith("interfpred: error: ")
    assert f"{out} line 3: cannot append" in err and "solo_ms 9.5 in the file vs 0.40624 new" in err
    assert "superbenchmark_cublaslt_b200_details.log" in err and out.read_bytes() == before


def test_percentages_keep_their_printed_precision():
    from interfpred.data.ingest import KernelTable, profile_from_kernels

    t = KernelTable.from_columns(name=["k"], duration_ms=[0.40624], sm=[10.877 * 0.01], l2=[0.1512],
                                 dram=[0.0074])
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    assert repr(p.sm) == "0.10877" and repr(p.solo_ms) == "0.40624"


def test_missing_profile_names_the_trace_file_and_line(tmp_path, capsys):
    (tmp_path / "profiles.csv").write_text(_PROFILES)
    (tmp_path / "trace.csv").write_text(_TRACE_HEAD + "1,l4,vgg19,1,0.0,2.5\n10,l4,resnet50,8,0.5,12.0\n")
    code, err = _cli(["fit", "--profiles", tmp_path / "profiles.csv", "--trace", tmp_path / "trace.csv",
                      "--out", tmp_path / "m.json"], capsys)
    assert code == 2 and f"{tmp_path / 'trace.csv'} line 3 (id 10):" in err and "resnet50" in err


def test_force_message_names_the_flag(tmp_path, capsys):
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "x").write_text("")
    code, err = _cli(["simulate", "--scenario", "mix", "--gpu", "l4", "--models", "vgg19", "--rho", "0.5", "--executions", "10",
                      "--out", tmp_path / "sim"], capsys)
    assert code == 2 and "pass --force to replace it" in err and "force=True" not in err


def test_e3_names_the_simulated_gpu(tmp_path, monkeypatch):
    from interfpred.experiments.report import ReproduceContext
    from interfpred.experiments.scheduling import experiment as scheduling

    monkeypatch.setattr(scheduling, "E3_QUICK_LOADS", (1.0,))
    monkeypatch.setattr(scheduling, "E3_QUICK_REQUESTS", 100)
    monkeypatch.setattr(scheduling, "E3_PAIR_BATCHES", (1, 8))
    sec = scheduling.run_e3(ReproduceContext(tmp_path, seed=1, quick=True, progress=lambda m: None, gpu="a100"))
    assert "simulated A100 GPUs" in sec.markdown and "L4" not in sec.markdown


# ---------------------------------------------------------------------------- across CPUs
_NO_AVX512 = " ".join(["AVX512F", "AVX512CD", "AVX512VL", "AVX512BW", "AVX512DQ", "AVX512_SKX", "AVX512_CLX",
                       "AVX512_CNL", "AVX512_ICL", "AVX512_SPR", "AVX512VNNI", "AVX512IFMA", "AVX512VBMI",
                       "AVX512VBMI2", "AVX512BITALG", "AVX512BF16", "AVX512VPOPCNTDQ", "AVX512FP16"])


def _numbers(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not (k.endswith("_s") or k in ("generated", "command")):  # timings and the output path
                yield from _numbers(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    else:
        yield path, obj


def test_reproduce_agrees_across_simd_widths_and_blas_kernels(small_report, small_reproduce):
    import json

    narrow, out, narrowed = small_reproduce
    if not narrowed:
        pytest.skip("this numpy cannot disable AVX-512 dispatch")
    assert narrow.returncode == 0, narrow.stderr[-2000:]
    a, b = (dict(_numbers(json.loads((d / "results.json").read_text()))) for d in (small_report[0], out))
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], float):
            assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12), key
        else:
            assert a[key] == b[key], key


# ---------------------------------------------------------------------------- lazy imports
def test_help_and_version_import_nothing_heavy():
    import os
    import pathlib
    import subprocess
    import sys

    code = ("import sys\n"
            "from interfpred.cli import main\n"
            "for argv in (['--help'], ['--version'], ['fit', '--help']):\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit:\n"
            "        pass\n"
            "heavy = sorted(m for m in ('numba', 'pydantic', 'sklearn', 'river', 'scipy', 'matplotlib')\n"
            "               if m in sys.modules)\n"
            "print('HEAVY', heavy)\n")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []"


def test_lazy_names_resolve_and_are_all_listed():
    import interfpred

    for name in interfpred.__all__:
        assert getattr(interfpred, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        interfpred.nope  # noqa: B018


# ---------------------------------------------------------------------------- frozen learners say so
def test_frozen_predictors_refuse_update():
    from sklearn.linear_model import Ridge

    from interfpred import GpuletsModel, OfflineLinear
    from interfpred.errors import FrozenPredictorError
    from interfpred.predictors.as_peers import AsRiver
    from interfpred.predictors.from_peers import FromSklearn

    X = np.random.default_rng(3).random((8, 4))
    y = 1.0 + X @ np.array([0.1, 0.2, 0.3, 0.1])
    for p in (OfflineLinear().fit(X, y), GpuletsModel().fit(X, y), FromSklearn(estimator=Ridge()).fit(X, y)):
        before = p.predict(X)
        with pytest.raises(FrozenPredictorError, match="frozen|partial_fit"):
            p.update(X, y * 2)
        with pytest.raises(FrozenPredictorError):
            p.update(X[0], 2.0)
        np.testing.assert_allclose(p.predict(X), before)
    with pytest.raises(FrozenPredictorError, match="AsRiver needs an online predictor"):
        AsRiver(predictor=OfflineLinear()).learn_one({"a": 0.1}, 1.2)


def test_tracker_with_frozen_predictor_reports_not_learned():
    from interfpred import GpuletsModel, TimeWeighted

    tr = ColocationTracker(_profiles(), GpuletsModel(), TimeWeighted(feature_map="gpulets", target="slowdown"))   # gpulets predicts slowdown
    tr.start("x", "a", 1, 0.0)
    assert tr.finish("x", 3.0).learned is False


def test_bench_whatif_learn_row_learns():
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_whatif.py"), "--repeat", "3"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("start + finish learned"))
    assert int(line.split()[4]) > 0


# ---------------------------------------------------------------------------- warm start and ties
def test_untrained_fleet_puts_work_on_the_idle_gpu():
    from interfpred import Fleet
    from interfpred.sim.zoo import zoo_profiles

    prof = zoo_profiles("l4")
    fleet = Fleet({"gpu0": ColocationTracker(prof, RLS()), "gpu1": ColocationTracker(prof, RLS())})
    fleet.start("gpu0", "busy", "vgg19", 8, 0.0, deadline=1e6)
    assert fleet.choose_device(("c", "resnet50", 4), 1e6, 1.0) == "gpu1"  # a tie: the least loaded wins
    fleet.start("gpu1", "b2", "vgg19", 8, 1.0, deadline=1e6)
    fleet.start("gpu1", "b3", "vgg19", 8, 1.0, deadline=1e6)
    assert fleet.choose_device(("c", "resnet50", 4), 1e6, 2.0) == "gpu0"


def test_from_model_warm_starts_the_tracker():
    from interfpred import InterferenceModel
    from interfpred.sim.workload import mix_scenario

    sc = mix_scenario(["resnet50", "vgg19"], rho=1.2, executions=400, seed=2)
    model = InterferenceModel().fit(sc.traces["trace"], sc.profiles)
    cold = ColocationTracker(sc.profiles, RLS(), model.extractor)
    warm = ColocationTracker.from_model(model, sc.profiles)
    for tr in (cold, warm):
        tr.start("a", "vgg19", 8, 0.0)
    solo = sc.profiles.lookup("resnet50", 8).solo_ms
    assert cold.what_if([("b", "resnet50", 8)], 0.0)["b"] == pytest.approx(solo)
    assert warm.what_if([("b", "resnet50", 8)], 0.0)["b"] > 1.05 * solo
    n0 = model.predictor.n_seen_
    warm.finish("a", 30.0)
    assert model.predictor.n_seen_ == n0 + 1  # learning goes into the model
    with pytest.raises(InterfpredError, match="expects an InterferenceModel"):
        ColocationTracker.from_model(RLS(), sc.profiles)


# ---------------------------------------------------------------------------- example and docs stand alone
def _example(*args, cwd=None):
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, str(root / "examples" / "fit_from_csv.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600, cwd=cwd)


def test_fit_from_csv_example_arguments_and_cleanup(tmp_path, monkeypatch):
    import tempfile

    proc = _example("--help")
    assert proc.returncode == 0 and "usage: fit_from_csv.py" in proc.stdout
    proc = _example("only_one.csv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "PROFILES_CSV" in proc.stderr
    proc = _example(tmp_path / "missing.csv", tmp_path / "missing2.csv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "missing.csv" in proc.stderr
    before = set(pathlib_glob(tempfile.gettempdir()))
    from interfpred.sim.workload import mix_scenario, write_scenario

    write_scenario(mix_scenario(["vgg19", "resnet50"], rho=0.8, executions=300, seed=0), tmp_path / "sim")
    proc = _example(tmp_path / "sim" / "profiles.csv", tmp_path / "sim" / "trace.csv", "--out", tmp_path / "m.json")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.json").exists()
    assert set(pathlib_glob(tempfile.gettempdir())) <= before  # no temporary folder left behind


def pathlib_glob(folder):
    import pathlib

    return {p.name for p in pathlib.Path(folder).glob("interfpred-example-*")}


def test_docs_and_sources_stand_alone():
    import pathlib
    import re

    root = pathlib.Path(__file__).parents[1]
    pattern = re.compile(r"DESIGN\.md|STYLE\.md|\.\./shared|\bissues? #?\d+|\(issue \d+\)", re.IGNORECASE)
    offenders = []
    for folder in ("docs", "interfpred", "tests", "benchmarks", "examples", "tools"):
        for path in (root / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".txt", ".json") and path.is_file():
                for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    if pattern.search(line) and "pattern = re.compile" not in line:
                        offenders.append(f"{path.relative_to(root)}:{n}: {line.strip()[:80]}")
    readme = (root / "README.md").read_text()
    offenders += [f"README.md: {m}" for m in pattern.findall(readme)]
    assert not offenders, "\n".join(offenders)


# ---------------------------------------------------------------------------- static checks
def test_ruff_passes():
    import pathlib
    import shutil
    import subprocess

    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    root = pathlib.Path(__file__).parents[1]
    proc = subprocess.run([ruff, "check", "--no-cache", str(root)], capture_output=True, text=True, timeout=300,
                          cwd=root)
    assert proc.returncode == 0, proc.stdout[-3000:]
