"""Experiments that reproduce the paper and go past it (E1 to E4, bound coverage, scheduling).

They sit on top of the library; the metrics, baselines and prequential loops they use live in
:mod:`interfpred.evaluation`.
"""
