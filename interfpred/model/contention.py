"""Contention from kernels: the kernel-blocking model of the H200 spatial-sharing runs shipped with the package.

Under spatial sharing (MPS, CUDA streams) a batch of many short kernels waits, kernel by kernel,
for the SMs a co-runner's long kernel holds; the SM / L2 / DRAM throughputs the simulator's fluid
truth contends on cannot see it. :func:`kernel_contention_model` fits
:class:`~interfpred.predictors.KernelBlocking` on every run of ``h200_streams`` with the kernel
columns of ``h200_profiles`` (the co-runner feature map, time-weighted, rate target), so a caller
such as ``advise --contention kernels`` can take a batch's latency beside its co-runners from it.
It knows the eight H200 workloads (their per-model terms); another model gets the shared terms of
its kernel columns, or none without them.

Examples
--------
>>> m = kernel_contention_model()
>>> m.predictor.kind
'kernel_blocking'
"""

from __future__ import annotations

from interfpred.features import TimeWeighted
from interfpred.model.interference import InterferenceModel
from interfpred.predictors import KernelBlocking

__all__ = ["kernel_contention_model"]


def kernel_contention_model() -> InterferenceModel:
    """:class:`~interfpred.predictors.KernelBlocking` fitted on the shipped H200 spatial-sharing runs (see the module)."""
    from interfpred.data.datasets import h200_profiles, h200_streams

    model = InterferenceModel(TimeWeighted(feature_map="corunners", target="rate"), KernelBlocking())
    return model.fit(measurements=h200_streams(), profiles=h200_profiles())
