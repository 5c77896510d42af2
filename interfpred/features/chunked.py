"""Timelines and features of a trace of any length, in bounded memory: per device and per time window.

Each device's executions are cut into **windows** of about ``chunk_rows`` launches, ending at a
launch time so that no segment straddles two windows; executions still running at a cut carry
their feature accumulators into the next window and are emitted in the window where they end.
The segments and the arithmetic are those of the one-shot sweep, so the features equal
:func:`~interfpred.features.transform_many`'s **to the bit**, in memory O(chunk_rows) per window
beside the trace's columns. docs/concepts.md gives the window rules.

Examples
--------
>>> import numpy as np
>>> from interfpred import TimeWeighted, transform_many
>>> from interfpred.sim.workload import mix_scenario
>>> sc = mix_scenario(["vgg19", "resnet50"], rho=0.8, executions=500, seed=1)
>>> tr, prof = sc.traces["trace"], sc.profiles
>>> chunks = list(iter_features(tr, prof, [TimeWeighted()], chunk_rows=64))
>>> len(chunks) > 5, sum(len(c.rows) for c in chunks)
(True, 500)
>>> whole = transform_chunked(tr, prof, [TimeWeighted()], chunk_rows=64)[0]
>>> bool(np.array_equal(whole.X, transform_many(tr, prof, [TimeWeighted()])[0].X))
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from interfpred._core.arrow import require_pyarrow
from interfpred._core.jit import read_only
from interfpred.constants import CHUNK_ROWS, MAX_RUNNING_SET, PARQUET_BATCH_ROWS, TIMELINE_MAX_MEMBERS
from interfpred.data.counters import checked_demands
from interfpred.data.frames import as_profiles, as_trace
from interfpred.data.profiles import ProfileTable, profile_arrays
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features import compiled_maps as _k
from interfpred.features._sweep import sweep
from interfpred.features.extractors import Extractor
from interfpred.features.matrix import FeatureMatrix, refuse_zero_latency

__all__ = ["FeatureChunk", "TimelineChunk", "iter_features", "iter_timeline", "transform_chunked"]


class TimelineChunk(NamedTuple):
    """The segments of one window of one device; running sets as trace rows."""

    device: str
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_ptr: np.ndarray
    seg_members: np.ndarray


class FeatureChunk(NamedTuple):
    """The executions whose features became final in one window: trace rows and one matrix per extractor."""

    device: str
    rows: np.ndarray
    features: list[FeatureMatrix]
    n_segments: int


class _Window(NamedTuple):
    idx: np.ndarray         # trace rows of the window's local arrays (carried first)
    n_carried: int
    t0: float               # the window holds the segments that open in [t0, t1)
    t1: float
    final: np.ndarray       # local rows that end in this window (or launch, for zero length)
    keep: np.ndarray        # local rows carried to the next window


def _kernel_args(extractors: Sequence[Extractor], who: str) -> tuple[list[Extractor], int, int, np.ndarray, np.ndarray]:
    """The extractors and the kernel codes they share: ``(exs, map_id, combine_id, agg_ids, alphas)``.

    The chunked paths take built-in maps without share features, one map and combine for all.
    """
    exs = list(extractors)
    if not exs or not all(isinstance(ex, Extractor) for ex in exs):
        raise InterfpredError(f"{who} needs a non-empty list of Extractor objects")
    if any(not ex.is_builtin or ex.uses_shares for ex in exs):
        raise InterfpredError("chunked features need built-in maps without share features; use transform_many")
    maps = {(ex.feature_map, ex.combine) for ex in exs}
    if len(maps) != 1:
        raise InterfpredError(f"chunked features need one map and combine for all extractors, got {sorted(maps)}")
    specs = [ex.compiled_spec for ex in exs]
    return (exs, specs[0].map_id, specs[0].combine_id, np.array([sp.agg_id for sp in specs], dtype=np.int64),
            np.array([sp.alpha for sp in specs], dtype=np.float64))


def _matrices(exs: list[Extractor], out: np.ndarray, lat: np.ndarray, solo: np.ndarray) -> list[FeatureMatrix]:
    """One FeatureMatrix per extractor from the finalised rows ``out`` (a, rows, d)."""
    return [FeatureMatrix(X=np.ascontiguousarray(out[j]), names=ex.names, y=ex.target_from_latency(lat, solo),
                          target=ex.target, solo_ms=solo, latency_ms=lat) for j, ex in enumerate(exs)]


def _check_chunk_rows(chunk_rows: int) -> int:
    if not isinstance(chunk_rows, (int, np.integer)) or isinstance(chunk_rows, bool) or chunk_rows < 1:
        raise InterfpredError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return int(chunk_rows)


def _device_rows(trace: Trace) -> list[tuple[str, np.ndarray]]:
    names, gcode = trace.codes("device")
    if len(names) <= 1:
        return [(names[0], np.arange(len(trace)))] if names else []
    order = np.argsort(gcode, kind="stable")
    bounds = np.searchsorted(gcode[order], np.arange(len(names) + 1))
    return [(names[g], order[bounds[g]:bounds[g + 1]]) for g in range(len(names))]


def _windows(rows: np.ndarray, start: np.ndarray, end: np.ndarray, chunk_rows: int) -> Iterator[_Window]:
    """Windows of one device's rows (see the module docstring)."""
    st = start[rows]
    if st.size > 1 and not bool(np.all(st[1:] >= st[:-1])):   # a trace is usually in launch order already:
        order = np.argsort(st, kind="stable")                   # then no O(n log n) sort of the whole device
        rows, st = rows[order], st[order]
    en = end[rows]
    pos_st = st[en > st]
    cuts = np.unique(pos_st[chunk_rows::chunk_rows]) if pos_st.size > chunk_rows else np.empty(0)
    bounds = np.concatenate([[-np.inf], cuts, [np.inf]])
    carry = np.empty(0, dtype=np.int64)           # trace rows carried into the window
    for w in range(len(bounds) - 1):
        t0, t1 = bounds[w], bounds[w + 1]
        lo = np.searchsorted(st, t0, side="left") if w else 0
        hi = np.searchsorted(st, t1, side="right")
        new = rows[lo:hi]
        # At t0 only the zero-length launches are new (the others were carried); at t1 only the
        # positive ones are taken (they make the boundary; zero-length ones belong to the next window).
        ns, ne = start[new], end[new]
        new = new[((ns > t0) | (ne == ns)) & ((ns < t1) | (ne > ns))]
        idx = np.concatenate([carry, new])
        s, e = start[idx], end[idx]
        ends_here = (e <= t1) & (e > s) | (e == s) & (s < t1)
        yield _Window(idx, carry.size, float(t0), float(t1), np.flatnonzero(ends_here), np.flatnonzero(~ends_here))
        carry = idx[~ends_here]


def iter_timeline(trace: Trace, *, chunk_rows: int = CHUNK_ROWS) -> Iterator[TimelineChunk]:
    """The segments of every device of ``trace``, window by window (devices in name order, windows in time order).

    Concatenated, the chunks of a device hold exactly the segments of
    :func:`~interfpred.features.timeline.build_timeline` for it, in the same order, with the same
    running sets (members possibly in another order).

    Examples
    --------
    >>> from interfpred import Trace
    >>> t = Trace(id=[1, 2, 3], device=["g"] * 3, model=["m"] * 3, batch_size=[1] * 3,
    ...           start_ms=[0.0, 2.0, 5.0], end_ms=[4.0, 5.0, 6.0])
    >>> [c.seg_start.tolist() for c in iter_timeline(t, chunk_rows=1)]
    [[0.0], [2.0, 4.0], [5.0]]
    """
    trace = as_trace(trace, what="iter_timeline")
    chunk_rows = _check_chunk_rows(chunk_rows)
    start = np.ascontiguousarray(trace.start_ms)
    end = np.ascontiguousarray(trace.end_ms)
    for name, rows in _device_rows(trace):
        for win in _windows(rows, start, end, chunk_rows):
            seg_start, seg_end, seg_ptr, members = _window_segments(start[win.idx], end[win.idx], win.t0, win.t1)
            yield TimelineChunk(name, seg_start, seg_end, seg_ptr, win.idx[members])


def iter_features(trace: Trace, profiles: ProfileTable, extractors: Sequence[Extractor], *,
                  chunk_rows: int = CHUNK_ROWS, extrapolate: bool = False) -> Iterator[FeatureChunk]:
    """Features of every execution, yielded window by window as they become final.

    Parameters
    ----------
    trace, profiles
        The executions and their profiles.
    extractors
        Extractors with built-in maps sharing one map and combine (any aggregations), without
        the MPS share features.
    chunk_rows
        About how many launches a window holds (per device).
    extrapolate
        Passed to the profile lookup.

    Yields
    ------
    FeatureChunk
        Trace rows and, per extractor, their :class:`~interfpred.features.FeatureMatrix`
        (rows in that order). Every row appears in exactly one chunk.

    Raises
    ------
    InterfpredError
        Extractors this path does not take, a row without a profile, a zero-latency row with
        ``target="rate"``, or more than ``MAX_RUNNING_SET`` executions at once.
    """
    exs, map_id, combine_id, agg_ids, alphas = _kernel_args(extractors, "iter_features")
    chunk_rows = _check_chunk_rows(chunk_rows)
    trace, profiles = as_trace(trace, what="iter_features"), as_profiles(profiles, what="iter_features")
    dem, solo = profile_arrays(trace, profiles, extrapolate=extrapolate)
    dem = checked_demands(exs, dem, trace.model)
    start = np.ascontiguousarray(trace.start_ms)
    end = np.ascontiguousarray(trace.end_ms)
    latency = end - start
    refuse_zero_latency((ex.target for ex in exs), latency, trace.where)
    d = exs[0].n_features
    for name, rows in _device_rows(trace):
        c_out = np.zeros((len(exs), 0, d))
        c_wsum = np.zeros(0)
        c_seen = np.zeros(0, dtype=np.bool_)
        for win in _windows(rows, start, end, chunk_rows):
            n = win.idx.size
            out = np.zeros((len(exs), n, d))
            wsum = np.zeros(n)
            seen = np.zeros(n, dtype=np.bool_)
            k = win.n_carried
            out[:, :k] = c_out
            wsum[:k] = c_wsum
            seen[:k] = c_seen
            dem_l = np.ascontiguousarray(dem[win.idx])
            n_seg = _fold_window(start[win.idx], end[win.idx], dem_l, win.t0, win.t1, map_id, combine_id, agg_ids,
                                 alphas, out, wsum, seen, f"device {name!r}")
            _k.finalize_rows(out, wsum, seen, dem_l, win.final, map_id, combine_id, agg_ids)
            c_out, c_wsum, c_seen = out[:, win.keep], wsum[win.keep], seen[win.keep]
            g_rows = win.idx[win.final]
            mats = _matrices(exs, out[:, win.final], latency[g_rows], solo[g_rows])
            yield FeatureChunk(name, g_rows, mats, n_seg)


def transform_chunked(trace: Trace, profiles: ProfileTable, extractors: Sequence[Extractor], *,
                      chunk_rows: int = CHUNK_ROWS, extrapolate: bool = False) -> list[FeatureMatrix]:
    """:func:`iter_features` assembled in trace row order: equal to ``transform_many`` to the bit.

    Holds every row's features at the end (like ``transform_many``) but never the whole timeline.
    """
    exs = _kernel_args(extractors, "transform_chunked")[0]
    trace, profiles = as_trace(trace, what="transform_chunked"), as_profiles(profiles, what="transform_chunked")
    X = np.empty((len(exs), len(trace), exs[0].n_features))
    for chunk in iter_features(trace, profiles, exs, chunk_rows=chunk_rows, extrapolate=extrapolate):
        for j, fm in enumerate(chunk.features):
            X[j][chunk.rows] = fm.X
    _, solo = profile_arrays(trace, profiles, extrapolate=extrapolate)
    latency = np.ascontiguousarray(trace.end_ms) - np.ascontiguousarray(trace.start_ms)
    return _matrices(exs, X, latency, solo)


# ---------------------------------------------------------------------------- from a file, batch by batch
class _Carry:
    """One device's executions still open at the last cut: their columns and feature accumulators."""

    def __init__(self, n_aggs: int, d: int) -> None:
        self.t0 = -np.inf
        self.rows = np.empty(0, dtype=np.int64)
        self.start = np.empty(0)
        self.end = np.empty(0)
        self.dem = np.empty((0, 3))
        self.solo = np.empty(0)
        self.out = np.zeros((n_aggs, 0, d))
        self.wsum = np.empty(0)
        self.seen = np.empty(0, dtype=np.bool_)

    def add(self, rows, start, end, dem, solo) -> None:
        k = rows.size
        self.rows = np.concatenate([self.rows, rows])
        self.start = np.concatenate([self.start, start])
        self.end = np.concatenate([self.end, end])
        self.dem = np.concatenate([self.dem, dem])
        self.solo = np.concatenate([self.solo, solo])
        self.out = np.concatenate([self.out, np.zeros((self.out.shape[0], k, self.out.shape[2]))], axis=1)
        self.wsum = np.concatenate([self.wsum, np.zeros(k)])
        self.seen = np.concatenate([self.seen, np.zeros(k, dtype=np.bool_)])

    def take(self, keep: np.ndarray) -> None:
        for name in ("rows", "start", "end", "dem", "solo", "wsum", "seen"):
            setattr(self, name, getattr(self, name)[keep])
        self.out = self.out[:, keep]


def _local_orders(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sweep orders (by start, by end) of one device's executions ``[s, e)`` of positive length."""
    live = np.flatnonzero(e > s)
    return live[np.argsort(s[live], kind="stable")], live[np.argsort(e[live], kind="stable")]


def _window_segments(s: np.ndarray, e: np.ndarray, t0: float, t1: float) -> tuple[Any, ...]:
    """The segments of one device's executions ``[s, e)`` that open in ``[t0, t1)``, refused (before
    the sweep allocates more) past the running-set and membership limits."""
    so, eo = _local_orders(s, e)
    # Read-only views, like the trace columns build_timeline sweeps: the kernel compiles once for both.
    gcode, s_ro, e_ro = (read_only(a) for a in (np.zeros(s.size, dtype=np.int64), s, e))
    _, seg_start, seg_end, seg_ptr, members, stop = sweep(gcode, s_ro, e_ro, so, eo, s.size, MAX_RUNNING_SET,
                                                          TIMELINE_MAX_MEMBERS)
    if stop >= 0:
        raise InterfpredError(f"more than MAX_RUNNING_SET={MAX_RUNNING_SET} executions run at once on one device "
                              f"at {float(s[stop])!r} ms, or a window's timeline exceeds "
                              f"TIMELINE_MAX_MEMBERS={TIMELINE_MAX_MEMBERS} memberships")
    a = np.searchsorted(seg_start, t0, side="left")
    b = np.searchsorted(seg_start, t1, side="left")
    return seg_start[a:b], seg_end[a:b], seg_ptr[a:b + 1] - seg_ptr[a], members[seg_ptr[a]:seg_ptr[b]]


def _fold_window(s: np.ndarray, e: np.ndarray, dem: np.ndarray, t0: float, t1: float, map_id: int, combine_id: int,
                 agg_ids: np.ndarray, alphas: np.ndarray, out: np.ndarray, wsum: np.ndarray, seen: np.ndarray,
                 where: str) -> int:
    """Fold the segments of one device's executions ``[s, e)`` that open in ``[t0, t1)`` into the
    accumulators in place, sweeping their events without storing a timeline (memory O(rows + running
    set) at any concurrency, the one-shot arithmetic); returns how many segments it folded."""
    so, eo = _local_orders(s, e)
    # Read-only views, like the trace columns the one-shot sweep takes: the kernel compiles once for both.
    gcode, s_ro, e_ro = (read_only(a) for a in (np.zeros(s.size, dtype=np.int64), s, e))
    stop, folded = _k.sweep_features_into(gcode, s_ro, e_ro, so, eo, dem, map_id, combine_id, agg_ids, alphas, out,
                                          wsum, seen, t0, t1, MAX_RUNNING_SET, False)
    if stop >= 0:
        raise InterfpredError(f"more than MAX_RUNNING_SET={MAX_RUNNING_SET} executions run at once on {where} "
                              f"at {float(s[stop])!r} ms")
    return int(folded)


def _advance(c: _Carry, t1: float, map_id: int, combine_id: int, agg_ids, alphas) -> tuple[Any, ...]:
    """Window ``[c.t0, t1)`` over the open executions: fold its segments, emit what ends in it."""
    s, e = c.start, c.end
    dem = np.ascontiguousarray(c.dem)
    folded = _fold_window(s, e, dem, c.t0, t1, map_id, combine_id, agg_ids, alphas, c.out, c.wsum, c.seen,
                          "one device")
    final = np.flatnonzero(((e <= t1) & (e > s)) | ((e == s) & (s < t1)))
    _k.finalize_rows(c.out, c.wsum, c.seen, dem, final, map_id, combine_id, agg_ids)
    emitted = (c.rows[final], c.out[:, final], e[final] - s[final], c.solo[final], folded)
    keep = np.ones(s.size, dtype=np.bool_)
    keep[final] = False
    c.take(keep)
    c.t0 = t1
    return emitted


def _file_rows(path: str, offset: int) -> Callable[[int], str]:
    """Names row ``i`` of a batch that starts at file row ``offset``, for messages."""
    return lambda i: f"{path}: row {offset + i}"


def iter_features_parquet(path: str, profiles: ProfileTable, extractors: Sequence[Extractor], *,
                          batch_rows: int = PARQUET_BATCH_ROWS, extrapolate: bool = False) -> Iterator[FeatureChunk]:
    """:func:`iter_features` of a Parquet trace read ``batch_rows`` rows at a time: memory O(batch).

    The file's rows must be in launch order (``start_ms`` non-decreasing), as a trace is; rows are
    numbered from 0 in file order (``FeatureChunk.rows``). Each device keeps its own open executions
    across batches; a batch is cut at its latest launch, so the features equal ``transform_many``
    on the whole file to the bit. Ids are checked for duplicates within a batch only.

    Raises
    ------
    InterfpredError
        A row launched before an earlier batch's latest launch, plus what :func:`iter_features` raises.
    """
    pa = require_pyarrow(f"reading {path} in batches")
    import pyarrow.parquet as pq

    from interfpred.data.columnar import trace_from_arrow

    exs, map_id, combine_id, agg_ids, alphas = _kernel_args(extractors, "iter_features_parquet")
    batch_rows = _check_chunk_rows(batch_rows)
    carries: dict[str, _Carry] = {}
    offset = 0
    latest = -np.inf

    def emit(device: str, got) -> FeatureChunk:
        rows, out, lat, so, nseg = got
        return FeatureChunk(device, rows, _matrices(exs, out, lat, so), int(nseg))

    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        tr = trace_from_arrow(pa.Table.from_batches([batch]), path=path)
        n = len(tr)
        start, end = tr.start_ms, tr.end_ms
        if n and (start.min() < latest or np.any(start[1:] < start[:-1])):
            i = int(np.flatnonzero(start < np.maximum.accumulate(np.concatenate([[latest], start]))[:-1])[0])
            raise InterfpredError(f"{path}: row {offset + i}: start_ms {float(start[i])!r} is before an earlier "
                                  "row's; the file must be in launch order")
        refuse_zero_latency((ex.target for ex in exs), end - start, _file_rows(path, offset))
        dem, solo = profile_arrays(tr, profiles, extrapolate=extrapolate)
        dem = checked_demands(exs, dem, tr.model)
        names, gcode = tr.codes("device")
        for g, name in enumerate(names):
            sel = np.flatnonzero(gcode == g)
            c = carries.setdefault(name, _Carry(len(exs), exs[0].n_features))
            c.add(offset + sel, start[sel], end[sel], dem[sel], solo[sel])
            pos = end[sel] > start[sel]
            if pos.any():
                t1 = float(start[sel][pos].max())
                if t1 > c.t0:
                    yield emit(name, _advance(c, t1, map_id, combine_id, agg_ids, alphas))
        if n:
            latest = max(latest, float(start.max()))
        offset += n
    for name in sorted(carries):
        yield emit(name, _advance(carries[name], np.inf, map_id, combine_id, agg_ids, alphas))
