"""Checks and bookkeeping the engine's fronts share: execution columns, devices, the sorted result.

Examples
--------
>>> names, codes = device_codes(["gpu1", "gpu0", "gpu1"], 3)
>>> names.tolist(), codes.tolist()
(['gpu0', 'gpu1'], [1, 0, 1])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.sim.contention import GpuSpec

__all__ = ["check_seed", "check_times", "device_codes", "engine_plan", "execution_columns", "sorted_trace"]


def check_seed(seed: object) -> int | None:
    """``seed`` if it is None or a non-negative integer, else an :class:`InterfpredError`.

    Examples
    --------
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: seed -1 must be a non-negative integer (or None)
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InterfpredError(f"seed {seed!r} must be a non-negative integer (or None)")
    return int(seed)


def check_times(time: np.ndarray) -> None:
    """Refuse an arrival or start time that is not finite or is negative, naming the execution."""
    bad = np.flatnonzero(~np.isfinite(time) | (time < 0))
    if bad.size:
        raise InterfpredError(f"time_ms {time[bad[0]]!r} (execution {int(bad[0])}) must be a finite time >= 0")


def device_codes(device: Sequence[str] | Sequence[int] | np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted device names and each execution's index into them; None puts all on ``gpu0``."""
    if device is None:
        return np.array(["gpu0"]), np.zeros(n, dtype=np.int64)
    names = np.asarray(device).astype(str)
    if names.shape != (n,):
        raise InterfpredError(f"device has shape {names.shape}, expected ({n},)")
    uniq, codes = np.unique(names, return_inverse=True)
    return uniq, codes.astype(np.int64)


def execution_columns(model: Sequence[str] | np.ndarray, batch_size: Sequence[int] | np.ndarray,
                      time_ms: Sequence[float] | np.ndarray, id: Sequence[int] | np.ndarray | None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``model, batch_size, time_ms, id`` as aligned arrays, checked (ids default to ``0..n-1``)."""
    model_a = np.asarray(model).astype(str)
    n = len(model_a)
    batch_a = np.asarray(batch_size)
    if batch_a.shape != (n,):
        raise InterfpredError(f"batch_size has shape {batch_a.shape}, expected ({n},) like model")
    if batch_a.size and (batch_a.dtype.kind not in "iuf" or np.any(batch_a != np.round(batch_a)) or np.any(batch_a < 1)):
        bad = batch_a[(batch_a != np.round(batch_a)) | (batch_a < 1)][0]
        raise InterfpredError(f"batch_size {bad!r} is not a positive integer")
    time = np.asarray(time_ms, dtype=np.float64)
    if time.shape != (n,):
        raise InterfpredError(f"time_ms has shape {time.shape}, expected ({n},) like model")
    ids = np.arange(n, dtype=np.int64) if id is None else np.asarray(id)
    if ids.shape != (n,):
        raise InterfpredError(f"id has shape {ids.shape}, expected ({n},) like model")
    return model_a, batch_a, time, ids


def engine_plan(codes: np.ndarray, time: np.ndarray, spec: GpuSpec, queue: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """What an engine needs before it runs: ``order, offsets, start, end, limit``.

    ``order`` groups the executions by device, by time within one (ties in input order, the FIFO
    order), and ``offsets`` bounds each device's group; ``start`` and ``end`` are NaN-filled
    outputs; ``limit`` is the concurrency limit (``spec.max_concurrency`` with the queue, none
    without).
    """
    n = codes.shape[0]
    order = np.lexsort((np.arange(n), time, codes)).astype(np.int64)
    counts = np.bincount(codes, minlength=int(codes.max()) + 1 if n else 0)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    limit = int(spec.max_concurrency if queue else max(n, 1))
    return order, offsets, np.full(n, np.nan), np.full(n, np.nan), limit


def sorted_trace(ids: np.ndarray, device: np.ndarray, model: np.ndarray, batch_size: np.ndarray, start: np.ndarray,
                 end: np.ndarray, work: np.ndarray, arrival_ms: np.ndarray) -> tuple[Trace, np.ndarray]:
    """The simulated executions as a Trace sorted by launch (like ``Trace.sorted()``, ties in input
    order), and their arrival times aligned with it (read-only)."""
    order = np.lexsort((np.arange(len(ids)), end, start))
    trace = Trace(id=ids[order], device=device[order], model=model[order], batch_size=batch_size[order],
                  start_ms=start[order], end_ms=end[order], solo_ms=work[order])
    arrival = arrival_ms[order]
    arrival.setflags(write=False)
    return trace, arrival
