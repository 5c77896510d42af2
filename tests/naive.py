"""Plain-Python / plain-numpy reference implementations that kernels are tested against.

Shared by every module's tests: add your own functions, named clearly, and leave the others'.
"""

from __future__ import annotations

import math

# ---------------------------------------------------------------------------- simulator (interfpred.sim)


def naive_sim_rates(demands, capacities, theta, epsilon):
    """Ground-truth rates by the DESIGN.md definition, in plain Python.

    Pollution uses the explicit sum over the other executions; each progressive-filling round
    finds the common level by bisection on feasibility (not by the kernel's closed form).
    """
    k = len(demands)
    if k == 0:
        return []
    eff = []
    for j in range(k):
        sm, l2, dram = (float(x) for x in demands[j])
        others = sum(float(demands[i][1]) for i in range(k) if i != j)
        eff.append((sm, l2, min(1.0, dram * (1.0 + theta * l2 * others))))
    rate = [0.0] * k
    frozen = [False] * k
    level = 0.0

    def fits(lv):
        for res in range(3):
            load = sum((rate[j] if frozen[j] else lv) * eff[j][res] for j in range(k))
            if load > capacities[res] * (1.0 + 1e-13):
                return False
        return True

    while not all(frozen):
        lo, hi = level, 1.0
        if fits(hi):
            lo = hi
        else:
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if fits(mid):
                    lo = mid
                else:
                    hi = mid
                if hi - lo <= 1e-16 * max(1.0, hi):
                    break
        level = lo
        for j in range(k):
            if not frozen[j]:
                rate[j] = level
        if level >= 1.0:
            break
        froze_any = False
        for res in range(3):
            load = sum(rate[j] * eff[j][res] for j in range(k))
            if load >= capacities[res] * (1.0 - 1e-9):
                for j in range(k):
                    if not frozen[j] and eff[j][res] > 0.0:
                        frozen[j] = True
                        froze_any = True
        if not froze_any:  # bisection stopped a hair short: the tightest resource is saturated
            res = min(range(3), key=lambda r: capacities[r] - sum(rate[j] * eff[j][r] for j in range(k)))
            for j in range(k):
                if not frozen[j] and eff[j][res] > 0.0:
                    frozen[j] = True
    scale = 1.0 / (1.0 + epsilon * (k - 1))
    return [r * scale for r in rate]


def naive_sim_integrate(work, demands, times, devices, capacities, theta, epsilon, limit, *, dt,
                        clip_to_events=True):
    """Brute-force small-time-step integration of the fluid model; returns (start, end) lists.

    Time advances in steps of at most ``dt``; in each step the running set of each GPU is fixed
    and every execution's remaining work falls by rate x step.

    Why steps are clipped to events: a fixed-step integrator notices an arrival or a completion
    only at the end of the step it falls in, an O(dt) error per event that then propagates; 1e-6
    relative agreement on ~10 ms executions would need dt ~ 1e-8 ms and ~10^9 steps.  With
    ``clip_to_events=True`` a step also stops at the next arrival and at the earliest completion
    at the current rates, so between grid points the integration is exact and the result
    differs from the exact solution only by rounding accumulated over the many small steps;
    the grid still exercises the bookkeeping (queue, ties, launch order) independently of the
    event engine.  ``clip_to_events=False`` is the plain fixed-step scheme (first-order in dt),
    used to show convergence.
    """
    n = len(work)
    start = [math.nan] * n
    end = [math.nan] * n
    for dev in sorted(set(devices)):
        idx = sorted((i for i in range(n) if devices[i] == dev), key=lambda i: (times[i], i))
        queue = []
        running = {}  # execution -> remaining work
        p = 0
        t = 0.0
        while p < len(idx) or queue or running:
            if not running and not queue:
                t = max(t, times[idx[p]])       # idle: jump to the next arrival
            while p < len(idx) and times[idx[p]] <= t:
                queue.append(idx[p])
                p += 1
            while queue and len(running) < limit:
                e = queue.pop(0)
                start[e] = t
                running[e] = float(work[e])
            members = sorted(running)
            rates = naive_sim_rates([demands[e] for e in members], capacities, theta, epsilon)
            step = dt
            if clip_to_events:
                if p < len(idx):
                    step = min(step, times[idx[p]] - t)
                step = min(step, min(running[e] / r for e, r in zip(members, rates)))
            t_next = t + step
            done = []
            for e, r in zip(members, rates):
                running[e] -= r * step
                if running[e] <= 1e-12 * work[e]:
                    done.append(e)
            for e in done:
                end[e] = t_next
                del running[e]
            t = t_next
    return start, end
