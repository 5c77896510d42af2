"""Solo profiles from a capture: the executions that ran alone, and the GPU type of each device.

A profiler capture of a serving system usually holds executions that had the GPU to
themselves (at start-up, at light load, between bursts). Their latency is a solo latency
measured on the very GPU the trace ran on, so a capture can give the ``solo_ms`` of every
(GPU type, model, batch size) without a separate Nsight Compute run:

* :func:`ran_alone` marks the executions no other execution on the same device overlapped;
* :func:`capture_gpu_types` reads each device's GPU type from the export (Nsight Systems'
  ``TARGET_INFO_GPU`` table, the PyTorch profiler's ``deviceProperties``), so ``gpu0`` of an
  A100 export becomes ``NVIDIA A100-SXM4-40GB``;
* :func:`solo_profiles` takes the median latency of the lone executions per (GPU type, model,
  batch size) and keeps their count (column ``n_alone``). A capture whose devices are of several
  types is keyed by device instead (``gpu`` is ``gpu0``, ``gpu1``, ..., with the type in column
  ``gpu_type``), which is how a trace's rows find their profile: a trace names devices, and a
  profile table of one type serves every device, of several types only devices named in it.

The counters (``sm``, ``l2``, ``dram``) come from GPU metrics sampling when the capture has it
(``nsys profile --gpu-metrics-devices``, read by
:func:`~interfpred.data.ingest.nsys.read_nsys_gpu_metrics`): the mean of the samples taken on the
device while the key's lone executions ran (column ``n_samples`` counts them). A counter no such
sample measured stays missing (NaN, never zero): ``l2`` always (Nsight Systems samples no L2
throughput), every counter of a capture without metrics. A (model, batch size) that never ran
alone has no solo latency, and is refused with one line naming it.

Examples
--------
>>> from interfpred import Trace
>>> t = Trace(id=[1, 2, 3, 4], device=["gpu0"] * 4, model=["a", "a", "b", "a"], batch_size=[1] * 4,
...           start_ms=[0.0, 10.0, 12.0, 20.0], end_ms=[2.0, 14.0, 16.0, 23.0])
>>> ran_alone(t).tolist()
[True, False, False, True]
>>> solo_profiles(t, {"gpu0": "A100"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: model b batch size 1 on A100 never ran alone in the capture (1 execution(s), all overlapped by others): ...
>>> p = solo_profiles(t, {"gpu0": "A100"}, models=["a"])
>>> p.gpus, p.lookup("a", 1).solo_ms, p.lookup("a", 1).sm
(('A100',), 2.5, None)
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from interfpred._core.limits import check_limit, parse_capture_json, read_capture_bytes
from interfpred.constants import CAPTURE_DEVICE_ID_MAX, CAPTURE_GPU_NAME_MAX
from interfpred.data.ingest.capture_checks import gpu_type_name
from interfpred.data.ingest.gpu_ranges import CaptureFormatError
from interfpred.data.ingest.nsys import GpuMetricSamples, real_tables
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

__all__ = ["capture_gpu_types", "ran_alone", "solo_profiles"]

#: Column of :func:`solo_profiles` counting the lone executions each median comes from.
N_ALONE_COLUMN = "n_alone"
#: Column of :func:`solo_profiles` holding the GPU type when the profiles are keyed by device.
GPU_TYPE_COLUMN = "gpu_type"
#: Column of :func:`solo_profiles` (given GPU metrics) counting the samples its counters are means of.
N_SAMPLES_COLUMN = "n_samples"
_SAMPLED = ("sm", "dram")


def ran_alone(trace: Trace) -> np.ndarray:
    """A boolean per row: True when no other execution on the same device overlapped it.

    Two executions overlap when one starts before the other ends (touching ends do not).
    """
    alone = np.zeros(len(trace), dtype=bool)
    for dev in trace.devices:
        idx = np.flatnonzero(trace.device == dev)
        order = idx[np.lexsort((trace.end_ms[idx], trace.start_ms[idx]))]
        start, end = trace.start_ms[order], trace.end_ms[order]
        before = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])  # latest end of earlier starts
        after = np.concatenate([start[1:], [np.inf]])                            # next start
        alone[order] = (before <= start) & (after >= end)
    return alone


def _nsys_gpu_types(path: str | os.PathLike[str]) -> dict[str, str]:
    try:
        con = sqlite3.connect(pathlib.Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be opened as an SQLite export: {exc}", path=path) from None
    table = "TARGET_INFO_GPU"
    try:
        # a view or virtual table of that name is refused, as for the kernel tables: its SQL would run
        if table not in real_tables(con, path, {table}):
            return {}
        cols = {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}
        if "name" not in cols:
            return {}
        index = "cuDevice" if "cuDevice" in cols else "id" if "id" in cols else None
        if index is None:
            return {}
        n = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        check_limit("INPUT_MAX_ROWS", int(n), f"table {table} with rows", path=path)
        # names are checked in SQL before any is fetched: a 100 MB name or a BLOB is refused, not read
        bad = con.execute(f'SELECT {index}, typeof(name), length(name) FROM "{table}" WHERE name IS NOT NULL AND '
                          f"(typeof(name) != 'text' OR length(name) > ?) LIMIT 1",
                          (CAPTURE_GPU_NAME_MAX,)).fetchone()
        if bad is not None:
            what = f"{bad[2]} characters, longer than CAPTURE_GPU_NAME_MAX={CAPTURE_GPU_NAME_MAX}" \
                if bad[1] == "text" else f"type {bad[1]}, not text"
            raise CaptureFormatError(f"table {table} device {bad[0]!r} has a GPU name of {what}", path=path)
        rows = con.execute(f'SELECT {index}, name FROM "{table}" WHERE name IS NOT NULL').fetchall()
    except sqlite3.Error as exc:
        raise CaptureFormatError(f"cannot be read as an SQLite export: {exc}", path=path) from None
    except UnicodeDecodeError as exc:
        raise CaptureFormatError(f"table {table} holds text that is not UTF-8 (byte "
                                 f"{exc.object[exc.start:exc.start + 1]!r}): a damaged export", path=path) from None
    finally:
        con.close()
    out = {}
    for d, n in rows:
        if isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= CAPTURE_DEVICE_ID_MAX:
            out[f"gpu{d}"] = gpu_type_name(n, path, f"table {table} device {d}")
    return out


def _kineto_gpu_types(path: str | os.PathLike[str]) -> dict[str, str]:
    # within the same size, inflation, nesting and digit limits as the trace reader
    raw = read_capture_bytes(path, "a PyTorch profiler trace")
    doc = parse_capture_json(raw, path, "a PyTorch profiler trace")
    props = doc.get("deviceProperties") if isinstance(doc, dict) else None
    if not isinstance(props, list):
        return {}
    out = {}
    for p in props:
        if not isinstance(p, dict):
            continue
        dev, name = p.get("id"), p.get("name")
        if isinstance(dev, int) and not isinstance(dev, bool) and 0 <= dev <= CAPTURE_DEVICE_ID_MAX \
                and name is not None:
            out[f"gpu{dev}"] = gpu_type_name(name, path, f"deviceProperties of device {dev}")
    return out


def capture_gpu_types(path: str | os.PathLike[str]) -> dict[str, str]:
    """GPU type (the name the export records, ``"NVIDIA A100-SXM4-40GB"``) of each device (``"gpu0"``).

    Devices the export names no type for are left out (an empty dict for a capture that
    records none: an older PyTorch profiler trace, an export without ``TARGET_INFO_GPU``).
    """
    from interfpred.data.ingest.capture import capture_kind

    return _nsys_gpu_types(path) if capture_kind(path) == "nsys" else _kineto_gpu_types(path)


def _sample_means(trace: Trace, groups: Sequence[Sequence[int]],
                  metrics: GpuMetricSamples) -> tuple[dict[str, list[float]], list[int]]:
    """Per group of executions, each sampled counter's mean over the samples taken on an execution's device
    from its start to its end (NaN where none was), and the most samples any counter had."""
    means: dict[str, list[float]] = {c: [] for c in _SAMPLED}
    counts = []
    series = {}
    for key in set(zip(metrics.device.tolist(), metrics.counter.tolist())):
        sel = (metrics.device == key[0]) & (metrics.counter == key[1])
        order = np.argsort(metrics.time_ms[sel], kind="stable")
        t, v = metrics.time_ms[sel][order], metrics.value[sel][order]
        series[key] = (t, np.concatenate([[0.0], np.cumsum(v)]))
    for idx in groups:
        most = 0
        for c in _SAMPLED:
            total, n = 0.0, 0
            for i in idx:
                s = series.get((str(trace.device[i]), c))
                if s is None:
                    continue
                lo = int(np.searchsorted(s[0], trace.start_ms[i], side="left"))
                hi = int(np.searchsorted(s[0], trace.end_ms[i], side="right"))
                total, n = total + float(s[1][hi] - s[1][lo]), n + hi - lo
            means[c].append(total / n if n else float("nan"))
            most = max(most, n)
        counts.append(most)
    return means, counts


def solo_profiles(trace: Trace, gpu_types: Mapping[str, str], *, models: Iterable[str] | None = None,
                  metrics: GpuMetricSamples | None = None) -> ProfileTable:
    """Solo profiles from the executions of ``trace`` that ran alone (:func:`ran_alone`).

    ``solo_ms`` is the median latency of the lone executions of each (GPU type, model, batch
    size); ``n_alone`` (an extra column) counts them. ``gpu_types`` maps a device to its GPU
    type; a device it does not name is its own type. When the trace's devices are of more than
    one type, each device is its own key (``gpu`` = the device, ``gpu_type`` = its type), so the
    table looks up a trace's rows by device. ``models`` limits the table to those models
    (default: every model of the trace). With ``metrics`` (GPU metrics samples of the capture),
    ``sm`` and ``dram`` are the means of the samples taken on each lone execution's device while it
    ran, pooled over the key's lone executions, and ``n_samples`` counts them; a counter with no
    such sample, and every counter without ``metrics``, stays missing.

    Examples
    --------
    >>> from interfpred import Trace
    >>> t = Trace(id=[1, 2], device=["gpu0", "gpu1"], model=["a", "a"], batch_size=[1, 1],
    ...           start_ms=[0.0, 0.0], end_ms=[2.0, 1.0])
    >>> p = solo_profiles(t, {"gpu0": "A100", "gpu1": "H100"})
    >>> p.gpus, p.column("gpu_type").tolist(), p.lookup("a", 1, gpu="gpu1").solo_ms
    (('gpu0', 'gpu1'), ['A100', 'H100'], 1.0)

    Raises
    ------
    InterfpredError
        A (GPU type, model, batch size) of the trace whose executions all overlapped others.
    """
    keep = None if models is None else set(models)
    alone = ran_alone(trace)
    type_of = {str(d): gpu_types.get(str(d), str(d)) for d in trace.devices}
    by_device = len(set(type_of.values())) > 1
    gpu = np.array([str(d) if by_device else type_of[str(d)] for d in trace.device], dtype=object)
    keys: dict[tuple[str, str, int], list[int]] = {}
    for i in range(len(trace)):
        if keep is None or trace.model[i] in keep:
            keys.setdefault((str(gpu[i]), str(trace.model[i]), int(trace.batch_size[i])), []).append(i)
    if not keys:
        raise InterfpredError("the capture holds no execution to take a solo profile from")
    rows = []
    latency = trace.latency_ms
    for (g, m, b), idx in sorted(keys.items()):
        lone = [i for i in idx if alone[i]]
        if not lone:
            raise InterfpredError(
                f"model {m} batch size {b} on {g} never ran alone in the capture ({len(idx)} execution(s), all "
                f"overlapped by others): its solo latency cannot come from this capture; profile it alone "
                f"(interfpred ingest) or capture a stretch where it runs by itself")
        rows.append((g, m, b, float(np.median(latency[lone])), lone))
    g_, m_, b_, s_, lone_ = zip(*rows)
    extra: dict[str, Sequence[str]] = {N_ALONE_COLUMN: [str(len(x)) for x in lone_]}
    if by_device:
        extra[GPU_TYPE_COLUMN] = [type_of[g] for g in g_]
    counters: dict[str, list[float]] = {}
    if metrics is not None:
        counters, counts = _sample_means(trace, lone_, metrics)
        extra[N_SAMPLES_COLUMN] = [str(n) for n in counts]
    return ProfileTable.from_columns(gpu=list(g_), model=list(m_), batch_size=list(b_), solo_ms=list(s_),
                                     sm=counters.get("sm"), dram=counters.get("dram"), extra=extra)
