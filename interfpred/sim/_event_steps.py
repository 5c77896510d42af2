"""The compiled event loop of the simulator, for both ground truths, and the steps it is made of.

Every execution runs a program of operators (the fluid truth: one operator, its whole pass).
:func:`run_programs` simulates GPU after GPU; between two events (an arrival, a launch, an
operator boundary, a completion) the running operators are fixed, each execution's remaining
work on its operator falls linearly at its truth rate
(:func:`interfpred.sim._truth_rates.truth_rates`), and the next event is found in closed
form.  A GPU's running executions sit in slots ``0..nrun-1`` of preallocated arrays: ``run``
(execution index), ``rem`` (remaining solo work of the current operator), ``rate`` and ``tau``
(time to finish at that rate), ``op`` (the current operator).  Nothing here validates; the
public functions of :mod:`interfpred.sim.engine` do.

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
from interfpred.constants import SIM_FINISH_RTOL
from interfpred.sim._truth_rates import truth_rates

__all__ = ["advance", "event_scratch", "retire", "run_device", "run_programs", "time_to_next_finish"]


@njit(cache=True, inline="always")
def event_scratch(size):
    """Slot arrays for ``size`` running executions: ``run, op, rem, rate, tau, sm, l2, dram, foot, hide, dem,
    frozen``."""
    return (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size), np.empty(size),
            np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size),
            np.empty((size, 3)), np.empty(size, dtype=np.bool_))


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


@njit(cache=True)
def run_device(order, time, prog, scale, foot, hide, offsets, op_dur, op_sm, op_l2, op_dram, limit,
               cap0, cap1, cap2, theta, eps, l2mb, kappa, start_out, end_out):
    """Simulate one GPU: ``order`` indexes its executions sorted by time (ties: input order, the FIFO
    order); ``limit`` executions run at most.  Returns the number of events processed."""
    n = order.shape[0]
    size = limit if limit < n else n
    run, op, rem, rate, tau, lsm, ll2, ldr, lfoot, lhide, dem, frozen = event_scratch(size)
    nrun = 0
    p = 0       # next arrival (position in order)
    head = 0    # next to launch; the FIFO queue is order[head:p]
    t = 0.0
    events = 0
    while p < n or nrun > 0:
        events += 1
        tmin = time_to_next_finish(rem, rate, tau, nrun)
        ta = time[order[p]] if p < n else np.inf
        if nrun > 0 and t + tmin <= ta:
            # operator boundaries: advance to the earliest, move every slot done then to its next
            # operator, retire the executions whose program is done
            advance(rem, rate, nrun, tmin)
            t = t + tmin
            j = 0
            while j < nrun:
                e = run[j]
                if tau[j] <= tmin or rem[j] <= SIM_FINISH_RTOL * op_dur[op[j]] * scale[e]:
                    op[j] += 1
                    if op[j] >= offsets[prog[e] + 1]:
                        end_out[e] = t
                        nrun = retire(j, nrun, run, rem, rate, tau)
                        op[j] = op[nrun]
                        continue
                    rem[j] = op_dur[op[j]] * scale[e]
                j += 1
        else:
            if nrun > 0:
                advance(rem, rate, nrun, ta - t)
            t = ta
            p += 1
        # launch from the FIFO queue while there is room
        while nrun < limit and head < p:
            e = order[head]
            head += 1
            start_out[e] = t
            run[nrun] = e
            op[nrun] = offsets[prog[e]]
            rem[nrun] = op_dur[op[nrun]] * scale[e]
            nrun += 1
        if nrun > 0:
            for j in range(nrun):
                o = op[j]
                e = run[j]
                lsm[j] = op_sm[o]
                ll2[j] = op_l2[o]
                ldr[j] = op_dram[o]
                lfoot[j] = foot[e]
                lhide[j] = hide[e]
            truth_rates(lsm, ll2, ldr, lfoot, lhide, nrun, cap0, cap1, cap2, theta, eps, l2mb, kappa, dem, rate,
                        frozen)
    return events


def run_programs(dev_offsets, order, time, prog, scale, foot, hide, offsets, op_dur, op_sm, op_l2, op_dram, limit,
                 cap0, cap1, cap2, theta, eps, l2mb, kappa, start_out, end_out):
    """Simulate every GPU (``order[dev_offsets[g]:dev_offsets[g + 1]]`` are GPU g's executions) into
    ``start_out`` and ``end_out``; returns the number of events processed. A Python loop over the
    compiled :func:`run_device`, one call per GPU: as a kernel it compiled run_device's code a second
    time (numba optimises a callee again inside each compiled caller)."""
    events = 0
    for g in range(dev_offsets.shape[0] - 1):
        events += run_device(order[dev_offsets[g]:dev_offsets[g + 1]], time, prog, scale, foot, hide, offsets,
                             op_dur, op_sm, op_l2, op_dram, limit, cap0, cap1, cap2, theta, eps, l2mb, kappa,
                             start_out, end_out)
    return events
