"""Compiled sweep-line segmentation of a trace (package-internal).

:func:`sweep` cuts every GPU's timeline into segments (maximal intervals with one running set)
and :func:`exec_csr` lists each execution's segments. The steps of a sweep (:func:`take_events`,
built on :func:`next_event`, :func:`group_end`, :func:`run_add` and :func:`run_remove`, and
:func:`segment_end`) are shared with the sweeps that fold features and entities as each segment
opens, without storing the timeline
(:mod:`interfpred.features.compiled_maps`, :mod:`interfpred.features.entity_features`), so every
sweep takes its events in the same order. All of them work on plain arrays and never validate;
:mod:`interfpred.features.timeline` and :mod:`interfpred.features.chunked` check their inputs first.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit


@njit(cache=True)
def _grow_f(a: np.ndarray, need: int) -> np.ndarray:
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, inline="always")
def next_event(gcode, start, end, so, eo, a, b):
    """``(gpu, time)`` of the next event of a sweep that has taken ``so[:a]`` and ``eo[:b]``: in (gpu,
    time) order, an end winning a tie with a start (intervals are half-open ``[start, end)``)."""
    m = so.shape[0]
    take_start = False
    if b >= m:
        take_start = True
    elif a < m:
        ia = so[a]
        ib = eo[b]
        if gcode[ia] < gcode[ib] or (gcode[ia] == gcode[ib] and start[ia] < end[ib]):
            take_start = True
    if take_start:
        return gcode[so[a]], start[so[a]]
    return gcode[eo[b]], end[eo[b]]


@njit(cache=True, inline="always")
def group_end(gcode, times, order, c, g, t):
    """The first position from ``c`` of ``order`` whose event is not at ``(g, t)``: ``order[c:]`` up to
    it are the starts (or ends) at that instant."""
    while c < order.shape[0] and gcode[order[c]] == g and times[order[c]] == t:
        c += 1
    return c


@njit(cache=True, inline="always")
def segment_end(gcode, start, end, so, eo, a, b, g):
    """The end of the segment that opens once the events before ``so[a]`` and ``eo[b]`` are applied on
    gpu ``g`` with someone running: the next end (a running execution has not ended yet) or an earlier
    launch on ``g``."""
    t_next = end[eo[b]]
    if a < so.shape[0] and gcode[so[a]] == g and start[so[a]] < t_next:
        t_next = start[so[a]]
    return t_next


@njit(cache=True, inline="always")
def run_add(running, pos, nrun, i):
    """Append execution ``i`` to the running set ``running[:nrun]``; returns the new size."""
    running[nrun] = i
    pos[i] = nrun
    return nrun + 1


@njit(cache=True, inline="always")
def run_remove(running, pos, nrun, i):
    """Remove execution ``i`` from the running set (the last member takes its place); returns the new size."""
    p = pos[i]
    last = running[nrun - 1]
    running[p] = last
    pos[last] = p
    pos[i] = -1
    return nrun - 1


@njit(cache=True, inline="always")
def take_events(gcode, start, end, so, eo, a, b, running, pos, nrun, max_running):
    """Apply the next instant of a sweep that has taken ``so[:a]`` and ``eo[:b]``: at its ``(gpu,
    time)`` every end leaves the running set ``running[:nrun]``, then every start joins it. Returns
    ``(gpu, time, a, b, nrun, stop)``: the positions and size after the instant, and ``stop`` -1, or
    the first execution whose launch made more than ``max_running`` run at once (the sweep stops
    there). ``running`` must hold every execution the sweep may see at once (one past
    ``max_running`` is not enough: several may start at one instant)."""
    g, t = next_event(gcode, start, end, so, eo, a, b)
    while b < eo.shape[0] and gcode[eo[b]] == g and end[eo[b]] == t:
        nrun = run_remove(running, pos, nrun, eo[b])
        b += 1
    while a < so.shape[0] and gcode[so[a]] == g and start[so[a]] == t:
        nrun = run_add(running, pos, nrun, so[a])
        a += 1
    stop = -1
    if nrun > max_running:
        stop = so[a - nrun + max_running]
    return g, t, a, b, nrun, stop


@njit(cache=True)
def sweep(gcode, start, end, so, eo, n_total, max_running, max_members):
    """Sweep-line segmentation of every GPU at once.

    ``so`` and ``eo`` index the executions of positive length, ordered by (gpu, start) and
    (gpu, end). At one (gpu, time) all ends are applied before all starts, so intervals are
    half-open ``[start, end)``. Returns ``(seg_gpu, seg_start, seg_end, seg_ptr, members,
    stop)`` for the non-empty segments, in (gpu, time) order. ``stop`` is -1, or the index
    (into ``start``) of the first execution whose launch made more than ``max_running`` run at
    once, or of the last launch before the memberships exceed ``max_members``: the sweep stops
    there, before allocating more.
    """
    m = so.shape[0]
    cap_s = 2 * m + 1
    seg_gpu = np.empty(cap_s, dtype=np.int64)
    seg_start = np.empty(cap_s, dtype=np.float64)
    seg_end = np.empty(cap_s, dtype=np.float64)
    seg_ptr = np.empty(cap_s + 1, dtype=np.int64)
    members = np.empty(max(8 * m, 16), dtype=np.int64)
    running = np.empty(max(m, 1), dtype=np.int64)
    pos = np.full(n_total, -1, dtype=np.int64)
    nrun = 0
    ns = 0
    nm = 0
    seg_ptr[0] = 0
    a = 0
    b = 0
    while a < m or b < m:
        g, t, a, b, nrun, stop = take_events(gcode, start, end, so, eo, a, b, running, pos, nrun, max_running)
        if stop < 0 and nm + nrun > max_members:
            stop = running[nrun - 1]
        if stop >= 0:
            return seg_gpu[:ns], seg_start[:ns], seg_end[:ns], seg_ptr[: ns + 1], members[:nm], stop
        if nrun > 0:
            seg_gpu[ns] = g
            seg_start[ns] = t
            seg_end[ns] = segment_end(gcode, start, end, so, eo, a, b, g)
            if nm + nrun > members.shape[0]:
                members = _grow_f(members, nm + nrun)
            for k in range(nrun):
                members[nm + k] = running[k]
            nm += nrun
            ns += 1
            seg_ptr[ns] = nm
    # Views, not copies: copying ~10^7 members costs more (fresh pages) than the slack it frees.
    return seg_gpu[:ns], seg_start[:ns], seg_end[:ns], seg_ptr[: ns + 1], members[:nm], -1


@njit(cache=True)
def exec_csr(seg_ptr, members, n_total):
    """Per execution, its segments in time order: ``(exec_ptr, exec_segments)`` (counting sort)."""
    counts = np.zeros(n_total + 1, dtype=np.int64)
    for j in range(members.shape[0]):
        counts[members[j] + 1] += 1
    for i in range(n_total):
        counts[i + 1] += counts[i]
    ptr = counts.copy()
    fill = counts[:n_total].copy()
    out = np.empty(members.shape[0], dtype=np.int64)
    nseg = seg_ptr.shape[0] - 1
    for s in range(nseg):
        for j in range(seg_ptr[s], seg_ptr[s + 1]):
            i = members[j]
            out[fill[i]] = s
            fill[i] += 1
    return ptr, out
