"""Calibrated: latency bounds around any predictor from conformal residual quantiles."""

from interfpred.predictors.calibrated.estimator import Calibrated

__all__ = ["Calibrated"]
