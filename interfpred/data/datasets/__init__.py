"""Real co-location data shipped with interfpred.

:func:`gavel_v100` is the first: steady-state pairs of deep-learning training jobs measured on a
real V100 by Gavel (Narayanan et al., OSDI 2020; MIT licence, notice in ``LICENSE.gavel`` beside
this module). It holds no hardware counters, so it exercises the measurement format, per-model
and per-pair effects and new-model generalisation, not the throughput features.

:func:`h200_streams` is the third, measured for interfpred (MIT, notice in ``h200/LICENSE``): eight
inference workloads on one NVIDIA H200 under spatial sharing (each on its own CUDA stream of one
process, the physics of MPS), every pair, twelve triples and six quadruples, with slowdowns from
1.00x to 236x; :func:`h200_profiles` are their solo profiles with the kernel columns Nsight
Compute's per-kernel rows give (docs/data.md says how both were measured).

:func:`parvagpu_a100` is the second: 11 inference models profiled on a real A100-80GB by ParvaGPU
(Lee et al., SC 2024; MIT licence, notice in ``parvagpu_a100/LICENSE``) in every MIG instance
size, at batch sizes 1-256, with 1-5 MPS processes of one model inside the instance; its six SLO
sets and ParvaGPU's own plans for them ship beside it (:mod:`interfpred.data.datasets.parvagpu`).

Examples
--------
>>> m = gavel_v100()
>>> str(m.gpu[0]), m.n_runs, len(m.models)
('v100', 330, 7)
>>> bool((m.slowdown > 0.9).all())
True
>>> h = h200_streams()
>>> h.n_runs, len(h), round(float(h.slowdown.max()))
(54, 132, 236)
>>> h200_profiles().lookup("triad", 1).extra["kernels"]
'1.0'
>>> p = parvagpu_a100()
>>> p.n_runs, len(p), p.extra_columns
(1747, 4937, ('mechanism', 'partition', 'processes'))
"""

from __future__ import annotations

from pathlib import Path

from interfpred.data.datasets.parvagpu import parvagpu_measurements
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError

__all__ = ["DATASETS", "PROFILE_DATASETS", "gavel_v100", "h200_profiles", "h200_streams", "load_dataset",
           "load_profile_dataset", "parvagpu_a100"]


def gavel_v100() -> Measurements:
    """Gavel's measured V100 pairs of single-GPU training jobs, one row per member of a pair.

    Columns: ``run, gpu (v100), model, batch_size, share (100), solo_ms, observed_ms, member`` and
    ``job`` (Gavel's job name). Latencies are milliseconds per training step (1000 / steps per
    second); pairs Gavel recorded as ``0.0`` (not measured) are left out.
    """
    return Measurements.from_csv(Path(__file__).with_name("gavel_v100.csv"))


def parvagpu_a100() -> Measurements:
    """ParvaGPU's A100-80GB profiles: N MPS processes of one model in one MIG instance.

    One run per (model, instance size in GPCs, batch size 1-256, processes 1-5), one row per
    process: ``solo_ms`` is one process alone in an instance of that size, ``observed_ms`` one of
    the ``processes`` running together; extra columns ``mechanism`` (``mig``), ``partition`` (GPCs)
    and ``processes``. Latency is ``1000 * batch / throughput`` from ParvaGPU's throughput column.
    """
    return parvagpu_measurements()


def h200_streams() -> Measurements:
    """Real runs of eight inference workloads sharing one NVIDIA H200's SMs (one CUDA stream each).

    54 runs (28 pairs of distinct workloads, 8 of a workload beside a copy of itself, 12 triples, 6
    quadruples), one row per member: ``observed_ms`` is 500 ms over the batches it completed in the
    middle 0.5 s of a 0.8 s run (the per-batch time a closed-loop server sees), ``solo_ms`` the same
    alone (median of three solo runs); extra columns ``solo_exec_ms``, ``exec_ms``, ``exec_p90_ms``
    (CUDA-event times of a batch's first to last operation) and ``batches``.
    """
    return Measurements.from_csv(Path(__file__).parent / "h200" / "measurements_streams.csv")


def h200_profiles() -> ProfileTable:
    """Solo profiles of seven of :func:`h200_streams`' workloads from Nsight Compute's per-kernel rows.

    One batch per workload, ingested by ``interfpred ingest``: ``solo_ms`` is the kernels' summed
    time, SM / L2 / DRAM throughput their duration-weighted means, and the kernel columns
    (``kernels``, ``kernel_residual_ms``, ``kernel_occupancy``, ...) what decides blocking under
    spatial sharing. Three reports (resnet50, vit_b_16, mobilenet_v3_large) were cut short by ncu
    and say so (``truncated`` 1); resnet50 at batch 64 was not profiled.
    """
    return ProfileTable.from_csv(Path(__file__).parent / "h200" / "profiles.csv")


#: The shipped datasets by name (what ``dataset:NAME`` on the command line refers to).
DATASETS = {"gavel_v100": gavel_v100, "h200_streams": h200_streams, "parvagpu_a100": parvagpu_a100}
#: The shipped profile tables, by the name of the dataset they profile (``--profiles dataset:NAME``).
PROFILE_DATASETS = {"h200_streams": h200_profiles}


def load_dataset(name: str) -> Measurements:
    """A shipped dataset by name.

    Examples
    --------
    >>> load_dataset("gavel_v100").n_runs
    330
    >>> load_dataset("nope")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no dataset named 'nope'; shipped: gavel_v100, h200_streams, parvagpu_a100
    """
    if name not in DATASETS:
        raise InterfpredError(f"no dataset named {name!r}; shipped: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]()


def load_profile_dataset(name: str) -> ProfileTable:
    """The shipped profiles of a dataset, by the dataset's name.

    Examples
    --------
    >>> len(load_profile_dataset("h200_streams"))
    7
    >>> load_profile_dataset("gavel_v100")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no profiles shipped for dataset 'gavel_v100'; shipped: h200_streams
    """
    if name not in PROFILE_DATASETS:
        raise InterfpredError(f"no profiles shipped for dataset {name!r}; shipped: {', '.join(sorted(PROFILE_DATASETS))}")
    return PROFILE_DATASETS[name]()
