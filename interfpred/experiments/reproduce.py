"""``interfpred reproduce``: run the experiments in order and write report.md and results.json.

The sections run are :data:`DEFAULT_SECTIONS`, a list of functions ``f(ctx) -> Section``: E1 and
E2 (the paper's experiments), E3 (SLO-aware scheduling), E4 (accuracy on real measured pairs,
beside the baselines), the coverage of calibrated latency bounds (on the simulated E2 sets
and on the real E4 pairs), E5 (N processes of one model in one MIG instance, on real A100
profiles) and E6 (real spatial sharing on an H200); another experiment joins the report
by appending its function there. Everything is written into a
temporary folder beside ``out_dir`` which is renamed at the end, so ``out_dir`` never holds a
half-written report.

``jobs`` > 1 spreads the work over that many worker processes: every plain section is one
piece, and a :class:`~interfpred.experiments.report.SplitSection` (E4) gives several; the
longest pieces start first. Each piece computes what it computes alone, so the report's
numbers are the same for any ``jobs`` (only the runtimes differ). Workers start with Python's
``spawn`` method and share the numba cache folder (its compiles are locked between processes).

Examples
--------
>>> import pathlib, tempfile
>>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
>>> sections = reproduce(out, executions=400, sections=["e1", "e2"])     # every section: minutes
>>> [s.title for s in sections]
['E1: co-location dynamics', 'E2: workload change']
>>> sorted(p.name for p in out.iterdir() if p.suffix != ".png")
['report.md', 'results.json']
>>> [f.__name__ for f in DEFAULT_SECTIONS]
['run_e1', 'run_e2', 'run_e3', 'run_e4', 'run_coverage', 'run_e4_coverage', 'run_e5', 'run_e6']
>>> reproduce(out, executions=400, sections=["e1"])
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: ... already holds a report (report.md); pass --force (force=True) to replace it
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import platform
import queue
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interfpred._core.atomic import recover, staged_folder
from interfpred._version import __version__
from interfpred.constants import (
    REPRODUCE_MIN_EXECUTIONS,
    SIM_DEFAULT_TRUTH,
    SIM_PHASED_DEFAULT_GPU,
    SIM_TRUTHS,
)
from interfpred.errors import InterfpredError
from interfpred.experiments.bounds import run_coverage
from interfpred.experiments.bounds_real import run_e4_coverage
from interfpred.experiments.h200 import run_e6
from interfpred.experiments.mig_processes import run_e5
from interfpred.experiments.paper import run_e1, run_e2
from interfpred.experiments.real import run_e4
from interfpred.experiments.report import Part, ReproduceContext, Section, SplitSection
from interfpred.experiments.scheduling.experiment import run_e3
from interfpred.sim.contention import get_gpu_spec
from interfpred.sim.orion import default_gpu, phase_zoo

__all__ = ["DEFAULT_SECTIONS", "REPORT_FILES", "available_cores", "reproduce", "step_line"]

#: The experiments of the report, in order; each is ``f(ctx: ReproduceContext) -> Section``.
#: Append to add one.
DEFAULT_SECTIONS: list[Callable[[ReproduceContext], Section]] = [run_e1, run_e2, run_e3, run_e4, run_coverage,
                                                                    run_e4_coverage, run_e5, run_e6]
#: Files every report holds (figures come beside them).
REPORT_FILES = ("report.md", "results.json")
#: Rough seconds of each plain section in a quick run on two cores (a cold numba cache counted
#: in, since compiling dominates E1 then); only the order the pieces start in follows them.
_SECTION_COST = {"run_e1": 20.0, "run_e2": 6.0, "run_e3": 8.0, "run_coverage": 4.0, "run_e4_coverage": 19.0,
                 "run_e5": 0.1, "run_e6": 15.0}


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _check_out(out: Path, force: bool) -> None:
    if out.exists():
        if not out.is_dir():
            raise InterfpredError(f"--out {out} exists and is not a folder")
        names = os.listdir(out)
        if any(n in names for n in REPORT_FILES) and not force:
            raise InterfpredError(f"--out {out} already holds a report (report.md); "
                                  "pass --force (force=True) to replace it")
        if names and not force:
            raise InterfpredError(f"--out {out} exists and is not empty; pass --force (force=True) to replace it")
    parent = out.parent
    if not parent.is_dir():
        raise InterfpredError(f"cannot write --out {out}: its parent folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InterfpredError(f"cannot write --out {out}: no permission to create files in {parent}")


def _resolve(sections: Sequence[Callable[[ReproduceContext], Section] | str] | None) -> list[Callable]:
    if sections is None:
        return list(DEFAULT_SECTIONS)
    known = {f.__name__.removeprefix("run_"): f for f in DEFAULT_SECTIONS}
    out = []
    for s in sections:
        if callable(s):
            out.append(s)
        elif isinstance(s, str) and s.lower().removeprefix("run_") in known:
            out.append(known[s.lower().removeprefix("run_")])
        else:
            raise InterfpredError(f"unknown section {s!r}; known: {', '.join(sorted(known))}")
    if not out:
        raise InterfpredError("no section to run")
    return out


def reproduce(out_dir: str | os.PathLike[str], *, quick: bool = False, seed: int = 0, force: bool = False,
              progress: Callable[[str], None] | None = None,
              sections: Sequence[Callable[[ReproduceContext], Section] | str] | None = None,
              gpu: str | None = None, executions: int | None = None, command: str | None = None,
              truth: str = SIM_DEFAULT_TRUTH, zoo: str | None = None, jobs: int = 1) -> list[Section]:
    """Run the experiments and write ``report.md``, ``results.json`` and the figures into ``out_dir``.

    Parameters
    ----------
    out_dir
        Output folder; must not exist, or be empty, unless ``force`` (then it is replaced).
    quick
        Smaller traces (the README's first command; about a minute on two cores with ``jobs=2``).
    seed
        Seed of the simulated workloads and noise.
    force
        Replace an ``out_dir`` that already holds a report (or anything else).
    progress
        Called with a short message at the start of each long step (the CLI prints them on stderr).
    sections
        Section functions (or names such as ``"e1"``) to run instead of :data:`DEFAULT_SECTIONS`.
    gpu
        Simulated GPU preset (``v100``, ``l4``, ``a100``); None: ``v100`` under the phase-structured
        truth, ``l4`` under the fluid one.
    executions
        Executions per simulated set, overriding the size ``quick`` implies (for tests).
    command
        The command line to record in the report (the CLI passes its own).
    truth
        ``"phases"`` (operator phases and hidden per-model factors) or ``"fluid"`` (the earlier
        ground truth: one demand vector per execution, a function of its profile).
    zoo
        Model family: ``"orion"`` or ``"synthetic"`` (None: under ``truth="phases"`` orion on a
        v100, synthetic elsewhere; under ``"fluid"`` synthetic).  ``truth="fluid", zoo="orion"``
        runs the orion passes' time-averaged profiles without phases or hidden factors.
    jobs
        Worker processes to spread the sections' pieces over (1: everything in this process;
        the CLI passes :func:`available_cores`). The numbers are the same for any value.

    Returns
    -------
    list of Section
        In the order run.
    """
    out = Path(os.path.abspath(os.fspath(out_dir)))
    recover(out)  # a run killed while replacing ``out`` left it aside: put it back first
    _check_out(out, force)
    if truth not in SIM_TRUTHS:
        raise InterfpredError(f"unknown truth {truth!r}; known: {', '.join(SIM_TRUTHS)}")
    if gpu is None:
        gpu = default_gpu(truth, zoo)
    get_gpu_spec(gpu)  # an unknown preset fails here, before any work
    if truth == "phases" or zoo is not None:
        phase_zoo(gpu, zoo)  # an unknown or mismatched zoo too
    if executions is not None and (not isinstance(executions, int) or executions < REPRODUCE_MIN_EXECUTIONS):
        raise InterfpredError(f"executions {executions!r} must be an integer >= {REPRODUCE_MIN_EXECUTIONS}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InterfpredError(f"seed {seed!r} must be a non-negative integer")
    funcs = _resolve(sections)
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise InterfpredError(f"jobs {jobs!r} must be a positive integer")
    say = progress or (lambda message: None)
    t0 = time.perf_counter()
    with staged_folder(out, what="--out") as staged:
        tmp = Path(staged)
        ctx = ReproduceContext(out_dir=tmp, seed=seed, quick=quick, progress=say, gpu=gpu, executions=executions,
                               truth=truth, zoo=zoo)
        done: list[Section] = []
        if jobs == 1:
            costs = [_SECTION_COST.get(getattr(f, "__name__", ""), 1.0) for f in funcs]
            for k, f in enumerate(funcs, start=1):
                say(f"step {k} of {len(funcs)}: {getattr(f, '__name__', 'section').removeprefix('run_')}")
                t1 = time.perf_counter()
                section = f(ctx)
                section.data.setdefault("runtime_s", time.perf_counter() - t1)
                done.append(section)
                say(step_line(k, len(funcs), sum(costs[:k]), sum(costs), time.perf_counter() - t0))
        else:
            done = _run_in_workers(funcs, ctx, jobs, say)
        runtime = time.perf_counter() - t0
        if command is None:
            args = [f"{out_dir!s}"] + [f"{k}={v!r}" for k, v in (("quick", quick), ("seed", seed), ("gpu", gpu),
                                                                  ("executions", executions)) if v not in (None,)]
            command = f"python -c 'from interfpred.experiments.reproduce import reproduce; reproduce({', '.join(args)})'"
        meta = {"interfpred_version": __version__, "command": command, "seed": seed, "quick": quick, "gpu": gpu,
                "executions": executions, "truth": truth, "zoo": zoo, "python": platform.python_version(), "runtime_s": runtime,
                "generated": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
        with open(tmp / "report.md", "w", encoding="utf-8") as fh:
            fh.write(_report_markdown(done, meta))
        with open(tmp / "results.json", "w", encoding="utf-8") as fh:
            json.dump({**meta, "sections": {s.title: s.data for s in done}}, fh, indent=1, allow_nan=False,
                      default=_json_default)
            fh.write("\n")
    return done


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON-able")


def _report_markdown(sections: Sequence[Section], meta: dict) -> str:
    lines = [
        "# interfpred reproduction report",
        "",
        "E1 to E3, the experiments of Zhao & Georgantas (2026) and a scheduling study, run on interfpred's",
        "simulator (no GPU was used, none of their numbers was measured on hardware), with interfpred's own best",
        f"configuration measured beside them on the same data. Ground truth of E1 and E2: {_truth_words(meta)}.",
        "E4 uses real measurements shipped with interfpred (Gavel's V100 pairs). Of the two coverage sections,",
        "the first runs on the simulated E2 sets, the second on the real E4 pairs. E5 uses real A100-80GB",
        "profiles shipped with interfpred (ParvaGPU's MIG x MPS runs); E6 real spatial sharing on an NVIDIA",
        "H200, measured for interfpred and shipped with its Nsight Compute kernel profiles.",
        "",
        f"- command: `{meta['command']}`",
        f"- interfpred {meta['interfpred_version']}, Python {meta['python']}, seed {meta['seed']}, "
        f"{'quick' if meta['quick'] else 'full'} run, simulated GPU {meta['gpu']}",
        f"- runtime: {meta['runtime_s']:.1f} s (generated {meta['generated']})",
        "",
    ]
    for s in sections:
        runtime = s.data.get("runtime_s")
        lines += [f"## {s.title}", "", s.markdown.rstrip(), ""]
        if isinstance(runtime, float):
            lines += [f"_Section runtime: {runtime:.1f} s._", ""]
    return "\n".join(lines)


def _truth_words(meta: dict) -> str:
    if meta.get("truth") == "fluid":
        family = "orion passes' time-averaged demands" if meta.get("zoo") == "orion" else "synthetic zoo"
        return f"fluid (one demand vector per execution, its profile's; {family})"
    zoo = meta.get("zoo") or ("orion" if meta["gpu"] == SIM_PHASED_DEFAULT_GPU else "synthetic")
    family = ("Orion's real V100 operator sequences with derived demands" if zoo == "orion"
              else "the synthetic zoo, one operator per pass")
    return f"operator phases with hidden per-model L2 footprints and latency hiding ({family})"


#: What a "goal NOT met" line means, printed once under the tables that hold one.
GOAL_NOTE = ("Note: a 'Goal NOT met' line compares a number of this run with a target the library set itself "
             "(an accuracy, a coverage or an SLO attainment). It is a finding, not a failure of the run: the "
             "numbers above it are measured as they are, and the line says by how much the target is missed. "
             "For your own workload, measure it the same way (interfpred evaluate on your data).")


def format_terminal(sections: Sequence[Section]) -> str:
    """The sections' terminal tables, each under its title."""
    parts = []
    for s in sections:
        parts += [s.title, "=" * len(s.title), s.terminal.rstrip(), ""]
    if any("NOT met" in s.terminal for s in sections):
        parts += [GOAL_NOTE, ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------- worker processes
_WORKER: list[ReproduceContext] = []     # the context of a worker process, made once when it starts


def _start_worker(fields: dict[str, Any], messages: Any) -> None:
    _WORKER[:] = [ReproduceContext(**fields, progress=messages.put)]


def _run_piece(part: Part) -> tuple[Any, float]:
    t = time.perf_counter()
    out = part.run(_WORKER[0])
    return out, time.perf_counter() - t


def _whole(ctx: ReproduceContext, f: Callable[[ReproduceContext], Section]) -> Section:
    return f(ctx)


def _pieces(f: Callable[[ReproduceContext], Section], ctx: ReproduceContext) -> list[Part]:
    if isinstance(f, SplitSection):
        return list(f.parts(ctx))
    return [Part(_whole, (f,), cost=_SECTION_COST.get(getattr(f, "__name__", ""), 1.0))]


def step_line(k: int, n: int, done_cost: float, total_cost: float, elapsed_s: float) -> str:
    """The progress line after step ``k`` of ``n``, with the time left estimated from the steps' costs so far.

    The estimate assumes the rest runs as fast per unit of cost as what is done ran.

    Examples
    --------
    >>> step_line(3, 9, 30.0, 60.0, 12.0)
    'step 3 of 9 done, about 12 s left'
    >>> step_line(9, 9, 60.0, 60.0, 25.0)
    'step 9 of 9 done (25 s)'
    """
    if k >= n or done_cost >= total_cost:
        return f"step {k} of {n} done ({elapsed_s:.0f} s)"
    left = elapsed_s * (total_cost - done_cost) / done_cost if done_cost > 0 else float("nan")
    return f"step {k} of {n} done, about {left:.0f} s left"


def _run_in_workers(funcs: list[Callable], ctx: ReproduceContext, jobs: int,
                    say: Callable[[str], None]) -> list[Section]:
    """Every section's pieces on ``jobs`` worker processes, longest first; the sections in ``funcs``' order."""
    pieces = [_pieces(f, ctx) for f in funcs]
    order = sorted(((i, j) for i, ps in enumerate(pieces) for j in range(len(ps))),
                   key=lambda ij: -pieces[ij[0]][ij[1]].cost)
    results: list[list[Any]] = [[None] * len(ps) for ps in pieces]
    seconds: list[list[float]] = [[0.0] * len(ps) for ps in pieces]
    fields = {"out_dir": ctx.out_dir, "seed": ctx.seed, "quick": ctx.quick, "gpu": ctx.gpu,
              "executions": ctx.executions, "truth": ctx.truth, "zoo": ctx.zoo}
    mp = multiprocessing.get_context("spawn")
    messages = mp.Queue()
    pool = cf.ProcessPoolExecutor(jobs, mp_context=mp, initializer=_start_worker, initargs=(fields, messages))
    n_steps = len(order)
    total_cost = sum(p.cost for ps in pieces for p in ps)
    done_cost, steps_done = 0.0, 0
    t0 = time.perf_counter()
    say(f"{n_steps} steps on {jobs} worker processes")
    try:
        futures = {pool.submit(_run_piece, pieces[i][j]): (i, j) for i, j in order}
        pending = set(futures)
        while pending:
            finished, pending = cf.wait(pending, timeout=0.25, return_when=cf.FIRST_COMPLETED)
            _relay(messages, say)
            for fu in finished:
                i, j = futures[fu]
                try:
                    results[i][j], seconds[i][j] = fu.result()
                except cf.process.BrokenProcessPool as exc:
                    raise InterfpredError(
                        f"a worker process of reproduce stopped before finishing ({exc}); workers start by "
                        "importing the main module, so run from a script file (under if __name__ == "
                        "'__main__':) or the command line, or pass jobs=1") from None
                done_cost += pieces[i][j].cost
                steps_done += 1
                say(step_line(steps_done, n_steps, done_cost, total_cost, time.perf_counter() - t0))
        _relay(messages, say)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    done = []
    for f, res, secs in zip(funcs, results, seconds):
        section = f.assemble(ctx, res) if isinstance(f, SplitSection) else res[0]
        section.data.setdefault("runtime_s", float(sum(secs)))
        done.append(section)
    return done


def _relay(messages: Any, say: Callable[[str], None]) -> None:
    """Pass the workers' progress messages on, in the order they came."""
    while True:
        try:
            say(messages.get_nowait())
        except queue.Empty:
            return
