"""gpulets' interference model (Choi et al., USENIX ATC'22), exactly as published.

For a batch ("me") sharing a GPU with one other batch, gpulets predicts

    a = c0*L2_me + c1*L2_other + c2*DRAM_me + c3*DRAM_other + c4,    slowdown = max(a, 1)

where L2 and DRAM are Nsight Compute utilisations (% of peak / 100) of each batch, linearly
interpolated between the two neighbouring power-of-two profiled batch sizes (the upper
neighbour capped at 32), each multiplied by that batch's MPS partition (% / 100).

As a predictor it takes the 4-wide gpulets feature vector in the order of the feature map,
``[l2_me, dram_me, l2_other, dram_other]`` (already interpolated and scaled), and ``fit``
learns c0..c4 by least squares from pair data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from interfpred.constants import GPULETS_MAX_BATCH, GPULETS_RTX2080TI
from interfpred.errors import InterfpredError
from interfpred.predictors.base import FrozenPredictor, LinearForm
from interfpred.predictors.inputs import check_flag, check_target, state_array, state_count

__all__ = ["GpuletsModel", "gpulets_utilisation"]

# feature column -> coefficient index: [l2_me, dram_me, l2_other, dram_other] -> c0, c2, c1, c3
_ORDER = np.array([0, 2, 1, 3])


def gpulets_utilisation(
    profile: Mapping[int, tuple[float, float]], batch_size: float, partition: float
) -> tuple[float, float]:
    """gpulets' (L2, DRAM) utilisation of one batch, as fractions scaled by its partition.

    Parameters
    ----------
    profile
        Power-of-two batch size -> (L2 %, DRAM %) as Nsight reports them (0..100).
    batch_size
        The batch size to evaluate (interpolated between neighbouring powers of two, the
        upper neighbour capped at 32).
    partition
        MPS partition in percent (0..100].

    Examples
    --------
    >>> bert = {4: (14.006191661801928, 30.31561936214498), 8: (16.251708451540086, 30.201366343901302)}
    >>> [round(v, 6) for v in gpulets_utilisation(bert, 6, 50)]
    [0.075645, 0.151292]
    """
    b = float(batch_size)
    if not (math.isfinite(b) and b >= 1):
        raise InterfpredError(f"batch_size must be >= 1, got {batch_size!r}")
    p = float(partition)
    if not (math.isfinite(p) and 0 < p <= 100):
        raise InterfpredError(f"partition must be in (0, 100] percent, got {partition!r}")
    lo = 2 ** int(math.floor(math.log2(b)))
    hi = min(lo * 2, GPULETS_MAX_BATCH)
    if b == lo or lo >= GPULETS_MAX_BATCH:
        lo = hi = min(lo, GPULETS_MAX_BATCH)
    for k in (lo, hi):
        if k not in profile:
            raise InterfpredError(
                f"no profile at batch size {k} (needed for batch {batch_size}); have {sorted(profile)}")
    (l2_lo, dr_lo), (l2_hi, dr_hi) = profile[lo], profile[hi]
    t = 0.0 if hi == lo else (b - lo) / (hi - lo)
    l2 = (l2_lo + t * (l2_hi - l2_lo)) / 100.0
    dram = (dr_lo + t * (dr_hi - dr_lo)) / 100.0
    return l2 * p / 100.0, dram * p / 100.0


class GpuletsModel(FrozenPredictor):
    """gpulets' linear interference function over ``[l2_me, dram_me, l2_other, dram_other]``.

    Parameters
    ----------
    coefficients
        c0..c4 (weights of L2_me, L2_other, DRAM_me, DRAM_other, and the constant); ``None``
        leaves the model unfitted (it predicts the prior until ``fit``).  gpulets' published
        RTX 2080 Ti values are :data:`interfpred.constants.GPULETS_RTX2080TI`; they predict a
        slowdown, so a model holding them must learn ``target="slowdown"`` (one declared for the
        rate is refused at predict).
    clip
        Report ``max(a, 1)`` (gpulets' slowdown) instead of the raw linear value ``a``. Declared
        for the rate (``target="rate"``, as the model holding it declares), ``fit`` learns the
        rate and the clip is the library's one clamp (a rate at most 1), not ``max(a, 1)``.

    Examples
    --------
    >>> from interfpred.constants import GPULETS_RTX2080TI
    >>> g = GpuletsModel(coefficients=GPULETS_RTX2080TI, clip=False)
    >>> round(g.interference((0.131462, 0.274374), (0.075645, 0.151292)), 4)
    1.0751
    >>> GpuletsModel(coefficients=GPULETS_RTX2080TI).predict([0.0, 0.0, 0.0, 0.0])  # clipped at 1
    1.0
    """

    kind = "gpulets"
    tags = replace(FrozenPredictor.tags, is_linear=True, fixed_width=4)
    _contract_params = [{}, {"clip": False}, {"coefficients": GPULETS_RTX2080TI, "clip": False}]

    def __init__(self, *, coefficients: tuple[float, ...] | None = None, clip: bool = True,
                 target: str | None = None) -> None:
        self.coefficients = coefficients
        self.clip = clip
        self.target = check_target(target)
        self._check_params()
        if coefficients is not None:  # one canonical form, so repr and files round-trip
            self.coefficients = tuple(float(c) for c in coefficients)
        self._c: np.ndarray | None = None
        self._n = 0
        self._d = None
        if coefficients is not None:
            self._c = np.array(coefficients, dtype=np.float64)
            self._d = 4

    def _check_params(self) -> None:
        if self.coefficients is not None:
            try:
                c = np.asarray(self.coefficients, dtype=np.float64)
            except (TypeError, ValueError):
                raise InterfpredError(f"coefficients must be 5 numbers, got {self.coefficients!r}") from None
            if c.shape != (5,) or not np.isfinite(c).all():
                raise InterfpredError(f"coefficients must be 5 finite numbers c0..c4, got {self.coefficients!r}")
        check_flag(self, "clip")

    def interference(self, me: tuple[float, float], other: tuple[float, float]) -> float:
        """gpulets' ``a`` (unclipped) from (L2, DRAM) of me and of the other batch."""
        c = self.coefficients_
        return float(c[0] * me[0] + c[1] * other[0] + c[2] * me[1] + c[3] * other[1] + c[4])

    @property
    def coefficients_(self) -> np.ndarray:
        """The fitted (or given) c0..c4, in gpulets' own order (L2_me, L2_other, DRAM_me, DRAM_other, 1)."""
        if self._c is None:
            raise AttributeError("coefficients_ is not available before fit")
        return self._c.copy()

    @property
    def coef_(self) -> np.ndarray:
        """The weights in the column order of the gpulets map, ``[l2_me, dram_me, l2_other, dram_other]``:
        ``[c0, c2, c1, c3]`` (the same as ``linear_form().weights``)."""
        if self._c is None:
            raise AttributeError("coef_ is not available before fit")
        return self._c[_ORDER].copy()

    @property
    def intercept_(self) -> float:
        """The constant ``c4`` (before the clip at 1 with ``clip``)."""
        if self._c is None:
            raise AttributeError("intercept_ is not available before fit")
        return float(self._c[4])

    @property
    def n_seen_(self) -> int:
        """Pairs the last ``fit`` learned from (0 before fit, and for coefficients given as published)."""
        return self._n

    def linear_form(self) -> LinearForm | None:
        """``max(c4 + c . x, 1)`` (lower 1 only with ``clip``, for a slowdown) in the column order of the gpulets map."""
        if self._c is None:
            return None
        return LinearForm(self._c[_ORDER].copy(), float(self._c[4]), 1.0 if self._clips_at_one else -np.inf)

    def _allocate(self, d: int) -> None:
        self._c = np.zeros(5)
        self._n = 0
        self._d = d

    def _fit_rows(self, X: np.ndarray, y: np.ndarray, *, sample_weight: Any, entities: Any) -> None:
        if X.shape[0] < 5:
            raise InterfpredError(f"fit needs at least 5 pairs to learn c0..c4, got {X.shape[0]}")
        A = np.column_stack([X, np.ones(X.shape[0])])
        sol, *_ = np.linalg.lstsq(A, y, rcond=None)
        c = np.empty(5)
        c[_ORDER] = sol[:4]
        c[4] = sol[4]
        self._c = c
        self._n = X.shape[0]

    def _predict_rows(self, X: np.ndarray, entities: Any = None) -> np.ndarray:
        assert self._c is not None  # only called on a fitted predictor
        if self._n == 0 and self.coefficients is not None and self.target == "rate":
            raise InterfpredError("GpuletsModel: the coefficients given predict a slowdown, but the model holding it "
                                  "learns the rate; use target='slowdown' (or fit the coefficients on the rate)")
        a = X @ self._c[_ORDER] + self._c[4]
        return np.maximum(a, 1.0) if self._clips_at_one else a

    @property
    def _clips_at_one(self) -> bool:
        return bool(self.clip) and self.target != "rate"

    def _get_state(self) -> dict[str, Any]:
        assert self._c is not None  # only called on a fitted predictor
        return {"coefficients": self._c.tolist(), "n_seen": self._n}

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        n = state_count(state, "n_seen")
        self._c = state_array(state, "coefficients", 5)
        self._n = n
        self._d = 4
