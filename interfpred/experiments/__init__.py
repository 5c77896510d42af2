"""Experiments that reproduce the paper and evaluate interfpred (E1, E2, E3) and their metrics."""
