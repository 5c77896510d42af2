"""A simulated measuring device: the campaign's whole machinery, with known slowdowns and no GPU.

The fake device runs the same campaign as a GPU does: the same worker processes and protocol,
the same layout per mechanism, the same windows, log, resumption and CSV files, and a profiler
run per workload with its time limit, ingested by the same Nsight Compute reader. Only the
times are made up, from each workload's label (deterministically, so a campaign gives the same
numbers however often it is interrupted):

- ``solo_ms`` = (0.2 + 2 u1) (1 + batch_size / 16) ms (twice that in fp32), ``demand`` = 0.2 + 0.7 u2
  (the share of the GPU the workload fills alone), with u1, u2 in [0, 1] from a hash of the label;
- the slowdown of every member of a run of members ``j``: under ``streams`` max(1, sum of
  ``demand_j``); under ``mps`` max(1, sum of min(``demand_j``, ``share_j`` / 100)); under
  ``time_slicing`` n (1 + 0.05 (n - 1)) for n members, while the CUDA-event time stays the solo
  time (the waits fall between batches, as on a real GPU); under ``mig`` none (isolated instances);
- a jitter below 0.2 % per member and window, from a hash of the window and the instance.

A worker sleeps through each window (``--window-s``), so a campaign takes real time and can be
killed in the middle. Its profiler writes an Nsight Compute raw page, one kernel every
``MEASURE_FAKE_KERNEL_S`` seconds (4 + 12 u3 + batch_size / 2 kernels), so a large batch runs
past a short ``--ncu-timeout-s``; interrupted there, it does what ncu does: says it is shutting
down, names the kernel it failed on, and writes the kernels profiled until then.

Examples
--------
>>> from interfpred.measure.spec import parse_workload
>>> p = fake_params(parse_workload("a:16"))
>>> round(p.solo_ms / fake_params(parse_workload("a:16:fp32")).solo_ms, 6)
0.5
>>> fake_slowdowns("time_slicing", [p.demand, p.demand], [100.0, 100.0])
([2.1, 2.1], [1.0, 1.0])
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interfpred.constants import MEASURE_FAKE_KERNEL_S, MEASURE_FAKE_SWITCH_COST
from interfpred.errors import InterfpredError
from interfpred.measure.backend import HostGroup, MemberResult
from interfpred.measure.hosts import ProcessHosts, serve
from interfpred.measure.spec import Workload, parse_workload, resolve_callable

__all__ = ["FakeBackend", "FakeParams", "fake_params", "fake_slowdowns"]



def _unit(text: str, i: int) -> float:
    return hashlib.sha256(text.encode()).digest()[i] / 255.0


@dataclass(frozen=True)
class FakeParams:
    """A fake workload: solo time (ms), the share of the GPU it fills alone, kernels per batch."""

    solo_ms: float
    demand: float
    kernels: int


def fake_params(w: Workload) -> FakeParams:
    """The fake device's numbers for ``w`` (see the module docstring)."""
    base = f"{w.target}:{w.batch_size}"
    solo = (0.2 + 2.0 * _unit(base, 0)) * (1.0 + w.batch_size / 16.0) * (2.0 if w.dtype == "fp32" else 1.0)
    return FakeParams(solo, 0.2 + 0.7 * _unit(base, 1), 4 + int(12 * _unit(base, 2)) + w.batch_size // 2)


def fake_slowdowns(mechanism: str, demands: Sequence[float], shares: Sequence[float]) -> tuple[list[float], list[float]]:
    """(throughput slowdown, CUDA-event slowdown) of each member of a run (see the module docstring)."""
    n = len(demands)
    if mechanism == "streams":
        s = max(1.0, sum(demands))
        return [s] * n, [s] * n
    if mechanism == "mps":
        s = max(1.0, sum(min(d, p / 100.0) for d, p in zip(demands, shares)))
        return [s] * n, [s] * n
    if mechanism == "time_slicing":
        s = n * (1.0 + MEASURE_FAKE_SWITCH_COST * (n - 1))
        return [s] * n, [1.0] * n
    if mechanism == "mig":
        return [1.0] * n, [1.0] * n
    raise InterfpredError(f"the fake device has no mechanism {mechanism!r}")


class _FakeInstance:
    graph: bool = True
    note: str | None = None

    def __init__(self, key: str, workload: Workload, mechanism: str) -> None:
        self.key, self.workload, self.mechanism = key, workload, mechanism

    def window(self, t_start: float, t_end: float, margin_s: float, context: Mapping[str, Any]) -> MemberResult:
        members = context["members"]   # [[instance, label, share], ...] of the whole run
        demands = [fake_params(parse_workload(label)).demand for _, label, _ in members]
        shares = [float(share) for _, _, share in members]
        me = [m[0] for m in members].index(self.key)
        tput, event = fake_slowdowns(self.mechanism, demands, shares)
        jitter = 1.0 + 0.002 * (_unit(f"{context['window']}|{self.key}", 3) - 0.5)
        solo = fake_params(self.workload).solo_ms
        while time.monotonic() < t_end:       # the window takes its time, as on a device
            time.sleep(min(0.005, max(0.0, t_end - time.monotonic())))
        observed = solo * tput[me] * jitter
        exec_ms = solo * event[me] * jitter
        counted_ms = max(0.0, (t_end - t_start - 2 * margin_s) * 1000.0)
        return MemberResult(max(1, math.floor(counted_ms / observed)), observed, exec_ms, exec_ms * 1.02)


class FakeBackend:
    """The simulated device (see the module docstring); GPU name ``fake``."""

    name = "fake"

    def gpu_name(self) -> str:
        """``fake``."""
        return "fake"

    def check(self, workloads: Sequence[Workload], mechanisms: Sequence[str], mig_instances: Sequence[str],
              profiles: bool) -> None:
        """Every callable workload must load (torchvision names are taken as given)."""
        for w in workloads:
            if w.kind == "callable":
                resolve_callable(w.target)

    def partitions(self, mig_instances: Sequence[str]) -> list[str]:
        """The MIG instance names as given."""
        return list(mig_instances)

    def open_hosts(self, mechanism: str, groups: Sequence[HostGroup], log_dir: str) -> ProcessHosts:
        """Worker processes of the fake device."""
        return ProcessHosts([sys.executable, "-m", "interfpred.measure.fake", "host"], groups, mechanism, log_dir)

    def profile_command(self, workload: Workload, report: str) -> list[str]:
        """The fake profiler over one batch of ``workload`` (it writes to standard output)."""
        return [sys.executable, "-m", "interfpred.measure.fake", "profile", workload.label]


def _profile(label: str) -> None:
    """Print an Nsight Compute raw page of one fake batch, one kernel at a time, as ncu's log and table."""
    w = parse_workload(label)
    p = fake_params(w)
    pid = os.getpid()
    print(f"==PROF== Connected to process {pid} (fake)", flush=True)
    names = [f"fake_kernel_{i % 5}" for i in range(p.kernels)]
    done = 0
    try:
        for i, name in enumerate(names):
            time.sleep(MEASURE_FAKE_KERNEL_S)
            print(f'==PROF== Profiling "{name}" - {i}: 0%....50%....100% - 1 passes', flush=True)
            done += 1
        print(f"==PROF== Disconnected from process {pid}", flush=True)
    except KeyboardInterrupt:  # stopped at its time limit: like ncu, say so and write the kernels profiled so far
        print("==PROF== Trying to shutdown target application", flush=True)
        print(f'==ERROR== Failed to profile "{names[done]}" in process {pid}', flush=True)
        if done == 0:
            return
    metrics = [("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%"), ("gpu__time_duration.sum", "ns"),
               ("launch__grid_size", ""), ("launch__block_size", ""), ("launch__sm_count", "SM"),
               ("launch__waves_per_multiprocessor", ""), ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
               ("sm__maximum_warps_per_active_cycle_pct", "%"), ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%")]
    ident = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device", "CC"]
    print(",".join(f'"{h}"' for h in ident + [m for m, _ in metrics]))
    print(",".join(f'"{u}"' for u in [""] * len(ident) + [u for _, u in metrics]))
    weights = [1.0 + (i % 3) for i in range(p.kernels)]
    for i, name in enumerate(names[:done]):
        ns = p.solo_ms * 1e6 * weights[i] / sum(weights)
        grid = 32 * (1 + i % 8)
        vals = [f"{100 * p.demand * 0.5:.2f}", f"{ns:.0f}", str(grid), "256", "132", f"{grid / 132 / 8:.4f}",
                f"{100 * p.demand * 0.6:.2f}", "50", f"{100 * p.demand:.2f}"]
        print(",".join(f'"{v}"' for v in [str(i), str(pid), "python", "127.0.0.1", name, "1", "7", "0", "9.0"] + vals))
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m interfpred.measure.fake host`` (a worker) or ``... profile LABEL`` (the fake profiler)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["host"]:
        serve(lambda key, w, mechanism: _FakeInstance(key, w, mechanism))
        return 0
    if args[:1] == ["profile"] and len(args) == 2:
        _profile(args[1])
        return 0
    print("usage: python -m interfpred.measure.fake host | profile LABEL", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
