"""Real co-location data shipped with interfpred.

:func:`gavel_v100` is the first: steady-state pairs of deep-learning training jobs measured on a
real V100 by Gavel (Narayanan et al., OSDI 2020; MIT licence, notice in ``LICENSE.gavel`` beside
this module). It holds no hardware counters, so it exercises the measurement format, per-model
and per-pair effects and new-model generalisation, not the throughput features.

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
>>> p = parvagpu_a100()
>>> p.n_runs, len(p), p.extra_columns
(1747, 4937, ('mechanism', 'partition', 'processes'))
"""

from __future__ import annotations

from pathlib import Path

from interfpred.data.datasets.parvagpu import parvagpu_measurements
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError

__all__ = ["DATASETS", "gavel_v100", "load_dataset", "parvagpu_a100"]


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


#: The shipped datasets by name (what ``dataset:NAME`` on the command line refers to).
DATASETS = {"gavel_v100": gavel_v100, "parvagpu_a100": parvagpu_a100}


def load_dataset(name: str) -> Measurements:
    """A shipped dataset by name.

    Examples
    --------
    >>> load_dataset("gavel_v100").n_runs
    330
    >>> load_dataset("nope")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no dataset named 'nope'; shipped: gavel_v100, parvagpu_a100
    """
    if name not in DATASETS:
        raise InterfpredError(f"no dataset named {name!r}; shipped: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]()
