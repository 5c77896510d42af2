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
    (folder / "manifest.csv").write_text("file,gpu,model,batch_size,iterations\nrun.csv,l4,vgg19,8,10\n")
    return {"trace": folder / "sim" / "trace.csv", "profiles": folder / "sim" / "profiles.csv",
            "manifest": folder / "manifest.csv", "model": folder / "model.json", "predictor": folder / "sgd.json"}


def readers() -> dict[str, Callable[[Path], object]]:
    """Reader of each file kind (what ``interfpred`` calls on a user's file)."""
    from interfpred import ProfileTable, Trace, load_model, load_predictor
    from interfpred.data.ingest import read_manifest

    return {"trace": Trace.from_csv, "profiles": ProfileTable.from_csv, "manifest": read_manifest,
            "model": load_model, "predictor": load_predictor}


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20_000, help="mutated files to read (default 20000)")
    ap.add_argument("--kills", type=int, default=50, help="kill -9 trials of a folder write (default 50)")
    ap.add_argument("--hammer-seconds", type=float, default=30.0, help="seconds of the thread hammer (default 30)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    failures: list[str] = []
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
