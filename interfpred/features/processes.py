"""Features of N processes of one model sharing one MIG instance (MPS inside MIG), from solo profiles only.

How much N copies of a model slow each other down inside one instance depends on how much of the
instance one copy leaves idle. Two numbers read off the *solo* latencies of the same model say
that without any multi-process measurement, so they exist for a model never co-located:

- ``batch_saturation`` = L1(g, 2b) / (2 * L1(g, b)): 1 when doubling the batch doubles the
  latency (the instance is saturated: copies queue), 0.5 when it is free (copies overlap); at the
  largest profiled batch, L1(g, b) / (2 * L1(g, b / 2));
- ``gpc_scaling`` = L1(7, b) * 7 / (L1(g, b) * g): 1 when latency scales with the GPCs given
  (compute-bound), larger when more GPCs help less.

With k = N - 1 extra processes, the feature row is ``[k, k * batch_saturation, k * gpc_scaling,
k * log2 b, k * log2 g, k * batch_saturation * log2 b]``: every term vanishes for one process, so
a linear model ``slowdown = 1 + w . x`` predicts no slowdown alone and a per-process slope that
depends on the configuration. The baseline it is measured against is the same model with the
first column only (slowdown linear in N with one slope for every configuration).

Examples
--------
>>> from interfpred.data.datasets import parvagpu_a100
>>> f = process_features(parvagpu_a100())
>>> f.x.shape, f.names[:2]
((1747, 6), ('extra_processes', 'extra_x_batch_saturation'))
>>> bool((f.x[f.processes == 1] == 0).all()), round(float(f.slowdown[f.processes == 5].mean()), 2)
(True, 3.06)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError

__all__ = ["PROCESS_FEATURE_NAMES", "ProcessFeatures", "process_features"]

#: Names of the columns of :attr:`ProcessFeatures.x`.
PROCESS_FEATURE_NAMES = ("extra_processes", "extra_x_batch_saturation", "extra_x_gpc_scaling", "extra_x_log2_batch",
                         "extra_x_log2_gpcs", "extra_x_batch_saturation_x_log2_batch")
#: GPCs of a whole MIG GPU (the 7g instance), the reference of ``gpc_scaling``.
_FULL_GPCS = 7


@dataclass(frozen=True)
class ProcessFeatures:
    """One row per run: its features, model, GPCs, batch size, processes, solo and observed latency (ms)."""

    x: np.ndarray
    model: np.ndarray
    gpcs: np.ndarray
    batch_size: np.ndarray
    processes: np.ndarray
    solo_ms: np.ndarray
    observed_ms: np.ndarray
    names: tuple[str, ...] = PROCESS_FEATURE_NAMES

    @property
    def slowdown(self) -> np.ndarray:
        """Observed / solo latency of one process."""
        return self.observed_ms / self.solo_ms


def process_features(m: Measurements) -> ProcessFeatures:
    """Features of every run of ``m`` (measurement runs of copies of one model with ``partition`` in GPCs).

    Each run must hold copies of one model; its processes are its members (or its ``processes``
    column). A configuration whose solo latency at twice (or half) the batch, or at 7 GPCs, was
    not profiled gets the mean of that feature over the rows that have it.
    """
    cols = m.columns()
    if "partition" not in cols:
        raise InterfpredError("process features need a 'partition' column (GPCs of the MIG instance per run)")
    first = np.array([int(m.run_members(r)[0]) for r in range(m.n_runs)], dtype=np.int64)
    for r in range(m.n_runs):
        members = m.run_members(r)
        if len(set(cols["model"][members].tolist())) != 1:
            raise InterfpredError(f"run {m.run_names[r]!r} mixes models: process features are for copies of one")
    model = cols["model"][first].astype(str)
    gpcs = np.array([int(v) for v in cols["partition"][first]], dtype=np.int64)
    batch = m.batch_size[first].astype(np.int64)
    procs = (np.array([int(v) for v in cols["processes"][first]], dtype=np.int64) if "processes" in cols
             else np.array([len(m.run_members(r)) for r in range(m.n_runs)], dtype=np.int64))
    solo = m.solo_ms[first].astype(np.float64)
    observed = np.array([float(np.mean(m.observed_ms[m.run_members(r)])) for r in range(m.n_runs)])
    lat = {(a, g, b): s for a, g, b, s in zip(model.tolist(), gpcs.tolist(), batch.tolist(), solo.tolist())}
    sat = np.array([_batch_saturation(lat, a, g, b) for a, g, b in zip(model.tolist(), gpcs.tolist(),
                                                                        batch.tolist())])
    scale = np.array([lat[(a, _FULL_GPCS, b)] * _FULL_GPCS / (lat[(a, g, b)] * g) if (a, _FULL_GPCS, b) in lat
                      else math.nan for a, g, b in zip(model.tolist(), gpcs.tolist(), batch.tolist())])
    for v in (sat, scale):
        known = np.isfinite(v)
        v[~known] = float(v[known].mean()) if known.any() else 1.0
    k = (procs - 1).astype(np.float64)
    lb, lg = np.log2(batch), np.log2(gpcs)
    x = np.column_stack([k, k * sat, k * scale, k * lb, k * lg, k * sat * lb])
    return ProcessFeatures(np.ascontiguousarray(x), model, gpcs, batch, procs, solo, observed)


def _batch_saturation(lat: dict[tuple[str, int, int], float], model: str, gpcs: int, batch: int) -> float:
    here = lat[(model, gpcs, batch)]
    if (model, gpcs, 2 * batch) in lat:
        return lat[(model, gpcs, 2 * batch)] / (2 * here)
    if batch % 2 == 0 and (model, gpcs, batch // 2) in lat:
        return here / (2 * lat[(model, gpcs, batch // 2)])
    return math.nan
