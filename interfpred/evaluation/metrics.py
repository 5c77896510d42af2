"""Accuracy metrics shared by the model, the experiments, the CLI and users' own evaluations.

All functions take plain arrays; relative error is ``|predicted - observed| / observed``
on latency (identical on slowdown, since both share the solo latency as denominator).

Examples
--------
>>> import numpy as np
>>> obs = np.array([10.0, 20.0, 40.0, 5.0])
>>> pred = np.array([11.0, 19.0, 40.0, 8.0])
>>> summary = accuracy_summary(pred, obs)
>>> summary.within_10, summary.within_20
(0.75, 0.75)
>>> round(summary.mape, 4)
0.1875
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from interfpred.constants import (
    ACCURACY_BEYOND_60,
    ACCURACY_WITHIN_10,
    ACCURACY_WITHIN_20,
    BOUNDARY_RTOL,
    UNDER_PREDICTION_FACTOR,
)
from interfpred.errors import InterfpredError

__all__ = [
    "ratio_error",
    "under_share",
    "PERCENT_NAMES",
    "AccuracySummary",
    "accuracy_summary",
    "mape",
    "mse",
    "relative_error",
    "relative_error_cdf",
    "share_within",
]


def _pair(predicted, observed) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(predicted, dtype=np.float64).reshape(-1)
    o = np.asarray(observed, dtype=np.float64).reshape(-1)
    if p.shape != o.shape:
        raise InterfpredError(f"predicted has {p.size} values, observed has {o.size}")
    if p.size == 0:
        raise InterfpredError("cannot score zero predictions")
    if not np.all(np.isfinite(p)):
        raise InterfpredError(f"predicted holds {int(np.sum(~np.isfinite(p)))} non-finite value(s)")
    if not np.all(np.isfinite(o)):
        raise InterfpredError(f"observed holds {int(np.sum(~np.isfinite(o)))} non-finite value(s)")
    return p, o


def mse(predicted, observed) -> float:
    """Mean squared error (the paper reports it on slowdown).

    >>> mse([1.0, 2.0], [1.0, 1.0])
    0.5
    """
    p, o = _pair(predicted, observed)
    return float(np.mean((p - o) ** 2))


def relative_error(predicted, observed) -> np.ndarray:
    """``|predicted - observed| / |observed|`` element-wise; observed values must be non-zero.

    >>> relative_error([9.0, 12.0], [10.0, 10.0])
    array([0.1, 0.2])
    """
    p, o = _pair(predicted, observed)
    if np.any(o == 0):
        raise InterfpredError("observed holds zeros; relative error is undefined there")
    return np.abs(p - o) / np.abs(o)


def mape(predicted, observed) -> float:
    """Mean absolute percentage error as a fraction (0.05 = 5 %), on latency in the paper.

    >>> mape([9.0, 12.0], [10.0, 10.0])
    0.15
    """
    return float(np.mean(relative_error(predicted, observed)))


def ratio_error(predicted, observed) -> float:
    """Mean error of the ratio, either way: ``max(p / o, o / p) - 1``, as a fraction.

    An over-prediction costs what it costs in MAPE (``p / o - 1``); an under-prediction costs
    ``o / p - 1`` instead of MAPE's ``1 - p / o``, which never exceeds 100 % however far a
    prediction falls short. MAPE therefore rewards predicting too little (no interference),
    the error that makes a scheduler admit batches that then miss their SLOs; this error does
    not, and it is what ``fit`` chooses configurations by.

    >>> ratio_error([5.0, 20.0], [10.0, 10.0])      # half and double cost the same
    1.0
    >>> mape([5.0, 20.0], [10.0, 10.0])
    0.75
    """
    p = np.asarray(predicted, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.maximum(p / o, o / p) - 1.0
    return float(np.mean(r))


def under_share(predicted, observed, factor: float = UNDER_PREDICTION_FACTOR) -> float:
    """Share of rows under-predicted by more than ``factor`` (observed > factor x predicted), as a fraction.

    A scheduler that trusts such a prediction admits a batch that runs ``factor`` times longer
    than it planned; every accuracy table prints this share beside MAPE.

    >>> under_share([1.0, 10.0, 10.0, 10.0], [2.0, 10.0, 9.0, 16.0])
    0.5
    """
    p = np.asarray(predicted, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    if p.size == 0:
        return float("nan")
    return float(np.mean(o > factor * p))


def share_within(predicted, observed, tolerance: float) -> float:
    """Share of predictions whose relative error is at most ``tolerance`` (0.1 = 10 %).

    >>> share_within([9.0, 12.0], [10.0, 10.0], 0.1)
    0.5
    """
    if not tolerance >= 0:
        raise InterfpredError(f"tolerance must be >= 0, got {tolerance!r}")
    # A relative slack absorbs float rounding at the boundary (9 vs 10 is exactly 10 %).
    return float(np.mean(relative_error(predicted, observed) <= tolerance * (1 + BOUNDARY_RTOL)))


def relative_error_cdf(predicted, observed) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of relative error: sorted errors and the cumulative share at each.

    >>> x, f = relative_error_cdf([9.0, 12.0], [10.0, 10.0])
    >>> x.tolist(), f.tolist()
    ([0.1, 0.2], [0.5, 1.0])
    """
    err = np.sort(relative_error(predicted, observed))
    return err, np.arange(1, err.size + 1) / err.size


@dataclass(frozen=True)
class AccuracySummary:
    """The figures the experiments report for one set of predictions (errors as fractions).

    ``within_10`` and ``within_20`` are the shares of rows whose relative error is at most
    ``ACCURACY_WITHIN_10`` (0.1) and ``ACCURACY_WITHIN_20`` (0.2); ``beyond_60`` the share above
    ``ACCURACY_BEYOND_60`` (0.6); ``under`` the share under-predicted by more than
    ``UNDER_PREDICTION_FACTOR`` (observed above 1.5 times the prediction: the error that makes a
    scheduler miss SLOs, which MAPE caps at 100 %).
    """

    n: int
    mse: float
    mape: float
    within_10: float
    within_20: float
    median: float
    p90: float
    p99: float
    beyond_60: float
    under: float

    def as_dict(self) -> dict[str, float]:
        """Plain dict, for JSON and tables (relative errors and shares as fractions)."""
        return asdict(self)

    def as_percent_dict(self) -> dict[str, float]:
        """The figures as a person reads them: ``n``, ``mse`` (of slowdown), then relative errors and
        shares of rows in percent, under names ending in ``_%`` (:data:`PERCENT_NAMES`).

        >>> s = AccuracySummary(n=2, mse=0.01, mape=0.05, within_10=1.0, within_20=1.0, median=0.05,
        ...                     p90=0.08, p99=0.09, beyond_60=0.0, under=0.0)
        >>> s.as_percent_dict()["mape_%"], s.as_percent_dict()["within_10_%"]
        (5.0, 100.0)
        """
        return {PERCENT_NAMES.get(k, k): (100.0 * v if k in PERCENT_NAMES else v) for k, v in asdict(self).items()}


#: The figures of :class:`AccuracySummary` that are fractions of rows or relative errors, with the names
#: they carry in percent (:meth:`AccuracySummary.as_percent_dict`: the CLI, ``--json``, data frames).
PERCENT_NAMES = {"mape": "mape_%", "within_10": "within_10_%", "within_20": "within_20_%", "median": "median_%",
                 "p90": "p90_%", "p99": "p99_%", "beyond_60": "beyond_60_%", "under": "under_1.5x_%"}


def accuracy_summary(predicted, observed) -> AccuracySummary:
    """All accuracy figures for one prediction set.

    ``mse`` is computed on the values given (pass slowdowns for the paper's MSE); the
    relative-error figures are scale-free, so latencies or slowdowns give the same numbers.
    """
    p, o = _pair(predicted, observed)
    err = relative_error(p, o)
    q = np.quantile(err, [0.5, 0.9, 0.99])
    return AccuracySummary(
        n=int(p.size), mse=float(np.mean((p - o) ** 2)), mape=float(err.mean()),
        within_10=float(np.mean(err <= ACCURACY_WITHIN_10 * (1 + BOUNDARY_RTOL))),
        within_20=float(np.mean(err <= ACCURACY_WITHIN_20 * (1 + BOUNDARY_RTOL))),
        median=float(q[0]), p90=float(q[1]), p99=float(q[2]), beyond_60=float(np.mean(err > ACCURACY_BEYOND_60)),
        under=under_share(p, o),
    )
