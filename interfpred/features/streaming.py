"""Streaming timeline of one device: feed starts and finishes, get each execution's features.

:class:`TimelineState` keeps only the running set (memory bounded by it) and, per running
execution, its aggregation accumulator. Events at one instant are applied lazily: the running
set at time ``t`` is settled only when time moves past ``t``, so (as in the batch form) an
execution that finishes at ``t`` never meets one that starts at ``t``, whatever order the two
events arrive in, and a zero-length execution meets nobody. The arithmetic is the batch
form's own, in the same order per execution, so the features equal
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
>>> done.x, done.y          # y: the rate 2 / 4 (the default target)
(array([0.5  , 0.25 , 0.375, 0.375]), 0.5)
>>> st.running
[2]
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from interfpred._core.targets import observed_target
from interfpred.constants import DEFAULT_SHARE, MAX_RUNNING_SET, PROFILE_CACHE_SIZE
from interfpred.data.frames import as_profiles
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import check_batch_size
from interfpred.errors import InterfpredError
from interfpred.features import compiled_maps as _k
from interfpred.features.extractors import Extractor
from interfpred.features.running_set import RunningSet, RunningSetView, check_share, check_time

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
    """One member of the running set, as :meth:`TimelineState.running_executions` reports it."""

    id: Any
    model: str
    batch_size: float
    start_ms: float
    #: time since start, at the state's current time, ms.
    elapsed_ms: float
    solo_ms: float
    #: (3,) profile demand ``[sm, l2, dram]``.
    demand: np.ndarray


class TimelineState(RunningSetView):
    """Live co-location timeline of one device, producing features as executions finish.

    Parameters
    ----------
    extractor
        Any extractor (map, aggregation, target), a custom map included (slower).
    profiles
        Profiles of the models that will run; a (model, batch size) between profiled sizes is
        interpolated.
    gpu
        The GPU type in ``profiles`` of this device; may be omitted when the table holds one type.
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
        profiles = as_profiles(profiles)
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
        spec = extractor.compiled_spec
        self._map_id = spec.map_id
        self._combine_id = spec.combine_id
        self._agg_id = spec.agg_id
        self._alpha = spec.alpha
        d = extractor.n_features
        # per slot: start time, feature accumulator, current segment's map, summed weight, whether it has
        # seen a segment, whether it is in the current one; tagged with its start serial. Per device: the
        # start of the current segment, the serials of its members, the next start's serial. All of it lives
        # on the running set, which undoes an event for every object sharing it.
        self._set = RunningSet({"start": (), "acc": (d,), "cur": (d,), "wsum": (), "seen": ((), np.bool_),
                                "in_seg": ((), np.bool_)})
        self._set.register_value("seg_t0", 0.0)
        self._set.register_value("settled", frozenset())
        self._set.register_value("next_serial", 0)
        self._profile_cache: dict[tuple[str, Any, float], tuple[float, float, float, float]] = {}

    # ------------------------------------------------------------------ reading
    @property
    def running_set(self) -> RunningSet:
        """The device's running set (its clock included), which a tracker shares: it registers its own
        columns and clock hooks on it."""
        return self._set

    def running_executions(self) -> list[RunningExecution]:
        """The running set at the current time, in slot order (start order, except that a finish moves the last
        slot into the finished one's place)."""
        now = self._set.now if self._set.now is not None else 0.0
        rs = self._set
        start, model, batch = rs.column("start"), rs.column("model"), rs.column("batch_size")
        out = []
        for a, id in enumerate(rs.ids):
            out.append(RunningExecution(id, model[a], float(batch[a]), float(start[a]), float(now - start[a]),
                                        float(rs.solo[a]), rs.demand[a].copy()))
        return out

    def started_at(self, id: Any) -> float:
        """The start time (ms) of running ``id`` (KeyError when it is not running)."""
        return float(self._set.column("start")[self._set.slot(id)])

    def demands(self) -> np.ndarray:
        """(k, 3) demands of the running set, rows in :attr:`running` order (a copy)."""
        return self._set.demand[: len(self._set)].copy()

    # ------------------------------------------------------------------ events
    def _advance(self, t: float) -> None:
        now = self._set.now
        if now is not None and t > now:
            # The events at the old clock are all in: settle the running set there. It starts a new
            # segment only if it differs from the current one (a zero-length execution, started
            # and finished at one instant, changes nothing, as in the batch form).
            rs = self._set
            k = len(rs)
            members = frozenset(rs.tags)
            values = rs.values
            settled = values["settled"]
            if members != settled:
                cols = rs.columns
                acc, cur, seen, in_seg = cols["acc"], cols["cur"], cols["seen"], cols["in_seg"]
                if self._agg_id == _k.AGG_TIME_WEIGHTED and settled:
                    _k.stream_close(acc, cols["wsum"], seen, cur, in_seg, k, now - values["seg_t0"])
                if self.extractor.is_builtin:
                    _k.stream_settle(acc, seen, cur, rs.demand, k, self._map_id, self._combine_id, self._agg_id,
                                     self._alpha)
                elif k:
                    cur[:k] = self.extractor.map_running_set(rs.demand[:k], check=False)
                    if self._agg_id != _k.AGG_TIME_WEIGHTED:
                        for a in range(k):
                            _k.fold(acc[a], cur[a], not seen[a], 0.0, self._agg_id, self._alpha)
                            seen[a] = True
                in_seg[:k] = True
                values["settled"] = members
                values["seg_t0"] = now
        self._set.move_clock(t)

    def advance(self, t: float) -> None:
        """Move the clock to ``t`` (ms) without an event: no later event may be stamped before ``t``.

        The features are those of the same events without the call (the running set at the
        old clock is settled, as a later event would settle it).

        Raises
        ------
        InterfpredError
            ``t`` before the latest event, or not a time; the state is unchanged.
        """
        self._advance(check_time(t, "advance", self._set.now))

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
        batch_size = check_batch_size(batch_size, what)
        if share != DEFAULT_SHARE:
            share = check_share(share, what)
        key = (str(model), batch_size, share)
        prof = self._profile_cache.get(key)
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
        rs = self._set
        if id in rs:
            raise InterfpredError(f"{what} refused: that id is already running (started at "
                                  f"{float(rs.column('start')[rs.slot(id)])!r})")
        tf = check_time(t, what, self._set.now)
        if len(rs) >= MAX_RUNNING_SET:
            raise InterfpredError(f"{what} refused: {len(rs)} executions already running, the most is "
                                  f"MAX_RUNNING_SET={MAX_RUNNING_SET}")
        prof = self.lookup_profile(model, batch_size, what, share)
        # Validated; from here on nothing can fail.
        self._advance(tf)
        serial = rs.values["next_serial"]
        rs.values["next_serial"] = serial + 1
        rs.add(id, str(model), float(batch_size), prof[:3], prof[3], serial, start=tf)

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
        rs = self._set
        if id not in rs:
            names = ", ".join(repr(i) for i in rs.first_ids(8)) or "none"
            raise InterfpredError(f"{what} refused: it is not running (running: {names})")
        tf = check_time(t, what, self._set.now)
        self._advance(tf)
        a = rs.slot(id)
        cols = rs.columns
        acc = cols["acc"][a].copy()
        wsum = float(cols["wsum"][a])
        seen = bool(cols["seen"][a])
        if self._agg_id == _k.AGG_TIME_WEIGHTED and cols["in_seg"][a]:
            # Its last segment ends here, whatever else happens at this instant.
            dur = tf - rs.values["seg_t0"]
            _k.fold(acc, cols["cur"][a], not seen, dur, self._agg_id, self._alpha)
            wsum = wsum + dur if seen else dur
            seen = True
        if self.extractor.is_builtin:
            _k.finalize(acc, wsum, seen, cols["demand"][a].copy(), self._map_id, self._combine_id, self._agg_id)
        elif not seen:
            acc = self.extractor.map_instant(rs.demand[a].copy(), np.empty((0, 3)))
        elif self._agg_id == _k.AGG_TIME_WEIGHTED:
            acc = acc / wsum
        latency = tf - float(cols["start"][a])
        solo = float(cols["solo"][a])
        y = observed_target(latency, solo, self.extractor.target)
        rs.remove(id)
        return FinishedExecution(id, acc, y, solo, latency)
