"""Pair data of E3: every pair of (model, batch size) started together on its own simulated GPU.

:func:`simulate_pairs` runs the pairs under the ground truth with noise (the phase-structured one,
each pass one operator, when hidden per-model factors are given); :func:`fit_pair_models` fits
gpulets' coefficients and the warm RLS of the E3 policies on them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from interfpred.constants import E3_PAIR_BATCHES
from interfpred.data.profiles import ProfileTable
from interfpred.features import Static, TimeWeighted, transform_many
from interfpred.predictors import RLS, GpuletsModel
from interfpred.sim.contention import GpuSpec
from interfpred.sim.engine import SimResult, simulate
from interfpred.sim.operators import HiddenFactors, PhaseZoo, Program
from interfpred.sim.phased import simulate_phased

__all__ = ["fit_pair_models", "simulate_pairs"]


def simulate_pairs(profiles: ProfileTable, spec: GpuSpec, *, seed: int = 0,
                   batches: tuple[int, ...] = E3_PAIR_BATCHES,
                   hidden: Mapping[str, HiddenFactors] | None = None) -> SimResult:
    """Every unordered pair of (model, batch size) over ``profiles``' models and ``batches``, both started at 0
    on their own GPU (named ``p{i}_{j}``), simulated under the ground truth with noise.

    Examples
    --------
    >>> from interfpred.sim.contention import get_gpu_spec
    >>> from interfpred.sim.zoo import zoo_profiles
    >>> res = simulate_pairs(zoo_profiles("l4"), get_gpu_spec("l4"), batches=(1,))
    >>> len(res.trace) == 6 * 7        # 6 models: 21 pairs of 2
    True
    """
    keys = [(m, b) for m in profiles.models for b in batches]
    model, batch, device = [], [], []
    for i in range(len(keys)):
        for j in range(i, len(keys)):
            for m, b in (keys[i], keys[j]):
                model.append(m)
                batch.append(b)
                device.append(f"p{i}_{j}")
    if hidden is None:
        res = simulate(model, batch, np.zeros(len(model)), device=device, spec=spec, profiles=profiles, queue=False,
                       seed=seed)
    else:  # the same passes as one operator each, with the hidden factors (the phase-structured truth)
        p = profiles.lookup_arrays([m for m, _ in keys], [b for _, b in keys], gpus=spec.name)
        progs = {k: Program([p["solo_ms"][i]], [[p["sm"][i], p["l2"][i], p["dram"][i]]], [-1])
                 for i, k in enumerate(keys)}
        zoo = PhaseZoo.from_programs("synthetic", spec.name, progs, hidden={m: hidden[m] for m, _ in keys})
        res = simulate_phased(model, batch, np.zeros(len(model)), device=device, spec=spec, zoo=zoo, queue=False,
                              seed=seed)
    return res


def fit_pair_models(profiles: ProfileTable, spec: GpuSpec, *, seed: int = 0,
                    batches: tuple[int, ...] = E3_PAIR_BATCHES,
                    hidden: Mapping[str, HiddenFactors] | None = None) -> tuple[GpuletsModel, RLS]:
    """gpulets coefficients and a warm RLS (rich, time-weighted, rate) fitted on simulated pairs.

    Every unordered pair of (model, batch size) over the zoo's models and ``batches`` runs on its
    own GPU, both started at 0, under the ground truth with noise; gpulets is fitted on the
    static gpulets map against slowdown, the RLS on the time-weighted rich map against rate.

    Examples
    --------
    >>> from interfpred.sim.contention import get_gpu_spec
    >>> from interfpred.sim.zoo import zoo_profiles
    >>> g, r = fit_pair_models(zoo_profiles("l4"), get_gpu_spec("l4"), batches=(1, 8))
    >>> g.coefficients_.shape, r.n_seen_ > 0
    ((5,), True)
    """
    res = simulate_pairs(profiles, spec, seed=seed, batches=batches, hidden=hidden)
    static, tw = transform_many(res.trace, profiles, [Static(feature_map="gpulets", combine="max", target="slowdown"),
                                                         TimeWeighted(feature_map="rich", target="rate")])
    g = GpuletsModel(clip=True)
    g.fit(static.X, static.y)
    r = RLS()
    r.fit(tw.X, tw.y)
    return g, r
