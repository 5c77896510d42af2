"""Accuracy metrics, importable from here as well: they live in :mod:`interfpred.evaluation.metrics`.

Examples
--------
>>> mape([9.0, 12.0], [10.0, 10.0])
0.15
"""

from interfpred.evaluation.metrics import (
    AccuracySummary,
    accuracy_summary,
    mape,
    mse,
    relative_error,
    relative_error_cdf,
    share_within,
)

__all__ = [
    "AccuracySummary",
    "accuracy_summary",
    "mape",
    "mse",
    "relative_error",
    "relative_error_cdf",
    "share_within",
]
