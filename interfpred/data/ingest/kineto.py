"""PyTorch profiler (Kineto) JSON traces, plain or gzip-compressed, to GPU operations and ranges.

A Kineto trace is Chrome-trace JSON: an object with ``traceEvents`` (or a bare list of events).
Complete events (``"ph": "X"``, ``ts`` and ``dur`` in microseconds) are read by category:

* GPU operations: ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (older traces: ``Kernel``, ``Memcpy``,
  ``Memset``), on ``args.device`` (else ``pid``), joined to their launch by ``args.correlation``;
* launches: ``cuda_runtime`` / ``cuda_driver`` events with ``args.correlation``, on thread
  (``pid``, ``tid``);
* ranges: ``gpu_user_annotation`` events, which Kineto has already projected onto the GPU (one per
  stream a range ran on; those sharing an ``External id`` are one batch spanning them all); when a
  trace has none, CPU-side ``user_annotation`` events (``record_function`` ranges), projected by the
  launch rule of :mod:`~interfpred.data.ingest.gpu_ranges`.

Times are in milliseconds from the whole microsecond at or before the trace's earliest event (Kineto's
``ts`` are large absolute numbers; this keeps their sub-microsecond digits). A device is
``gpu<index>``. Flow events (``ac2g``) are not needed: ``correlation`` carries the same link.

Examples
--------
>>> import json, tempfile, pathlib
>>> events = [
...     {"ph": "X", "cat": "user_annotation", "name": "bert bs=4", "pid": 7, "tid": 7, "ts": 100.0, "dur": 50.0},
...     {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 110.0,
...      "dur": 5.0, "args": {"correlation": 3}},
...     {"ph": "X", "cat": "kernel", "name": "void gemm<float>(float*)", "pid": 0, "tid": 9, "ts": 120.5,
...      "dur": 30.0, "args": {"device": 0, "stream": 9, "correlation": 3}}]
>>> path = pathlib.Path(tempfile.mkdtemp()) / "trace.json"
>>> _ = path.write_text(json.dumps({"traceEvents": events}))
>>> t = read_kineto(path)
>>> t.device.tolist(), t.model.tolist(), t.batch_size.tolist(), t.start_ms.tolist(), t.end_ms.tolist()
(['gpu0'], ['bert'], [4], [0.0205], [0.0505])
>>> read_kineto(path, kernels=True).model.tolist()
['gemm']
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from interfpred._core.atomic import check_regular_file
from interfpred._core.limits import parse_capture_json, read_capture_bytes
from interfpred.constants import (
    CAPTURE_DEVICE_ID_MAX,
    KINETO_CPU_RANGE_CATEGORIES,
    KINETO_GPU_CATEGORIES,
    KINETO_GPU_RANGE_CATEGORY,
    KINETO_LAUNCH_CATEGORIES,
)
from interfpred.data.ingest.batch_names import NamePattern
from interfpred.data.ingest.capture_checks import check_int, check_name, check_names, check_spans, device_name
from interfpred.data.ingest.gpu_ranges import (
    CaptureFormatError,
    CaptureReport,
    GpuOps,
    Launches,
    Ranges,
    executions_from_kernels,
    executions_from_ranges,
)
from interfpred.data.trace import Trace
from interfpred.errors import InputError

__all__ = ["GZIP_MAGIC", "kernel_short_name", "load_kineto_events", "read_kineto"]

#: First bytes of a gzip file.
GZIP_MAGIC = b"\x1f\x8b"
_US_PER_MS = 1000.0


def kernel_short_name(name: str) -> str:
    """A kernel's base name from its C++ signature: no return type, template arguments or parameters.

    Examples
    --------
    >>> kernel_short_name("void at::native::vectorized_elementwise_kernel<4, F>(int, F)")
    'at::native::vectorized_elementwise_kernel'
    >>> kernel_short_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)")
    'ncclKernel_AllReduce_RING_LL_Sum_float'
    """
    base = name
    for stop in ("<", "("):
        cut = base.find(stop)
        if cut > 0:
            base = base[:cut]
    base = base.strip()
    return base.rsplit(" ", 1)[-1] or name


def load_kineto_events(path: str | os.PathLike[str]) -> list[Any]:
    """The ``traceEvents`` list of a Kineto trace (plain or gzip JSON).

    Raises :class:`CaptureFormatError` naming the file for truncated or invalid JSON, a damaged
    gzip stream, or JSON that is not a Chrome trace; the file's size, its inflated size and its
    JSON's nesting, containers and integer digits are bounded (:mod:`interfpred._core.limits`).
    """
    check_regular_file(path, "a PyTorch profiler trace")
    try:
        doc = parse_capture_json(read_capture_bytes(path, "a PyTorch profiler trace"), path,
                                 "a PyTorch profiler trace")
    except InputError as exc:  # a capture's own error type, for callers that catch it
        raise CaptureFormatError(exc.message, path=exc.path, line=exc.line) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise CaptureFormatError("is JSON but not a PyTorch profiler trace (no traceEvents list)", path=path)
    return events


def _num(ev: dict, key: str, path: Any) -> float:
    v = ev.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CaptureFormatError(f"event {str(ev.get('name'))[:60]!r} ({ev.get('cat')}) has {key} {v!r}, not a "
                                 "finite number", path=path)
    return float(v)


def _where(ev: dict) -> str:
    return f"event {str(ev.get('name'))[:60]!r} ({str(ev.get('cat'))[:20]})"


def _int_arg(ev: dict, key: str, default: int, path: Any = None) -> int:
    """Integer argument ``key`` of ``ev`` (``default`` when absent or null); any other value is refused."""
    args = ev.get("args")
    v = args.get(key) if isinstance(args, dict) else None
    return default if v is None else check_int(v, f"args.{key}", path, _where(ev))


def _device(ev: dict, path: Any) -> str:
    """The device of a GPU event: ``args.device``, else its ``pid`` (Kineto's GPU rows), else 0.

    A ``pid`` that is not a device ordinal (``{}``, ``"x"``, ``-1``) is refused, not read as device 0.
    """
    args = ev.get("args")
    v = args.get("device") if isinstance(args, dict) else None
    if v is not None:
        return device_name(v, path, _where(ev))
    pid = ev.get("pid")
    if pid is None:
        return device_name(0, path, _where(ev))
    ordinal = check_int(pid, "pid (the device: the event has no args.device)", path, _where(ev),
                        lo=0, hi=CAPTURE_DEVICE_ID_MAX)
    return device_name(ordinal, path, _where(ev))


def _name(ev: dict, path: Any) -> str:
    return check_name(str(ev.get("name", "")), path, _where(ev))


def _names(events: list[dict], path: Any, what: str) -> np.ndarray:
    names = [_name(ev, path) for ev in events]
    check_names(len(names), max(map(len, names), default=0), path, what)
    return np.array(names)


def _split(events: Sequence[Any], path: Any) -> tuple[list[dict], list[dict], list[dict], list[dict], float]:
    gpu, launch, gpu_ranges, cpu_ranges = [], [], [], []
    t0 = math.inf
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        if cat in KINETO_GPU_CATEGORIES:
            gpu.append(ev)
        elif cat in KINETO_LAUNCH_CATEGORIES:
            launch.append(ev)
        elif cat == KINETO_GPU_RANGE_CATEGORY:
            gpu_ranges.append(ev)
        elif cat in KINETO_CPU_RANGE_CATEGORIES:
            cpu_ranges.append(ev)
        else:
            continue
        t0 = min(t0, _num(ev, "ts", path))
    return gpu, launch, gpu_ranges, cpu_ranges, (math.floor(t0) if math.isfinite(t0) else 0.0)


def _span(ev: dict, t0: float, path: Any) -> tuple[float, float]:
    ts, dur = _num(ev, "ts", path), _num(ev, "dur", path)
    if dur < 0:
        raise CaptureFormatError(f"event {str(ev.get('name'))[:60]!r} has a negative dur {dur!r}", path=path)
    return (ts - t0) / _US_PER_MS, (ts + dur - t0) / _US_PER_MS


def _ops(gpu: list[dict], t0: float, path: Any) -> GpuOps:
    spans = [_span(ev, t0, path) for ev in gpu]
    kernel = np.array([str(ev.get("cat", "")).lower() == "kernel" for ev in gpu], dtype=bool)
    names = [kernel_short_name(_name(ev, path)) for ev in gpu]
    check_names(len(names), max(map(len, names), default=0), path, "its GPU events")
    ops = GpuOps(start_ms=np.array([s for s, _ in spans]), end_ms=np.array([e for _, e in spans]),
                 device=np.array([_device(ev, path) for ev in gpu]),
                 process=np.zeros(len(gpu), dtype=np.int64),  # one process per trace: ids are unique in it
                 correlation=np.array([_int_arg(ev, "correlation", -1, path) for ev in gpu], dtype=np.int64),
                 name=np.array(names), kernel=kernel)
    check_spans(ops.start_ms, ops.end_ms, path, "a GPU event", lambda i: _where(gpu[i]))
    return ops


def _threads(events: list[dict]) -> np.ndarray:
    keys: dict[tuple[str, str], int] = {}
    return np.array([keys.setdefault((str(ev.get("pid")), str(ev.get("tid"))), len(keys)) for ev in events],
                    dtype=np.int64)


def read_kineto(path: str | os.PathLike[str], *, kernels: bool = False, pattern: NamePattern | None = None,
                batch_size: int = 1, strict: bool = False, report: CaptureReport | None = None) -> Trace:
    """A :class:`~interfpred.data.trace.Trace` from a PyTorch profiler trace (module docstring).

    One execution per annotation whose name parses as a batch (GPU user annotations when the
    trace has any, else user annotations projected by their launches); with ``kernels``, one per
    CUDA kernel (model = its short name, batch size ``batch_size``). ``report`` is filled in.
    """
    report = CaptureReport(source="PyTorch profiler trace") if report is None else report
    events = load_kineto_events(path)
    gpu, launch, gpu_ranges, cpu_ranges, t0 = _split(events, path)
    if not gpu:
        raise CaptureFormatError("holds no GPU operation (kernel, gpu_memcpy or gpu_memset events): profile with "
                                 "ProfilerActivity.CUDA", path=path)
    ops = _ops(gpu, t0, path)
    if kernels:
        return executions_from_kernels(path, ops, batch_size=batch_size, report=report)
    if gpu_ranges:
        # Already on the GPU: each annotation is its own "launch" of the GPU span it covers, so the
        # projection keeps it as it is; parts on several streams (one External id) merge into one.
        groups: dict[Any, list[dict]] = {}
        for k, ev in enumerate(gpu_ranges):
            eid = _int_arg(ev, "External id", -1, path)
            groups.setdefault(("id", eid) if eid >= 0 else ("event", k), []).append(ev)
        spans, names, devices = [], [], []
        for parts in groups.values():
            ss = [_span(ev, t0, path) for ev in parts]
            spans.append((min(s for s, _ in ss), max(e for _, e in ss)))
            names.append(_name(parts[0], path))
            devices.append(_device(parts[0], path))
        n = len(spans)
        start = np.array([s for s, _ in spans])
        end = np.array([e for _, e in spans])
        check_spans(start, end, path, "a GPU user annotation", lambda i: f"(annotation {i + 1})")
        ident = np.arange(n, dtype=np.int64)
        check_names(len(names), max(map(len, names), default=0), path, "its GPU user annotations")
        ranges = Ranges(start_ms=start, end_ms=end, thread=ident, name=np.array(names))
        launches = Launches(start_ms=start, end_ms=end, thread=ident, process=np.zeros(n, dtype=np.int64),
                            correlation=ident)
        own = GpuOps(start_ms=start, end_ms=end, device=np.array(devices), process=np.zeros(n, dtype=np.int64),
                     correlation=ident, name=np.array(names), kernel=np.zeros(n, dtype=bool))
        trace = executions_from_ranges(path, ranges, launches, own, pattern=pattern, strict=strict, report=report)
        report.n_ops = len(gpu)
        return trace
    if not cpu_ranges:
        raise CaptureFormatError("holds no user annotation or GPU user annotation to mark batches (wrap each batch "
                                 "in torch.profiler.record_function), or pass --kernels", path=path)
    spans = [_span(ev, t0, path) for ev in launch]
    launches = Launches(start_ms=np.array([s for s, _ in spans]), end_ms=np.array([e for _, e in spans]),
                        thread=np.empty(0, dtype=np.int64), process=np.zeros(len(launch), dtype=np.int64),
                        correlation=np.array([_int_arg(ev, "correlation", -1, path) for ev in launch],
                                             dtype=np.int64))
    check_spans(launches.start_ms, launches.end_ms, path, "a CUDA launch", lambda i: _where(launch[i]))
    rspans = [_span(ev, t0, path) for ev in cpu_ranges]
    threads = _threads(launch + cpu_ranges)
    launches.thread = threads[:len(launch)]
    ranges = Ranges(start_ms=np.array([s for s, _ in rspans]), end_ms=np.array([e for _, e in rspans]),
                    thread=threads[len(launch):], name=_names(cpu_ranges, path, "its user annotations"))
    check_spans(ranges.start_ms, ranges.end_ms, path, "a user annotation", lambda i: _where(cpu_ranges[i]))
    return executions_from_ranges(path, ranges, launches, ops, pattern=pattern, strict=strict, report=report)
