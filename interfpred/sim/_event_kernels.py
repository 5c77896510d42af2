"""Compiled steps both event-driven engines share (fluid and phase-structured): the running slots.

A GPU's running executions sit in slots ``0..nrun-1`` of preallocated arrays: ``run`` (execution
index), ``rem`` (remaining solo work of the current piece), ``rate`` and ``tau`` (time to finish
at that rate). These helpers never validate; the engines' public functions do.

Examples
--------
>>> import numpy as np
>>> run, rem, rate, tau = np.array([4, 7]), np.array([2.0, 3.0]), np.array([0.5, 1.0]), np.empty(2)
>>> float(time_to_next_finish(rem, rate, tau, 2))
3.0
>>> retire(0, 2, run, rem, rate, tau), run[:1].tolist()
(1, [7])
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit

__all__ = ["advance", "event_scratch", "retire", "time_to_next_finish"]


@njit(cache=True, inline="always")
def event_scratch(size):
    """Slot arrays for ``size`` running executions: ``run, rem, rate, tau, sm, l2, dram, dem, frozen``."""
    return (np.empty(size, dtype=np.int64), np.empty(size), np.empty(size), np.empty(size), np.empty(size),
            np.empty(size), np.empty(size), np.empty((size, 3)), np.empty(size, dtype=np.bool_))


@njit(cache=True, inline="always")
def time_to_next_finish(rem, rate, tau, nrun):
    """Fill ``tau[:nrun]`` with each slot's time to finish; return the smallest (inf when none runs)."""
    tmin = np.inf
    for j in range(nrun):
        tau[j] = rem[j] / rate[j]
        if tau[j] < tmin:
            tmin = tau[j]
    return tmin


@njit(cache=True, inline="always")
def advance(rem, rate, nrun, dt):
    """Progress every running slot by ``dt`` ms at its rate."""
    for j in range(nrun):
        rem[j] -= rate[j] * dt


@njit(cache=True, inline="always")
def retire(j, nrun, run, rem, rate, tau):
    """Free slot ``j`` by moving the last running slot into it; returns the new count of running slots."""
    nrun -= 1
    run[j] = run[nrun]
    rem[j] = rem[nrun]
    rate[j] = rate[nrun]
    tau[j] = tau[nrun]
    return nrun
