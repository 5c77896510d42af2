"""Read-only views and JSON persistence of :class:`~interfpred.predictors.calibrated.estimator.Calibrated`.

A mixin, so the wrapper's module holds the learning and this one what is read back and saved:
the state file holds the parameters, the wrapped predictor (its spec, or its own state when an
object was given), the trained predictor's state, the score scale, the levels, the entity groups
and every group's calibration row (window, levels, thresholds, counts), all as JSON (no pickle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from interfpred.constants import SCHEMA_VERSION
from interfpred.errors import InterfpredError
from interfpred.predictors.calibrated import _score_windows as K
from interfpred.predictors.inputs import check_state_header, is_integer
from interfpred.predictors.registry import PredictorSpec, predictor_from_state

if TYPE_CHECKING:
    from interfpred.predictors.base import BasePredictor

__all__ = ["CalibratedStateMixin"]


class CalibratedStateMixin:
    """Views and persistence for the Calibrated wrapper (which provides the attributes used here)."""

    kind: ClassVar[str]
    _d: int | None = None

    if TYPE_CHECKING:  # the wrapper provides every other attribute and method used here
        def __getattr__(self, name: str) -> Any: ...

    # ------------------------------------------------------------------ read-only views
    def _group_row(self, group: str | None) -> np.ndarray:
        if self._state is None:
            raise AttributeError("not available before fit/update")
        if group is None:
            return self._state[0]
        if group not in self._group_index:
            raise InterfpredError(f"no calibration group {group!r}; groups: {', '.join(self._group_names) or 'none'}")
        return self._state[self._group_index[group]]

    @property
    def levels_(self) -> tuple[float, ...]:
        """Every calibrated level (the quantiles and their complements), ascending."""
        return tuple(self._levels.tolist())

    @property
    def predictor_(self) -> BasePredictor:
        """The wrapped predictor as trained here (the template before any fit/update)."""
        return self._now()

    @property
    def scale_(self) -> str:
        """The score scale in use: ``"relative"`` or ``"std"``."""
        return self._scale_mode

    @property
    def n_seen_(self) -> int:
        """Observations scored and learned (the global group's count; ``fit``'s calibration rows included)."""
        return 0 if self._state is None else int(self._state[0, K.SEEN])

    @property
    def coef_(self) -> np.ndarray:
        """The wrapped predictor's ``coef_`` (point predictions are its own); AttributeError where it has none."""
        return self._now().coef_

    @property
    def intercept_(self) -> float:
        """The wrapped predictor's ``intercept_``; AttributeError where it has none."""
        return self._now().intercept_

    @property
    def groups_(self) -> tuple[str, ...]:
        """Entities with their own calibration group, in order of first sight."""
        return tuple(self._group_names)

    def thresholds(self, group: str | None = None) -> dict[float, float]:
        """Score threshold per level of the global group (or of entity ``group``)."""
        row = self._group_row(group)
        L = self._levels.shape[0]
        return dict(zip(self.levels_, row[K.HEADER + L:K.HEADER + 2 * L].tolist()))

    def coverage(self, group: str | None = None) -> dict[float, float]:
        """Share of learned targets at or below the bound in force before each, per level.

        Over every score the group has seen (``fit``'s calibration rows included).
        """
        row = self._group_row(group)
        L = self._levels.shape[0]
        seen = max(row[K.SEEN], 1.0)
        return dict(zip(self.levels_, (row[K.HEADER + 2 * L:K.HEADER + 3 * L] / seen).tolist()))

    @property
    def train_quantiles_(self) -> dict[float, float] | None:
        """Empirical quantiles of ``fit``'s targets per level (None before fit): the trivial bound."""
        return None if self._yq is None else dict(zip(self.levels_, [float(v) for v in self._yq]))

    # ------------------------------------------------------------------ persistence
    def _param_state(self) -> dict[str, Any]:
        p = self.predictor
        if p is None or isinstance(p, (str, dict)):
            return {"spec": p}
        if isinstance(p, PredictorSpec):
            return {"spec": p.model_dump()}
        return {"state": p.to_state()}

    def _get_state(self) -> dict[str, Any]:
        return {"inner": self._inner.to_state(), "scale": self._scale_mode, "levels": self._levels.tolist(),
                "groups": list(self._group_names), "calibration": self._state.tolist(),
                "train_quantiles": None if self._yq is None else self._yq.tolist()}

    def to_state(self) -> dict[str, Any]:
        """A JSON-able dict: kind, schema version, parameters, the wrapped predictor and the calibration."""
        params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.get_params().items() if k != "predictor"}
        params["predictor"] = self._param_state()   # its spec, or its own saved state
        return {"schema_version": SCHEMA_VERSION, "kind": self.kind, "params": params, "n_features_in": self._d,
                "state": None if self._d is None else self._get_state()}

    @classmethod
    def from_state(cls, state: dict[str, Any], *, source: str = "state", trusted: bool = False) -> Any:
        """Rebuild from :meth:`to_state`'s dict (checks kind, version, levels and shapes).

        ``trusted`` is passed on to the wrapped predictor's state (needed for pickled river /
        scikit-learn models, as in :func:`~interfpred.predictors.load_predictor`).
        """
        check_state_header(state, source=source)
        if state.get("kind") != cls.kind:
            raise InterfpredError(f"{source}: holds a predictor of kind {state.get('kind')!r}, not {cls.kind!r}")
        params = dict(state["params"])
        wrapped = params.pop("predictor", {"spec": None})
        if not isinstance(wrapped, dict):
            raise InterfpredError(f"{source}: params.predictor must be an object, got {wrapped!r}")
        try:
            p = wrapped["spec"] if "spec" in wrapped else predictor_from_state(wrapped["state"], source=source,
                                                                                        trusted=trusted)
            obj = cast(Any, cls)(p, **params)
        except (TypeError, KeyError, InterfpredError) as exc:
            raise InterfpredError(f"{source}: bad parameters for 'calibrated': {exc}") from None
        d = state.get("n_features_in")
        if d is not None:
            if not is_integer(d) or d < 1:
                raise InterfpredError(f"{source}: n_features_in {d!r} must be a positive integer")
            try:
                obj._restore(state["state"], d, trusted)
            except (KeyError, TypeError, ValueError) as exc:
                raise InterfpredError(f"{source}: bad calibrated state: {exc}") from None
        return obj

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        self._restore(state, d, False)

    def _restore(self, state: dict[str, Any], d: int, trusted: bool) -> None:
        inner = predictor_from_state(state["inner"], trusted=trusted)
        declared = self._template   # params.predictor (declared for this target) must describe the state's predictor
        if declared.kind != inner.kind or declared.get_params() != inner.get_params():
            raise InterfpredError(f"params.predictor {declared!r} disagrees with the wrapped predictor in the state "
                                  f"{inner!r}")
        if inner.n_features_in_ not in (None, d):
            raise InterfpredError(f"the wrapped predictor takes {inner.n_features_in_} features, the file says {d}")
        levels = np.asarray(state["levels"], dtype=np.float64)
        if levels.shape != self._levels.shape or not np.allclose(levels, self._levels, rtol=0, atol=1e-12):
            raise InterfpredError(f"levels {levels.tolist()} do not match quantiles {self.quantiles}")
        names = [str(s) for s in state["groups"]]
        cal = np.asarray(state["calibration"], dtype=np.float64)
        shape = (1 + len(names), K.row_size(levels.shape[0], self.window))
        if cal.shape != shape or not np.isfinite(cal).all():
            raise InterfpredError(f"calibration has shape {cal.shape}, expected {shape} of finite values")
        if (np.any(cal[:, K.POS] >= self.window) or np.any(cal[:, K.COUNT] > self.window)
                or np.any(cal[:, :K.FROZEN] < 0)):
            raise InterfpredError("calibration holds a bad window position or count")
        if state["scale"] not in ("relative", "std"):
            raise InterfpredError(f"scale {state['scale']!r} must be 'relative' or 'std'")
        yq = state.get("train_quantiles")
        if yq is not None:
            yq_a = np.asarray(yq, dtype=np.float64)
            if yq_a.size != levels.shape[0] or not np.isfinite(yq_a).all():
                raise InterfpredError(f"train_quantiles {yq!r} must be {levels.shape[0]} finite numbers")
        self._inner, self._state, self._d = inner, np.ascontiguousarray(cal), d
        self._group_names = names
        self._group_index = {s: i + 1 for i, s in enumerate(names)}
        self._scale_mode = state["scale"]
        self._relative = self._scale_mode == "relative"
        self._yq = None if yq is None else np.asarray(yq, dtype=np.float64).reshape(levels.shape)
        K.refresh_all(self._state, self._levels, self.window, K.METHOD_CODES[self.method])
