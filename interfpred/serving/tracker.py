"""The live object a scheduler embeds: running set of one device, what-if projection, learning on finish.

A :class:`ColocationTracker` is told when executions start and finish on its device. On every finish
it computes that execution's features from its real co-location timeline (through
:class:`~interfpred.serving.streaming.TimelineState`) and calls ``predictor.update``, so the model keeps
learning from production traffic. At any time it answers "if I launch these batches now, when will
everything finish?" by fluid projection (:class:`~interfpred.serving.projector.RunningSetProjector`): every
execution progresses at its predicted, clamped rate, the rates change only when one finishes, and
each running execution's remaining solo work is integrated from the rates it was predicted to run
at since it started. ``quantile=q`` projects at a :class:`~interfpred.Calibrated` predictor's
latency bounds instead of the means. Every public method holds one re-entrant lock; bad input
raises :class:`InterfpredError` and leaves the state unchanged. docs/embedding.md explains the
projection, the bounds, the compiled paths and thread safety.

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
from typing import Any

import numpy as np

from interfpred.constants import (
    DEFAULT_SHARE,
    MAX_RUNNING_SET,
    PREDICTED_RATE_MAX,
    PREDICTED_RATE_MIN,
    SLOWDOWN_MAX,
    SLOWDOWN_MIN,
    TRACKER_MIN_REMAINING,
)
from interfpred.data.entities import Entities
from interfpred.data.profiles import ProfileTable
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.features import Extractor, default_extractor
from interfpred.features.entity_features import RunningEntities
from interfpred.predictors import get_tags
from interfpred.serving.projection import ProjectionInputs
from interfpred.serving.projector import RunningSetProjector, check_quantile, parse_candidates
from interfpred.serving.running_set import RunningSet, check_time, snapshot_state
from interfpred.serving.streaming import FinishResult, TimelineState

__all__ = ["ColocationTracker", "FinishResult"]

# ---------------------------------------------------------------------------- tracker
class ColocationTracker:
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
        records another target (``predictor.target_``, set by the model that fitted it) is refused;
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

    Notes
    -----
    State is bounded by the running set; ``start``/``finish`` cost O(k) and the new running set's
    rates are predicted lazily, once, when next needed.

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
                 min_rate: float = PREDICTED_RATE_MIN, max_rate: float = PREDICTED_RATE_MAX) -> None:
        if extractor is None:
            extractor = default_extractor()
        declared = getattr(predictor, "target_", None)
        if declared is not None and declared != extractor.target:
            raise InterfpredError(
                f"predictor {type(predictor).__name__} was fitted for target {declared!r} but the tracker's extractor "
                f"predicts {extractor.target!r}: pass the extractor it was fitted with, or use "
                "ColocationTracker.from_model(model, profiles)")
        self._state = TimelineState(extractor, profiles, gpu=gpu, extrapolate=extrapolate)
        if not (hasattr(predictor, "predict") and hasattr(predictor, "update")):
            raise InterfpredError(f"predictor must have predict and update, got {type(predictor).__name__}")
        # predictors that learn per-model terms get the entities of every row they see
        uses_entities = bool(get_tags(predictor).uses_entities)
        self._proj = RunningSetProjector(predictor, extractor, min_rate=min_rate, max_rate=max_rate,
                                         entities=uses_entities)   # checks the width and the clamp
        self.profiles = profiles
        self.predictor = predictor
        self.extractor = extractor
        self.gpu = gpu
        self.learn = bool(learn)
        self.extrapolate = extrapolate
        self.min_rate = self._proj.min_rate
        self.max_rate = self._proj.max_rate
        self._is_rate = extractor.target == "rate"
        self._ents = (RunningEntities(extractor.aggregation, alpha=getattr(extractor, "alpha", 0.5),
                                      key=getattr(predictor, "entity", "model"))
                      if uses_entities else None)
        self._lock = threading.RLock()
        self._set = RunningSet({"rem": ()})     # demand, solo latency and remaining solo work per running id
        self._rates: np.ndarray | None = None   # predicted rates of the current running set (lazy)
        self._t = 0.0                          # time up to which the remaining work is integrated

    # ------------------------------------------------------------------ reading
    @property
    def now(self) -> float | None:
        """Time of the latest event, ms (None before the first)."""
        return self._state.now

    def __len__(self) -> int:
        return len(self._set)

    def __contains__(self, id: Any) -> bool:
        return id in self._set

    @property
    def running(self) -> list[Any]:
        """Ids of the running executions (slot order)."""
        with self._lock:
            return self._set.ids

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
            tf = self._t if t is None else check_time(t, "remaining_ms", self._state.now)
            rem = self._rem_at(tf)
            return {id: float(rem[a]) for a, id in enumerate(self._set.ids)}

    # ------------------------------------------------------------------ internals
    def _names(self) -> list[str] | None:
        """Entity names of the running set (None when the predictor takes no entities)."""
        return None if self._ents is None else self._ents.names(self._set.ids)

    def _current_rates(self) -> np.ndarray:
        if self._rates is None:
            k = len(self._set)
            self._rates = self._proj.rates(np.ascontiguousarray(self._set.demand[:k]), self._names())
        return self._rates

    def _rem_at(self, t: float, rates: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Remaining solo work at ``t`` (floored), integrated at ``rates`` (default: the current ones) into ``out``."""
        k = len(self._set)
        rem = self._set.column("rem")[:k].copy() if out is None else out
        if k and t > self._t:
            rem -= (self._current_rates() if rates is None else rates) * (t - self._t)
            np.maximum(rem, TRACKER_MIN_REMAINING * self._set.solo[:k], out=rem)
        return rem

    # ------------------------------------------------------------------ events
    def start(self, id: Any, model: str, batch_size: float, t: float, *, share: float = DEFAULT_SHARE) -> None:
        """Execution ``id`` of ``model`` at ``batch_size`` launches at time ``t`` (ms), under MPS ``share`` (percent).

        Raises
        ------
        InterfpredError
            ``id`` already running (or not hashable), ``t`` before the latest event or not
            finite, no profile for ``(model, batch_size)``, or the running set is full; the
            state is unchanged.
        """
        with self._lock:
            rates = self._current_rates()   # may raise (predictor); nothing changed yet
            self._state.start(id, model, batch_size, t, share=share)  # validates; raises before changing anything
            tf = float(t)
            if self._ents is not None:
                self._ents.start(id, model, batch_size, tf)
            self._rem_at(tf, rates, out=self._set.column("rem")[: len(self._set)])
            self._t = tf
            prof = self._state.lookup_profile(model, batch_size, "start", share)   # cached by the state's start
            k = self._set.add(id, prof[:3], prof[3])
            self._set.column("rem")[k] = prof[3]
            self._rates = None

    def finish(self, id: Any, t: float) -> FinishResult:
        """Execution ``id`` ended at ``t`` (ms): learn from its real timeline; return what was learned.

        Its features come from its real co-location timeline, its target from the observed
        latency; the predictor's latency for them before learning is reported with its error,
        then ``predictor.update(x, y)`` is called (see :class:`FinishResult` ``learned``).

        The call is atomic: if anything fails (the predictor's ``predict`` or ``update`` raises,
        or returns a non-finite prediction) the execution is still running afterwards and
        the tracker is exactly as before, so the call can be repeated.

        Raises
        ------
        InterfpredError
            ``id`` not running, ``t`` before the latest event, or a non-finite prediction;
            the state is unchanged.
        """
        with self._lock:
            saved = [(obj, snapshot_state(obj)) for obj in (self, self._state, self._ents) if obj is not None]
            try:
                return self._finish(id, t)
            except BaseException:
                for obj, attrs in saved:
                    obj.__dict__.update(attrs)
                raise

    def _finish(self, id: Any, t: float) -> FinishResult:
        rates = self._current_rates()
        if id not in self:
            names = ", ".join(repr(i) for i in self._set.first_ids(8)) or "none"
            raise InterfpredError(f"finish of id {id!r} refused: it is not running (running: {names})")
        done = self._state.finish(id, t)   # validates time; raises before changing anything
        tf = float(t)
        kw = {}
        if self._ents is not None:   # its entities, aggregated over its timeline like its features
            own, co = self._ents.finish(id, tf)
            kw = {"entities": Entities.from_lists([own], [co])}
        self._rem_at(tf, rates, out=self._set.column("rem")[: len(self._set)])
        self._t = tf
        self._set.remove(id)
        self._rates = None
        pred = float(np.asarray(self.predictor.predict(done.x, **kw), dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(pred):
            raise InterfpredError(f"finish of id {id!r} refused: the predictor returned {pred} for its "
                                  "features; predictions must be finite (the execution is still running)")
        rate = float(self._proj.clamp(np.array([pred]))[0])
        predicted = done.solo_ms / rate
        lat = done.latency_ms
        err = (predicted - lat) / lat if lat > 0 else math.inf
        learned = False
        slowdown = 1.0 / done.y if self._is_rate and done.y > 0 else done.y
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
            dem = np.empty((n, 3))
            dem[:k] = self._set.demand[:k]
            rem = np.empty(n)
            rem[:k] = self._rem_at(tf)
            ids = self._set.ids
            names = self._names()
            for j, (cid, model, batch, prof) in enumerate(parse_candidates(cands, self._set,
                                                                           self._state.lookup_profile)):
                dem[k + j] = prof[:3]
                rem[k + j] = prof[3]
                ids.append(cid)
                if names is not None and self._ents is not None:
                    names.append(self._ents.entity_name(model, batch))
            end = self._proj.project(dem, rem, tf, names, q)
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
            rates = self._current_rates().copy()
            spec = self.extractor.compiled_spec
            return ProjectionInputs(tuple(rs.ids), rs.demand[:k].copy(), rs.solo[:k].copy(),
                                    rs.column("rem")[:k].copy(), rates, self._t, self._state.now, w, b, lo,
                                    spec.map_id, spec.combine_id, self._is_rate, self.min_rate, self.max_rate)

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
            Passed to the constructor (``gpu``, ``learn``, ``extrapolate``, ``min_rate``, ``max_rate``).

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
