"""The held-out tail rule, in the foundation so that every layer splits rows the same way.

:func:`tail_cut` is where a time-ordered validation splits ``n`` rows: the configuration search's
held-out tail (:func:`interfpred.evaluation.validation.tail_fold`), the paper experiments'
hyperparameter choice and EntityRLS's prior tuning all call it.

Examples
--------
>>> tail_cut(10, 0.25), tail_cut(2, 0.9)
(8, 1)
"""

from __future__ import annotations

from interfpred.errors import InterfpredError

__all__ = ["tail_cut"]


def tail_cut(n: int, share: float) -> int:
    """Rows ``[0, cut)`` fit and ``[cut, n)`` validate: ``share`` of ``n`` rows held out at the end, at least one
    row on each side."""
    if not 0.0 < float(share) < 1.0 or n < 2:
        raise InterfpredError(f"a held-out tail needs a share in (0, 1) and at least 2 rows, got {share!r} of {n}")
    return min(n - 1, max(1, round(n * (1.0 - float(share)))))
