"""Streaming timeline of one GPU: feed starts and finishes, get each execution's features.

:class:`TimelineState` keeps only the running set (memory bounded by it) and, per running
execution, its aggregation accumulator. Events at one instant are applied lazily: the running
set at time ``t`` is settled only when time moves past ``t``, so (as in the batch form) an
execution that finishes at ``t`` never meets one that starts at ``t``, whatever order the two
events arrive in, and a zero-length execution meets nobody. The arithmetic is the batch
kernels' own, in the same order per execution, so the features equal
``extractor.transform(trace, profiles)`` to the bit.

Examples
--------
>>> from interfpred import ProfileTable, TimeWeighted
>>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
>>> st = TimelineState(TimeWeighted(feature_map="gpulets"), prof)
>>> st.start(1, "a", 1, 0.0)
>>> st.start(2, "b", 1, 1.0)
>>> done = st.finish(1, 4.0)
>>> done.x, done.y
(array([0.5  , 0.25 , 0.375, 0.375]), 2.0)
>>> [r.id for r in st.running()]
[2]
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from interfpred import _timeline_kernels as _k
from interfpred.constants import DEFAULT_SHARE, MAX_RUNNING_SET, PROFILE_CACHE_SIZE
from interfpred.errors import InterfpredError
from interfpred.features import Extractor
from interfpred.profiles import ProfileTable

__all__ = ["FinishedExecution", "RunningExecution", "TimelineState"]


class FinishedExecution(NamedTuple):
    """What :meth:`TimelineState.finish` returns."""

    id: Any
    #: (d,) aggregated features.
    x: np.ndarray
    #: the extractor's target (slowdown or rate) from the observed latency.
    y: float
    #: profile solo latency, ms.
    solo_ms: float
    #: observed latency, ms.
    latency_ms: float


class RunningExecution(NamedTuple):
    """One member of the running set, as :meth:`TimelineState.running` reports it."""

    id: Any
    model: str
    batch_size: float
    start_ms: float
    #: time since start, at the state's current time, ms.
    elapsed_ms: float
    solo_ms: float
    #: (3,) profile demand ``[sm, l2, dram]``.
    demand: np.ndarray



def grown(arr: np.ndarray, cap: int) -> np.ndarray:
    """``arr`` copied into zeros of ``cap`` rows (same trailing shape and dtype): slot storage growth.

    >>> grown(np.array([[1.0, 2.0]]), 3)
    array([[1., 2.],
           [0., 0.],
           [0., 0.]])
    """
    out = np.zeros((cap, *arr.shape[1:]), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out

class TimelineState:
    """Live co-location timeline of one GPU, producing features as executions finish.

    Parameters
    ----------
    extractor
        Any extractor (map, aggregation, target), a custom map included (slower).
    profiles
        Profiles of the models that will run; a (model, batch size) between profiled sizes is
        interpolated.
    gpu
        Which GPU of ``profiles`` to use; may be omitted when the table holds one GPU.
    extrapolate
        Passed to the profile lookup.

    Notes
    -----
    ``start`` and ``finish`` cost O(k * d) for a running set of k (plus one profile lookup on
    ``start``); each execution's cost over its life is proportional to its segments. Refused
    events raise :class:`InterfpredError` and leave the state unchanged.

    Examples
    --------
    >>> from interfpred import ProfileTable, Static
    >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
    ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
    >>> st = TimelineState(Static(), prof)
    >>> st.start("x", "a", 1, 0.0)
    >>> st.finish("y", 1.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: finish of id 'y' refused: it is not running (running: 'x')
    """

    def __init__(self, extractor: Extractor, profiles: ProfileTable, *, gpu: str | None = None,
                 extrapolate: bool = False) -> None:
        if not isinstance(extractor, Extractor):
            raise InterfpredError(f"extractor must be an Extractor, got {type(extractor).__name__}")
        if not isinstance(profiles, ProfileTable):
            raise InterfpredError(f"profiles must be a ProfileTable, got {type(profiles).__name__}")
        if gpu is None and len(profiles.gpus) > 1:
            raise InterfpredError(
                f"the profile table holds several GPUs ({', '.join(profiles.gpus)}); pass gpu=")
        if gpu is not None and gpu not in profiles.gpus:
            raise InterfpredError(f"gpu {gpu!r} has no profiles; known gpus: {', '.join(profiles.gpus)}")
        if extractor.uses_shares:
            raise InterfpredError(f"the live timeline computes counter maps only; {extractor!r} uses MPS share "
                                  "features, which are computed from traces or measurements (transform)")
        self.extractor = extractor
        self.profiles = profiles
        self.gpu = gpu
        self.extrapolate = extrapolate
        spec = extractor.kernel_spec
        self._agg_id = spec.agg_id
        self._alpha = spec.alpha
        d = extractor.n_features
        cap = 8
        self._ids: list[Any] = []
        self._slot: dict[Any, int] = {}
        self._info: list[tuple[str, float]] = []
        self._dem = np.zeros((cap, 3))
        self._solo = np.zeros(cap)
        self._start = np.zeros(cap)
        self._acc = np.zeros((cap, d))
        self._cur = np.zeros((cap, d))
        self._wsum = np.zeros(cap)
        self._seen = np.zeros(cap, dtype=np.bool_)
        self._in_seg = np.zeros(cap, dtype=np.bool_)
        self._seg_t0 = 0.0
        self._now: float | None = None
        self._profile_cache: dict[tuple[str, Any, float], tuple[float, float, float, float]] = {}
        self._serial: list[int] = []
        self._next_serial = 0
        self._settled: frozenset[int] = frozenset()

    # ------------------------------------------------------------------ reading
    @property
    def now(self) -> float | None:
        """Time of the latest event, ms (None before the first)."""
        return self._now

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, id: Any) -> bool:
        return id in self._slot

    def running(self) -> list[RunningExecution]:
        """The running set at the current time, in start order of the slots (not sorted)."""
        now = self._now if self._now is not None else 0.0
        return [RunningExecution(id, m, b, float(self._start[a]), float(now - self._start[a]),
                                 float(self._solo[a]), self._dem[a].copy())
                for a, (id, (m, b)) in enumerate(zip(self._ids, self._info))]

    def demands(self) -> np.ndarray:
        """(k, 3) demands of the running set, rows in :meth:`running` order (a copy)."""
        return self._dem[: len(self._ids)].copy()

    # ------------------------------------------------------------------ events
    def _check_time(self, t: Any, what: str) -> float:
        try:
            tf = float(t)
        except (TypeError, ValueError):
            raise InterfpredError(f"{what} refused: time {t!r} is not a number") from None
        if not math.isfinite(tf):
            raise InterfpredError(f"{what} refused: time {t!r} is not finite")
        if self._now is not None and tf < self._now:
            raise InterfpredError(f"{what} refused: time {tf!r} is before the latest event at {self._now!r}")
        return tf

    def _advance(self, t: float) -> None:
        if self._now is not None and t > self._now:
            # The events at self._now are all in: settle the running set there. It starts a new
            # segment only if it differs from the current one (a zero-length execution, started
            # and finished at one instant, changes nothing, as in the batch form).
            k = len(self._ids)
            members = frozenset(self._serial[:k])
            if members != self._settled:
                if self._agg_id == _k.AGG_TIME_WEIGHTED and self._settled:
                    _k.stream_close(self._acc, self._wsum, self._seen, self._cur, self._in_seg, k,
                                    self._now - self._seg_t0)
                if self.extractor.is_builtin:
                    _k.stream_settle(self._acc, self._seen, self._cur, self._dem, k, self.extractor._map_id,
                                     self.extractor._combine_id, self._agg_id, self._alpha)
                elif k:
                    self._cur[:k] = self.extractor.map_running_set(self._dem[:k], check=False)
                    if self._agg_id != _k.AGG_TIME_WEIGHTED:
                        for a in range(k):
                            _k.fold(self._acc[a], self._cur[a], not self._seen[a], 0.0, self._agg_id, self._alpha)
                            self._seen[a] = True
                self._in_seg[:k] = True
                self._settled = members
                self._seg_t0 = self._now
        self._now = t

    def lookup_profile(self, model: Any, batch_size: Any, what: str = "lookup",
                       share: float = DEFAULT_SHARE) -> tuple[float, float, float, float]:
        """``(sm, l2, dram, solo_ms)`` of ``model`` at ``batch_size`` and MPS ``share`` on this state's GPU, cached.

        Uses :meth:`ProfileTable.lookup_arrays`, the very arithmetic of the batch form, so
        streaming and batch features agree to the bit; ``what`` prefixes the error message.

        Examples
        --------
        >>> from interfpred import ProfileTable, TimeWeighted
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1], solo_ms=[2.0],
        ...                                  sm=[0.5], l2=[0.25], dram=[0.125])
        >>> TimelineState(TimeWeighted(), prof).lookup_profile("a", 1)
        (0.5, 0.25, 0.125, 2.0)
        """
        key = (str(model), batch_size, share)
        try:
            prof = self._profile_cache.get(key)
        except TypeError:
            raise InterfpredError(f"{what} refused: batch size {batch_size!r} is not a number") from None
        if prof is None:
            try:
                v = self.profiles.lookup_arrays([key[0]], [batch_size], gpus=None if self.gpu is None else [self.gpu],
                                                shares=None if share == DEFAULT_SHARE else [share],
                                                extrapolate=self.extrapolate)
            except (InterfpredError, TypeError, ValueError) as exc:
                raise InterfpredError(f"{what} refused: {exc}") from None
            lacking = [r for r in self.extractor.counters if math.isnan(float(v[r][0]))]
            if lacking:
                raise InterfpredError(f"{what} refused: feature map {self.extractor.feature_map!r} needs the "
                                      f"{lacking[0]} counter, which the profile of model {key[0]!r} lacks")
            sm, l2, dram = (0.0 if math.isnan(float(v[r][0])) else float(v[r][0]) for r in ("sm", "l2", "dram"))
            prof = (sm, l2, dram, float(v["solo_ms"][0]))
            if len(self._profile_cache) >= PROFILE_CACHE_SIZE:
                self._profile_cache.clear()
            self._profile_cache[key] = prof
        return prof

    def start(self, id: Any, model: str, batch_size: float, t: float, *, share: float = DEFAULT_SHARE) -> None:
        """An execution ``id`` of ``model`` at ``batch_size`` (MPS ``share``, percent) launches at time ``t`` (ms).

        Raises
        ------
        InterfpredError
            Duplicate id, time before the latest event, or no profile; the state is unchanged.
        """
        what = f"start of id {id!r}"
        try:
            hash(id)
        except TypeError:
            raise InterfpredError(f"{what} refused: an id must be hashable") from None
        if id in self._slot:
            raise InterfpredError(f"{what} refused: that id is already running (started at "
                                  f"{float(self._start[self._slot[id]])!r})")
        tf = self._check_time(t, what)
        if len(self._ids) >= MAX_RUNNING_SET:
            raise InterfpredError(f"{what} refused: {len(self._ids)} executions already run, the most is "
                                  f"MAX_RUNNING_SET={MAX_RUNNING_SET}")
        prof = self.lookup_profile(model, batch_size, what, share)
        # Validated; from here on nothing can fail.
        self._advance(tf)
        k = len(self._ids)
        if k == self._dem.shape[0]:
            self._grow()
        self._dem[k] = prof[:3]
        self._solo[k] = prof[3]
        self._start[k] = tf
        self._acc[k] = 0.0
        self._cur[k] = 0.0
        self._wsum[k] = 0.0
        self._seen[k] = False
        self._in_seg[k] = False
        self._ids.append(id)
        self._info.append((str(model), float(batch_size)))
        self._slot[id] = k
        self._serial.append(self._next_serial)
        self._next_serial += 1

    def finish(self, id: Any, t: float) -> FinishedExecution:
        """Execution ``id`` ends at time ``t`` (ms); returns its features and target.

        The features equal the batch form's for the same events. A zero-length execution with
        ``target="rate"`` gets ``y = inf`` here (the batch form refuses such rows instead, since
        a finished event cannot be refused).

        Raises
        ------
        InterfpredError
            Unknown id (never started, or already finished) or time before the latest event;
            the state is unchanged.
        """
        what = f"finish of id {id!r}"
        try:
            known = id in self._slot
        except TypeError:
            known = False
        if not known:
            names = ", ".join(repr(i) for i in self._ids[:8]) or "none"
            raise InterfpredError(f"{what} refused: it is not running (running: {names})")
        tf = self._check_time(t, what)
        self._advance(tf)
        a = self._slot[id]
        acc = self._acc[a].copy()
        wsum = float(self._wsum[a])
        seen = bool(self._seen[a])
        if self._agg_id == _k.AGG_TIME_WEIGHTED and self._in_seg[a]:
            # Its last segment ends here, whatever else happens at this instant.
            dur = tf - self._seg_t0
            _k.fold(acc, self._cur[a], not seen, dur, self._agg_id, self._alpha)
            wsum = wsum + dur if seen else dur
            seen = True
        if self.extractor.is_builtin:
            _k.finalize(acc, wsum, seen, self._dem[a].copy(),
                        self.extractor.kernel_spec.map_id, self.extractor.kernel_spec.combine_id, self._agg_id)
        elif not seen:
            acc = self.extractor._custom_map(self._dem[a].copy(), np.empty((0, 3)))
        elif self._agg_id == _k.AGG_TIME_WEIGHTED:
            acc = acc / wsum
        latency = tf - float(self._start[a])
        solo = float(self._solo[a])
        if self.extractor.target == "slowdown":
            y = latency / solo
        else:
            y = solo / latency if latency > 0 else math.inf
        self._remove(a)
        return FinishedExecution(id, acc, y, solo, latency)

    # ------------------------------------------------------------------ storage
    def _remove(self, a: int) -> None:
        last = len(self._ids) - 1
        id = self._ids[a]
        if a != last:
            for arr in (self._dem, self._solo, self._start, self._acc, self._cur, self._wsum, self._seen, self._in_seg):
                arr[a] = arr[last]
            self._ids[a] = self._ids[last]
            self._serial[a] = self._serial[last]
            self._info[a] = self._info[last]
            self._slot[self._ids[a]] = a
        self._ids.pop()
        self._serial.pop()
        self._info.pop()
        del self._slot[id]

    def _grow(self) -> None:
        cap = 2 * self._dem.shape[0]
        self._dem, self._solo, self._start = (grown(a, cap) for a in (self._dem, self._solo, self._start))
        self._acc, self._cur, self._wsum, self._seen, self._in_seg = (
            grown(a, cap) for a in (self._acc, self._cur, self._wsum, self._seen, self._in_seg))
