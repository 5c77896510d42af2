"""Calibrated: latency bounds around any predictor from conformal residual quantiles."""

from interfpred.predictors.calibrated.estimator import BoundForm, Calibrated

__all__ = ["BoundForm", "Calibrated"]
