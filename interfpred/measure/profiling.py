"""Profiles in a campaign: the profiler over one batch per workload, each within its time limit, then ingested.

:func:`run_profiler` runs one workload's profiler command (on a GPU, Nsight Compute over one
batch inside an NVTX range) with its output in a report file, and stops it when it runs past its
time limit: first an interrupt, which lets ncu write what it has, then a kill. :func:`ingest`
reads the report with interfpred's Nsight Compute reader into a solo profile with its
kernel-level columns. A report whose profiler was stopped holds only the kernels profiled until
then; it is never read as a whole batch: it is left out (and reported), or kept marked
``truncated`` when asked.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from interfpred.constants import MEASURE_PROFILER_STOP_GRACE_S
from interfpred.data.ingest import TruncatedReportWarning, profile_from_kernels, read_kernels
from interfpred.data.profiles import Profile
from interfpred.errors import InterfpredError

__all__ = ["ProfilerRun", "ingest", "run_profiler"]


@dataclass(frozen=True)
class ProfilerRun:
    """How one profiler run ended: ``status`` ``ok``, ``timeout`` (stopped at its limit) or ``failed``."""

    status: str
    seconds: float
    message: str


def _tail(path: str, n: int = 2) -> str:
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as fh:
        lines = [ln.strip() for ln in fh.read().splitlines() if ln.strip() and not ln.startswith('"')]
        return " | ".join(lines[-n:])[:400]
    return ""


def _stop(proc: subprocess.Popen) -> None:
    """Stop the profiler's process group: an interrupt (ncu then writes what it has), then a kill."""
    for sig, grace in ((signal.SIGINT, MEASURE_PROFILER_STOP_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_profiler(command: Sequence[str], report: str, timeout_s: float) -> ProfilerRun:
    """Run ``command`` with its output (standard output and error) in the file ``report``, for at most
    ``timeout_s`` seconds (see the module docstring)."""
    t0 = time.monotonic()
    with open(report, "wb") as fh:
        try:
            proc = subprocess.Popen(list(command), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            return ProfilerRun("failed", 0.0, f"cannot start {command[0]}: {exc.strerror or exc}")
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return ProfilerRun("timeout", time.monotonic() - t0, f"not finished within {timeout_s:g} s")
        except BaseException:      # the campaign itself is stopped: never leave a profiler running on the GPU
            _stop(proc)
            raise
    seconds = time.monotonic() - t0
    if code != 0:
        return ProfilerRun("failed", seconds, f"exited with status {code}: {_tail(report) or 'no output'}")
    return ProfilerRun("ok", seconds, "")


def ingest(report: str, *, gpu: str, model: str, batch_size: int, stopped: bool, allow_truncated: bool) -> Profile:
    """The solo profile in ``report`` (one batch). ``stopped``: its profiler was stopped at the time
    limit, so the report is cut short whatever its log says; refused unless ``allow_truncated``, then
    marked ``truncated`` 1."""
    if stopped and not allow_truncated:
        raise InterfpredError("its profiler was stopped, so the report holds only part of a batch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedReportWarning)   # the campaign reports it in its own words
        prof = profile_from_kernels(read_kernels(report), gpu=gpu, model=model, batch_size=batch_size, iterations=1,
                                    allow_truncated=allow_truncated)
    if stopped:
        prof = prof.model_copy(update={"extra": {**prof.extra, "truncated": "1"}})
    return prof
