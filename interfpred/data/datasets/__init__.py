"""Real co-location data shipped with interfpred.

:func:`gavel_v100` is the first: steady-state pairs of deep-learning training jobs measured on a
real V100 by Gavel (Narayanan et al., OSDI 2020; MIT licence, notice in ``LICENSE.gavel`` beside
this module). It holds no hardware counters, so it exercises the measurement format, per-model
and per-pair effects and new-model generalisation, not the throughput features.

Examples
--------
>>> m = gavel_v100()
>>> str(m.gpu[0]), m.n_runs, len(m.models)
('v100', 330, 7)
>>> bool((m.slowdown > 0.9).all())
True
"""

from __future__ import annotations

from pathlib import Path

from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError

__all__ = ["DATASETS", "gavel_v100", "load_dataset"]


def gavel_v100() -> Measurements:
    """Gavel's measured V100 pairs of single-GPU training jobs, one row per member of a pair.

    Columns: ``run, gpu (v100), model, batch_size, share (100), solo_ms, observed_ms, member`` and
    ``job`` (Gavel's job name). Latencies are milliseconds per training step (1000 / steps per
    second); pairs Gavel recorded as ``0.0`` (not measured) are left out.
    """
    return Measurements.from_csv(Path(__file__).with_name("gavel_v100.csv"))


#: The shipped datasets by name (what ``dataset:NAME`` on the command line refers to).
DATASETS = {"gavel_v100": gavel_v100}


def load_dataset(name: str) -> Measurements:
    """A shipped dataset by name.

    Examples
    --------
    >>> load_dataset("gavel_v100").n_runs
    330
    >>> load_dataset("nope")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no dataset named 'nope'; shipped: gavel_v100
    """
    if name not in DATASETS:
        raise InterfpredError(f"no dataset named {name!r}; shipped: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]()
