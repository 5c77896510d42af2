"""Rates and fluid projections of running sets under one predictor: the arithmetic behind the tracker's what-if.

A :class:`RunningSetProjector` holds a predictor, an extractor and the rate clamp, and answers two
questions about a running set given by its demands ``dem`` (k, 3): the clamped rate of every
member (:meth:`~RunningSetProjector.rates`) and, with the remaining solo work of each, when each
finishes (:meth:`~RunningSetProjector.project`). It picks the fastest path the predictor allows:

* a predictor with pair terms over a built-in map (``pairwise_terms``, as :class:`~interfpred.EntityRLS`,
  or ``blocking_terms``, as :class:`~interfpred.KernelBlocking`): the compiled pair-term projection of
  :mod:`interfpred.serving.projection.entity`;
* an affine predictor (``tags.is_linear`` and ``linear_form()``) over a built-in map: the compiled
  affine projection of :mod:`interfpred.serving.projection.affine`;
* anything else: :func:`~interfpred.serving.projection.generic.project_fluid` with one ``predict`` call per segment.

A :class:`~interfpred.Calibrated` predictor takes the path of the predictor it wraps, for its means
and for its bounds (``quantile=q``): its :meth:`~interfpred.Calibrated.bound_form` gives the
thresholds the compiled kernels apply to the wrapped predictor's prediction of every member in
every segment. Bounds take the compiled path with a relative score scale around an affine or an
entity predictor, and with the predictive-std scale around :class:`~interfpred.RLS` under the
sum combine; other bounds take the general path.

:class:`~interfpred.ColocationTracker` owns one; docs/embedding.md describes the projection.

Examples
--------
>>> import numpy as np
>>> from interfpred import RLS, TimeWeighted
>>> pr = RunningSetProjector(RLS(), TimeWeighted(feature_map="rich", target="rate"))
>>> pr.project(np.array([[0.5, 0.5, 0.25]]), np.array([2.0]), 1.0)    # fresh RLS: rate 1
array([3.])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Sequence
from typing import Any, cast

import numpy as np

from interfpred._core.targets import clamp_rates
from interfpred.constants import (
    PREDICTED_RATE_MAX,
    PREDICTED_RATE_MIN,
    PRIOR_SLOWDOWN,
    PRIOR_STD,
    TRACKER_FINISH_RTOL,
)
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.evaluation.coverage import check_quantile as check_level
from interfpred.features import Extractor
from interfpred.features.compiled_maps import COMBINE_SUM
from interfpred.predictors import RLS, Calibrated, get_tags
from interfpred.serving.projection.affine import affine_rates, project_affine_unchecked, project_into
from interfpred.serving.projection.bounds import BOUND_RELATIVE, BOUND_STD
from interfpred.serving.projection.entity import (
    PAIRWISE_BLOCKING,
    PAIRWISE_ENTITY,
    keep_running_sums,
    pairwise_project,
    pairwise_rates,
)
from interfpred.serving.projection.generic import NONFINITE, NONFINITE_MESSAGE, all_finite, project_fluid

__all__ = ["RunningSetProjector", "check_quantile", "has_entity_terms", "nonfinite_error", "parse_candidates",
           "set_entities"]


def nonfinite_error(what: str, values: np.ndarray) -> InterfpredError:
    """The error for a non-finite prediction among ``values``, prefixed by ``what``."""
    bad = values[~np.isfinite(values)]
    shown = bad[0] if bad.size else "a non-finite value"
    return InterfpredError(f"{what}: the predictor returned {shown}; predictions must be finite (is its state "
                           "corrupt, or its input out of range?)")


def check_quantile(quantile: Any) -> float | None:
    """``quantile`` as a float in (0, 1), or None; refused otherwise (see :func:`interfpred.evaluation.check_quantile`)."""
    return None if quantile is None else check_level(quantile)


def parse_candidates(candidates: list[Any], running: Container[Any],
                     lookup: Callable[..., tuple[float, float, float, float]]) -> list[tuple[Any, Any, Any, tuple]]:
    """What-if candidates checked: ``(id, model, batch_size, (sm, l2, dram, solo_ms))`` each, in order.

    Each candidate is ``(id, model, batch_size)`` or ``(id, model, batch_size, share)``; its id must
    be hashable, not in ``running`` and not repeated; ``lookup(model, batch_size, what, *share)``
    gives its profile (and refuses a missing one).
    """
    out = []
    seen: set[Any] = set()
    for c in candidates:
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
            dup = cid in running or cid in seen
        except TypeError:
            raise InterfpredError(f"{what} refused: an id must be hashable") from None
        if dup:
            raise InterfpredError(f"{what} refused: that id is already running or repeated")
        seen.add(cid)
        out.append((cid, model, batch, lookup(model, batch, what, *rest)))
    return out


def has_entity_terms(predictor: Any) -> bool:
    """Whether ``predictor`` exposes per-entity terms the compiled entity path reads (``pairwise_terms``).

    Such a predictor also exposes ``backoff_terms``, ``coef_``, ``intercept_``, ``n_features_in_``,
    ``log_target`` and ``alone_is_solo``.
    """
    return get_tags(predictor).pairwise_terms


def set_entities(names: list[str]) -> Entities:
    """Entities of a running set: each member beside every other one (weight = count).

    >>> e = set_entities(["a", "a", "b"])
    >>> e.names, e.weight.tolist()       # row 0 ("a") beside one "a" and one "b", ...
    (('a', 'b'), [1.0, 1.0, 1.0, 1.0, 2.0])
    """
    counts: dict[str, float] = {}
    for s in names:
        counts[s] = counts.get(s, 0.0) + 1.0
    return Entities.from_lists(names, [{k: c - (k == s) for k, c in counts.items() if c - (k == s) > 0}
                                       for s in names])


class RunningSetProjector:
    """Clamped rates and projected completions of running sets under ``predictor``.

    Parameters
    ----------
    predictor
        The predictor (read, never changed).
    extractor
        Its feature map and target.
    min_rate, max_rate
        Clamp of predicted rates, ``0 < min_rate <= max_rate <= PREDICTED_RATE_MAX`` (default the
        clamp of every prediction path, :func:`interfpred._core.targets.to_rate`).
    entities
        Whether the predictor takes the entities of its rows (then :meth:`rates` and
        :meth:`project` need the members' entity names).
    """

    def __init__(self, predictor: Any, extractor: Extractor, *, min_rate: float = PREDICTED_RATE_MIN,
                 max_rate: float = PREDICTED_RATE_MAX, entities: bool = False) -> None:
        d = extractor.n_features
        width = getattr(predictor, "n_features_in_", None)
        if width is None:
            width = get_tags(predictor).fixed_width
        if width is not None and width != d:
            raise InterfpredError(
                f"the predictor takes {width} features but the extractor's map {extractor.feature_map!r} "
                f"gives {d}; use a matching extractor (e.g. feature_map='gpulets' for GpuletsModel)")
        try:
            lo, hi = float(min_rate), float(max_rate)
        except (TypeError, ValueError):
            raise InterfpredError(f"min_rate {min_rate!r} and max_rate {max_rate!r} must be numbers") from None
        if not (0.0 < lo <= hi <= PREDICTED_RATE_MAX):
            raise InterfpredError(f"need 0 < min_rate <= max_rate <= {PREDICTED_RATE_MAX} (no prediction is faster "
                                  f"than solo), got {min_rate!r}, {max_rate!r}")
        self.predictor = predictor
        self.extractor = extractor
        self.min_rate = lo
        self.max_rate = hi
        self.entities = entities
        self._is_rate = extractor.target == "rate"
        self._width = extractor.n_features
        spec = extractor.compiled_spec
        self._map_id = spec.map_id
        self._combine_id = spec.combine_id
        self._calibrated = isinstance(predictor, Calibrated)
        point = self.point_predictor()
        self._affine_path = (extractor.is_builtin and bool(get_tags(point).is_linear)
                             and not get_tags(point).uses_entities)
        self._blocking = bool(get_tags(point).blocking_terms)
        self._entity_path = extractor.is_builtin and (has_entity_terms(point) or self._blocking)
        self._std_ok = isinstance(point, RLS) and spec.combine_id == COMBINE_SUM
        self._no_theta = np.empty(0)
        self._vocab: tuple[tuple, np.ndarray, tuple[str, ...]] = ((), np.zeros(0, dtype=np.int64), ())
        self._args: tuple[Any, Any, tuple] = (None, None, ())
        self._sums: tuple[Any, int, tuple[np.ndarray, np.ndarray, np.ndarray]] = (
            None, 0, (np.zeros((0, 0)), np.zeros(0, dtype=np.int64), np.zeros(0)))

    def point_predictor(self) -> Any:
        """The predictor whose predictions are the means: the wrapped one of a :class:`~interfpred.Calibrated`."""
        return self.predictor.predictor_ if self._calibrated else self.predictor

    @property
    def is_compiled_affine(self) -> bool:
        """Whether projections take the compiled affine path (what a vectorised placement needs)."""
        return self._affine_path

    @property
    def is_compiled_pairwise(self) -> bool:
        """Whether mean projections take the compiled pair-term path (where the predictor gives its terms)."""
        return self._entity_path

    # ------------------------------------------------------------------ model read-outs
    def affine(self) -> tuple[np.ndarray, float, float]:
        """Weights w (d,), intercept b and lower clip of the prediction of an affine predictor, now."""
        d = self._width
        form = self.point_predictor().linear_form()
        if form is None:
            return np.zeros(d), PRIOR_SLOWDOWN, -np.inf
        w = np.ascontiguousarray(form.weights, dtype=np.float64)
        if w.shape[0] != d:
            raise InterfpredError(f"the predictor now takes {w.shape[0]} features but the extractor gives {d}; "
                                  "it was refitted with another width")
        b = float(form.intercept)
        if not (all_finite(w) and math.isfinite(b)):
            raise nonfinite_error("projection refused", np.append(w, b))
        return w, b, float(form.lower)

    def pairwise_args(self, names: Sequence[str]) -> tuple | None:
        """The compiled pair-term path's model arguments for a running set of entities ``names``
        (:mod:`interfpred.serving.projection.entity`), or None where the predictor cannot give them now.

        The terms are asked for each distinct entity once (a running set repeats few models): member
        ``i`` is entity ``u[i]`` (the sixth argument) of the terms.

        >>> from interfpred import EntityRLS, TimeWeighted
        >>> pr = RunningSetProjector(EntityRLS(), TimeWeighted(feature_map="rich", target="rate"), entities=True)
        >>> args = pr.pairwise_args(["a", "b", "a"])
        >>> args[5].tolist(), args[7].shape          # u, and the pair terms M over the two entities
        ([0, 1, 0], (2, 2))
        """
        p = self.point_predictor()
        d = self._width
        key = names if type(names) is tuple else tuple(names)
        last, u, vocab = self._vocab
        if key is not last and key != last:    # else the entities of the last question (between events)
            at: dict[str, int] = {}
            u = np.array([at.setdefault(s, len(at)) for s in names], dtype=np.int64)
            vocab = tuple(at)
            self._vocab = (key, u, vocab)     # one assignment: a reader sees the old triple or the new one
        if self._blocking:
            bt = p.blocking_terms(vocab)
            if bt is None:
                return None
            w = np.ascontiguousarray(bt.weights, dtype=np.float64)
            if w.shape[0] != d:
                raise InterfpredError(f"the predictor now takes {w.shape[0]} features but the extractor gives {d}")
            return (self._map_id, self._combine_id, PAIRWISE_BLOCKING, w, float(bt.intercept), u, np.zeros(0),
                    np.ascontiguousarray(bt.pair, dtype=np.float64), np.ones(0), np.zeros(d), 0.0, float(bt.cap),
                    False, True, bool(bt.rates), self._is_rate, self.min_rate, self.max_rate)
        terms = getattr(p, "projection_terms", None)
        if terms is not None:          # one call, kept by the predictor while its state is the same
            got = terms(vocab)
            last_args = self._args
            if last_args[0] is got and last_args[1] is u:
                return last_args[2]
            w, b, S, M, A, w2, b2 = got
            if p.n_features_in_ is None:       # before any row: the prior beside features it has not met
                w = np.zeros(d)
            elif w.shape[0] != d:
                raise InterfpredError(f"the predictor now takes {w.shape[0]} features but the extractor gives {d}")
        else:
            if p.n_features_in_ is None:
                w, b = np.zeros(d), (0.0 if p.log_target else PRIOR_SLOWDOWN)
            elif p.n_features_in_ != d:
                raise InterfpredError(f"the predictor now takes {p.n_features_in_} features but the extractor "
                                      f"gives {d}")
            else:
                w, b = p.coef_, p.intercept_   # the model before exp (log target): not a probe of predict
            S, M = p.pairwise_terms(vocab)
            A, w2, b2 = p.backoff_terms(vocab)
        # (arrays as the predictor gives them: the compiled kernel takes any layout)
        args = (self._map_id, self._combine_id, PAIRWISE_ENTITY, w, float(b), u, S, M, A, w2, float(b2), math.inf,
                bool(p.log_target), bool(p.alone_is_solo), False, self._is_rate, self.min_rate, self.max_rate)
        if terms is not None:
            self._args = (got, u, args)       # the same terms for the same members: the same arguments
        return args

    def _running_sums(self, args: tuple, k: int) -> np.ndarray:
        """The first ``k`` members' pair sums among themselves under the pair-term arguments ``args``, summed
        again only when the terms over their entities or their entities changed
        (:func:`~interfpred.serving.projection.entity.keep_running_sums`). The very arguments of the
        last call (:meth:`pairwise_args` gives the same tuple while the terms and entities are the same,
        and the terms are read-only) need no comparison."""
        last, k_last, (Mc, uc, ms0) = self._sums
        if args is last and k == k_last:
            return ms0
        M, u = args[7], args[5]
        status, e = keep_running_sums(M, u, k, Mc, uc, ms0)
        if status < 0:
            Mc, uc, ms0 = np.empty((e, e)), np.empty(k, dtype=np.int64), np.empty(k)
            uc[:1] = -1                     # matches no entity: the first call sums
            keep_running_sums(M, u, k, Mc, uc, ms0)
        self._sums = (args, k, (Mc, uc, ms0))    # one assignment: a reader sees the old state or the new one
        return ms0

    def _std_form(self) -> tuple[np.ndarray, float]:
        """Covariance ``P`` and noise variance ``s2`` of the wrapped RLS: its std is ``sqrt(s2 (1 + x' P x))``."""
        p = self.point_predictor()
        try:
            return p.covariance_, p.noise_var_  # a non-finite value gives a non-finite rate: refused
        except AttributeError:                  # fresh: the prior std for every row
            m = self._width + int(bool(p.fit_intercept))
            return np.zeros((m, m)), PRIOR_STD ** 2

    def clamp(self, pred: np.ndarray) -> np.ndarray:
        """Predictions (k,) -> clamped rates (for a slowdown target, their inverses)."""
        return clamp_rates(np.ascontiguousarray(pred, dtype=np.float64), self._is_rate, self.min_rate, self.max_rate)

    # ------------------------------------------------------------------ answers
    def rates(self, dem: np.ndarray, names: list[str] | None = None, quantile: float | None = None) -> np.ndarray:
        """Predicted, clamped rates of the running set ``dem`` (k, 3), C-contiguous (bounds at ``quantile``).

        ``names`` are the members' entity names (needed when the predictor takes entities).
        """
        k = dem.shape[0]
        out = np.empty(k)
        if k == 0:
            return out
        ex = self.extractor
        if quantile is not None:
            level = 1.0 - quantile if self._is_rate else quantile
            extra = {"entities": set_entities(cast(list, names))} if self.entities else {}
            try:
                pred = self.predictor.predict(ex.map_running_set(dem, check=False), quantile=level, **extra)
            except TypeError:
                raise InterfpredError(f"quantile {quantile!r} refused: predictor {type(self.predictor).__name__} "
                                      "gives no quantiles; wrap it in interfpred.Calibrated") from None
            pred = np.asarray(pred, dtype=np.float64).reshape(k)
            if not np.isfinite(pred).all():
                raise nonfinite_error(f"bounds of a running set of {k} refused", pred)
            return self.clamp(pred)
        if self.entities:
            names = cast(list, names)
            args = self.pairwise_args(names) if self._entity_path else None
            if args is not None:
                pairwise_rates(dem, *args, out, self._no_theta, 0.0)
                if not all_finite(out):
                    raise nonfinite_error(f"rates of a running set of {k} refused", out)
                return out
            phi = ex.map_running_set(dem, check=False)
            pred = np.asarray(self.predictor.predict(phi, entities=set_entities(names)), dtype=np.float64).reshape(k)
            if not np.isfinite(pred).all():
                raise nonfinite_error(f"rates of a running set of {k} refused", pred)
            return self.clamp(pred)
        if self._affine_path:
            w, b, lo = self.affine()
            affine_rates(dem, self._map_id, self._combine_id, w, b, lo, self._is_rate, self.min_rate, self.max_rate,
                         out)
            if not all_finite(out):
                raise nonfinite_error("rates refused", out)
            return out
        phi = ex.map_running_set(dem, check=False)
        pred = np.asarray(self.predictor.predict(phi), dtype=np.float64).reshape(k)
        if not np.isfinite(pred).all():
            raise nonfinite_error(f"rates of a running set of {k} refused", pred)
        return self.clamp(pred)

    def project(self, dem: np.ndarray, rem: np.ndarray, t: float, names: Sequence[str] | None = None,
                quantile: float | None = None, n_running: int = 0) -> np.ndarray:
        """Projected end times of the running set ``dem`` (n, 3) with remaining solo work ``rem`` (n,) from ``t``.

        ``n_running``: the first so many members are a running set asked about again and again (a
        tracker's, between two events; the rest are candidates): what they add to each other's pair
        terms is kept from one question to the next while the predictor's terms are the same.
        """
        n = dem.shape[0]
        end = np.empty(n)
        if n == 0:
            return end
        form = None
        if quantile is not None and self._calibrated:
            level = 1.0 - quantile if self._is_rate else quantile
            form = self.predictor.bound_form(level, names)
        args = (self.pairwise_args(names) if self._entity_path and names is not None
                and (quantile is None or (form is not None and form.relative)) else None)
        if args is not None:
            theta, min_scale = (self._no_theta, 0.0) if form is None else (form.theta, form.min_scale)
            ms0 = (self._running_sums(args, n_running) if n_running > 1 and args[2] == PAIRWISE_ENTITY
                   else self._no_theta)
            if pairwise_project(dem, rem, t, *args, TRACKER_FINISH_RTOL, end,
                                theta, min_scale, self._no_theta, n_running, ms0) == NONFINITE:
                raise InterfpredError("projection refused: a predicted rate or remaining work is not finite "
                                      "(the predictor's state overflows on this running set)")
            return end
        if self._affine_path and quantile is None:
            w, b, lo = self.affine()
            return project_affine_unchecked(dem, rem, t, self._map_id, self._combine_id, w, b, lo, self._is_rate,
                                            self.min_rate, self.max_rate, TRACKER_FINISH_RTOL)
        if self._affine_path and form is not None and (form.relative or self._std_ok):
            w, b, lo = self.affine()
            if form.relative:
                mode, P, s2 = BOUND_RELATIVE, np.empty((0, 0)), 0.0
            else:
                mode, (P, s2) = BOUND_STD, self._std_form()
            if project_into(dem, rem, t, self._map_id, self._combine_id, w, b, lo, mode, form.theta, P, s2,
                            form.min_scale, self._is_rate, self.min_rate, self.max_rate, TRACKER_FINISH_RTOL,
                                  end) != 0:
                raise InterfpredError(NONFINITE_MESSAGE)
            return end
        if not np.isfinite(rem).all():
            raise nonfinite_error("projection refused: remaining work", rem)

        def rates_of(members: np.ndarray) -> np.ndarray:
            return self.rates(np.ascontiguousarray(dem[members]),
                              None if names is None else [names[i] for i in members.tolist()], quantile)

        return project_fluid(rates_of, rem, t, refused="projection refused: a predicted rate or remaining work "
                                                       "is not finite")
