"""Accuracy metrics, importable from here as well: they live in :mod:`interfpred.evaluation.metrics`.

Examples
--------
>>> mape([9.0, 12.0], [10.0, 10.0])
0.15
"""

from interfpred.evaluation.metrics import *  # noqa: F403  (re-exported: the names live there)
from interfpred.evaluation.metrics import __all__  # noqa: F401
