"""What a measuring device offers a campaign: workers that run windows, and a profiler command.

A campaign (:func:`interfpred.measure.measure`) is the same on every device; a *backend* supplies
the device. :class:`Backend` opens persistent *hosts* for a mechanism: processes, each holding
one or several workload instances built once, which then run window after window on command
(:class:`Hosts`). Which instances share a process, and the environment each process starts with,
is the mechanism's *layout* (:func:`layout`), one rule for every backend:

- ``streams``: every instance in one process, each on its own CUDA stream;
- ``time_slicing``: one process per instance, the GPU time-sliced between their contexts;
- ``mps``: one process per instance, each an MPS client started with its own
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``;
- ``mig``: one process per instance, copy ``i`` of a workload started with
  ``CUDA_VISIBLE_DEVICES`` set to the ``i``-th MIG instance the user made.

Examples
--------
>>> from interfpred.measure.spec import parse_workload
>>> a, b = parse_workload("a:1"), parse_workload("b:1")
>>> [g.instances for g in layout("streams", [("a:1:fp16#0", a), ("b:1:fp16#0", b)])]
[('a:1:fp16#0', 'b:1:fp16#0')]
>>> [g.env for g in layout("mps", [("a:1:fp16#0", a)], shares={"a:1:fp16": 40.0})]
[{'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '40'}]
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from interfpred.constants import DEFAULT_SHARE, MPS_PIPE_DIRECTORY
from interfpred.errors import InterfpredError
from interfpred.measure.spec import Workload, instance_workload

__all__ = ["Backend", "HostGroup", "Hosts", "MemberResult", "layout", "mps_daemon_problem", "summarize_times"]


@dataclass(frozen=True)
class MemberResult:
    """What one member measured in one window.

    ``observed_ms`` is throughput based: the time between the ends of the first and the last batch
    counted, over the batches in between (what a server running batches back to back sees, waits
    included). ``exec_ms`` and ``exec_p90_ms`` are the median and 90th percentile of each batch's
    own time from its first to its last GPU operation (CUDA events around it), which leaves out any
    wait before its first kernel. ``batches`` is how many batches the throughput counts.
    """

    batches: int
    observed_ms: float
    exec_ms: float
    exec_p90_ms: float

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a JSON-ready dict."""
        return {"batches": self.batches, "observed_ms": self.observed_ms, "exec_ms": self.exec_ms,
                "exec_p90_ms": self.exec_p90_ms}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> MemberResult:
        """Inverse of :meth:`as_dict`; refuses a result that measured nothing."""
        v: Mapping[str, Any] = d
        r = cls(int(v["batches"]), float(v["observed_ms"]), float(v["exec_ms"]), float(v["exec_p90_ms"]))
        if r.batches < 1 or not all(math.isfinite(x) and x > 0 for x in (r.observed_ms, r.exec_ms, r.exec_p90_ms)):
            raise InterfpredError(f"a member measured no batch in its window ({r}); lengthen --window-s")
        return r


def summarize_times(times_ms: Sequence[float]) -> tuple[float, float]:
    """(median, 90th percentile) of batch times, the percentile as the nearest rank.

    Examples
    --------
    >>> summarize_times([4.0, 1.0, 3.0, 2.0])
    (2.5, 4.0)
    """
    s = sorted(times_ms)
    if not s:
        return math.nan, math.nan
    n = len(s)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return median, s[min(n - 1, math.ceil(0.9 * n) - 1)]


@dataclass(frozen=True)
class HostGroup:
    """The instances one host process holds, and the environment it starts with."""

    instances: tuple[str, ...]
    workloads: tuple[Workload, ...]
    env: dict[str, str] = field(default_factory=dict)


class Hosts(Protocol):
    """Persistent workers of one mechanism: every instance built once, then window after window."""

    #: Per instance: True when its batch is a captured CUDA graph, False when it runs eagerly.
    graphs: dict[str, bool]
    #: Notes on how the workers were built (an eager fallback and why), one line each.
    notes: list[str]

    def run(self, instances: Sequence[str], window_s: float, margin_s: float,
            context: Mapping[str, Any] | None = None) -> dict[str, MemberResult]:
        """Run ``instances`` together, back to back for ``window_s``; count the middle (``margin_s`` off each end).

        ``context`` describes the window (its key, every member's workload and share); a real GPU
        needs none of it, the simulated device computes its times from it."""
        ...

    def close(self) -> None:
        """Stop the workers."""
        ...


class Backend(Protocol):
    """A measuring device: see the module docstring."""

    #: Short name shown in messages (``torch``, ``fake``).
    name: str

    def gpu_name(self) -> str:
        """The GPU's name as the measurement CSV records it."""
        ...

    def check(self, workloads: Sequence[Workload], mechanisms: Sequence[str], mig_instances: Sequence[str],
              profiles: bool) -> None:
        """Refuse, before anything runs, what cannot be measured here (one line, naming how to fix it);
        ``profiles``: the profiler will be needed too."""
        ...

    def partitions(self, mig_instances: Sequence[str]) -> list[str]:
        """The partition name (MIG profile such as ``3g.71gb``) of each MIG instance given."""
        ...

    def open_hosts(self, mechanism: str, groups: Sequence[HostGroup], log_dir: str) -> Hosts:
        """Start the workers of ``groups`` (their logs in ``log_dir``) and wait until every instance is built."""
        ...

    def profile_command(self, workload: Workload, report: str) -> list[str]:
        """The command that profiles one batch of ``workload`` and writes its kernels to the file ``report``."""
        ...


def layout(mechanism: str, instances: Sequence[tuple[str, Workload]], *, shares: Mapping[str, float] | None = None,
           mig_instances: Sequence[str] = ()) -> list[HostGroup]:
    """The host processes of ``mechanism`` for ``instances`` (``(key, workload)`` pairs): see the module docstring.

    ``shares`` maps a workload label to its MPS share (100 when absent); ``mig_instances`` are the
    MIG instance identifiers, copy ``i`` running in the ``i``-th.
    """
    if mechanism == "streams":
        return [HostGroup(tuple(k for k, _ in instances), tuple(w for _, w in instances))]
    groups = []
    for key, w in instances:
        env: dict[str, str] = {}
        if mechanism == "mps":
            env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{(shares or {}).get(w.label, DEFAULT_SHARE):g}"
        elif mechanism == "mig":
            copy = instance_workload(key)[1]
            if copy >= len(mig_instances):
                raise InterfpredError(f"instance {key} needs MIG instance {copy + 1}, {len(mig_instances)} given")
            env["CUDA_VISIBLE_DEVICES"] = mig_instances[copy]
        groups.append(HostGroup((key,), (w,), env))
    return groups


def mps_daemon_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why MPS clients would not find a running MPS control daemon, or None when its control pipe is there.

    The daemon (``nvidia-cuda-mps-control -d``) listens on the named pipe ``control`` in
    ``CUDA_MPS_PIPE_DIRECTORY`` (``/tmp/nvidia-mps`` by default).

    Examples
    --------
    >>> import tempfile
    >>> print(mps_daemon_problem({"CUDA_MPS_PIPE_DIRECTORY": tempfile.mkdtemp()}))  # doctest: +ELLIPSIS
    no MPS control daemon is running (no control pipe in ...): start it with 'nvidia-cuda-mps-control -d' ...
    """
    env = os.environ if env is None else env
    folder = env.get("CUDA_MPS_PIPE_DIRECTORY") or MPS_PIPE_DIRECTORY
    pipe = os.path.join(folder, "control")
    try:
        mode = os.stat(pipe).st_mode
    except OSError:
        mode = 0
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return None
    return (f"no MPS control daemon is running (no control pipe in {folder}): start it with "
            "'nvidia-cuda-mps-control -d' as the user who runs the measurement (with the same "
            "CUDA_MPS_PIPE_DIRECTORY), stop it afterwards with 'echo quit | nvidia-cuda-mps-control'")
