"""The live object a scheduler embeds: running set of one GPU, what-if projection, learning on finish.

A :class:`ColocationTracker` is told when executions start and finish on its GPU. On every
finish it computes that execution's features from its real co-location timeline (through
:class:`~interfpred.streaming.TimelineState`) and calls ``predictor.update``, so the model keeps
learning from production traffic. At any time it answers "if I launch these batches now, when
will everything finish?" by **fluid projection**:

* within a projected segment the running set is fixed and every execution progresses at its
  predicted rate (fraction of solo speed): the extractor's feature map is evaluated on the
  segment's running set, each member's row goes through the predictor, and the prediction is
  the rate (``target="rate"``) or its inverse (``target="slowdown"``), clamped to
  ``[TRACKER_MIN_RATE, TRACKER_MAX_RATE]``;
* the segment ends at the next projected completion; the finished execution leaves the set and
  the next segment's rates are predicted; this repeats until every execution has finished.

**Elapsed progress counts.** The tracker knows how long each running execution has run and
beside whom. It keeps each one's *remaining solo work*: the profile solo latency minus the
integral of its predicted rate over the segments it has lived through (integrated at every
start/finish event, with the predictor of that time), floored at ``TRACKER_MIN_REMAINING``
times its solo latency (a model that over-predicted the past rates then projects "finishing
soon", never "finished in the past"). An execution half done under heavy contention therefore
has half its solo work left, whatever its elapsed time.

**One feature map.** With the default extractor, ``TimeWeighted(feature_map="rich",
target="rate")``, training and projection use the same map: the time-weighted mean of the map
over an execution's segments, regressed on its observed mean rate, fits exactly the linear
model whose per-segment predictions the projection integrates (docs/concepts.md). The
rich map is the default because the ground truth depends on what it holds: the total pressure
per resource and its excess over capacity (saturation) and the co-runner count (concurrency
overhead). Any extractor is accepted (a Static or EWMA one trains on aggregates that are not
the per-segment map, which the projection then uses anyway: coarser, as the paper shows).

**Speed.** For a built-in map and an affine predictor (one whose ``linear_form()`` describes it:
:class:`~interfpred.RLS`, :class:`~interfpred.OnlineSGD`, :class:`~interfpred.OfflineLinear`,
:class:`~interfpred.GpuletsModel`) the whole projection is one compiled loop over the predictor's
weights and intercept, and the projection
(:mod:`interfpred.projection`) updates the running set's sums as members finish, a few flops per
member and segment instead of the whole map. Any other predictor (or a :class:`CustomMap`) takes a
Python loop with one ``predictor.predict`` call on the stacked rows of each segment.

**Bounds instead of means.** ``what_if(..., quantile=q)`` and ``predict_finish(t, quantile=q)``
need a predictor that gives quantiles (:class:`~interfpred.Calibrated`). Every projected
segment then runs each execution at its *bound* rate: the predictor's ``q`` slowdown bound (for
``target="rate"``, its ``1 - q`` rate bound), clamped as above, and the segments are integrated
exactly as for the mean. How the per-batch bound composes: the projected end is what every
execution reaches if, in every segment, it runs no faster than its bound; since an end time only
grows when any rate falls (a slower co-runner also stays longer and slows the others), the
projection is conservative whenever each segment's rate is at least its bound. The calibration is
of per-execution (time-averaged) rates, so this is a bound under that per-segment assumption,
not a joint probability for the whole running set: with errors shared across the segments of a
batch (a model-level bias, the common case) the projected end is exceeded with frequency about
``1 - q``; with independent per-segment errors, less often (the bound is then loose). Work
already done by a running execution is estimated with the mean, as without ``quantile``.

**Thread safety.** Every public method holds one re-entrant lock for its whole duration, so a
tracker may be shared by threads (calls are serialised). The predictor is not copied: a
predictor shared by several trackers (one model for a fleet of GPUs of one type) must only be
used from one thread at a time, or each tracker must own its own.

**Bad input** (an id started twice, finishing an unknown id, time going backwards, a candidate
without a profile, a candidate id already running) raises :class:`InterfpredError` and leaves
the state unchanged; :meth:`ColocationTracker.what_if` never changes the state.

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
>>> round(done.execution.y, 3), round(done.relative_error, 3)   # observed rate; error before learning
(0.8, -0.2)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from interfpred import _timeline_kernels as _k
from interfpred._jit import njit
from interfpred.constants import (
    DEFAULT_SHARE,
    MAX_RUNNING_SET,
    PRIOR_SLOWDOWN,
    SLOWDOWN_MAX,
    SLOWDOWN_MIN,
    TRACKER_FINISH_RTOL,
    TRACKER_MAX_RATE,
    TRACKER_MIN_RATE,
    TRACKER_MIN_REMAINING,
)
from interfpred.entities import Entities
from interfpred.entity_features import RunningEntities
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.evaluation.coverage import check_quantile
from interfpred.features import Extractor, TimeWeighted
from interfpred.predictors import EntityRLS
from interfpred.profiles import ProfileTable
from interfpred.projection import ProjectionInputs, project_affine_unchecked
from interfpred.streaming import FinishedExecution, TimelineState, grown

__all__ = ["ColocationTracker", "FinishResult"]

#: Status of ``_entity_project`` when a rate is not finite.
_PROJECT_NONFINITE = 1


def _nonfinite_error(what: str, values: np.ndarray) -> InterfpredError:
    bad = values[~np.isfinite(values)]
    shown = bad[0] if bad.size else "a non-finite value"
    return InterfpredError(f"{what}: the predictor returned {shown}; predictions must be finite (is its state "
                           "corrupt, or its input out of range?)")


# ---------------------------------------------------------------------------- kernels
@njit(cache=True)
def _all_finite(a):
    """Whether every value of the 1-d array ``a`` is finite (cheaper than numpy on a handful of values)."""
    for v in a:
        if not np.isfinite(v):
            return False
    return True


@njit(cache=True, inline="always")
def _to_rate(p, is_rate, rmin, rmax):
    """A prediction -> a clamped rate (for a slowdown, its inverse); NaN stays NaN (the caller refuses it)."""
    if p != p:
        return p
    if is_rate:
        r = p
    elif p > 0.0:
        r = 1.0 / p
    else:
        r = rmax  # a slowdown <= 0 is nonsense; treat it as "no slowdown"
    r = max(r, rmin)
    r = min(r, rmax)
    return r


@njit(cache=True)
def _affine_rates(dem, map_id, combine_id, w, b, pred_lo, is_rate, rmin, rmax, out):
    """Rates of the running set ``dem`` (k, 3) under the affine model ``b + w . phi`` into ``out[:k]``."""
    k = dem.shape[0]
    if k == 0:
        return
    phi = _k.map_running_set(dem, map_id, combine_id)
    d = w.shape[0]
    for a in range(k):
        p = b
        for j in range(d):
            p += w[j] * phi[a, j]
        if p == p:
            p = max(p, pred_lo)
        out[a] = _to_rate(p, is_rate, rmin, rmax)


_COPIED = frozenset({np.ndarray, list, dict, set})
#: (class, attribute count) -> names of the attributes holding arrays or containers.
_SNAPSHOT_NAMES: dict[tuple[type, int], tuple[str, ...]] = {}


def _snapshot(obj: Any) -> dict[str, Any]:
    """A copy of ``obj``'s attributes deep enough to undo a failed event (arrays and containers copied)."""
    attrs = obj.__dict__
    key = (type(obj), len(attrs))
    names = _SNAPSHOT_NAMES.get(key)
    if names is None:
        names = _SNAPSHOT_NAMES[key] = tuple(k for k, v in attrs.items() if type(v) in _COPIED)
    out = attrs.copy()
    for k in names:
        v = out[k]
        if type(v) in _COPIED:
            out[k] = v.copy()
    return out


@njit(cache=True)
def _entity_rates(dem, idx, na, map_id, combine_id, w, b, S, M, log_target, alone_solo, is_rate, rmin, rmax, sub,
                  out):
    """Rates of members ``idx[:na]`` of a what-if set running together under an EntityRLS:
    ``g(phi) + S[a] min(1, na - 1) + sum_b M[a, b]`` (exp with a log target; 1 alone)."""
    for a in range(na):
        i = idx[a]
        sub[a, 0] = dem[i, 0]
        sub[a, 1] = dem[i, 1]
        sub[a, 2] = dem[i, 2]
    phi = _k.map_running_set(sub[:na], map_id, combine_id)
    d = w.shape[0]
    h = 1.0 if na > 1 else 0.0
    for a in range(na):
        if na == 1 and alone_solo:
            out[a] = _to_rate(1.0, is_rate, rmin, rmax)
            continue
        i = idx[a]
        p = b + S[i] * h
        for j in range(d):
            p += w[j] * phi[a, j]
        for c in range(na):
            p += M[i, idx[c]]
        if log_target:
            p = math.exp(p)
        out[a] = _to_rate(p, is_rate, rmin, rmax)


@njit(cache=True)
def _entity_project(dem, rem, t0, map_id, combine_id, w, b, S, M, log_target, alone_solo, is_rate, rmin, rmax,
                    rtol, end):
    """Fluid projection with EntityRLS's entity terms (see ``_entity_rates``).

    Returns 0, or ``_PROJECT_NONFINITE`` when a rate or a remaining work is not finite: every
    segment then retires at least one execution, so the loop is bounded by n.
    """
    n = dem.shape[0]
    idx = np.arange(n)
    r = rem.copy()
    sub = np.empty((n, 3))
    rate = np.empty(n)
    na = n
    t = t0
    while na > 0:
        _entity_rates(dem, idx, na, map_id, combine_id, w, b, S, M, log_target, alone_solo, is_rate, rmin, rmax,
                      sub, rate)
        tmin = np.inf
        for a in range(na):
            tau = r[idx[a]] / rate[a]
            if not (rate[a] > 0.0 and tau >= 0.0 and tau < np.inf):  # NaN fails every comparison
                return _PROJECT_NONFINITE
            tmin = min(tmin, tau)
        t_new = t + tmin
        lim = tmin * (1.0 + rtol)
        keep = 0
        for a in range(na):
            i = idx[a]
            if r[i] / rate[a] <= lim:
                end[i] = t_new
            else:
                r[i] -= rate[a] * tmin
                idx[keep] = i
                keep += 1
        if keep == na:  # nothing retired: impossible with finite rates, but never loop for ever
            return _PROJECT_NONFINITE
        na = keep
        t = t_new
    return 0


def _check_quantile(quantile: Any) -> float | None:
    return None if quantile is None else check_quantile(quantile)


# ---------------------------------------------------------------------------- results
class FinishResult(NamedTuple):
    """What :meth:`ColocationTracker.finish` returns: what was observed and learned."""

    #: The finished execution's features (its real timeline) and observed target.
    execution: FinishedExecution
    #: Latency the predictor gave for those features *before* learning from them, ms.
    predicted_latency_ms: float
    #: ``(predicted - observed) / observed`` latency.
    relative_error: float
    #: Whether ``predictor.update`` was called (False with ``learn=False``, a frozen predictor
    #: (``learns_online`` false), a zero-length execution, or an
    #: observed slowdown outside ``[SLOWDOWN_MIN, SLOWDOWN_MAX]``, which is non-physical: a glitched timer).
    learned: bool


# ---------------------------------------------------------------------------- tracker
class ColocationTracker:
    """Live running set of one GPU: fluid what-if projection, online learning on every finish.

    Parameters
    ----------
    profiles
        Solo profiles of the models that will run (batch sizes between profiled ones interpolate).
    predictor
        Any interfpred predictor (or an object with ``predict`` and ``update`` of the same
        contract) whose input width is the extractor's feature count.
    extractor
        Feature map, temporal aggregation and target; default
        ``TimeWeighted(feature_map="rich", target="rate")`` (see the module docstring).
    gpu
        Which GPU of ``profiles`` this tracker's GPU is; may be omitted when the table holds one.
    learn
        Call ``predictor.update`` on every finish (default True).
    extrapolate
        Passed to the profile lookup.
    min_rate, max_rate
        Clamp of predicted rates (defaults ``TRACKER_MIN_RATE``, ``TRACKER_MAX_RATE``).

    Notes
    -----
    State is bounded by the running set: per running execution its demand, profile solo
    latency, remaining solo work and (inside the timeline state) its feature accumulator.
    ``start``/``finish`` integrate the elapsed segment (O(k)) and evaluate the new running set's
    rates lazily, once, when next needed. See the module docstring for thread safety.

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
                 min_rate: float = TRACKER_MIN_RATE, max_rate: float = TRACKER_MAX_RATE) -> None:
        if extractor is None:
            extractor = TimeWeighted(feature_map="rich", target="rate")
        self._state = TimelineState(extractor, profiles, gpu=gpu, extrapolate=extrapolate)
        if not (hasattr(predictor, "predict") and hasattr(predictor, "update")):
            raise InterfpredError(f"predictor must have predict and update, got {type(predictor).__name__}")
        d = extractor.n_features
        width = getattr(predictor, "n_features_in_", None)
        if width is None:
            width = getattr(predictor, "fixed_width", None)
        if width is not None and width != d:
            raise InterfpredError(
                f"the predictor takes {width} features but the extractor's map {extractor.feature_map!r} "
                f"gives {d}; use a matching extractor (e.g. feature_map='gpulets' for GpuletsModel)")
        try:
            lo, hi = float(min_rate), float(max_rate)
        except (TypeError, ValueError):
            raise InterfpredError(f"min_rate {min_rate!r} and max_rate {max_rate!r} must be numbers") from None
        if not (0.0 < lo <= hi and math.isfinite(hi)):
            raise InterfpredError(f"need 0 < min_rate <= max_rate < inf, got {min_rate!r}, {max_rate!r}")
        self.profiles = profiles
        self.predictor = predictor
        self.extractor = extractor
        self.gpu = gpu
        self.learn = bool(learn)
        self.extrapolate = extrapolate
        self.min_rate = lo
        self.max_rate = hi
        self._is_rate = extractor.target == "rate"
        self._fast = extractor.is_builtin and bool(getattr(predictor, "is_linear", False))
        # predictors that learn per-model terms get the entities of every row they see
        self._ents = (RunningEntities(extractor.aggregation, alpha=getattr(extractor, "alpha", 0.5),
                                      key=getattr(predictor, "entity", "model"))
                      if getattr(predictor, "uses_entities", False) else None)
        self._entity_fast = extractor.is_builtin and isinstance(predictor, EntityRLS)
        self._width = d
        self._lock = threading.RLock()
        self._ids: list[Any] = []
        self._slot: dict[Any, int] = {}
        cap = 8
        self._dem = np.zeros((cap, 3))
        self._solo = np.zeros(cap)
        self._rem = np.zeros(cap)
        self._rates: np.ndarray | None = None   # predicted rates of the current running set (lazy)
        self._t = 0.0                          # time up to which _rem is integrated

    # ------------------------------------------------------------------ reading
    @property
    def now(self) -> float | None:
        """Time of the latest event, ms (None before the first)."""
        return self._state.now

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, id: Any) -> bool:
        try:
            return id in self._slot
        except TypeError:
            return False

    @property
    def running(self) -> list[Any]:
        """Ids of the running executions (slot order)."""
        with self._lock:
            return list(self._ids)

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
            tf = self._t if t is None else self._check_time(t, "remaining_ms")
            rem = self._rem_at(tf)
            return {id: float(rem[a]) for a, id in enumerate(self._ids)}

    # ------------------------------------------------------------------ internals
    def _check_time(self, t: Any, what: str) -> float:
        try:
            tf = float(t)
        except (TypeError, ValueError):
            raise InterfpredError(f"{what} refused: time {t!r} is not a number") from None
        if not math.isfinite(tf):
            raise InterfpredError(f"{what} refused: time {t!r} is not finite")
        now = self._state.now
        if now is not None and tf < now:
            raise InterfpredError(f"{what} refused: time {tf!r} is before the latest event at {now!r}")
        return tf

    def _affine(self) -> tuple[np.ndarray, float, float]:
        """Weights w (d,), intercept b and lower clip of the prediction of an affine predictor, now."""
        d = self._width
        form = self.predictor.linear_form()
        if form is None:
            return np.zeros(d), PRIOR_SLOWDOWN, -np.inf
        w = np.ascontiguousarray(form.weights, dtype=np.float64)
        if w.shape[0] != d:
            raise InterfpredError(f"the predictor now takes {w.shape[0]} features but the extractor gives {d}; "
                                  "it was refitted with another width")
        b = float(form.intercept)
        if not (_all_finite(w) and math.isfinite(b)):
            raise _nonfinite_error("projection refused", np.append(w, b))
        return w, b, float(form.lower)

    def _set_entities(self, names: list[str]) -> Entities:
        """Entities of a running set: each member beside every other one (weight = count)."""
        counts: dict[str, float] = {}
        for s in names:
            counts[s] = counts.get(s, 0.0) + 1.0
        return Entities.from_lists(names, [{k: c - (k == s) for k, c in counts.items() if c - (k == s) > 0}
                                           for s in names])

    def _entity_args(self, names: list[str]) -> tuple:
        p = self.predictor
        d = self._width
        if p.n_features_in_ is None:
            w, b = np.zeros(d), (0.0 if p.log_target else PRIOR_SLOWDOWN)
        elif p.n_features_in_ != d:
            raise InterfpredError(f"the predictor now takes {p.n_features_in_} features but the extractor gives {d}")
        else:
            w, b = p.coef_, p.intercept_   # the model before exp (log target): not a probe of predict
        S, M = p.pairwise_terms(names)
        ex = self.extractor
        return (ex.kernel_spec.map_id, ex.kernel_spec.combine_id, w, b, S, M, bool(p.log_target), bool(p.alone_is_solo), self._is_rate,
                self.min_rate, self.max_rate)

    def _rates_of(self, dem: np.ndarray, names: list[str] | None = None,
                  quantile: float | None = None) -> np.ndarray:
        """Predicted, clamped rates of the running set ``dem`` (k, 3), C-contiguous (bounds at ``quantile``)."""
        k = dem.shape[0]
        out = np.empty(k)
        if k == 0:
            return out
        ex = self.extractor
        if self._ents is not None:
            names = self._ents.names(self._ids) if names is None else names
        if quantile is not None:
            level = 1.0 - quantile if self._is_rate else quantile
            extra = {} if self._ents is None else {"entities": self._set_entities(cast(list, names))}
            try:
                pred = self.predictor.predict(ex.map_running_set(dem, check=False), quantile=level, **extra)
            except TypeError:
                raise InterfpredError(f"quantile {quantile!r} refused: predictor {type(self.predictor).__name__} "
                                      "gives no quantiles; wrap it in interfpred.Calibrated") from None
            pred = np.asarray(pred, dtype=np.float64).reshape(k)
            if not np.isfinite(pred).all():
                raise _nonfinite_error(f"bounds of a running set of {k} refused", pred)
            return self._clamp(pred)
        if self._ents is not None:
            names = cast(list, names)
            if self._entity_fast:
                (map_id, combine_id, w, b, S, M, lg, solo, is_rate, lo, hi) = self._entity_args(names)
                _entity_rates(dem, np.arange(k), k, map_id, combine_id, w, b, S, M, lg, solo, is_rate, lo, hi,
                              np.empty((k, 3)), out)
                return out
            phi = ex.map_running_set(dem, check=False)
            pred = self.predictor.predict(phi, entities=self._set_entities(names))
            return self._clamp(np.asarray(pred, dtype=np.float64).reshape(k))
        if self._fast:
            w, b, lo = self._affine()
            _affine_rates(dem, ex.kernel_spec.map_id, ex.kernel_spec.combine_id, w, b, lo, self._is_rate, self.min_rate,
                          self.max_rate, out)
            if not _all_finite(out):
                raise _nonfinite_error("rates refused", out)
            return out
        phi = ex.map_running_set(dem, check=False)
        pred = np.asarray(self.predictor.predict(phi), dtype=np.float64).reshape(k)
        if not np.isfinite(pred).all():
            raise _nonfinite_error(f"rates of a running set of {k} refused", pred)
        return self._clamp(pred)

    def _clamp(self, pred: np.ndarray) -> np.ndarray:
        if self._is_rate:
            r = pred.copy()
        else:
            with np.errstate(divide="ignore"):
                r = np.where(pred > 0.0, 1.0 / np.where(pred > 0.0, pred, 1.0), self.max_rate)
        return np.clip(r, self.min_rate, self.max_rate)

    def _current_rates(self) -> np.ndarray:
        if self._rates is None:
            k = len(self._ids)
            self._rates = self._rates_of(np.ascontiguousarray(self._dem[:k]))
        return self._rates

    def _rem_at(self, t: float) -> np.ndarray:
        k = len(self._ids)
        rem = self._rem[:k].copy()
        if k and t > self._t:
            rem -= self._current_rates() * (t - self._t)
            np.maximum(rem, TRACKER_MIN_REMAINING * self._solo[:k], out=rem)
        return rem

    def _project(self, dem: np.ndarray, rem: np.ndarray, t: float, names: list[str] | None = None,
                 quantile: float | None = None) -> np.ndarray:
        n = dem.shape[0]
        end = np.empty(n)
        if n == 0:
            return end
        ex = self.extractor
        if self._entity_fast and names is not None and quantile is None:
            (map_id, combine_id, w, b, S, M, lg, solo, is_rate, lo, hi) = self._entity_args(names)
            if _entity_project(dem, rem, t, map_id, combine_id, w, b, S, M, lg, solo, is_rate, lo, hi,
                               TRACKER_FINISH_RTOL, end) != 0:
                raise InterfpredError("projection refused: a predicted rate or remaining work is not finite "
                                      "(the predictor's state overflows on this running set)")
            return end
        if self._fast and quantile is None:
            w, b, lo = self._affine()
            return project_affine_unchecked(dem, rem, t, ex.kernel_spec.map_id, ex.kernel_spec.combine_id, w, b, lo, self._is_rate,
                                            self.min_rate, self.max_rate, TRACKER_FINISH_RTOL)
        idx = np.arange(n)
        r = rem.copy()
        if not np.isfinite(r).all():
            raise _nonfinite_error("projection refused: remaining work", r)
        for _segment in range(n):  # each segment retires at least one execution
            if not idx.size:
                break
            rate = self._rates_of(np.ascontiguousarray(dem[idx]),
                                  None if names is None else [names[i] for i in idx.tolist()], quantile)
            tau = r[idx] / rate
            tmin = float(tau.min())
            if not math.isfinite(tmin):
                raise _nonfinite_error("projection refused", tau)
            t_new = t + tmin
            done = tau <= tmin * (1.0 + TRACKER_FINISH_RTOL)
            end[idx[done]] = t_new
            r[idx] -= rate * tmin
            idx = idx[~done]
            t = t_new
        if idx.size:  # pragma: no cover - finite rates retire one execution per segment
            raise InterfpredError("projection refused: it did not retire every execution")
        return end

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
            k = len(self._ids)
            if k and tf > self._t:
                rem = self._rem[:k]
                rem -= rates * (tf - self._t)
                np.maximum(rem, TRACKER_MIN_REMAINING * self._solo[:k], out=rem)
            self._t = tf
            if k == self._dem.shape[0]:
                self._grow()
            st = self._state
            a = st._slot[id]
            self._dem[k] = st._dem[a]
            self._solo[k] = st._solo[a]
            self._rem[k] = st._solo[a]
            self._ids.append(id)
            self._slot[id] = k
            self._rates = None

    def finish(self, id: Any, t: float) -> FinishResult:
        """Execution ``id`` ended at ``t`` (ms): learn from its real timeline; return what was learned.

        The execution's features come from its real co-location timeline (the extractor's
        aggregation over the segments it met); its target from the observed latency. The
        predictor's latency for those features before learning is reported with its error,
        then ``predictor.update(x, y)`` is called (unless ``learn=False``, or the execution
        had zero length, whose rate is undefined).

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
            saved = (_snapshot(self), _snapshot(self._state), None if self._ents is None else _snapshot(self._ents))
            try:
                return self._finish(id, t)
            except BaseException:
                self.__dict__.update(saved[0])
                self._state.__dict__.update(saved[1])
                if saved[2] is not None:
                    self._ents.__dict__.update(saved[2])
                raise

    def _finish(self, id: Any, t: float) -> FinishResult:
        rates = self._current_rates()
        if id not in self:
            names = ", ".join(repr(i) for i in self._ids[:8]) or "none"
            raise InterfpredError(f"finish of id {id!r} refused: it is not running (running: {names})")
        done = self._state.finish(id, t)   # validates time; raises before changing anything
        tf = float(t)
        kw = {}
        if self._ents is not None:   # its entities, aggregated over its timeline like its features
            own, co = self._ents.finish(id, tf)
            kw = {"entities": Entities.from_lists([own], [co])}
        k = len(self._ids)
        if tf > self._t:
            rem = self._rem[:k]
            rem -= rates * (tf - self._t)
            np.maximum(rem, TRACKER_MIN_REMAINING * self._solo[:k], out=rem)
        self._t = tf
        self._remove(self._slot[id])
        self._rates = None
        pred = float(np.asarray(self.predictor.predict(done.x, **kw), dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(pred):
            raise InterfpredError(f"finish of id {id!r} refused: the predictor returned {pred} for its "
                                  "features; predictions must be finite (the execution is still running)")
        rate = float(self._clamp(np.array([pred]))[0])
        predicted = done.solo_ms / rate
        lat = done.latency_ms
        err = (predicted - lat) / lat if lat > 0 else math.inf
        learned = False
        slowdown = 1.0 / done.y if self._is_rate and done.y > 0 else done.y
        physical = SLOWDOWN_MIN <= slowdown <= SLOWDOWN_MAX   # else a glitched timer: not learned
        online = getattr(self.predictor, "learns_online", True)   # a frozen predictor refuses update
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
            its mean (a :class:`~interfpred.Calibrated` predictor; see the module docstring for
            how the bounds compose).

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
            tf = self._check_time(t, "what_if")
            q = _check_quantile(quantile)
            try:
                cands = list(candidates)
            except TypeError:
                raise InterfpredError("what_if candidates must be a list of (id, model, batch_size)") from None
            k = len(self._ids)
            n = k + len(cands)
            if n > MAX_RUNNING_SET:
                raise InterfpredError(f"what_if refused: {n} executions would run, more than "
                                      f"MAX_RUNNING_SET={MAX_RUNNING_SET}")
            dem = np.empty((n, 3))
            dem[:k] = self._dem[:k]
            rem = np.empty(n)
            rem[:k] = self._rem_at(tf)
            ids = list(self._ids)
            names = None if self._ents is None else self._ents.names(self._ids)
            seen: set[Any] = set()
            for j, c in enumerate(cands):
                rest: list[Any]
                try:
                    cid, model, batch, *rest = c
                    if len(rest) > 1:
                        raise ValueError
                except (TypeError, ValueError):
                    raise InterfpredError(f"what_if candidate {c!r} must be (id, model, batch_size) or "
                                          "(id, model, batch_size, share)") from None
                what = f"what_if candidate {cid!r}"
                try:
                    dup = cid in self._slot or cid in seen
                except TypeError:
                    raise InterfpredError(f"{what} refused: an id must be hashable") from None
                if dup:
                    raise InterfpredError(f"{what} refused: that id is already running or repeated")
                seen.add(cid)
                sm, l2, dram, solo = self._state.lookup_profile(model, batch, what, *rest)
                dem[k + j, 0] = sm
                dem[k + j, 1] = l2
                dem[k + j, 2] = dram
                rem[k + j] = solo
                ids.append(cid)
                if names is not None and self._ents is not None:
                    names.append(self._ents.entity_name(model, batch))
            end = self._project(dem, rem, tf, names, q)
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
            if not self._fast:
                return None
            k = len(self._ids)
            w, b, lo = self._affine()
            rates = self._current_rates().copy()
            ex = self.extractor
            return ProjectionInputs(tuple(self._ids), self._dem[:k].copy(), self._solo[:k].copy(),
                                    self._rem[:k].copy(), rates, self._t, self._state.now, w, b, lo,
                                    ex.kernel_spec.map_id, ex.kernel_spec.combine_id, self._is_rate, self.min_rate, self.max_rate)

    def candidate_demand(self, id: Any, model: str, batch_size: float) -> tuple[float, float, float, float]:
        """``(sm, l2, dram, solo_ms)`` of candidate ``id``, looked up (and refused) as :meth:`what_if` does."""
        return self._state.lookup_profile(model, batch_size, f"what_if candidate {id!r}")

    # ------------------------------------------------------------------ storage
    def _remove(self, a: int) -> None:
        last = len(self._ids) - 1
        id = self._ids[a]
        if a != last:
            for arr in (self._dem, self._solo, self._rem):
                arr[a] = arr[last]
            self._ids[a] = self._ids[last]
            self._slot[self._ids[a]] = a
        self._ids.pop()
        del self._slot[id]

    def _grow(self) -> None:
        cap = 2 * self._dem.shape[0]
        self._dem, self._solo, self._rem = (grown(a, cap) for a in (self._dem, self._solo, self._rem))

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
        from interfpred.model import InterferenceModel

        if not isinstance(model, InterferenceModel):
            raise InterfpredError(f"from_model expects an InterferenceModel, got {type(model).__name__}")
        return cls(profiles, model.predictor, model.extractor, **options)

    def __repr__(self) -> str:
        return (f"ColocationTracker({self.extractor!r}, predictor={self.predictor!r}, gpu={self.gpu!r}, "
                f"running={len(self._ids)})")
