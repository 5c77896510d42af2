"""Cold numba compile time of ``interfpred reproduce --quick``: in total and per kernel, beside a base checkout.

A fresh install compiles every kernel on first use. This runs ``reproduce(quick=True)`` at a small
size (``--executions``, default 400: the kernels and their argument types are those of the full
quick run, the simulation and the fits are shorter) in a new process whose numba cache folder
(``NUMBA_CACHE_DIR``) is a new empty temporary folder, and times every compile numba does
(``numba.core.dispatcher.Dispatcher.compile``, inclusive of the kernels compiled inside it). It
prints the run's wall time, the total of the top-level compiles and the kernels that took longest
with how many times numba was asked to compile each (a repeat of a signature already compiled
costs nothing; a second signature compiles the kernel again).

``--base DIR`` runs the same measurement with the interfpred of DIR (an export of another commit,
e.g. ``git archive HEAD~3 | tar -x -C /tmp/base``) in its own process beside this checkout's, and
prints each figure's ratio to the base (base / this checkout: above 1 is faster here). Compile
times move with the machine's load: run both when the machine is otherwise idle, or repeat.

Run from the repository root: ``python benchmarks/bench_compile.py [--base DIR] [--executions N] [--top K]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The child: patch numba's compile to time it, run reproduce --quick, print JSON on the last line.
_CHILD = r"""
import collections, json, sys, time
import numba.core.dispatcher as d

times = collections.defaultdict(float)
counts = collections.Counter()
depth = [0]
top = [0.0]
orig = d.Dispatcher.compile

def timed(self, sig):
    t = time.perf_counter()
    depth[0] += 1
    try:
        return orig(self, sig)
    finally:
        depth[0] -= 1
        dt = time.perf_counter() - t
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        times[name] += dt
        counts[name] += 1
        if depth[0] == 0:
            top[0] += dt

d.Dispatcher.compile = timed
from interfpred.experiments.reproduce import reproduce

t = time.perf_counter()
reproduce(sys.argv[1], quick=True, executions=int(sys.argv[2]), force=True)
wall = time.perf_counter() - t
print(json.dumps({"wall_s": wall, "compile_s": top[0], "kernels": {k: [v, counts[k]] for k, v in times.items()}}))
"""


def measure(code: str, executions: int) -> dict:
    """One cold run of reproduce --quick importing interfpred from ``code``: wall, compile and per-kernel times."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"), PYTHONPATH=code)
        proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(tmp, "out"), str(executions)], cwd=code,
                              env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the cold run in {code} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a checkout (or export) of another commit to measure beside this one")
    ap.add_argument("--executions", type=int, default=400, help="executions per simulated trace (default 400)")
    ap.add_argument("--top", type=int, default=15, help="how many kernels to list (default 15)")
    args = ap.parse_args()
    here = measure(ROOT, args.executions)
    base = measure(os.path.abspath(args.base), args.executions) if args.base else None

    def ratio(b: float | None, h: float) -> str:
        return "" if b is None or h <= 0 else f"  x{b / h:5.2f}"

    head = f"{'base s':>8}{'count':>6}  base / here" if base else ""
    print(f"cold reproduce --quick, {args.executions} executions per trace, empty numba cache")
    print(f"{'':<62}{'here s':>8}{'count':>6}{head}")
    for label, key in (("wall time of the run", "wall_s"), ("compile time (top-level compiles)", "compile_s")):
        b = base[key] if base else None
        print(f"{label:<62}{here[key]:8.2f}{'':>6}" + (f"{b:8.2f}{'':>6}{ratio(b, here[key])}" if base else ""))
    kernels = [here["kernels"]] + ([base["kernels"]] if base else [])
    names = sorted({k for ks in kernels for k in ks}, key=lambda k: -max(ks.get(k, [0.0])[0] for ks in kernels))

    def cell(ks: dict, name: str) -> str:
        return f"{ks[name][0]:8.2f}{ks[name][1]:6d}" if name in ks else f"{'-':>8}{'':6}"

    for name in names[: args.top]:
        line = f"{name[-62:]:<62}{cell(here['kernels'], name)}"
        if base:
            line += cell(base["kernels"], name)
            if name in here["kernels"] and name in base["kernels"]:
                line += ratio(base["kernels"][name][0], here["kernels"][name][0])
        print(line)
    print("(a kernel's time includes the kernels compiled inside it; count: compiles asked, repeats included;"
          " '-': not compiled in that checkout)")


if __name__ == "__main__":
    main()
