"""Coverage of latency bounds, importable from here as well: it lives in :mod:`interfpred.evaluation.coverage`.

Examples
--------
>>> target_level(0.9, "slowdown")
0.9
"""

from interfpred.evaluation.coverage import *  # noqa: F403  (re-exported: the names live there)
from interfpred.evaluation.coverage import __all__  # noqa: F401
