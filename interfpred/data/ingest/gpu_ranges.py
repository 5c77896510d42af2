"""CPU-side ranges projected onto the GPU: one execution per batch, shared by the capture readers.

NVIDIA's rule (the one ``nsys`` applies when it projects NVTX ranges onto the GPU): a GPU
operation (kernel, memory copy or memory set) belongs to a range when the CUDA API call that
launched it starts and ends inside the range, on the same thread. The projected batch runs from
its first GPU operation's start to its last one's end, on the device its first operation ran on.
A range belongs to each range around it too, so nested ranges whose names both parse give two
executions; only names that parse as a batch (see :mod:`interfpred.data.ingest.batch_names`) count.

The readers (:mod:`~interfpred.data.ingest.nsys`, :mod:`~interfpred.data.ingest.kineto`) turn a file
into three tables of numpy arrays, :class:`GpuOps`, :class:`Launches` and :class:`Ranges`, with times
in milliseconds; :func:`executions_from_ranges` and :func:`executions_from_kernels` turn those into a
:class:`~interfpred.data.trace.Trace` and fill a :class:`CaptureReport`.

Examples
--------
>>> import numpy as np
>>> ops = GpuOps(start_ms=np.array([1.0, 2.0, 7.0]), end_ms=np.array([1.5, 3.0, 8.0]),
...              device=np.array(["gpu0"] * 3), process=np.zeros(3, dtype=np.int64),
...              correlation=np.array([10, 11, 12]), name=np.array(["k1", "k2", "k3"]),
...              kernel=np.ones(3, dtype=bool))
>>> launches = Launches(start_ms=np.array([0.1, 0.2, 6.0]), end_ms=np.array([0.15, 0.25, 6.1]),
...                     thread=np.zeros(3, dtype=np.int64), process=np.zeros(3, dtype=np.int64),
...                     correlation=np.array([10, 11, 12]))
>>> ranges = Ranges(start_ms=np.array([0.0, 5.9]), end_ms=np.array([0.3, 6.2]),
...                 thread=np.zeros(2, dtype=np.int64), name=np.array(["resnet50:8", "vgg19 bs=2"]))
>>> report = CaptureReport(source="example")
>>> t = executions_from_ranges("x.sqlite", ranges, launches, ops, report=report)
>>> t.model.tolist(), t.batch_size.tolist(), t.start_ms.tolist(), t.end_ms.tolist()
(['resnet50', 'vgg19'], [8, 2], [1.0, 7.0], [3.0, 8.0])
>>> report.summary()
'example: 2 executions from 2 ranges (3 GPU operations)'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from interfpred.constants import CAPTURE_CLOCK_SKEW_MS
from interfpred.data.ingest.batch_names import NamePattern, parse_batch_name
from interfpred.data.trace import Trace
from interfpred.errors import InputError

__all__ = ["CaptureFormatError", "CaptureReport", "GpuOps", "Launches", "Ranges", "executions_from_kernels", "launch_spans",
           "executions_from_ranges"]

#: Range names a report quotes as examples of those that did not parse.
_EXAMPLES = 3


class CaptureFormatError(InputError):
    """A capture file (Nsight Systems export, PyTorch profiler trace, Model Analyzer output) that
    cannot be read, or holds nothing to turn into executions or runs; the message names the file."""


@dataclass
class CaptureReport:
    """What a capture reader found and kept, for the one-line summary the CLI prints.

    ``version`` is the exporter's schema or product version when the file names one.
    """

    source: str
    version: str | None = None
    n_ranges: int = 0
    n_unparsed: int = 0
    unparsed_examples: list[str] = field(default_factory=list)
    n_empty: int = 0
    n_ops: int = 0
    n_executions: int = 0

    def summary(self) -> str:
        """One line: executions, ranges, and what was skipped and why."""
        what = f"{self.source}{'' if self.version is None else ' ' + self.version}"
        line = f"{what}: {self.n_executions} executions"
        if self.n_ranges:
            line += f" from {self.n_ranges} ranges"
        line += f" ({self.n_ops} GPU operations)"
        if self.n_unparsed:
            ex = ", ".join(repr(n) for n in self.unparsed_examples)
            line += f"; skipped {self.n_unparsed} ranges whose names do not parse as a batch (such as {ex})"
        if self.n_empty:
            line += f"; skipped {self.n_empty} ranges that launched no GPU operation"
        return line


@dataclass
class GpuOps:
    """GPU operations: times (ms), device name, launching process and correlation id, name, and
    whether each is a kernel (not a memory copy or set)."""

    start_ms: np.ndarray
    end_ms: np.ndarray
    device: np.ndarray
    process: np.ndarray
    correlation: np.ndarray
    name: np.ndarray
    kernel: np.ndarray


@dataclass
class Launches:
    """CUDA API calls: times (ms), thread and process, correlation id (joins :class:`GpuOps`)."""

    start_ms: np.ndarray
    end_ms: np.ndarray
    thread: np.ndarray
    process: np.ndarray
    correlation: np.ndarray


@dataclass
class Ranges:
    """CPU-side ranges: times (ms), thread, name."""

    start_ms: np.ndarray
    end_ms: np.ndarray
    thread: np.ndarray
    name: np.ndarray


def _keys(process: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """One int64 per (process, correlation id): correlation ids are unique only within a process."""
    return (process.astype(np.int64) << 32) | (correlation.astype(np.int64) & 0xFFFFFFFF)


def _trace(path: str | os.PathLike[str], device: list[str], model: list[str], batch: list[int],
           start: list[float], end: list[float]) -> Trace:
    order = sorted(range(len(start)), key=lambda i: (start[i], end[i], device[i]))
    return Trace(id=np.arange(1, len(order) + 1), device=[device[i] for i in order],
                 model=[model[i] for i in order], batch_size=[batch[i] for i in order],
                 start_ms=[start[i] for i in order], end_ms=[end[i] for i in order], _path=path)


def _parser(pattern: NamePattern | None) -> Callable[[str], tuple[str, int] | None]:
    return parse_batch_name if pattern is None else pattern.match


def executions_from_ranges(path: str | os.PathLike[str], ranges: Ranges, launches: Launches, ops: GpuOps, *,
                           pattern: NamePattern | None = None, strict: bool = False,
                           report: CaptureReport | None = None) -> Trace:
    """One execution per range whose name parses, projected onto the GPU by the launch rule.

    Ranges whose names do not parse, and ranges that launched no GPU operation, are skipped and
    counted in ``report``; with ``strict`` the first of either raises instead. A file in which no
    range parses, or no parsed range launched GPU work, raises :class:`CaptureFormatError`.
    """
    report = CaptureReport(source="trace") if report is None else report
    parse = _parser(pattern)
    report.n_ranges = len(ranges.name)
    report.n_ops = len(ops.start_ms)
    convention = "the convention MODEL:BATCH or 'MODEL bs=BATCH'" if pattern is None else \
        f"--name-pattern {pattern.pattern!r}"
    parsed: list[tuple[int, str, int]] = []
    for i, name in enumerate(ranges.name.tolist()):
        got = parse(str(name))
        if got is None:
            if strict:
                raise CaptureFormatError(f"range {name!r} (at {float(ranges.start_ms[i]):.6f} ms) does not parse "
                                         f"as a batch by {convention}", path=path)
            report.n_unparsed += 1
            if len(report.unparsed_examples) < _EXAMPLES and name not in report.unparsed_examples:
                report.unparsed_examples.append(str(name))
        else:
            parsed.append((i, got[0], got[1]))
    if not parsed:
        ex = ", ".join(repr(n) for n in report.unparsed_examples)
        raise CaptureFormatError(
            f"none of its {report.n_ranges} ranges names a batch by {convention}" + (f" (names such as {ex})"
                                                                                     if ex else "")
            + "; give --name-pattern, or --kernels to make each kernel an execution", path=path)
    uniq, l_start, l_end, l_thread, pos_c, has, w_first, w_last, w_count = launch_spans(path, ops, launches)
    m = len(uniq)
    first_op = np.full(m, -1, dtype=np.int64)
    idx = np.flatnonzero(has)
    by_start = idx[np.lexsort((ops.start_ms[idx], pos_c[idx]))]  # by launch, then start
    launch_of, first = np.unique(pos_c[by_start], return_index=True)
    first_op[launch_of] = by_start[first]
    # Launches with GPU work, ordered by (thread, start), for a binary search per range.
    live = np.flatnonzero(w_count > 0)
    live = live[np.lexsort((l_start[live], l_thread[live]))]
    th, st = l_thread[live], l_start[live]
    device: list[str] = []
    model: list[str] = []
    batch: list[int] = []
    start: list[float] = []
    end: list[float] = []
    for i, mdl, bs in parsed:
        t, rs, re_ = ranges.thread[i], ranges.start_ms[i], ranges.end_ms[i]
        lo, hi = np.searchsorted(th, t, "left"), np.searchsorted(th, t, "right")
        a = lo + np.searchsorted(st[lo:hi], rs, "left")
        b = lo + np.searchsorted(st[lo:hi], re_, "right")
        cand = live[a:b]
        cand = cand[l_end[cand] <= re_]
        if cand.size == 0:
            if strict:
                raise CaptureFormatError(f"range {str(ranges.name[i])!r} (at {float(rs):.6f} ms) launched no GPU "
                                         "operation", path=path)
            report.n_empty += 1
            continue
        j = int(cand[np.argmin(w_first[cand])])
        device.append(str(ops.device[first_op[j]]))
        model.append(mdl)
        batch.append(bs)
        start.append(float(w_first[cand].min()))
        end.append(float(w_last[cand].max()))
    if not start:
        raise CaptureFormatError(f"none of its {len(parsed)} batch ranges launched a GPU operation on the same "
                                 "thread (was CUDA traced? nsys profile --trace=cuda,nvtx)", path=path)
    report.n_executions = len(start)
    return _trace(path, device, model, batch, start, end)


def launch_spans(path: str | os.PathLike[str], ops: GpuOps, launches: Launches) -> tuple[np.ndarray, ...]:
    """Each launch (one per process and correlation id) with the span of the GPU work it launched.

    Returns ``(keys, start, end, thread, op_launch, op_has_launch, work_first, work_last, work_count)``:
    per launch its key, call span and thread, per operation the index of its launch and whether it
    has one, per launch the first start, last end and count of its operations.

    Raises :class:`CaptureFormatError` when GPU work starts more than ``CAPTURE_CLOCK_SKEW_MS``
    before the call that launched it (a damaged capture).
    """
    # Launches, one per (process, correlation id): a call and its versioned twin (cudaLaunchKernel and
    # cudaLaunchKernel_v7000) share one id; the outer call (earliest start, latest end) stands for both.
    lkey = _keys(launches.process, launches.correlation)
    uniq, inverse = np.unique(lkey, return_inverse=True)
    inverse = inverse.reshape(-1)
    m = len(uniq)
    l_start = np.full(m, np.inf)
    l_end = np.full(m, -np.inf)
    np.minimum.at(l_start, inverse, launches.start_ms)
    np.maximum.at(l_end, inverse, launches.end_ms)
    l_thread = np.zeros(m, dtype=np.int64)
    l_thread[inverse] = launches.thread
    # The GPU work of each launch (a graph launch has several operations).
    okey = _keys(ops.process, ops.correlation)
    pos = np.searchsorted(uniq, okey)
    pos_c = np.minimum(pos, max(m - 1, 0))
    has = (pos < m) & (uniq[pos_c] == okey) if m else np.zeros(len(okey), dtype=bool)
    w_first = np.full(m, np.inf)
    w_last = np.full(m, -np.inf)
    w_count = np.zeros(m, dtype=np.int64)
    np.minimum.at(w_first, pos_c[has], ops.start_ms[has])
    np.maximum.at(w_last, pos_c[has], ops.end_ms[has])
    np.add.at(w_count, pos_c[has], 1)
    early = np.flatnonzero((w_count > 0) & (w_first < l_start - CAPTURE_CLOCK_SKEW_MS))
    if early.size:  # GPU work cannot start before the call that launched it
        j = int(early[0])
        raise CaptureFormatError(f"a GPU operation starts at {float(w_first[j]):.6f} ms, "
                                 f"{float(l_start[j] - w_first[j]):.6g} ms before the CUDA call that launched it "
                                 f"(correlation id {int(uniq[j]) & 0xFFFFFFFF}, at {float(l_start[j]):.6f} ms); "
                                 f"more than CAPTURE_CLOCK_SKEW_MS={CAPTURE_CLOCK_SKEW_MS:g} is a damaged capture",
                                 path=path)
    return uniq, l_start, l_end, l_thread, pos_c, has, w_first, w_last, w_count


def executions_from_kernels(path: str | os.PathLike[str], ops: GpuOps, *, batch_size: int = 1,
                            report: CaptureReport | None = None, launches: Launches | None = None) -> Trace:
    """One execution per kernel (memory copies and sets left out): model = the kernel's name.

    With ``launches`` (the capture's CUDA calls, when it holds them), a kernel starting before the
    call that launched it is refused, as :func:`launch_spans` says.

    Raises :class:`CaptureFormatError` when the file holds no kernel.
    """
    if launches is not None:
        launch_spans(path, ops, launches)
    report = CaptureReport(source="trace") if report is None else report
    k = np.flatnonzero(ops.kernel)
    report.n_ops = len(ops.start_ms)
    if k.size == 0:
        raise CaptureFormatError("holds no CUDA kernel (profile with CUDA tracing on: nsys profile --trace=cuda)",
                                 path=path)
    report.n_executions = int(k.size)
    return _trace(path, [str(d) for d in ops.device[k]], [str(n) for n in ops.name[k]], [batch_size] * k.size,
                  ops.start_ms[k].tolist(), ops.end_ms[k].tolist())
