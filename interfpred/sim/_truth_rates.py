"""The compiled ground-truth rate model: the one place the simulator's truth rates are computed.

:func:`truth_rates` is the rule every simulated execution progresses by, called by the event
engine (:mod:`interfpred.sim._event_steps`) at every event and, through the validating
:func:`interfpred.sim.contention.rates`, by anything else that needs the truth (E3's serving
simulator, an oracle). These kernels never validate.

Examples
--------
>>> import numpy as np
>>> sm, l2, dram = np.array([0.8, 0.8]), np.array([0.4, 0.4]), np.array([0.3, 0.3])
>>> rate = np.empty(2)
>>> truth_rates(sm, l2, dram, np.zeros(2), np.ones(2), 2, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0,
...             np.empty((2, 3)), rate, np.empty(2, dtype=np.bool_))
>>> rate.tolist()
[0.625, 0.625]
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import SIM_SATURATION_RTOL

__all__ = ["fill", "pollute", "truth_rates"]


@njit(cache=True)
def pollute(sm, l2, dram, k, theta, out):
    """Fill ``out[:k]`` (k, 3) with the effective demands after L2 pollution of strength ``theta``."""
    l2sum = 0.0
    for j in range(k):
        l2sum += l2[j]
    for j in range(k):
        out[j, 0] = sm[j]
        out[j, 1] = l2[j]
        d = dram[j] * (1.0 + theta * l2[j] * (l2sum - l2[j]))
        out[j, 2] = d if d < 1.0 else 1.0


@njit(cache=True)
def fill(dem, k, cap0, cap1, cap2, eps, rate, frozen):
    """Max-min progressive filling of ``dem[:k]`` and the concurrency overhead, into ``rate[:k]``."""
    for j in range(k):
        rate[j] = 0.0
        frozen[j] = False
    nfrozen = 0
    level = 0.0
    caps = (cap0, cap1, cap2)
    cand = np.empty(3)
    while nfrozen < k:
        best = 1.0
        for res in range(3):
            used = 0.0
            slope = 0.0
            for j in range(k):
                if frozen[j]:
                    used += rate[j] * dem[j, res]
                else:
                    slope += dem[j, res]
            if slope > 0.0:
                cand[res] = (caps[res] - used) / slope
            else:
                cand[res] = np.inf
            if cand[res] < best:
                best = cand[res]
        if best < level:  # rounding only: capacity already met
            best = level
        level = best
        for j in range(k):
            if not frozen[j]:
                rate[j] = level
        if level >= 1.0:
            break
        tol = level * (1.0 + SIM_SATURATION_RTOL)
        for res in range(3):
            if cand[res] <= tol:
                for j in range(k):
                    if not frozen[j] and dem[j, res] > 0.0:
                        frozen[j] = True
                        nfrozen += 1
    scale = 1.0 / (1.0 + eps * (k - 1))
    for j in range(k):
        rate[j] *= scale


@njit(cache=True)
def truth_rates(sm, l2, dram, foot, hide, k, cap0, cap1, cap2, theta, eps, l2mb, kappa, dem, rate, frozen):
    """Ground-truth progress rates of the ``k`` executions running together, into ``rate[:k]``.

    ``sm, l2, dram`` are the demands of what each runs now (its operator, or its whole pass),
    ``foot`` its hidden L2 footprint (MB) and ``hide`` its latency-hiding factor; the scalars
    are a GpuSpec's capacities, ``theta``, ``epsilon``, ``l2_mb`` and ``kappa``; ``dem`` (>= k, 3)
    and ``frozen`` (bool, >= k) are scratch.

    1. L2 pollution, amplified once the combined footprint overflows the L2:
       strength ``theta * (1 + kappa * min(1, max(0, sum(foot) / l2mb - 1)))``;
    2. max-min fair progressive filling over the capacities;
    3. the concurrency overhead ``1 / (1 + eps * (k - 1))``;
    4. latency hiding: each fair share ``r`` becomes ``r ** hide``.

    Footprints 0 and hiding factors 1 give the fluid truth exactly (the pollution strength is
    ``theta * 1.0`` and no power is taken).
    """
    ftot = 0.0
    for j in range(k):
        ftot += foot[j]
    over = ftot / l2mb - 1.0
    if over > 1.0:
        over = 1.0
    pol = 1.0 + kappa * over if over > 0.0 else 1.0
    pollute(sm, l2, dram, k, theta * pol, dem)
    fill(dem, k, cap0, cap1, cap2, eps, rate, frozen)
    for j in range(k):
        h = hide[j]
        if h != 1.0:
            rate[j] = rate[j] ** h
