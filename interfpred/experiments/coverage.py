"""Coverage of latency bounds, importable from here as well: it lives in :mod:`interfpred.evaluation.coverage`.

Examples
--------
>>> target_level(0.9, "slowdown")
0.9
"""

from interfpred.evaluation.coverage import (
    baseline_bounds,
    coverage_rows,
    latency_bounds,
    prequential_bounds,
    run_stamps,
    target_level,
)

__all__ = ["baseline_bounds", "coverage_rows", "latency_bounds", "prequential_bounds", "run_stamps", "target_level"]
