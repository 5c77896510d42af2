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
            if "Traceback" in err:
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
    args = ap.parse_args(argv)
    failures: list[str] = []
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
