"""The live object a scheduler embeds: running set of one device, what-if projection, learning on finish.

A :class:`ColocationTracker` is told when executions start and finish on its device. On every finish
it computes that execution's features from its real co-location timeline (through
:class:`~interfpred.features.streaming.TimelineState`) and calls ``predictor.update``, so the model keeps
learning from production traffic. At any time it answers "if I launch these batches now, when will
everything finish?" by fluid projection (:class:`~interfpred.serving.projection.projector.RunningSetProjector`): every
execution progresses at its predicted, clamped rate, the rates change only when one finishes, and
each running execution's remaining solo work is integrated from the rates it was predicted to run
at since it started. ``quantile=q`` projects at a :class:`~interfpred.Calibrated` predictor's
latency bounds instead of the means. A cancelled or killed batch is dropped by ``cancel``
without being learned from; a finish reported late (within ``late_window_ms`` of the latest
event) is applied as if it had arrived in order. Every public method holds one re-entrant lock;
bad input (a time that is not a finite real number within ``TIME_HORIZON_MS``, a batch size that
is not a positive integer, ...) raises :class:`InterfpredError` and leaves the state unchanged.
docs/embedding.md explains the projection, the bounds, late completions, the compiled paths and
thread safety.

Examples
--------
>>> from interfpred import RLS, ProfileTable
>>> prof = ProfileTable.from_columns(gpu=["l4"] * 2, model=["a", "b"], batch_size=[1, 1],
...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
>>> tr = ColocationTracker(prof, RLS())      # fresh RLS: predicts rate 1 (no interference)
>>> tr.start("x", "a", 1, 0.0)
>>> tr.what_if([("y", "b", 1)], 1.0)         # x has 1 ms of solo work left, y 4 ms
{'x': 2.0, 'y': 5.0}
>>> done = tr.finish("x", 2.5)               # it ran alone, 25% slower than its profile
>>> round(done.y, 3), round(done.relative_error, 3)   # observed rate; error before learning
(0.8, -0.2)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from interfpred._core.targets import observed_slowdown
from interfpred.constants import (
    DEFAULT_SHARE,
    MAX_RUNNING_SET,
    PREDICTED_RATE_MAX,
    PREDICTED_RATE_MIN,
    SLOWDOWN_MAX,
    SLOWDOWN_MIN,
    TRACKER_LATE_MAX_EVENTS,
    TRACKER_LATE_WINDOW_MS,
)
from interfpred.data.entities import Entities
from interfpred.data.profiles import ProfileTable
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.features import Extractor, default_extractor
from interfpred.features.entity_features import RunningEntities
from interfpred.features.running_set import RunningSet, RunningSetView, check_time, is_real_number, time_reason
from interfpred.features.streaming import FinishedExecution, TimelineState
from interfpred.predictors import get_tags
from interfpred.serving.projection.affine import ProjectionInputs
from interfpred.serving.projection.entity import PairwiseInputs
from interfpred.serving.projection.projector import RunningSetProjector, check_quantile, parse_candidates
from interfpred.serving.projection.remaining import RemainingWork

__all__ = ["ColocationTracker", "FinishResult", "check_late_window"]


class FinishResult(NamedTuple):
    """What :meth:`ColocationTracker.finish` returns: the :class:`FinishedExecution`, and what was predicted and learned.

    The fields of the :class:`~interfpred.features.streaming.FinishedExecution` it wraps are readable
    directly under the same names (``id``, ``x``, ``y``, ``solo_ms``, ``latency_ms``).
    """

    #: The finished execution's features (its real timeline) and observed target.
    execution: FinishedExecution
    #: Latency the predictor gave for those features *before* learning from them (its rate or
    #: slowdown clamped as every projection clamps it, times the profile solo latency), ms.
    predicted_latency_ms: float
    #: ``(predicted_latency_ms - latency_ms) / latency_ms``: positive when the model predicted the
    #: batch slower than it ran (over-prediction), negative when it ran slower than predicted; NaN
    #: for a zero-length execution (observed latency 0), which is never learned from.
    relative_error: float
    #: Whether ``predictor.update`` was called (False with ``learn=False``, a frozen predictor
    #: (``tags.learns_online`` false), a zero-length execution, or an
    #: observed slowdown outside ``[SLOWDOWN_MIN, SLOWDOWN_MAX]``, which is non-physical: a glitched timer).
    learned: bool

    @property
    def id(self) -> Any:
        """The finished execution's id."""
        return self.execution.id

    @property
    def x(self) -> np.ndarray:
        """(d,) its features, aggregated over its real timeline."""
        return self.execution.x

    @property
    def y(self) -> float:
        """Its observed target (slowdown or rate)."""
        return self.execution.y

    @property
    def solo_ms(self) -> float:
        """Its profile solo latency, ms."""
        return self.execution.solo_ms

    @property
    def latency_ms(self) -> float:
        """Its observed latency, ms."""
        return self.execution.latency_ms


def check_late_window(value: Any) -> float:
    """``late_window_ms`` as a float: a finite real number >= 0 (not a bool or a string), at most ``TIME_HORIZON_MS``.

    >>> check_late_window(2)
    2.0
    """
    if time_reason(value) is not None or float(value) < 0:
        raise InterfpredError(f"late_window_ms {value!r} must be a finite number of ms >= 0")
    return float(value)

# ---------------------------------------------------------------------------- tracker
class ColocationTracker(RunningSetView):
    """Live running set of one device (GPU instance): fluid what-if projection, online learning on every finish.

    Parameters
    ----------
    profiles
        Solo profiles of the models that will run (batch sizes between profiled ones interpolate).
    predictor
        Any interfpred predictor (or an object with ``predict`` and ``update`` of the same
        contract) whose input width is the extractor's feature count.
    extractor
        Feature map, temporal aggregation and target; default
        :func:`~interfpred.features.default_extractor`, ``TimeWeighted(feature_map="rich",
        target="rate")``, the default of ``InterferenceModel`` and ``interfpred fit`` too: training
        and projection then use the same per-segment map (docs/embedding.md). A predictor that
        is declared for another target (its ``target`` hyperparameter) is refused;
        :func:`~interfpred.features.training_rows` builds rows in this extractor's convention.
    gpu
        The GPU type in ``profiles`` of this tracker's device; may be omitted when the table holds
        one type.
    learn
        Call ``predictor.update`` on every finish (default True).
    extrapolate
        Passed to the profile lookup.
    min_rate, max_rate
        Clamp of predicted rates (defaults ``PREDICTED_RATE_MIN``, ``PREDICTED_RATE_MAX``: the clamp
        of every prediction path, so a finish predicts what ``InterferenceModel.predict_latency``
        does); ``max_rate`` at most ``PREDICTED_RATE_MAX``.
    late_window_ms
        How far (ms) before the latest event a :meth:`finish` or :meth:`cancel` may be stamped
        and still be applied (default ``TRACKER_LATE_WINDOW_MS``, 0: in order only), as an
        asynchronous completion callback reports it late; see :meth:`finish`.

    Notes
    -----
    State is bounded by the running set; ``start``/``finish`` cost O(k) and the new running set's
    rates are predicted lazily, once, when next needed. With a late window, each event also keeps
    a copy of the state before it while it is inside the window (at most
    ``TRACKER_LATE_MAX_EVENTS`` of them).

    Every time passed to a method is a real number (not a bool or a string), finite and at most
    ``TIME_HORIZON_MS`` from zero; every batch size a positive integer (``8`` or ``8.0``, not
    ``True`` or ``2.5``), as in a trace file.

    Examples
    --------
    >>> from interfpred.sim.zoo import zoo_profiles
    >>> from interfpred import RLS
    >>> tr = ColocationTracker(zoo_profiles("l4"), RLS())
    >>> tr.start(1, "resnet50", 8, 0.0)
    >>> sorted(tr.what_if([(2, "vgg19", 4)], 1.0))
    [1, 2]
    >>> tr.start(1, "vgg19", 4, 2.0)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: start of id 1 refused: that id is already running (started at 0.0)
    """

    def __init__(self, profiles: ProfileTable, predictor: Any, extractor: Extractor | None = None, *,
                 gpu: str | None = None, learn: bool = True, extrapolate: bool = False,
                 min_rate: float = PREDICTED_RATE_MIN, max_rate: float = PREDICTED_RATE_MAX,
                 late_window_ms: float = TRACKER_LATE_WINDOW_MS) -> None:
        if extractor is None:
            extractor = default_extractor()
        declared = getattr(predictor, "target", None)     # the hyperparameter every interfpred predictor has
        if isinstance(declared, str) and declared != extractor.target:
            raise InterfpredError(
                f"predictor {type(predictor).__name__} is declared for target {declared!r} but the tracker's extractor "
                f"predicts {extractor.target!r}: pass the extractor it was fitted with, or use "
                "ColocationTracker.from_model(model, profiles)")
        self._state = TimelineState(extractor, profiles, gpu=gpu, extrapolate=extrapolate)
        if not (hasattr(predictor, "predict") and hasattr(predictor, "update")):
            raise InterfpredError(f"predictor must have predict and update, got {type(predictor).__name__}")
        # predictors that learn per-model terms get the entities of every row they see
        uses_entities = bool(get_tags(predictor).uses_entities)
        self._proj = RunningSetProjector(predictor, extractor, min_rate=min_rate, max_rate=max_rate,
                                         entities=uses_entities)   # checks the width and the clamp
        self.profiles = self._state.profiles
        self.predictor = predictor
        self.extractor = extractor
        self.gpu = gpu
        self.learn = bool(learn)
        self.extrapolate = extrapolate
        self.min_rate = self._proj.min_rate
        self.max_rate = self._proj.max_rate
        self._is_rate = extractor.target == "rate"
        self._lock = threading.RLock()
        # The device's one running set, its clock included, is the timeline state's (the features' columns);
        # the projection's remaining work and the entities register their columns and hooks on it, so an
        # event is undone, for all three, by the set's snapshot and restore.
        self._set = self._state.running_set
        self._work = RemainingWork(self._set, self._predict_rates)
        self._ents = (RunningEntities(extractor.aggregation, alpha=getattr(extractor, "alpha", 0.5),
                                      key=get_tags(predictor).entity_key, running_set=self._set)
                      if uses_entities else None)
        self._names_memo: tuple[int, tuple[str, ...], tuple[str, ...]] | None = None   # _names_with's last answer
        self.late_window_ms = check_late_window(late_window_ms)
        # events of the late window, each with the running set's snapshot before it, to replay a late finish over
        self._log: list[tuple[float, str, tuple[Any, ...], tuple[Any, ...]]] = []
        self._log_floor = -math.inf            # latest time of an event dropped from the log

    # ------------------------------------------------------------------ reading
    @property
    def running_set(self) -> RunningSet:
        """The device's running set, shared with the timeline state that computes the features."""
        return self._set

    def remaining_ms(self, t: float | None = None) -> dict[Any, float]:
        """Estimated remaining solo work (ms at solo speed) of each running execution at ``t``.

        ``t`` defaults to the latest event; it may not be before it.

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, RLS())
        >>> tr.start(7, "a", 1, 0.0)
        >>> tr.remaining_ms(0.5)
        {7: 1.5}
        """
        with self._lock:
            now = self._set.now
            tf = (0.0 if now is None else now) if t is None else check_time(t, "remaining_ms", now)
            rem = self._work.at(tf)
            return {id: float(rem[a]) for a, id in enumerate(self._set.ids)}

    # ------------------------------------------------------------------ internals
    def _names(self) -> list[str] | None:
        """Entity names of the running set (None when the predictor takes no entities)."""
        return None if self._ents is None else self._ents.running_names()

    def _names_with(self, parsed: Sequence[tuple]) -> tuple[str, ...]:
        """Entity names of the running set followed by those of the parsed candidates: the very tuple of
        the last question while the running set and the candidates' entities are the same (the
        projector then knows them without comparing)."""
        ents = cast(RunningEntities, self._ents)
        cand = tuple(ents.entity_name(c[1], c[2]) for c in parsed)
        memo = self._names_memo
        version = self._set.version
        if memo is None or memo[0] != version or memo[1] != cand:
            memo = self._names_memo = (version, cand, (*ents.running_names(), *cand))
        return memo[2]

    def _predict_rates(self) -> np.ndarray:
        """The predicted, clamped rates of the running set as it is now (the remaining work's rate source)."""
        return self._proj.rates(np.ascontiguousarray(self._set.demand[: len(self._set)]), self._names())

    # ------------------------------------------------------------------ events
    def start(self, id: Any, model: str, batch_size: int, t: float, *, share: float = DEFAULT_SHARE) -> None:
        """Execution ``id`` of ``model`` at ``batch_size`` launches at time ``t`` (ms), under MPS ``share`` (percent).

        Raises
        ------
        InterfpredError
            ``id`` already running (or not hashable), ``t`` before the latest event or not a
            time (class Notes), a batch size that is not a positive integer, no profile for
            ``(model, batch_size)``, or the running set is full; the state is unchanged.
        """
        with self._lock:
            self._record("start", (id, model, batch_size, t, share), t)

    def _start_core(self, id: Any, model: str, batch_size: int, t: float, share: float) -> None:
        self._work.rates()   # may raise (predictor); nothing changed yet; the clock hook integrates at them
        # validates and raises before changing anything; then moves the clock (remaining work integrated up
        # to t, entities folded) and adds the execution to the running set (whose hooks give it all of its
        # solo work and its entity)
        self._state.start(id, model, batch_size, t, share=share)

    def advance(self, t: float) -> None:
        """Move the clock to ``t`` (ms) without an event: nothing may be stamped before ``t`` afterwards
        (except a late finish or cancel within ``late_window_ms``).

        What is learned is what the same events teach without the call; remaining work is
        integrated up to ``t``.

        Raises
        ------
        InterfpredError
            ``t`` before the latest event or not a time; the state is unchanged.
        """
        with self._lock:
            tf = check_time(t, "advance", self._state.now)
            self._record("advance", (tf,), tf)

    def _advance_core(self, tf: float) -> None:
        self._work.rates()
        self._state.advance(tf)      # the clock hooks integrate the remaining work and fold the entities up to tf

    def _end_core(self, id: Any, tf: float) -> tuple[FinishedExecution, dict[str, Any]]:
        """``id`` leaves the running set at ``tf``: its features and the predictor's extra arguments."""
        self._work.rates()
        kw: dict[str, Any] = {}
        if self._ents is not None:   # its entities, aggregated over its timeline like its features
            # the clock moves first (the hooks integrate the remaining work and fold the entities up to tf):
            # nothing else can fail before the finish, and an event that fails is undone by the set
            self._state.advance(tf)
            own, co = self._ents.row(id)
            kw = {"entities": Entities.from_lists([own], [co])}
        # validates time and raises before changing anything; then the clock hook integrates the remaining
        # work up to tf and the execution leaves the running set
        done = self._state.finish(id, tf)
        return done, kw

    def _apply(self, kind: str, args: tuple[Any, ...]) -> Any:
        if kind == "start":
            return self._start_core(*args)
        if kind == "end":
            return self._end_core(*args)
        return self._advance_core(*args)

    def _record(self, kind: str, args: tuple[Any, ...], t: Any) -> Any:
        """Apply one event; with a late window, log it with the state before it and forget what left the window."""
        if self.late_window_ms <= 0:
            return self._apply(kind, args)
        saved = self._set.snapshot()   # the whole state an event changes: features, remaining work, entities
        out = self._apply(kind, args)
        log = self._log
        log.append((float(t), kind, args, saved))
        now = self._state.now
        cut = 0
        if now is not None:
            while cut < len(log) and log[cut][0] <= now - self.late_window_ms:
                cut += 1
        cut = max(cut, len(log) - TRACKER_LATE_MAX_EVENTS)
        if cut:
            self._log_floor = max(self._log_floor, log[cut - 1][0])
            del log[:cut]
        return out

    def _end(self, id: Any, t: Any, what: str) -> tuple[FinishedExecution, dict[str, Any]]:
        """``id`` ends at ``t``, in order or late (within the window: the later events are replayed)."""
        if id not in self:
            names = ", ".join(repr(i) for i in self._set.first_ids(8)) or "none"
            raise InterfpredError(f"{what} refused: it is not running (running: {names})")
        tf = check_time(t, what, None)
        now = self._state.now
        if now is None or tf >= now:
            return self._record("end", (id, tf), tf)
        if self.late_window_ms <= 0:
            raise InterfpredError(f"{what} refused: time {tf!r} is before the latest event at {now!r} "
                                  "(late_window_ms=0: events in order only)")
        if tf < now - self.late_window_ms:
            raise InterfpredError(f"{what} refused: time {tf!r} is {now - tf:g} ms before the latest event at "
                                  f"{now!r}, more than late_window_ms={self.late_window_ms!r}")
        if tf < self._log_floor:
            raise InterfpredError(f"{what} refused: time {tf!r} is before the oldest event remembered at "
                                  f"{self._log_floor!r} (TRACKER_LATE_MAX_EVENTS={TRACKER_LATE_MAX_EVENTS})")
        began = self._state.started_at(id)
        if tf < began:
            raise InterfpredError(f"{what} refused: time {tf!r} is before its start at {began!r}")
        # Back to the state before the first event after tf; end it there; replay the events after it.
        i = next(j for j, entry in enumerate(self._log) if entry[0] > tf)
        later = self._log[i:]
        del self._log[i:]
        self._set.restore(later[0][3])
        out = self._record("end", (id, tf), tf)
        for te, kind, args, _ in later:
            self._record(kind, args, te)
        return out

    def _atomic(self, call: Any, *args: Any) -> Any:
        """``call(*args)``, undone entirely when it raises: the device's state by the running set, which holds all
        of what an event changes, and the late window's log of events (a late finish replays it) by its copy."""
        saved, log, floor = self._set.snapshot(), self._log[:], self._log_floor
        try:
            return call(*args)
        except BaseException:
            self._set.restore(saved)
            self._log, self._log_floor = log, floor
            raise

    def finish(self, id: Any, t: float) -> FinishResult:
        """Execution ``id`` ended at ``t`` (ms): learn from its real timeline; return what was learned.

        Its features come from its real co-location timeline, its target from the observed
        latency; the predictor's latency for them before learning is reported with its error,
        then ``predictor.update(x, y)`` is called (see :class:`FinishResult` ``learned``).

        A *late* finish, stamped before the latest event but at most ``late_window_ms`` before
        it (and not before its own start), is applied as if it had arrived in order: the
        tracker goes back to its state before the first event after ``t``, ends ``id`` there
        and replays the later events, so the features of ``id`` and of every execution still
        running are exactly those of in-order arrival. What cannot be replayed stays: a finish
        already reported between ``t`` and the latest event keeps its :class:`FinishResult` and
        the predictor update it made (their features counted ``id`` as a co-runner up to their
        own end), and remaining work after ``t`` is integrated at the rates the predictor
        gives now.

        The call is atomic: if anything fails (the predictor's ``predict`` or ``update`` raises,
        or returns a non-finite prediction) the execution is still running afterwards and
        the tracker is exactly as before, so the call can be repeated.

        Raises
        ------
        InterfpredError
            ``id`` not running, ``t`` not a time (class Notes), before the latest event by more
            than ``late_window_ms`` or before its start, or a non-finite prediction; the state
            is unchanged.

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> late, in_order = (ColocationTracker(prof, RLS(), late_window_ms=5.0) for _ in range(2))
        >>> late.start("x", "a", 1, 0.0)
        >>> late.start("y", "a", 1, 3.0)
        >>> late.finish("x", 2.0).latency_ms     # reported after y started at 3.0: y never met x
        2.0
        >>> in_order.start("x", "a", 1, 0.0)
        >>> _ = in_order.finish("x", 2.0)
        >>> in_order.start("y", "a", 1, 3.0)
        >>> np.array_equal(late.finish("y", 6.0).x, in_order.finish("y", 6.0).x)
        True
        """
        with self._lock:
            return self._atomic(self._finish, id, t)

    def cancel(self, id: Any, t: float | None = None) -> None:
        """Execution ``id`` left the device at ``t`` (ms; default the latest event) without a usable
        latency (cancelled, OOM-killed, ...): it is dropped and nothing is learned from it.

        Its co-runners count it as running beside them up to ``t``, as they met it. ``t`` obeys
        the rules of :meth:`finish` (a late cancel within ``late_window_ms`` included).

        Raises
        ------
        InterfpredError
            As :meth:`finish` (no prediction is made); the state is unchanged.

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, RLS())
        >>> tr.start("x", "a", 1, 0.0)
        >>> tr.cancel("x", 1.0)
        >>> tr.running, tr.predictor.n_seen_
        ([], 0)
        """
        with self._lock:
            self._atomic(self._end, id, self._state.now if t is None else t, f"cancel of id {id!r}")

    def _finish(self, id: Any, t: float) -> FinishResult:
        done, kw = self._end(id, t, f"finish of id {id!r}")
        pred = float(np.asarray(self.predictor.predict(done.x, **kw), dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(pred):
            raise InterfpredError(f"finish of id {id!r} refused: the predictor returned {pred} for its "
                                  "features; predictions must be finite (the execution is still running)")
        rate = float(self._proj.clamp(np.array([pred]))[0])
        predicted = done.solo_ms / rate
        lat = done.latency_ms
        err = (predicted - lat) / lat if lat > 0 else math.nan
        learned = False
        slowdown = observed_slowdown(done.y, self.extractor.target)
        physical = SLOWDOWN_MIN <= slowdown <= SLOWDOWN_MAX   # else a glitched timer: not learned
        online = get_tags(self.predictor).learns_online   # a frozen predictor refuses update
        if self.learn and online and lat > 0 and math.isfinite(done.y) and physical:
            try:
                self.predictor.update(done.x, float(done.y), **kw)
                learned = True
            except FrozenPredictorError:  # a wrapped frozen predictor: nothing learned, and reported so
                learned = False
        return FinishResult(done, predicted, err, learned)

    # ------------------------------------------------------------------ questions
    def what_if(self, candidates: Sequence[tuple[Any, str, float]], t: float, *,
                quantile: float | None = None) -> dict[Any, float]:
        """Projected end times (ms) of the running executions and ``candidates`` launched at ``t``.

        Parameters
        ----------
        candidates
            ``(id, model, batch_size)`` triples, or ``(id, model, batch_size, share)`` with an MPS
            share, launched together at ``t``; may be empty.
        t
            The launch time; not before the latest event.
        quantile
            Project every segment at the predictor's latency bound at this quantile instead of
            its mean (a :class:`~interfpred.Calibrated` predictor; docs/embedding.md says how
            the bounds compose).

        Returns
        -------
        dict
            id -> projected completion time, running executions first (slot order), then the
            candidates in the given order.

        Raises
        ------
        InterfpredError
            A candidate that is not a triple, whose id is running or repeated, or without a
            profile; ``t`` before the latest event. Nothing is ever changed.

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, RLS())
        >>> tr.what_if([("c", "a", 1), ("d", "a", 1)], 0.0)
        {'c': 2.0, 'd': 2.0}
        >>> tr.what_if([("c", "zz", 1)], 0.0)
        Traceback (most recent call last):
        ...
        interfpred.errors.InterfpredError: what_if candidate 'c' refused: no profile for model 'zz' on gpu 'l4'; known models: a
        """
        with self._lock:
            tf = check_time(t, "what_if", self._state.now)
            if quantile is not None and not is_real_number(quantile):
                raise InterfpredError(f"what_if refused: quantile {quantile!r} is not a number in (0, 1)")
            q = check_quantile(quantile)
            try:
                cands = list(candidates)
            except TypeError:
                raise InterfpredError("what_if candidates must be a list of (id, model, batch_size)") from None
            k = len(self._set)
            n = k + len(cands)
            if n > MAX_RUNNING_SET:
                raise InterfpredError(f"what_if refused: {n} executions would run, more than "
                                      f"MAX_RUNNING_SET={MAX_RUNNING_SET}")
            parsed = parse_candidates(cands, self._set, self._state.lookup_profile) if cands else ()
            dem, rem = self._work.inputs(tf, n)
            ids = self._set.ids
            for j, (cid, _, _, (sm, l2, dram, solo)) in enumerate(parsed, k):
                dem[j, 0], dem[j, 1], dem[j, 2] = sm, l2, dram
                rem[j] = solo
                ids.append(cid)
            names = None if self._ents is None else self._names_with(parsed)
            end = self._proj.project(dem, rem, tf, names, q, k)
            return dict(zip(ids, end.tolist()))

    def predict_finish(self, t: float, *, quantile: float | None = None) -> dict[Any, float]:
        """Projected end time (ms) of every running execution, seen from ``t`` (no launch).

        With ``quantile``, the ends at the latency bound (as in :meth:`what_if`).

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, RLS())
        >>> tr.start("x", "a", 1, 10.0)
        >>> tr.predict_finish(11.0)
        {'x': 12.0}
        """
        return self.what_if((), t, quantile=quantile)

    # ------------------------------------------------------------------ vectorised placement
    def projection_inputs(self) -> ProjectionInputs | None:
        """The running set as a projection over many trackers at once reads it, or None.

        None when this tracker's projection is not the compiled affine one (a predictor it
        cannot read as affine, or a custom map). The weights are the predictor's now; the rates
        are those of the current running set, with which remaining work is integrated until the
        next event. Arrays are copies.

        Examples
        --------
        >>> from interfpred import RLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, RLS())
        >>> tr.start("x", "a", 1, 0.0)
        >>> inp = tr.projection_inputs()
        >>> inp.ids, inp.rem.tolist(), inp.rates.tolist()
        (('x',), [2.0], [1.0])
        """
        with self._lock:
            if not self._proj.is_compiled_affine:
                return None
            rs = self._set
            k = len(rs)
            w, b, lo = self._proj.affine()
            rates = self._work.rates().copy()
            spec = self.extractor.compiled_spec
            return ProjectionInputs(tuple(rs.ids), rs.demand[:k].copy(), rs.solo[:k].copy(),
                                    self._work.current().copy(), rates, 0.0 if rs.now is None else rs.now,
                                    rs.now, w, b, lo,
                                    spec.map_id, spec.combine_id, self._is_rate, self.min_rate, self.max_rate)

    def pairwise_inputs(self) -> PairwiseInputs | None:
        """The running set as a vectorised pair-term projection reads it, or None.

        None unless this tracker's mean projection is the compiled pair-term one (a predictor with
        per-entity terms, such as :class:`~interfpred.EntityRLS` or :class:`~interfpred.KernelBlocking`,
        over a built-in map). ``terms`` reads the predictor when called, as :meth:`what_if` does;
        the rates are those of the current running set. Arrays are copies.

        Examples
        --------
        >>> from interfpred import RLS, EntityRLS, ProfileTable
        >>> prof = ProfileTable.from_columns(gpu=["l4"], model=["a"], batch_size=[1],
        ...     solo_ms=[2.0], sm=[0.5], l2=[0.5], dram=[0.25])
        >>> tr = ColocationTracker(prof, EntityRLS())
        >>> tr.start("x", "a", 1, 0.0)
        >>> inp = tr.pairwise_inputs()
        >>> inp.ids, inp.names, inp.rem.tolist(), inp.entity_name("a", 1)
        (('x',), ['a@1'], [2.0], 'a@1')
        >>> ColocationTracker(prof, RLS()).pairwise_inputs() is None     # RLS takes the affine path
        True
        """
        with self._lock:
            if self._ents is None or not self._proj.is_compiled_pairwise:
                return None
            rs = self._set
            k = len(rs)
            rates = self._work.rates().copy()
            return PairwiseInputs(tuple(rs.ids), rs.demand[:k].copy(), rs.solo[:k].copy(),
                                  self._work.current().copy(), rates, 0.0 if rs.now is None else rs.now, rs.now,
                                  self._ents.running_names(), self._proj.pairwise_args, self._ents.entity_name)

    def candidate_demand(self, id: Any, model: str, batch_size: float) -> tuple[float, float, float, float]:
        """``(sm, l2, dram, solo_ms)`` of candidate ``id``, looked up (and refused) as :meth:`what_if` does."""
        return self._state.lookup_profile(model, batch_size, f"what_if candidate {id!r}")

    @classmethod
    def from_model(cls, model: Any, profiles: ProfileTable, **options: Any) -> ColocationTracker:
        """A tracker warm-started from a fitted :class:`~interfpred.InterferenceModel`.

        The tracker uses the model's extractor and *shares* its predictor: what it learns on
        every finish updates ``model.predictor`` (save the model to keep it). An untrained
        tracker assumes no interference until it has learned; a model fitted offline
        (``interfpred fit``, or :meth:`InterferenceModel.fit`) predicts interference from
        the first launch.

        Parameters
        ----------
        model
            A fitted (or fresh) :class:`~interfpred.InterferenceModel`, e.g. from
            :func:`~interfpred.load_model`.
        profiles
            Solo profiles of the models that will run.
        **options
            Passed to the constructor (``gpu``, ``learn``, ``extrapolate``, ``min_rate``, ``max_rate``,
            ``late_window_ms``).

        Examples
        --------
        >>> from interfpred import InterferenceModel
        >>> from interfpred.sim.workload import mix_scenario
        >>> sc = mix_scenario(["resnet50", "vgg19"], rho=1.2, executions=400, seed=2)
        >>> model = InterferenceModel().fit(sc.traces["trace"], sc.profiles)
        >>> tr = ColocationTracker.from_model(model, sc.profiles)
        >>> tr.predictor is model.predictor
        True
        >>> tr.start("a", "vgg19", 8, 0.0)
        >>> solo = sc.profiles.lookup("resnet50", 8).solo_ms
        >>> tr.what_if([("b", "resnet50", 8)], 0.0)["b"] > solo     # interference predicted at once
        True
        """
        if not (hasattr(model, "predictor") and isinstance(getattr(model, "extractor", None), Extractor)):
            raise InterfpredError(f"from_model expects an InterferenceModel, got {type(model).__name__}")
        return cls(profiles, model.predictor, model.extractor, **options)

    def __repr__(self) -> str:
        return (f"ColocationTracker({self.extractor!r}, predictor={self.predictor!r}, gpu={self.gpu!r}, "
                f"running={len(self._set)})")
