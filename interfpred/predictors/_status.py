"""Status codes of the predictors' compiled kernels, and the one error each code stands for.

Kernels never raise: they return a status code (``OK`` = 0) before touching the state, or
restore the state and return one. Kernels over many rows return ``status * ROW_FACTOR + row``
(the row of the first refusal). :func:`status_error` turns a code into the
:class:`~interfpred.errors.InterfpredError` every predictor raises for it, in one wording.
"""

from __future__ import annotations

from interfpred.constants import FEATURE_ABS_MAX, TARGET_ABS_MAX
from interfpred.errors import InterfpredError

__all__ = ["OK", "BAD_WIDTH", "BAD_X", "BAD_Y", "NOT_PD", "X_RANGE", "Y_RANGE", "NONFINITE", "BAD_LOG", "MISSING",
           "ROW_FACTOR", "split_code", "status_error"]

OK = 0
#: X has the wrong number of features.
BAD_WIDTH = 1
#: NaN or inf in X.
BAD_X = 2
#: NaN or inf in y.
BAD_Y = 3
#: The innovation variance is not finite and positive: the covariance wound up or lost definiteness.
NOT_PD = 4
#: A feature beyond ``FEATURE_ABS_MAX``.
X_RANGE = 5
#: A target beyond ``TARGET_ABS_MAX``.
Y_RANGE = 6
#: The update would make the learned state non-finite (the state is restored).
NONFINITE = 7
#: A target <= 0 for a predictor that learns its logarithm.
BAD_LOG = 10
#: A row names an entity not created yet (nothing changed; the caller creates it and calls again).
MISSING = 11

#: Batch kernels return ``status * ROW_FACTOR + row``.
ROW_FACTOR = 4294967296


def split_code(code: int) -> tuple[int, int]:
    """``(status, row)`` of a batch kernel's return value.

    Examples
    --------
    >>> split_code(NOT_PD * ROW_FACTOR + 17)
    (4, 17)
    """
    return code >> 32, code & 0xFFFFFFFF


def status_error(status: int, *, row: int | None = None, model: str = "RLS", n_features: int | None = None,
                 width: int | None = None) -> InterfpredError:
    """The error for kernel status ``status`` (not ``OK``), the same wording for every predictor.

    Parameters
    ----------
    status
        The kernel's status code.
    row
        The row refused, when the kernel ran over several.
    model
        The predictor's name, for state errors.
    n_features, width
        The width of the refused X and the width the predictor was fitted with (``BAD_WIDTH``).

    Examples
    --------
    >>> str(status_error(BAD_WIDTH, n_features=4, width=3))
    'X has 4 features, but the predictor was fitted with 3'
    >>> str(status_error(BAD_Y, row=2))
    'y contains NaN or inf (row 2); targets must be finite'
    """
    where = "" if row is None else f" (row {row})"
    if status == BAD_WIDTH:
        has = "the wrong number of" if n_features is None else str(n_features)
        return InterfpredError(f"X has {has} features, but the predictor was fitted with {width}")
    if status == BAD_X:
        return InterfpredError(f"X contains NaN or inf{where}; features must be finite")
    if status == BAD_Y:
        return InterfpredError(f"y contains NaN or inf{where}; targets must be finite")
    if status == X_RANGE:
        return InterfpredError(f"X has a feature beyond +-{FEATURE_ABS_MAX:g}{where}; refused as non-physical "
                               "(the state is unchanged)")
    if status == Y_RANGE:
        return InterfpredError(f"y is beyond +-{TARGET_ABS_MAX:g}{where}; a slowdown or rate that large is "
                               "non-physical (a glitched timer?); refused, the state is unchanged")
    if status == BAD_LOG:
        return InterfpredError(f"y holds a value <= 0{where}; log_target=True needs positive targets")
    if status == NOT_PD:
        return InterfpredError(
            f"{model} covariance wound up or lost positive definiteness{where}; the update was refused, the state "
            "is unchanged (stabilize=True, the default, prevents windup; check the input's scale)")
    cause = ("its covariance wound up or lost positive definiteness; stabilize=True, the default, prevents windup"
             if model.endswith("RLS") else "reduce the learning rate, or check the input's scale")
    return InterfpredError(f"{model} update would make the learned state non-finite ({cause}){where}; refused, "
                           "the state is unchanged")
