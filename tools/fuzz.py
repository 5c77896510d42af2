"""Fault and fuzz campaign for interfpred's readers, its crash-safe output and its live tracker.

Three campaigns, each checking one promise:

``files``
    Valid trace, profile, manifest, model and predictor files are mutated at random (bytes
    deleted, inserted, overwritten, lines duplicated, the file truncated; the inserted bytes favour
    what breaks parsers: huge and non-finite numbers, separators, quotes, CR, BOM, NUL). Every
    reader must either succeed or raise :class:`~interfpred.errors.InterfpredError`, within a
    time limit: any other exception, or a hang, is a failure.
``kill``
    ``write_scenario(..., force=True)`` runs in a child killed with SIGKILL at a random moment;
    afterwards the next write's recovery must leave exactly one complete output folder (old or
    new) and no leftovers.
``hammer``
    Threads share one :class:`~interfpred.ColocationTracker` and call start, finish, what_if and
    predict_finish at random, while the predictor sometimes returns NaN; no call may hang or
    raise anything but InterfpredError, and the running set must stay consistent.

``captures``
    Hostile capture files (Nsight Systems SQLite exports with mutated columns, views, triggers and
    virtual tables; Kineto JSON with bad literals, deep nesting, gzip bombs and huge sizes; Model
    Analyzer checkpoints with bad fields, conflicts and duplicates; hostile CLI arguments; random
    byte mutations) run through ``ingest-trace`` / ``ingest-measurements``, each case with its
    oracle (see :func:`capture_campaign`): counts tracebacks, hangs, silent wrong results, exits 0
    on garbage, multi-line errors, false refusals and each child's peak memory::

        PYTHONPATH=$PWD python tools/fuzz.py --captures 560 --only-captures

Run from the repository root (minutes; the test suite runs a short version of each)::

    PYTHONPATH=$PWD python tools/fuzz.py --files 20000 --kills 50 --hammer-seconds 30

Exits 1 and prints the first failures when a promise is broken.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: Byte strings favoured by the mutator: what breaks parsers.
TOKENS = [b"9223372036854775808", b"18446744073709551616", b"1e23", b"1e400", b"-1e400", b"nan", b"inf", b"-0",
          b"-1", b"0", b"1e-300", b",", b",,", b'"', b'""', b"\r", b"\n", b"\r\n", b"\xef\xbb\xbf", b"\x00",
          b"\xff\xfe", b"x" * 140_000, b"[", b"]", b"{", b"}", b"true", b"null", b"[[[[[[[[", b'"kind"', b":"]


def mutate(data: bytes, rng: random.Random, rounds: int = 3) -> bytes:
    """A random mutation of ``data`` (``rounds`` edits)."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, rounds)):
        i = rng.randint(0, max(len(buf), 1))
        kind = rng.randrange(6)
        blob = rng.choice(TOKENS) if rng.random() < 0.7 else bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        if kind == 0:
            del buf[i:i + rng.randint(1, 40)]
        elif kind == 1:
            buf[i:i] = blob
        elif kind == 2:
            buf[i:i + len(blob)] = blob
        elif kind == 3:
            del buf[i:]
        elif kind == 4:  # duplicate a line
            lines = bytes(buf).split(b"\n")
            j = rng.randrange(len(lines))
            lines.insert(j, lines[j])
            buf = bytearray(b"\n".join(lines))
        else:  # swap two lines
            lines = bytes(buf).split(b"\n")
            if len(lines) > 2:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
            buf = bytearray(b"\n".join(lines))
    return bytes(buf)


def seed_files(folder: Path) -> dict[str, Path]:
    """Valid files of every kind the readers accept, written into ``folder``."""
    from interfpred import InterferenceModel, OnlineSGD
    from interfpred.sim.workload import mix_scenario, write_scenario

    sc = mix_scenario(["vgg19", "resnet50"], rho=0.9, executions=40, seed=0)
    write_scenario(sc, folder / "sim")
    model = InterferenceModel({"aggregation": "time_weighted", "feature_map": "default"}, "rls")
    model.fit(sc.traces["trace"], sc.profiles).save(folder / "model.json")
    sgd = OnlineSGD().fit(np.random.default_rng(0).random((20, 3)), np.ones(20))
    sgd.save(folder / "sgd.json")
    (folder / "run.csv").write_text("")
    (folder / "manifest.csv").write_text("file,gpu,model,batch_size,iterations,kernel_filter\n"
                                         "run.csv,l4,vgg19,8,10,gemm.*relu\n")
    from interfpred import Calibrated, Measurements
    from interfpred.data.columnar import write_measurements, write_profiles, write_trace

    meas = Measurements.from_columns(run=[1, 1, 2, 2], gpu=["g"] * 4, model=["a", "b", "a", "c"],
                                     batch_size=[1, 2, 1, 4], solo_ms=[1.0, 2.0, 1.0, 3.0],
                                     observed_ms=[1.5, 2.5, 1.2, 3.3])
    write_measurements(meas, folder / "meas.csv")
    write_measurements(meas, folder / "meas.parquet")
    write_trace(sc.traces["trace"], folder / "trace.parquet")
    write_profiles(sc.profiles, folder / "profiles.parquet")
    cal = InterferenceModel({"aggregation": "time_weighted", "feature_map": "default"}, Calibrated("rls"))
    cal.fit(sc.traces["trace"], sc.profiles).save(folder / "calibrated.json")
    return {"trace": folder / "sim" / "trace.csv", "trace_cli": folder / "sim" / "trace.csv",
            "profiles": folder / "sim" / "profiles.csv", "manifest": folder / "manifest.csv",
            "model": folder / "model.json", "predictor": folder / "sgd.json", "measurements": folder / "meas.csv",
            "trace_parquet": folder / "trace.parquet", "profiles_parquet": folder / "profiles.parquet",
            "measurements_parquet": folder / "meas.parquet", "calibrated": folder / "calibrated.json"}


def readers() -> dict[str, Callable[[Path], object]]:
    """Reader of each file kind (what ``interfpred`` calls on a user's file)."""
    from interfpred import ProfileTable, Trace, load_model, load_predictor
    from interfpred.data.columnar import read_measurements, read_profiles, read_trace
    from interfpred.data.ingest import read_manifest

    return {"trace": Trace.from_csv, "trace_cli": read_trace, "profiles": ProfileTable.from_csv,
            "manifest": read_manifest, "model": load_model, "predictor": load_predictor,
            "measurements": read_measurements, "trace_parquet": read_trace, "profiles_parquet": read_profiles,
            "measurements_parquet": read_measurements, "calibrated": load_model}


def _call_with_limit(fn: Callable[[], object], seconds: float) -> tuple[str, str]:
    """("ok" | "refused" | "crash" | "hang", detail)."""
    from interfpred.errors import InterfpredError

    box: dict[str, tuple[str, str]] = {}

    def run() -> None:
        try:
            fn()
            box["r"] = ("ok", "")
        except InterfpredError as exc:
            box["r"] = ("refused", str(exc))
        except BaseException:  # noqa: BLE001 - reported
            box["r"] = ("crash", traceback.format_exc(limit=4))

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        return "hang", f"no answer within {seconds} s"
    return box["r"]


def fuzz_files(n: int, seed: int = 0, time_limit: float = 20.0) -> list[str]:
    """Mutate ``n`` files at random; return the failures (crashes and hangs)."""
    rng = random.Random(seed)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        seeds = seed_files(folder)
        originals = {k: p.read_bytes() for k, p in seeds.items()}
        read = readers()
        for i in range(n):
            kind = rng.choice(sorted(seeds))
            data = mutate(originals[kind], rng)
            path = seeds[kind]
            path.write_bytes(data)
            outcome, detail = _call_with_limit(lambda: read[kind](path), time_limit)
            if outcome in ("crash", "hang"):
                failures.append(f"{kind} #{i} ({outcome}): {detail}\n  input: {data[:300]!r}")
            path.write_bytes(originals[kind])
    return failures


_KILL_CHILD = r"""
import sys
from interfpred.sim.workload import mix_scenario, write_scenario
write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=int(sys.argv[2]), seed=int(sys.argv[3])), sys.argv[1],
               force=True)
"""


def kill_trials(n: int, seed: int = 0) -> list[str]:
    """Kill ``write_scenario(force=True)`` at random moments; the output must survive every kill."""
    from interfpred import ProfileTable, Trace
    from interfpred._core.atomic import recover
    from interfpred.sim.workload import mix_scenario, write_scenario

    rng = random.Random(seed)
    failures: list[str] = []
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sim"
        write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=50, seed=0), out)
        for i in range(n):
            child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(out), "3000", str(i + 1)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.3, 3.0))
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGKILL)
            child.wait()
            recover(out)
            names = sorted(p.name for p in Path(tmp).iterdir())
            if names != ["sim"]:
                failures.append(f"kill #{i}: folder holds {names} after recovery")
                continue
            try:
                ProfileTable.from_csv(out / "profiles.csv")
                Trace.from_csv(out / "trace.csv")
                json.loads((out / "scenario.json").read_text())
            except Exception as exc:  # noqa: BLE001 - reported
                failures.append(f"kill #{i}: incomplete output: {exc!r}")
    return failures


class _Flaky:
    """An affine-looking predictor that sometimes returns NaN (a corrupted model); declares no tags, so it
    gets the defaults (it learns online)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.nan = False

    def predict(self, X):  # noqa: ANN001
        X = np.asarray(X, dtype=float)
        value = np.nan if self.nan else 0.8
        return value if X.ndim == 1 else np.full(X.shape[0], value)

    def update(self, X, y) -> None:  # noqa: ANN001
        if self.rng.random() < 0.05:
            from interfpred.errors import InterfpredError

            raise InterfpredError("update refused (injected)")


def hammer(seconds: float, threads: int = 8, seed: int = 0) -> list[str]:
    """Threads share one tracker; no hang, no foreign exception, a consistent running set."""
    from interfpred import ColocationTracker
    from interfpred.errors import InterfpredError
    from interfpred.sim.zoo import zoo_profiles

    prof = zoo_profiles("l4")
    rng = random.Random(seed)
    pred = _Flaky(rng)
    tr = ColocationTracker(prof, pred)
    failures: list[str] = []
    clock = [0.0]
    started: set = set()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(k: int) -> None:
        r = random.Random(seed * 100 + k)
        n = 0
        while time.monotonic() < stop and not failures:
            n += 1
            op = r.random()
            with lock:
                clock[0] += r.random()
                t = clock[0]
            try:
                if op < 0.3:
                    eid = (k, n)
                    tr.start(eid, r.choice(prof.models), r.choice((1, 2, 4, 8)), t)
                    with lock:
                        started.add(eid)
                elif op < 0.55:
                    running = tr.running
                    if running:
                        victim = r.choice(running)
                        tr.finish(victim, t)
                        with lock:
                            started.discard(victim)
                elif op < 0.85:
                    tr.what_if([(("c", k, n), r.choice(prof.models), 4)], t)
                elif op < 0.95:
                    tr.predict_finish(t)
                else:
                    pred.nan = not pred.nan
            except InterfpredError:
                pass
            except BaseException:  # noqa: BLE001 - reported
                failures.append(traceback.format_exc(limit=5))

    pool = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(seconds + 60)
        if th.is_alive():
            failures.append("a thread did not return: the tracker hangs or deadlocks")
            return failures
    if set(tr.running) != started:
        failures.append(f"running set {len(tr.running)} differs from the {len(started)} started and not finished")
    return failures


# ---------------------------------------------------------------------------- crafted inputs
def craft_parquet(table, rng: random.Random):  # noqa: ANN001, ANN201 - pyarrow types
    """``table`` with one column replaced by a column of another kind (list, struct, map, text, null, bool)."""
    import pyarrow as pa

    n = table.num_rows
    name = rng.choice(table.column_names)
    kinds = {
        "list": lambda: pa.array([[1, 2]] * n),
        "struct": lambda: pa.array([{"a": 1}] * n),
        "map": lambda: pa.array([[("k", 1)]] * n, pa.map_(pa.string(), pa.int64())),
        "text": lambda: pa.array(["x"] * n),
        "null": lambda: pa.nulls(n),
        "some_null": lambda: pa.array([None] + ["x"] * (n - 1)),
        "bool": lambda: pa.array([True] * n),
        "nul": lambda: pa.array(["a\x00"] * n),
        "huge": lambda: pa.array([1e19] * n),
    }
    kind = rng.choice(sorted(kinds))
    return table.set_column(table.column_names.index(name), name, kinds[kind]()), f"{name}={kind}"


#: Columns each Parquet reader reads (others are kept as extra columns or ignored).
_READ_COLUMNS = {"trace_parquet": ("id", "device", "model", "batch_size", "start_ms", "end_ms", "solo_ms", "share"),
                 "profiles_parquet": ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram", "share"),
                 "measurements_parquet": ("run", "gpu", "model", "batch_size", "solo_ms", "observed_ms", "share")}


def _must_refuse(kind: str, column: str, change: str) -> bool:
    """Whether replacing ``column`` of a valid ``kind`` file by ``change`` makes the file invalid."""
    if column not in _READ_COLUMNS[kind]:
        return False
    if change in ("list", "struct", "map", "nul"):
        return True
    return change == "huge" and column == "batch_size"


def fuzz_parquet(n: int, seed: int = 0, time_limit: float = 20.0) -> list[str]:
    """Parquet traces, profiles and measurements with a column of the wrong kind: read or refused cleanly."""
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        seeds = seed_files(folder)
        read = readers()
        for i in range(n):
            kind = rng.choice(["trace_parquet", "profiles_parquet", "measurements_parquet"])
            table, what = craft_parquet(pq.read_table(seeds[kind]), rng)
            path = folder / f"crafted{i}.parquet"
            pq.write_table(table, path)
            outcome, detail = _call_with_limit(lambda: read[kind](path), time_limit)
            if outcome in ("crash", "hang"):
                failures.append(f"{kind} {what} ({outcome}): {detail}")
            elif outcome == "ok" and _must_refuse(kind, *what.split("=")):
                failures.append(f"{kind} {what} (silent): a column of the wrong kind was accepted")
            path.unlink()
    return failures


def differential_traces(n: int, seed: int = 0) -> list[str]:
    """Mutated trace CSVs through the CLI's reader and ``Trace.from_csv``: both refuse, or both read the same."""
    from interfpred import Trace
    from interfpred.data.columnar import read_trace

    rng = random.Random(seed)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        seeds = seed_files(folder)
        original = seeds["trace"].read_bytes()
        path = folder / "t.csv"
        for i in range(n):
            data = mutate(original, rng)
            path.write_bytes(data)
            a = _call_with_limit(lambda: read_trace(path), 20.0)
            b = _call_with_limit(lambda: Trace.from_csv(path), 20.0)
            if a[0] != b[0]:
                failures.append(f"differential #{i}: read_trace {a[0]} ({a[1][:120]}), Trace.from_csv {b[0]} "
                                f"({b[1][:120]})\n  input: {data[:300]!r}")
            elif a[0] == "ok" and read_trace(path) != Trace.from_csv(path):
                failures.append(f"differential #{i}: both read it, to different traces\n  input: {data[:300]!r}")
    return failures


#: Model-file fields that are cross-checked: changing one must make loading refuse the file.
CROSS_CHECKED = [("feature_names", 0), ("feature_names", None), ("predictor", "params", "predictor"),
                 ("predictor", "state", "train_quantiles", 0), ("predictor", "params", "window")]


def _set(obj: object, path: tuple, value: object) -> bool:
    for key in path[:-1]:
        try:
            obj = obj[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        if path[-1] is None:
            obj.pop()  # type: ignore[attr-defined]
        else:
            obj[path[-1]] = value  # type: ignore[index]
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
    return True


def fuzz_models(n: int, seed: int = 0) -> list[str]:
    """Model files with a cross-checked field changed must be refused; any other change read or refused cleanly."""
    from interfpred import load_model

    rng = random.Random(seed)
    failures: list[str] = []
    values = [None, "garbage", -1, 0, 10**12, 1e308, [], {}, [1], "zz", {"spec": "online_sgd"}, True]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        seeds = seed_files(folder)
        states = {k: json.loads(seeds[k].read_text()) for k in ("model", "calibrated")}
        path = folder / "m.json"
        for _i in range(n):
            kind = rng.choice(sorted(states))
            state = json.loads(json.dumps(states[kind]))
            cross = rng.random() < 0.5
            if cross:
                where = rng.choice(CROSS_CHECKED)
                value = {"feature_names": "zz", "predictor": {"spec": "online_sgd"}, "train_quantiles": None,
                         "window": 10**12}[next(k for k in reversed(where) if isinstance(k, str))]
            else:  # anywhere in the tree
                where, node = (), state
                while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
                    key = rng.choice(sorted(node)) if isinstance(node, dict) else rng.randrange(len(node))
                    where, node = (*where, key), node[key]
                if not where:
                    continue
                value = rng.choice(values)
            if not _set(state, where, value):
                continue
            path.write_text(json.dumps(state))
            outcome, detail = _call_with_limit(lambda: load_model(path), 20.0)
            if outcome in ("crash", "hang"):
                failures.append(f"model {kind} {where}={value!r} ({outcome}): {detail}")
            elif cross and outcome == "ok":
                failures.append(f"model {kind} {where}={value!r} (silent): a cross-checked field was not checked")
    return failures


def fuzz_fleet(n: int, seed: int = 0) -> list[str]:
    """Random, often invalid, calls on a :class:`~interfpred.Fleet`: answered or refused with InterfpredError."""
    from interfpred import RLS
    from interfpred.serving.fleet import Fleet
    from interfpred.sim.zoo import zoo_profiles

    rng = random.Random(seed)
    fleet = Fleet.from_profiles(zoo_profiles("l4"), lambda: RLS().fit([[0.0] * 16, [1.0] * 16], [1.0, 0.5]),
                                devices=["gpu0", "gpu1"])
    failures: list[str] = []
    numbers = [0.0, 1.0, -1.0, 1e308, -1e308, float("nan"), float("inf"), 2**63, "x", None, 5.0]
    ids = ["a", "b", "c", 1, None, ["list"]]
    t = 0.0
    for i in range(n):
        t += rng.random()
        op = rng.choice(["start", "finish", "choose", "assess", "where", "deadline"])
        dev = rng.choice(["gpu0", "gpu1", "gpu9", "", None])
        model = rng.choice(["vgg19", "resnet50", "nope", ""])
        num = rng.choice(numbers)
        tt = rng.choice([t, t, num])
        calls = {
            "start": lambda: fleet.start(dev, rng.choice(ids), model, rng.choice([1, 8, num]), tt,
                                         deadline=rng.choice([t + 10.0, num])),
            "finish": lambda: fleet.finish(rng.choice(ids), tt),
            "choose": lambda: fleet.choose_device((rng.choice(ids), model, rng.choice([1, 8, num])), t + 50.0, tt),
            "assess": lambda: fleet.assess(dev, (rng.choice(ids), model, 4), rng.choice([t + 50.0, num]), tt),
            "where": lambda: fleet.where(rng.choice(ids)),
            "deadline": lambda: fleet.deadline(rng.choice(ids)),
        }
        outcome, detail = _call_with_limit(calls[op], 20.0)
        if outcome in ("crash", "hang"):
            failures.append(f"fleet #{i} {op} ({outcome}): {detail}")
    return failures


# ---------------------------------------------------------------------------- console script
def _cli_cases(folder: Path, rng: random.Random, n: int) -> list[tuple[str, list[str], bool]]:
    """``n`` (name, argv, must_refuse) cases for ``python -m interfpred``: crafted files and arguments."""
    seeds = seed_files(folder)
    sim = seeds["trace"].parent
    originals = {k: seeds[k].read_bytes() for k in ("trace", "profiles", "measurements", "manifest", "model")}
    outside = folder / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("root:x:0:0\n")
    fixed: list[tuple[str, list[str], bool]] = [
        ("symlink-manifest", ["ingest", "--manifest", "@mf/runs.csv", "--out", "@o.csv"], True),
        ("kernel-filter-redos", ["ingest", "--example", "--gpu", "b200", "--model", "m", "--batch-size", "1",
                                 "--kernel-filter", "(x+x+)+y", "--out", "@o.csv"], True),
        ("window-huge", ["predict", "--model-file", "@bigwindow.json", "--trace", str(seeds["trace"]),
                         "--profiles", str(seeds["profiles"]), "--out", "@p.csv"], True),
        ("executions-huge", ["simulate", "--out", "@s", "--executions", str(10**12)], True),
        ("calls-huge", ["bench", "--calls", str(10**12)], True),
        ("repeats-huge", ["evaluate", "--model-file", "@mm.json", "--measurements", str(seeds["measurements"]),
                          "--split", "pair", "--repeats", str(10**9)], True),
        ("seed-negative", ["evaluate", "--model-file", "@mm.json", "--measurements", str(seeds["measurements"]),
                           "--split", "pair", "--seed", "-1"], True),
        ("out-dot", ["simulate", "--out", ".", "--force", "--executions", "40"], True),
        ("out-empty", ["simulate", "--out", "", "--force", "--executions", "40"], True),
        ("rho-tiny", ["simulate", "--scenario", "mix", "--models", "vgg19", "--rho", "1e-300", "--executions", "40",
                      "--out", "@s2"], True),
        ("json-int", ["predict", "--model-file", "@bigint.json", "--trace", str(seeds["trace"]),
                      "--profiles", str(seeds["profiles"]), "--out", "@p.csv"], True),
        ("throughput-tiny", ["fit", "--measurements", "@thr.csv", "--out", "@m.json"], True),
        ("batch-huge", ["fit", "--measurements", "@bs.csv", "--out", "@m.json"], True),
        ("cr-only", ["fit", "--measurements", "@cr.csv", "--out", "@m.json"], False),
    ]
    mf = folder / "mf"
    mf.mkdir()
    os.symlink(outside / "secret.csv", mf / "link.csv")
    (mf / "runs.csv").write_text("file,gpu,model,batch_size\nlink.csv,l4,m,8\n")
    model = json.loads(seeds["model"].read_text())
    cal = json.loads(seeds["calibrated"].read_text())
    cal["predictor"]["params"]["window"] = 10**12
    (folder / "bigwindow.json").write_text(json.dumps(cal))
    (folder / "bigint.json").write_text(seeds["model"].read_text().replace('"schema_version": 1',
                                                                          '"schema_version": 1' + "0" * 5000, 1))
    (folder / "thr.csv").write_text("run,gpu,model,batch_size,solo_throughput,observed_throughput\n"
                                    "1,g,a,1,1e-320,1e-320\n1,g,b,1,1,2\n")
    (folder / "bs.csv").write_text("run,gpu,model,batch_size,solo_ms,observed_ms\n1,g,a,1e19,1,2\n1,g,b,1,1,2\n")
    (folder / "cr.csv").write_bytes(originals["measurements"].replace(b"\n", b"\r"))
    del model
    cases = list(fixed)
    while len(cases) < n:
        kind = rng.choice(sorted(originals))
        name = f"{kind}{len(cases)}"
        target = folder / f"{name}{seeds[kind].suffix}"
        target.write_bytes(mutate(originals[kind], rng))
        if kind == "trace":
            argv = ["fit", "--trace", str(target), "--profiles", str(seeds["profiles"]), "--out", "@m.json"]
        elif kind == "profiles":
            argv = ["predict", "--model-file", str(seeds["model"]), "--trace", str(seeds["trace"]),
                    "--profiles", str(target), "--out", "@p.csv"]
        elif kind == "measurements":
            argv = ["fit", "--measurements", str(target), "--out", "@m.json"]
        elif kind == "manifest":
            (folder / "run.csv").write_bytes(b"")
            argv = ["ingest", "--manifest", str(target), "--out", "@o.csv"]
        else:
            argv = ["predict", "--model-file", str(target), "--trace", str(seeds["trace"]),
                    "--profiles", str(seeds["profiles"]), "--out", "@p.csv"]
        cases.append((name, argv, False))
    del sim
    return cases


def cli_campaign(n: int, seed: int = 0, time_limit: float = 120.0, jobs: int = 2,
                 progress: bool = False, subprocesses: int | None = None) -> dict[str, list[str]]:
    """Run ``n`` crafted cases through the console script; classify every outcome.

    The first ``subprocesses`` cases (default all) each run ``python -m interfpred`` in a child
    process; the rest call the console script's entry point, :func:`interfpred.cli.main`, in this
    process (the same code, without an interpreter start per case; a traceback is an exception
    escaping ``main``).

    Returns {"ok": [...], "refused": [...], "traceback": [...], "hang": [...], "silent": [...],
    "not_one_line": [...]}: a refusal must be exit status 2 with one line on stderr; a case built to
    be refused that exits 0 counts as silent; a prediction file holding inf or nan too.
    """
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed)
    subprocesses = n if subprocesses is None else subprocesses
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    results: dict[str, list[str]] = {k: [] for k in ("ok", "refused", "traceback", "hang", "silent", "not_one_line")}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = _cli_cases(folder, rng, n)
        subprocess.run([sys.executable, "-m", "interfpred", "fit", "--measurements", str(folder / "meas.csv"),
                        "--out", str(folder / "mm.json")], env=env, capture_output=True, cwd=root, check=True)

        def classify(name: str, argv: list[str], must_refuse: bool, work: Path, rc: int | None,
                     err: str) -> tuple[str, str]:
            if rc is None:
                return "hang", f"{name}: {argv}"
            if "Traceback" in err or "internal error" in err:
                return "traceback", f"{name}: {argv}\n{err[-800:]}"
            if rc == 0:
                if must_refuse:
                    return "silent", f"{name}: exit 0 on {argv}"
                pred = work / "p.csv"
                if pred.exists() and any(w in pred.read_text() for w in ("inf", "nan")):
                    return "silent", f"{name}: predictions hold inf or nan"
                if name == "out-dot" and not work.exists():
                    return "silent", f"{name}: the current folder was replaced"
                return "ok", name
            lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("example:", "wrote"))]
            if rc != 2 or len(lines) != 1:
                return "not_one_line", f"{name}: rc {rc}: {err[-600:]}"
            return "refused", f"{name}: {lines[0][:200]}"

        def prepare(case: tuple[str, list[str], bool]) -> tuple[str, list[str], bool, Path]:
            name, argv, must_refuse = case
            work = folder / f"run_{name}"
            work.mkdir()
            argv = [a.replace("@", str(folder) + "/", 1) if a.startswith("@") else a for a in argv]
            argv = [str(work / Path(a).name) if a.endswith(("/o.csv", "/p.csv")) else a for a in argv]
            return name, argv, must_refuse, work

        def run(case: tuple[str, list[str], bool]) -> tuple[str, str]:
            name, argv, must_refuse, work = prepare(case)
            try:
                proc = subprocess.run([sys.executable, "-m", "interfpred", *argv], env=env, capture_output=True,
                                      text=True, timeout=time_limit, cwd=work)
            except subprocess.TimeoutExpired:
                return classify(name, argv, must_refuse, work, None, "")
            return classify(name, argv, must_refuse, work, proc.returncode, proc.stderr.strip())

        def run_in_process(case: tuple[str, list[str], bool]) -> tuple[str, str]:
            # the console script's entry point, called in this process (no interpreter start per case)
            import io

            from interfpred.cli import main as cli_main

            name, argv, must_refuse, work = prepare(case)
            err = io.StringIO()
            box: dict[str, int] = {}
            here = os.getcwd()

            def call() -> None:
                try:
                    box["rc"] = int(cli_main(argv) or 0)
                except SystemExit as exc:
                    box["rc"] = int(exc.code or 0) if not isinstance(exc.code, str) else 2
                except BaseException:  # noqa: BLE001 - what the console script would print
                    err.write(traceback.format_exc(limit=6))
                    box["rc"] = 1

            os.chdir(work)
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    th = threading.Thread(target=call, daemon=True)
                    th.start()
                    th.join(time_limit)
            finally:
                os.chdir(here)
            return classify(name, argv, must_refuse, work, box.get("rc"), err.getvalue().strip())

        def outcomes():  # noqa: ANN202
            if subprocesses >= len(cases):
                with ThreadPoolExecutor(jobs) as pool:
                    yield from pool.map(run, cases)
                return
            with ThreadPoolExecutor(jobs) as pool:
                yield from pool.map(run, cases[:subprocesses])
            for case in cases[subprocesses:]:
                yield run_in_process(case)

        if True:
            for i, (outcome, detail) in enumerate(outcomes()):
                results[outcome].append(detail)
                if progress:
                    print(f"{i + 1} {outcome} {detail.splitlines()[0][:160]}", flush=True)
    return results


# ------------------------------------------------------------------ hostile capture files
#
# Every case is a capture (Nsight Systems SQLite export, Kineto JSON, Model Analyzer checkpoint) or
# a command line built from the bundled real captures, with an oracle saying what must happen:
#   "refuse": exit 2 with one line on stderr (exit 0 is "exit 0 on garbage");
#   "same":   exit 0 with exactly the output of the unmutated capture (anything else is "silent wrong");
#   "ok":     exit 0 (a refusal is a "false refusal"), output that passes the output check;
#   "any":    a clean refusal or an output that passes the output check (random byte mutations).
# The output check ("silent wrong" when it fails): the written file reads back through interfpred's
# own reader, every time is finite and within TIME_HORIZON_MS, devices are gpu<0..4095>, batch
# sizes and counts are positive integers, latencies positive and finite, and a trace has no more
# executions than the unmutated capture gave (a crafted mutation can remove a batch, not invent one;
# a random byte may move a range's end over other launches, so random cases are not held to it).
# A traceback is "Traceback" or "internal error" on stderr or an exit status other than 0 and 2;
# a hang is a case past its time limit. Peak memory is the child's ru_maxrss (os.wait4).

_CAPTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "capture"
_NSYS_BASE = "nsys_saxpy_mpi_a100.sqlite"
_KINETO_BASE = "kineto_sampled_rank0.json.gz"
_CKPT_CONC = "model_analyzer_concurrent_resnet50_vgg19.ckpt"
_CKPT_SOLO = "model_analyzer_solo_resnet50_trimmed.ckpt"
_RANGES = ["--name-pattern", "{model}", "--batch-size", "1"]
#: (SQL literal, whether it is a plain in-range integer id) for the column mutations.
_SQL_VALUES = [("NULL", False), ("'abc'", False), ("X'00ff'", False), ("1.5", False), ("1e300", False),
               ("-1e300", False), ("9223372036854775807", True), ("-9223372036854775808", True),
               ("4611686018427387904", True), ("1180591620717411303424", False)]
#: Per (table, column): the oracle of a NULL, of a non-integer and of a plain integer out of range
#: (for a time: beyond the horizon; for an id: a valid but unmatched id).
_SQL_COLUMNS = {
    ("CUPTI_ACTIVITY_KIND_KERNEL", "start"): ("refuse", "refuse", "refuse"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "end"): ("refuse", "refuse", "refuse"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "deviceId"): ("refuse", "refuse", "refuse"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"): ("refuse", "refuse", "ok"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "correlationId"): ("ok", "refuse", "ok"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"): ("refuse", "any", "any"),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "start"): ("refuse", "refuse", "refuse"),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "end"): ("refuse", "refuse", "refuse"),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"): ("ok", "refuse", "ok"),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId"): ("ok", "refuse", "ok"),
    ("NVTX_EVENTS", "start"): ("refuse", "refuse", "refuse"),
    ("NVTX_EVENTS", "end"): ("ok", "refuse", "refuse"),
    ("NVTX_EVENTS", "globalTid"): ("ok", "refuse", "ok"),
    ("NVTX_EVENTS", "text"): ("any", "any", "any"),
    ("NVTX_EVENTS", "eventType"): ("ok", "ok", "ok"),
}
#: The mutated row of each table: one that the unmutated capture turns into (part of) an execution.
_SQL_ROW = {"CUPTI_ACTIVITY_KIND_KERNEL": "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            "CUPTI_ACTIVITY_KIND_RUNTIME": "(SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN "
                                           "CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
                                           "ORDER BY r.rowid LIMIT 1)",
            "NVTX_EVENTS": "(SELECT min(rowid) FROM NVTX_EVENTS WHERE text LIKE 'saxpy%' AND end IS NOT NULL)"}
_BOMB_VIEW = ("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000000000) "
              "SELECT x AS start, x + 1 AS end, 59 AS eventType, 'saxpy' AS text, 0 AS globalTid, x AS textId, "
              "0 AS domainId, 0 AS category FROM n")


def _sqlite_case(folder: Path, name: str, sql: list[str]) -> Path:
    import shutil
    import sqlite3

    path = folder / f"{name}.sqlite"
    shutil.copyfile(_CAPTURE / _NSYS_BASE, path)
    con = sqlite3.connect(path)
    try:  # a hostile file need not keep the exporter's NOT NULL constraints
        con.execute("PRAGMA writable_schema = ON")
        con.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'")
        con.commit()
    finally:
        con.close()
    con = sqlite3.connect(path)
    try:
        for stmt in sql:
            con.execute(stmt)
        con.commit()
    finally:
        con.close()
    return path


def _keep_all(name: str) -> bool:
    return True


def _sqlite_cases(folder: Path, keep: Callable[[str], bool] = _keep_all) -> list[tuple[str, str, list[str], str]]:
    """(name, kind, argv, oracle) of the SQLite mutations (those whose name ``keep`` accepts)."""
    cases: list[tuple[str, str, list[str], str]] = []
    for (table, col), oracles in _SQL_COLUMNS.items():
        for k, (value, plain) in enumerate(_SQL_VALUES):
            oracle = oracles[0] if value == "NULL" else oracles[2] if plain else oracles[1]
            name = f"sql-{table[-7:].lower()}-{col}-{k}"
            if not keep(name):
                continue
            path = _sqlite_case(folder, name, [f'UPDATE "{table}" SET "{col}" = {value} WHERE rowid = {_SQL_ROW[table]}'])
            cases.append((name, "trace", [str(path), *_RANGES], oracle))
            if table.endswith("KERNEL") and k % 3 == 0:  # the kernels mode reads the kernel table alone
                kernel_oracle = oracle if col != "correlationId" and col != "globalPid" else (
                    "refuse" if oracle == "refuse" else "ok")
                cases.append((name + "-kernels", "trace", [str(path), "--kernels"], kernel_oracle))
    structural = {
        "view-nvtx-1e10": (["ALTER TABLE NVTX_EVENTS RENAME TO nvtx_real", f"CREATE VIEW NVTX_EVENTS AS {_BOMB_VIEW}"],
                           "refuse"),
        "view-kernel": (["ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k_real",
                         "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k_real"], "refuse"),
        "view-unrelated-1e10": ([f"CREATE VIEW other_rows AS {_BOMB_VIEW}"], "same"),
        "trigger-insert": (["CREATE TRIGGER t AFTER INSERT ON NVTX_EVENTS BEGIN DELETE FROM NVTX_EVENTS; END"],
                           "same"),
        "trigger-update": (["CREATE TRIGGER t2 AFTER UPDATE ON StringIds BEGIN DELETE FROM StringIds; END"], "same"),
        "virtual-strings": (["ALTER TABLE StringIds RENAME TO s_real",
                             "CREATE VIRTUAL TABLE StringIds USING fts4(id, value)",
                             "INSERT INTO StringIds SELECT id, value FROM s_real"], "refuse"),
        "drop-runtime": (["DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME"], "refuse"),
        "drop-nvtx": (["DROP TABLE NVTX_EVENTS"], "refuse"),
        "drop-kernel": (["DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL"], "refuse"),
        "empty-kernel": (["DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL"], "refuse"),
        "kernel-5s-early": ([f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start - 5000000000 WHERE rowid = "
                             f"{_SQL_ROW['CUPTI_ACTIVITY_KIND_KERNEL']}"], "refuse"),
        "kernel-ends-first": ([f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1 WHERE rowid = "
                               f"{_SQL_ROW['CUPTI_ACTIVITY_KIND_KERNEL']}"], "refuse"),
        "name-20mb-x-all": (["INSERT INTO StringIds VALUES (999999, printf('%.*c', 20000000, 'k'))",
                             "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999999"], "refuse"),
        "nvtx-text-20mb": ([f"UPDATE NVTX_EVENTS SET text = printf('%.*c', 20000000, 's') WHERE rowid = "
                            f"{_SQL_ROW['NVTX_EVENTS']}"], "refuse"),
        "device-1e4": (["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 10000"], "refuse"),
        "column-missing": (["ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN deviceId"], "refuse"),
    }
    for name, (sql, oracle) in structural.items():
        if not keep(name):
            continue
        try:
            path = _sqlite_case(folder, name, sql)
        except Exception as exc:  # noqa: BLE001 - this SQLite lacks the feature: the case is left out
            print(f"capture campaign: case {name} left out ({exc})", file=sys.stderr)
            continue
        cases.append((name, "trace", [str(path), *_RANGES], oracle))
        if name in ("view-kernel", "name-20mb-x-all", "device-1e4", "kernel-ends-first"):
            cases.append((name + "-kernels", "trace", [str(path), "--kernels"], oracle))
    return cases


def _kineto_doc() -> dict:
    import gzip

    return json.loads(gzip.decompress((_CAPTURE / _KINETO_BASE).read_bytes()))


def _first(doc: dict, cats: tuple[str, ...]) -> dict:
    return next(ev for ev in doc["traceEvents"] if isinstance(ev, dict) and ev.get("ph") == "X"
                and str(ev.get("cat", "")).lower() in cats)


#: JSON literals for the field mutations, with whether each is a plain integer and a finite number.
_JSON_LITERALS = ["NaN", "Infinity", "-Infinity", "1180591620717411303424", "1" * 5000, "true", "null", '"7"',
                  "1.5", "-1", "1e300", "9.2e15", "[]", "{}"]


def _json_cases(folder: Path, keep: Callable[[str], bool] = _keep_all) -> list[tuple[str, str, list[str], str]]:
    """(name, kind, argv, oracle) of the Kineto JSON mutations (the field ones and the large ones as ``keep`` says)."""
    import gzip
    import zlib

    cases: list[tuple[str, str, list[str], str]] = []
    fields = {("kernel",): ["ts", "dur", "args.correlation", "args.device", "pid"],
              ("cuda_runtime", "cuda_driver", "runtime"): ["ts", "dur", "args.correlation"],
              ("user_annotation",): ["ts", "dur"]}

    def oracle(cat: str, field: str, literal: str, has_device: bool) -> str:
        if literal == "1" * 5000:
            return "refuse"  # refused as it is parsed, whatever the field
        if field == "pid" and has_device:
            return "ok"  # args.device names the device; the pid is not read
        if literal == "null":  # an absent value: the field's default (device 0, no correlation)
            return "refuse" if field in ("ts", "dur") else "ok"
        if field == "args.correlation":
            return "ok" if literal in ("-1", "9.2e15") else "refuse"  # an integral id, matching no launch
        if field in ("args.device", "pid"):
            return "refuse"
        if field == "ts" and literal in ("-1", "1.5"):
            # times count from the trace's first event; a kernel then starts long before its launch
            return "refuse" if cat == "kernel" else "ok"
        if field == "dur" and literal == "1.5":
            return "ok"  # 1.5 us is a duration
        return "refuse"

    for cats, names in fields.items():
        for field in names:
            for k, literal in enumerate(_JSON_LITERALS):
                if not keep(f"json-{cats[0]}-{field}-{k}"):
                    continue
                doc = _kineto_doc()
                ev = _first(doc, cats)
                marker = "__FUZZ_VALUE__"
                if field.startswith("args."):
                    ev.setdefault("args", {})[field[5:]] = marker
                else:
                    ev[field] = marker
                text = json.dumps(doc).replace(f'"{marker}"', literal)
                name = f"json-{cats[0]}-{field}-{k}"
                path = folder / f"{name}.json"
                path.write_text(text)
                want = oracle(cats[0], field, literal, "device" in (ev.get("args") or {}))
                cases.append((name, "trace", [str(path), *_RANGES], want))
    if not keep("json-large"):
        return cases
    # nesting, size and encoding
    deep = '{"traceEvents": [' + "[" * 200_000 + "]" * 200_000 + "]}"
    (folder / "deep.json").write_text(deep)
    cases.append(("json-deep-200k", "trace", [str(folder / "deep.json"), *_RANGES], "refuse"))
    (folder / "deep.json.gz").write_bytes(gzip.compress(deep.encode()))
    cases.append(("json-deep-gz", "trace", [str(folder / "deep.json.gz"), *_RANGES], "refuse"))
    for depth in (60, 70):
        doc = _kineto_doc()
        nest: object = 1
        for _ in range(depth):
            nest = [nest]
        _first(doc, ("kernel",))["args"]["nested"] = nest
        (folder / f"nest{depth}.json").write_text(json.dumps(doc))
        cases.append((f"json-nest-{depth}", "trace", [str(folder / f"nest{depth}.json"), *_RANGES],
                      "same" if depth + 4 <= 64 else "refuse"))
    bomb = folder / "bomb.json.gz"
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(bomb, "wb") as fh:
        fh.write(comp.compress(b'{"traceEvents": ['))
        block = b" " * (1 << 20)
        for _ in range(4096):  # 4 GiB of spaces inflated, about 4 MB on disk
            fh.write(comp.compress(block))
        fh.write(comp.compress(b"]}") + comp.flush())
    cases.append(("json-gzip-bomb-4g", "trace", [str(bomb), *_RANGES], "refuse"))
    (folder / "dicts.json").write_text('{"traceEvents": [' + "{}," * 16_000_000 + "{}]}")
    cases.append(("json-16m-empty-objects", "trace", [str(folder / "dicts.json"), *_RANGES], "refuse"))
    doc = _kineto_doc()
    for ev in doc["traceEvents"]:
        if isinstance(ev, dict) and str(ev.get("cat", "")).lower() == "kernel":
            ev["name"] = "k" * 20_000_000
            break
    (folder / "longname.json").write_text(json.dumps(doc))
    cases.append(("json-name-20mb", "trace", [str(folder / "longname.json"), "--kernels"], "refuse"))
    doc = _kineto_doc()
    _first(doc, ("user_annotation",))["name"] = "__SURROGATE__"
    (folder / "surrogate.json").write_text(json.dumps(doc).replace('"__SURROGATE__"', '"a\\ud800b"'))
    cases.append(("json-lone-surrogate", "trace", [str(folder / "surrogate.json"), *_RANGES], "refuse"))
    doc = _kineto_doc()
    launch = _first(doc, ("cuda_runtime", "cuda_driver", "runtime"))
    corr = launch["args"]["correlation"]
    for ev in doc["traceEvents"]:
        if isinstance(ev, dict) and str(ev.get("cat", "")).lower() == "kernel" and \
                (ev.get("args") or {}).get("correlation") == corr:
            ev["ts"] = launch["ts"] - 5_000_000  # 5 s before its launch
    (folder / "early.json").write_text(json.dumps(doc))
    cases.append(("json-kernel-5s-early", "trace", [str(folder / "early.json"), *_RANGES], "refuse"))
    (folder / "bad-utf8.json").write_bytes(b'{"traceEvents": [{"name": "\xff\xfe"}]}')
    cases.append(("json-bad-utf8", "trace", [str(folder / "bad-utf8.json"), *_RANGES], "refuse"))
    (folder / "plain.json").write_text(json.dumps(_kineto_doc()))
    cases.append(("json-plain-same", "trace", [str(folder / "plain.json"), *_RANGES], "same"))
    cases.append(("json-plain-kernels", "trace", [str(folder / "plain.json"), "--kernels"], "ok"))
    sparse = folder / "sparse-2g.json"
    with open(sparse, "wb") as fh:
        fh.write(b'{"traceEvents": [')
        fh.truncate(2**31 + 10)  # a 2 GiB file of NUL bytes, sparse on disk: refused by its size
    cases.append(("json-over-input-cap", "trace", [str(sparse), *_RANGES], "refuse"))
    return cases


def _ckpt_cases(folder: Path, keep: Callable[[str], bool] = _keep_all) -> list[tuple[str, str, list[str], str]]:
    """(name, kind, argv, oracle) of the Model Analyzer checkpoint mutations."""
    import shutil

    conc, solo = _CAPTURE / _CKPT_CONC, _CAPTURE / _CKPT_SOLO
    cases: list[tuple[str, str, list[str], str]] = []
    base = json.loads(conc.read_text())

    def members(doc: dict) -> list[tuple[dict, dict]]:
        out = []
        for variants in doc["ResultManager.results"]["_results"].values():
            for pair in variants.values():
                run_config, measurements = pair
                for meas in measurements.values():
                    for cfg, mem in zip(run_config["_model_run_configs"], meas["_model_config_measurements"]):
                        out.append((cfg, mem))
        return out

    def write(name: str, doc: dict, marker_value: str | None = None) -> Path:
        path = folder / f"{name}.ckpt"
        text = json.dumps(doc)
        if marker_value is not None:
            text = text.replace('"__FUZZ_VALUE__"', marker_value)
        path.write_text(text)
        return path

    literals = ["Infinity", "NaN", "1.5", "true", '"8"', "-1", "0", "1180591620717411303424", "null", "1e308",
                "[]"]
    # which member: the first one of a concurrent run (it is matched with a solo measurement)
    for field in ("batch-size", "concurrency-range", "count", "maxBatchSize", "latency"):
        for k, literal in enumerate(literals):
            doc = json.loads(json.dumps(base))
            pairs = members(doc)
            cfg, mem = pairs[-1]
            if field in ("batch-size", "concurrency-range"):
                mem["_model_specific_pa_params"][field] = "__FUZZ_VALUE__"
            elif field in ("count", "maxBatchSize"):  # where the reader looks: the variant's config first
                mc = (cfg.get("_model_config_variant") or {}).get("model_config") or cfg.get("_model_config")
                if field == "count":
                    mc["instanceGroup"] = [{"count": "__FUZZ_VALUE__", "kind": "KIND_GPU"}]
                else:
                    mc["maxBatchSize"] = "__FUZZ_VALUE__"
            else:
                for item in mem["_non_gpu_data"]:
                    if item[0] == "perf_latency_avg":
                        item[1]["_value"] = "__FUZZ_VALUE__"
            name = f"ckpt-{field}-{k}"
            path = write(name, doc, literal)
            oracle = "refuse"
            if field == "maxBatchSize" and literal == "0":
                oracle = "any"  # maxBatchSize 0 is Triton's "no batching": legal, but then no solo matches
            if field == "latency" and literal == "1.5":
                oracle = "ok"  # 1.5 ms is a latency
            cases.append((name, "measurements", [str(path), str(solo)], oracle))
    for name, value in (("gpus-list", ["GPU-1"]), ("gpus-string", "NVIDIA L4"), ("gpus-number", 7)):
        doc = json.loads(json.dumps(base))
        doc["MetricsManager.gpus"] = value
        cases.append((f"ckpt-{name}", "measurements", [str(write(name, doc)), str(solo)], "refuse"))
    doc = json.loads(json.dumps(base))
    doc["MetricsManager.gpus"] = {}
    cases.append(("ckpt-gpus-empty", "measurements", [str(write("gpus-empty", doc)), str(solo)], "any"))
    # duplicates and conflicts
    cases.append(("ckpt-same-file-twice", "measurements", [str(conc), str(solo), str(solo)], "same"))
    cases.append(("ckpt-conc-twice", "measurements", [str(conc), str(conc), str(solo)], "same"))
    copy = folder / "solo-copy.ckpt"
    shutil.copyfile(solo, copy)
    cases.append(("ckpt-identical-copy", "measurements", [str(conc), str(solo), str(copy)], "same"))
    conflict = json.loads(solo.read_text())
    for _cfg, mem in members(conflict):
        for item in mem["_non_gpu_data"]:
            if item[0] == "perf_latency_avg":
                item[1]["_value"] = item[1]["_value"] * 100
    cases.append(("ckpt-solo-100x", "measurements", [str(conc), str(solo), str(write("solo100", conflict))],
                  "refuse"))
    other = json.loads(json.dumps(base))
    for _cfg, mem in members(other):
        for item in mem["_non_gpu_data"]:
            if item[0] == "perf_latency_avg":
                item[1]["_value"] = item[1]["_value"] * 2
    cases.append(("ckpt-run-repeated", "measurements", [str(conc), str(write("conc2x", other)), str(solo)],
                  "refuse"))
    deep = '{"ResultManager.results": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (folder / "deep.ckpt").write_text(deep)
    cases.append(("ckpt-deep", "measurements", [str(folder / "deep.ckpt"), str(solo)], "refuse"))
    sparse = folder / "sparse.ckpt"
    with open(sparse, "wb") as fh:
        fh.write(b"{")
        fh.truncate(2**31 + 10)
    cases.append(("ckpt-over-input-cap", "measurements", [str(sparse), str(solo)], "refuse"))
    digits = json.loads(json.dumps(base))
    members(digits)[0][1]["_model_specific_pa_params"]["batch-size"] = "__FUZZ_VALUE__"
    cases.append(("ckpt-5000-digits", "measurements", [str(write("digits", digits, "9" * 5000)), str(solo)],
                  "refuse"))
    return cases


def _cli_arg_cases(folder: Path, keep: Callable[[str], bool] = _keep_all) -> list[tuple[str, str, list[str], str]]:
    """(name, kind, argv, oracle) of hostile command-line arguments on the real captures."""
    nsys, kineto = str(_CAPTURE / _NSYS_BASE), str(_CAPTURE / _KINETO_BASE)
    conc, solo = str(_CAPTURE / _CKPT_CONC), str(_CAPTURE / _CKPT_SOLO)
    import sqlite3

    sup = folder / "superscript.sqlite"
    import shutil

    shutil.copyfile(nsys, sup)
    con = sqlite3.connect(sup)
    con.execute("UPDATE NVTX_EVENTS SET text = 'resnet50:' || char(178) WHERE text LIKE 'saxpy%'")
    con.commit()
    con.close()
    cases = [
        ("arg-gpu-newline", "measurements", [conc, solo, "--gpu", "L4\nx"], "refuse"),
        ("arg-gpu-empty", "measurements", [conc, solo, "--gpu", ""], "refuse"),
        ("arg-gpu-ok", "measurements", [conc, solo, "--gpu", "NVIDIA L4"], "ok"),
        ("arg-latency-bad", "measurements", [conc, solo, "--latency", "p50"], "refuse"),
        ("arg-pattern-superscript", "trace", [str(sup), "--name-pattern", "{model}:{batch}"], "refuse"),
        ("arg-pattern-default-superscript", "trace", [str(sup)], "refuse"),
        ("arg-pattern-empty", "trace", [nsys, "--name-pattern", ""], "refuse"),
        ("arg-pattern-long", "trace", [nsys, "--name-pattern", "{model}" + "*" * 5000], "refuse"),
        ("arg-batch-negative", "trace", [nsys, "--name-pattern", "{model}", "--batch-size", "-3"], "refuse"),
        ("arg-batch-huge", "trace", [nsys, "--kernels", "--batch-size", str(2**70)], "refuse"),
        ("arg-kernels-ok", "trace", [kineto, "--kernels"], "ok"),
        ("arg-missing-file", "trace", [str(folder / "nope.sqlite"), *_RANGES], "refuse"),
        ("arg-folder-as-file", "trace", [str(folder), *_RANGES], "refuse"),
        ("arg-fifo", "trace", ["/dev/zero", *_RANGES], "refuse"),
    ]
    for n in (240, 250, 255):
        cases.append((f"arg-out-name-{n}", "trace", [nsys, *_RANGES, "--out-name", "o" * (n - 4) + ".csv"], "same"))
    cases.append(("arg-out-name-256", "trace", [nsys, *_RANGES, "--out-name", "o" * 252 + ".csv"], "refuse"))
    cases.append(("arg-out-exists-bomb", "trace", [str(folder / "view-nvtx-1e10.sqlite"), *_RANGES,
                                                    "--out-exists"], "refuse"))
    cases.append(("arg-out-missing-folder", "trace", [nsys, *_RANGES, "--out-name", "no/such/dir.csv"], "refuse"))
    cases.append(("arg-fit-predictor-empty", "fit", ["--predictor", ""], "refuse"))
    cases.append(("arg-fit-predictor-newline", "fit", ["--predictor", "rls\n"], "refuse"))
    cases.append(("arg-ingest-filter-bytes", "ingest", ["--example", "--kernel-filter", "\udcff\udcfe"], "refuse"))
    return cases


def _random_capture_cases(folder: Path, rng: random.Random, n: int) -> list[tuple[str, str, list[str], str]]:
    """``n`` random byte mutations of the three kinds of capture (oracle "any")."""
    cases: list[tuple[str, str, list[str], str]] = []
    nsys = (_CAPTURE / _NSYS_BASE).read_bytes()
    kineto = json.dumps(_kineto_doc()).encode()
    ckpt = (_CAPTURE / _CKPT_CONC).read_bytes()
    for i in range(n):
        kind = i % 3
        if kind == 0:  # overwrite a few bytes past the header (the page contents, the schema)
            buf = bytearray(nsys)
            for _ in range(rng.randint(1, 6)):
                at = rng.randrange(100, len(buf))
                blob = rng.choice(TOKENS)[:64] if rng.random() < 0.5 else bytes(rng.randrange(256)
                                                                                for _ in range(rng.randint(1, 8)))
                buf[at:at + len(blob)] = blob
            path = folder / f"rand{i}.sqlite"
            path.write_bytes(bytes(buf[:len(nsys)]))
            cases.append((f"rand-sqlite-{i}", "trace", [str(path), *_RANGES], "any"))
        elif kind == 1:
            path = folder / f"rand{i}.json"
            path.write_bytes(mutate(kineto, rng))
            cases.append((f"rand-json-{i}", "trace", [str(path), *_RANGES], "any"))
        else:
            path = folder / f"rand{i}.ckpt"
            path.write_bytes(mutate(ckpt, rng))
            cases.append((f"rand-ckpt-{i}", "measurements", [str(path), str(_CAPTURE / _CKPT_SOLO)], "any"))
    return cases


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to exist
        return False


def _check_output(kind: str, out: Path, base_rows: int | None) -> str | None:
    """Why the written ``out`` is wrong (None when it passes the output check)."""
    import re

    from interfpred.constants import CAPTURE_DEVICE_ID_MAX, TIME_HORIZON_MS
    from interfpred.data.columnar import read_measurements, read_trace
    from interfpred.errors import InterfpredError

    if not _exists(out):
        return "exit 0 but no output written"
    try:
        table = read_trace(out) if kind == "trace" else read_measurements(out)
    except InterfpredError as exc:
        return f"the output does not read back: {exc}"
    if kind == "trace":
        for d in set(table.device.tolist()):
            m = re.fullmatch(r"gpu(\d{1,4})", str(d))
            if m is None or int(m.group(1)) > CAPTURE_DEVICE_ID_MAX:
                return f"device {d!r}"
        if len(table) and not (np.abs(table.start_ms).max() <= TIME_HORIZON_MS
                               and np.abs(table.end_ms).max() <= TIME_HORIZON_MS):
            return "a time beyond the horizon"
        if np.any(table.end_ms < table.start_ms):
            return "an execution ending before its start"
        if base_rows is not None and len(table) > base_rows:
            return f"{len(table)} executions, more than the unmutated capture's {base_rows}"
    else:
        for col in ("solo_ms", "observed_ms"):
            v = np.asarray(getattr(table, col), dtype=float)
            if not np.all(np.isfinite(v) & (v > 0) & (v <= TIME_HORIZON_MS)):
                return f"{col} out of range"
    if np.any(np.asarray(table.batch_size) < 1):
        return "a batch size below 1"
    return None


_MEMORY_CAP_KB = 2**20  # 1 GiB, the promise for inputs under 64 MB
_INPUT_SMALL = 64 * 2**20


def _run_child(argv: list[str], cwd: Path, env: dict, seconds: float) -> tuple[int | None, str, int]:
    """(exit status or None on a hang, stderr, peak resident KB) of ``python -m interfpred argv``."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "interfpred", *argv], cwd=cwd, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(seconds, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        hung = not timer.is_alive() and proc.returncode == -signal.SIGKILL
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    return (None if hung else proc.returncode), text, int(usage.ru_maxrss)


def capture_campaign(n: int = 500, seed: int = 0, time_limit: float = 60.0, jobs: int = 2, progress: bool = False,
                     only: tuple[str, ...] = ()) -> dict[str, object]:
    """Run the hostile capture cases (at least ``n``: random mutations fill up to it) through the CLI.

    Returns the counts by outcome, the failures (with their reasons) and the peak memory.
    ``only`` keeps the cases of those names (for the test suite).
    """
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    env.pop("INTERFPRED_INPUT_MAX_BYTES", None)
    counts = {k: 0 for k in ("cases", "refused", "ok", "traceback", "hang", "silent_wrong", "exit0_garbage",
                             "not_one_line", "false_refusal", "over_memory")}
    failures: list[str] = []
    peak = [0, ""]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        def keep(name: str) -> bool:
            return not only or name in only

        cases = [c for build in (_sqlite_cases, _json_cases, _ckpt_cases, _cli_arg_cases) for c in build(folder, keep)
                 if keep(c[0])]
        if only:
            pass
        else:
            cases += _random_capture_cases(folder, rng, max(0, n - len(cases)))
        base_out: dict[str, bytes] = {}
        for kind, argv in (("trace", [str(_CAPTURE / _NSYS_BASE), *_RANGES]),
                           ("trace-json", [str(_CAPTURE / _KINETO_BASE), *_RANGES]),
                           ("measurements", [str(_CAPTURE / _CKPT_CONC), str(_CAPTURE / _CKPT_SOLO)])):
            out = folder / f"base-{kind}.csv"
            cmd = "ingest-measurements" if kind == "measurements" else "ingest-trace"
            subprocess.run([sys.executable, "-m", "interfpred", cmd, *argv, "--out", str(out)], env=env, cwd=folder,
                           check=True, capture_output=True)
            base_out[kind] = out.read_bytes()
        base_rows = {k: v.count(b"\n") - 1 for k, v in base_out.items()}

        def run(case: tuple[str, str, list[str], str]) -> tuple[str, str, str, int]:
            name, kind, argv, oracle = case
            work = folder / f"run-{name}"
            work.mkdir()
            argv = list(argv)
            out = work / "out.csv"
            if "--out-name" in argv:
                i = argv.index("--out-name")
                out = work / argv[i + 1]
                del argv[i:i + 2]
            if "--out-exists" in argv:
                argv.remove("--out-exists")
                out.write_text("keep me\n")
            if kind == "fit":  # on the measurements the real checkpoints give
                full = ["fit", *argv, "--measurements", str(folder / "base-measurements.csv"), "--out",
                        str(work / "m.json")]
            elif kind == "ingest":
                full = ["ingest", *argv]
            else:
                full = ["ingest-trace" if kind == "trace" else "ingest-measurements", *argv, "--out", str(out)]
            size = max((Path(a).stat().st_size for a in argv if os.path.isfile(a)), default=0)
            rc, err, rss = _run_child(full, work, env, time_limit)
            base_kind = "measurements" if kind == "measurements" else \
                ("trace-json" if any(a.endswith((".json", ".json.gz")) for a in argv) else "trace")
            reason = ""
            lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("example:", "wrote"))
                     and ": Nsight Systems export" not in ln and ": PyTorch profiler trace" not in ln
                     and ": NVIDIA" not in ln and not ln.startswith("interfpred: warning:")]
            if rc is None:
                outcome, reason = "hang", f"no exit within {time_limit} s"
            elif "Traceback" in err or "internal error" in err or rc not in (0, 2):
                outcome, reason = "traceback", f"rc {rc}: {err.strip()[-400:]}"
            elif rc == 2:
                if len(lines) != 1:
                    outcome, reason = "not_one_line", err.strip()[-400:]
                elif oracle in ("same", "ok"):
                    outcome, reason = "false_refusal", lines[0][:300]
                else:
                    outcome, reason = "refused", lines[0][:300]
                if _exists(out) and "--out-exists" not in case[2] and outcome == "refused" and kind != "fit":
                    outcome, reason = "silent_wrong", "refused but wrote --out"
                if "--out-exists" in case[2] and out.read_text() != "keep me\n":
                    outcome, reason = "silent_wrong", "replaced the existing --out"
            elif oracle == "refuse":
                outcome, reason = "exit0_garbage", "exit 0"
            elif kind in ("fit", "ingest"):
                outcome = "ok"
            else:
                # a random byte can move a range's end over more launches: the row cap is for crafted cases
                ranges = kind == "trace" and "--kernels" not in argv and not name.startswith("rand-")
                why = _check_output(kind, out, base_rows.get(base_kind) if ranges else None)
                if why is None and oracle == "same" and out.read_bytes() != base_out[base_kind]:
                    why = "the output differs from the unmutated capture's"
                outcome, reason = ("silent_wrong", why) if why else ("ok", "")
            if size < _INPUT_SMALL and rss > _MEMORY_CAP_KB:
                counts["over_memory"] += 1
                failures.append(f"over_memory {name}: {rss / 1024:.0f} MB")
            return name, outcome, reason, rss

        with ThreadPoolExecutor(jobs) as pool:
            for i, (name, outcome, reason, rss) in enumerate(pool.map(run, cases)):
                counts["cases"] += 1
                counts[outcome] += 1
                if rss > peak[0]:
                    peak[:] = [rss, name]
                if outcome not in ("ok", "refused"):
                    failures.append(f"{outcome} {name}: {reason}")
                if progress:
                    print(f"{i + 1}/{len(cases)} {outcome} {name} {rss // 1024} MB {reason[:140]}", flush=True)
    classes: dict[str, int] = {}
    for c in cases:
        cls = c[0].split("-")[0]
        classes[cls] = classes.get(cls, 0) + 1
    return {"counts": counts, "failures": failures, "peak_mb": peak[0] / 1024, "peak_case": peak[1],
            "classes": classes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20_000, help="mutated files to read (default 20000)")
    ap.add_argument("--kills", type=int, default=50, help="kill -9 trials of a folder write (default 50)")
    ap.add_argument("--hammer-seconds", type=float, default=30.0, help="seconds of the thread hammer (default 30)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parquet", type=int, default=300, help="crafted Parquet files (default 300)")
    ap.add_argument("--differential", type=int, default=2000, help="trace CSVs read by both readers (default 2000)")
    ap.add_argument("--models", type=int, default=500, help="semantically mutated model files (default 500)")
    ap.add_argument("--fleet", type=int, default=2000, help="random Fleet calls (default 2000)")
    ap.add_argument("--cli", type=int, default=0, help="crafted cases run through python -m interfpred (default 0)")
    ap.add_argument("--subprocesses", type=int, default=None,
                    help="of the --cli cases, how many run as child processes (default all; the rest call "
                         "interfpred.cli.main in this process)")
    ap.add_argument("--jobs", type=int, default=2, help="console-script runs at once (default 2)")
    ap.add_argument("--only-cli", action="store_true", help="run only the console-script campaign")
    ap.add_argument("--captures", type=int, default=0,
                    help="hostile capture cases run through ingest-trace / ingest-measurements (at least the "
                         "crafted ones, about 330; random mutations fill up to this; default 0)")
    ap.add_argument("--only-captures", action="store_true", help="run only the capture campaign")
    args = ap.parse_args(argv)
    failures: list[str] = []
    if args.captures:
        t = time.perf_counter()
        res = capture_campaign(args.captures, args.seed, jobs=args.jobs, progress=True)
        counts = res["counts"]
        print(f"captures: {counts['cases']} cases in {time.perf_counter() - t:.0f} s by class {res['classes']}: "
              + ", ".join(f"{k} {v}" for k, v in counts.items() if k != "cases")
              + f"; peak memory {res['peak_mb']:.0f} MB ({res['peak_case']})")
        failures += list(res["failures"])
        if args.only_captures:
            for f in failures[:40]:
                print("FAIL", f, file=sys.stderr)
            return 1 if failures else 0
    if args.cli:
        t = time.perf_counter()
        res = cli_campaign(args.cli, args.seed, jobs=args.jobs, progress=True, subprocesses=args.subprocesses)
        print(f"cli: {args.cli} cases in {time.perf_counter() - t:.0f} s: "
              + ", ".join(f"{k} {len(v)}" for k, v in res.items()))
        failures += res["traceback"] + res["hang"] + res["silent"] + res["not_one_line"]
        if args.only_cli:
            for f in failures[:20]:
                print("FAIL", f, file=sys.stderr)
            return 1 if failures else 0
    for label, fn, count in (("parquet", fuzz_parquet, args.parquet), ("differential", differential_traces,
                                                                       args.differential),
                             ("models", fuzz_models, args.models), ("fleet", fuzz_fleet, args.fleet)):
        t = time.perf_counter()
        got = fn(count, args.seed)
        print(f"{label}: {count} inputs in {time.perf_counter() - t:.0f} s, {len(got)} failures")
        failures += got
    t = time.perf_counter()
    failures += fuzz_files(args.files, args.seed)
    print(f"files: {args.files} mutated inputs read in {time.perf_counter() - t:.0f} s, {len(failures)} failures")
    t = time.perf_counter()
    kf = kill_trials(args.kills, args.seed)
    print(f"kill: {args.kills} trials in {time.perf_counter() - t:.0f} s, {len(kf)} failures")
    t = time.perf_counter()
    hf = hammer(args.hammer_seconds, args.threads, args.seed)
    print(f"hammer: {args.threads} threads for {args.hammer_seconds:g} s, {len(hf)} failures")
    failures += kf + hf
    for f in failures[:10]:
        print("FAIL", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
