"""How well advise's spatial-sharing model reproduces real runs: the H200 streams runs, beside a per-pair mean.

``advise`` simulates MPS (and the processes inside a MIG instance) with the simulator's fluid
truth: every batch runs at a rate set by the SM / L2 / DRAM throughputs of everything running
beside it. On the shipped H200 runs (:func:`~interfpred.data.datasets.h200_streams`: eight
workloads, every pair, triples and quadruples, each member on its own CUDA stream, measured by
throughput, all members co-running for the whole run) that truth's steady-state slowdown of every
member is compared with the measured one: ``1 / rate`` of the member among the run's demands, on
the GPU ``advise --profiles dataset:h200_streams`` simulates.

The error is the mean absolute log ratio of predicted to measured slowdown (0 exact; 0.69 a factor
2 either way), over the members of the runs whose every member has a profile (resnet50 at batch 64 has none). Beside it:

* **no interference**: slowdown 1;
* **global mean**, held out by run: the mean slowdown of the members of the other runs;
* **per-pair mean**, held out by run: a member's excess slowdown (slowdown - 1) in a run is
  split equally over its co-runners; its predicted excess beside each co-runner is the mean of
  those shares beside that co-runner in the *other* runs (pairs and larger), and the excesses of
  its co-runners add up; with no other run of that pair, the mean share of the other runs.

A model that loses to the per-pair mean is reported as losing.

Examples
--------
>>> r = spatial_sharing_check()
>>> r.rows, sorted(r.error)
(98, ['fluid', 'global mean', 'no interference', 'per-pair mean'])
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from interfpred.data.datasets import h200_profiles, h200_streams
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.provisioning.sources import advise_inputs
from interfpred.sim import rates

__all__ = ["CheckResult", "spatial_sharing_check"]


@dataclass(frozen=True)
class CheckResult:
    """Mean absolute log error per method, the rows it was taken over, and the share under-predicted > 1.5x."""

    error: dict[str, float]
    under_1_5x: dict[str, float]
    rows: int


def _key(m: Measurements, i: int) -> str:
    return f"{m.model[i]}@{int(m.batch_size[i])}"


def spatial_sharing_check(measurements: Measurements | None = None, profiles: ProfileTable | None = None
                          ) -> CheckResult:
    """The fluid truth's slowdowns against the measured runs, beside the baselines (see the module)."""
    m = h200_streams() if measurements is None else measurements
    prof = h200_profiles() if profiles is None else profiles
    spec, prof = advise_inputs(prof, None)
    have = {(mod, b) for mod in prof.models for b in prof.batch_sizes(mod)}
    observed = np.asarray(m.observed_ms, dtype=np.float64) / np.asarray(m.solo_ms, dtype=np.float64)
    fluid = np.full(len(observed), np.nan)
    for run in range(m.n_runs):
        idx = m.run_members(run)
        if not all((str(m.model[i]), int(m.batch_size[i])) in have for i in idx):
            continue
        look = prof.lookup_arrays([str(m.model[i]) for i in idx], np.array([int(m.batch_size[i]) for i in idx]),
                                  gpus=spec.name)
        dem = np.column_stack([look["sm"], look["l2"], look["dram"]])
        fluid[idx] = 1.0 / rates(dem, spec)
    pair = _pair_mean_held_out(m, observed)
    keep = np.isfinite(fluid)
    run_of = np.asarray(m.run_code)
    glob = np.array([float(np.mean(observed[run_of != run_of[i]])) for i in range(len(observed))])
    preds = {"fluid": fluid, "no interference": np.ones_like(observed), "global mean": glob, "per-pair mean": pair}
    err = {k: float(np.mean(np.abs(np.log(v[keep] / observed[keep])))) for k, v in preds.items()}
    under = {k: float(np.mean(v[keep] * 1.5 < observed[keep])) for k, v in preds.items()}
    return CheckResult(err, under, int(keep.sum()))


def _pair_mean_held_out(m: Measurements, observed: np.ndarray) -> np.ndarray:
    run_of = np.asarray(m.run_code)
    co: list[list[str]] = [[] for _ in range(len(observed))]
    for run in range(m.n_runs):
        idx = m.run_members(run)
        for i in idx:
            co[int(i)] = [_key(m, int(j)) for j in idx if j != i]
    out = np.empty(len(observed))
    for i in range(len(observed)):
        others = run_of != run_of[i]
        sums: dict[str, list[float]] = defaultdict(list)
        me = _key(m, i)
        for j in np.flatnonzero(others):
            if _key(m, int(j)) == me:
                excess = (observed[j] - 1.0) / max(len(co[j]), 1)
                for c in co[j]:
                    sums[c].append(excess)
        fallback = float(np.mean([(observed[j] - 1.0) / max(len(co[j]), 1) for j in np.flatnonzero(others)]))
        out[i] = 1.0 + sum(float(np.mean(sums[c])) if sums[c] else fallback for c in co[i])
    return np.maximum(out, 1.0)
