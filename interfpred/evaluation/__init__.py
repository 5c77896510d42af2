"""Evaluation: accuracy metrics, the baselines, prequential loops, held-out splits, bound coverage.

The layer below :mod:`interfpred.model.interference`, shared by the model, the CLI and the experiments. Every
accuracy number interfpred prints stands beside the three baselines (no interference, global
mean, per-pair mean) computed on the same rows in the same run.

* :mod:`~interfpred.evaluation.metrics`: MSE, MAPE, relative-error CDF, :class:`AccuracySummary`;
* :mod:`~interfpred.evaluation.baselines`: the baselines and :func:`call` (entities only to the
  predictors that use them);
* :mod:`~interfpred.evaluation.prequential`: predict, then learn, over executions or measurement runs;
* :mod:`~interfpred.evaluation.folds`: held-out splits of measurement rows;
* :mod:`~interfpred.evaluation.coverage`: latency bounds from quantile predictors and their coverage;
* :mod:`~interfpred.evaluation.text_tables`: the one table formatter (plain text and Markdown, units in the
  header, fractions shown in percent).

Examples
--------
>>> import numpy as np
>>> accuracy_summary(np.array([11.0, 19.0]), np.array([10.0, 20.0])).within_10
1.0
"""

from interfpred.evaluation.baselines import BASELINE_LABELS, call, fit_baselines, make_baselines
from interfpred.evaluation.coverage import (
    baseline_bounds,
    check_quantile,
    coverage_rows,
    latency_bounds,
    prequential_bounds,
    run_stamps,
    target_level,
)
from interfpred.evaluation.folds import (
    Fold,
    held_out_mape,
    held_out_mapes,
    leave_one_model_out,
    run_folds,
    split_by_run,
)
from interfpred.evaluation.metrics import (
    AccuracySummary,
    accuracy_summary,
    mape,
    mse,
    relative_error,
    relative_error_cdf,
    share_within,
)
from interfpred.evaluation.prequential import (
    feedback_schedule,
    prequential,
    prequential_entities,
    prequential_runs,
)
from interfpred.evaluation.text_tables import MISSING, Column, format_cell, markdown_table, percent, text_table

__all__ = [
    "AccuracySummary",
    "BASELINE_LABELS",
    "Column",
    "Fold",
    "MISSING",
    "accuracy_summary",
    "baseline_bounds",
    "call",
    "check_quantile",
    "coverage_rows",
    "feedback_schedule",
    "fit_baselines",
    "format_cell",
    "held_out_mape",
    "held_out_mapes",
    "latency_bounds",
    "leave_one_model_out",
    "make_baselines",
    "mape",
    "markdown_table",
    "mse",
    "percent",
    "prequential",
    "prequential_bounds",
    "prequential_entities",
    "prequential_runs",
    "relative_error",
    "relative_error_cdf",
    "run_folds",
    "run_stamps",
    "share_within",
    "split_by_run",
    "target_level",
    "text_table",
]
