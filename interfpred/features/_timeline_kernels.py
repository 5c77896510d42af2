"""Numba kernels of the timeline and of the built-in feature maps (package-internal).

Everything here works on plain arrays and scalars and never validates; the public wrappers
in :mod:`interfpred.features.timeline`, :mod:`interfpred.features.extractors` and :mod:`interfpred.features.chunked`
check their inputs first.

Order independence. A built-in feature map depends only on the *multiset* of demands in a
running set, never on the order in which the members are stored: per-resource sums are exact
fixed-point integer sums (units of 2**-50, so a sum differs from the real one by under 5e-16
per member), "the others" are ``total - me`` in those units, and the worst other comes from the
largest two values. The batch form (sweep over a trace) and the streaming form
(events one by one) store members in different orders, and this makes them agree to the bit.
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit

# Map, combine and aggregation codes (named in interfpred.features.maps).
MAP_DEFAULT = 0
MAP_GPULETS = 1
MAP_RICH = 2
COMBINE_SUM = 0
COMBINE_MAX = 1
AGG_STATIC = 0
AGG_EWMA = 1
AGG_TIME_WEIGHTED = 2


@njit(cache=True)
def n_features(map_id: int) -> int:
    if map_id == MAP_DEFAULT:
        return 6
    if map_id == MAP_GPULETS:
        return 4
    return 16


# --------------------------------------------------------------------------- sweep
@njit(cache=True)
def _grow_f(a: np.ndarray, need: int) -> np.ndarray:
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def sweep(gcode, start, end, so, eo, n_total, max_running, max_members):
    """Sweep-line segmentation of every GPU at once.

    ``so`` and ``eo`` index the executions of positive length, ordered by (gpu, start) and
    (gpu, end). At one (gpu, time) all ends are applied before all starts, so intervals are
    half-open ``[start, end)``. Returns ``(seg_gpu, seg_start, seg_end, seg_ptr, members,
    stop)`` for the non-empty segments, in (gpu, time) order. ``stop`` is -1, or the index
    (into ``start``) of the execution whose launch made more than ``max_running`` run at once
    or the memberships exceed ``max_members``: the sweep stops there, before allocating more.
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
        # Next event in (gpu, time) order; an end wins a tie with a start.
        take_start = False
        if b >= m:
            take_start = True
        elif a < m:
            ia = so[a]
            ib = eo[b]
            if gcode[ia] < gcode[ib] or (gcode[ia] == gcode[ib] and start[ia] < end[ib]):
                take_start = True
        if take_start:
            g = gcode[so[a]]
            t = start[so[a]]
        else:
            g = gcode[eo[b]]
            t = end[eo[b]]
        while b < m and gcode[eo[b]] == g and end[eo[b]] == t:
            i = eo[b]
            p = pos[i]
            last = running[nrun - 1]
            running[p] = last
            pos[last] = p
            pos[i] = -1
            nrun -= 1
            b += 1
        while a < m and gcode[so[a]] == g and start[so[a]] == t:
            i = so[a]
            running[nrun] = i
            pos[i] = nrun
            nrun += 1
            a += 1
        if nrun > max_running or nm + nrun > max_members:
            return (seg_gpu[:ns], seg_start[:ns], seg_end[:ns], seg_ptr[: ns + 1], members[:nm],
                    running[nrun - 1])
        if nrun > 0:
            # The next end is on this GPU (a running execution has not ended yet).
            t_next = end[eo[b]]
            if a < m and gcode[so[a]] == g and start[so[a]] < t_next:
                t_next = start[so[a]]
            seg_gpu[ns] = g
            seg_start[ns] = t
            seg_end[ns] = t_next
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


# --------------------------------------------------------------------------- maps
#: Fixed-point scale of the order-independent sums: demands (fractions in [0, 1]) are summed
#: as int64 in units of 2**-50 (about 9e-16), exactly and in any order. The public wrappers keep
#: a running set at or below constants.MAX_RUNNING_SET (4096) members, so a sum cannot overflow.
_SCALE = 2.0 ** 50
_INV_SCALE = 2.0 ** -50


@njit(cache=True, inline="always")
def _q(v):
    return np.int64(np.floor(v * _SCALE + 0.5))


@njit(cache=True)
def quantize(dem):
    """Fixed-point copy of demands (n, 3) in units of 2**-50 (int64)."""
    out = np.empty(dem.shape, dtype=np.int64)
    for i in range(dem.shape[0]):
        for r in range(3):
            out[i, r] = _q(dem[i, r])
    return out


@njit(cache=True)
def _stats(dem, dq, idx, lo, k, top, tot, combine_id):
    """Per resource r of the k members ``dem[idx[lo:lo + k]]``: the fixed-point sum into
    ``tot[r]`` and, for the ``max`` combine only (the sum combine never reads them), the largest
    and second-largest values into ``top[r, 0]`` and ``top[r, 1]`` (0 when absent). Both are
    independent of the members' order."""
    s0 = np.int64(0)
    s1 = np.int64(0)
    s2 = np.int64(0)
    for a in range(k):
        i = idx[lo + a]
        s0 += dq[i, 0]
        s1 += dq[i, 1]
        s2 += dq[i, 2]
    tot[0] = s0
    tot[1] = s1
    tot[2] = s2
    if combine_id == COMBINE_SUM:
        return
    for r in range(3):
        t1 = 0.0
        t2 = 0.0
        for a in range(k):
            v = dem[idx[lo + a], r]
            if v > t1:
                t2 = t1
                t1 = v
            elif v > t2:
                t2 = v
        top[r, 0] = t1
        top[r, 1] = t2


@njit(cache=True)
def _set_stats(dem, k, combine_id):
    """Fixed-point copy, per-resource sums and top two values of the running set ``dem[:k]``:
    ``(dq, top, tot)`` for :func:`_phi`."""
    top = np.zeros((3, 2), dtype=np.float64)
    tot = np.zeros(3, dtype=np.int64)
    dq = quantize(dem[:k])
    _stats(dem, dq, np.arange(k), 0, k, top, tot, combine_id)
    return dq, top, tot


@njit(cache=True)
def _phi(dem, dq, i, top, tot, k, map_id, combine_id, out):
    """The built-in map of member ``dem[i]`` of a running set of k given by its stats, into
    ``out`` (indices, not row views, keep the hot loop free of reference counting)."""
    me0 = dem[i, 0]
    me1 = dem[i, 1]
    me2 = dem[i, 2]
    o0 = 0.0
    o1 = 0.0
    o2 = 0.0
    if k > 1:
        if combine_id == COMBINE_SUM:
            o0 = (tot[0] - dq[i, 0]) * _INV_SCALE
            o1 = (tot[1] - dq[i, 1]) * _INV_SCALE
            o2 = (tot[2] - dq[i, 2]) * _INV_SCALE
        else:
            # The worst other: the second largest if I am (a copy of) the largest.
            o0 = top[0, 1] if me0 == top[0, 0] else top[0, 0]
            o1 = top[1, 1] if me1 == top[1, 0] else top[1, 0]
            o2 = top[2, 1] if me2 == top[2, 0] else top[2, 0]
    if map_id == MAP_GPULETS:
        out[0] = me1
        out[1] = me2
        out[2] = o1
        out[3] = o2
        return
    out[0] = me0
    out[1] = me1
    out[2] = me2
    out[3] = o0
    out[4] = o1
    out[5] = o2
    if map_id == MAP_RICH:
        out[6] = me0 * o0
        out[7] = me1 * o1
        out[8] = me2 * o2
        for r in range(3):
            total = tot[r] * _INV_SCALE
            out[9 + r] = total
            out[12 + r] = max(0.0, total - 1.0)
        out[15] = k - 1.0


@njit(cache=True)
def map_running_set(dem, map_id, combine_id):
    """Every member of a running set ``dem`` (k, 3) against the others: (k, d)."""
    k = dem.shape[0]
    out = np.empty((k, n_features(map_id)), dtype=np.float64)
    dq, top, tot = _set_stats(dem, k, combine_id)
    for a in range(k):
        _phi(dem, dq, a, top, tot, k, map_id, combine_id, out[a])
    return out


@njit(cache=True)
def map_instant(me, others, map_id, combine_id):
    """The map of ``me`` (3,) beside ``others`` (k, 3): (d,)."""
    k = others.shape[0] + 1
    dem = np.empty((k, 3), dtype=np.float64)
    dem[0] = me
    for a in range(k - 1):
        dem[a + 1] = others[a]
    dq, top, tot = _set_stats(dem, k, combine_id)
    out = np.empty(n_features(map_id), dtype=np.float64)
    _phi(dem, dq, 0, top, tot, k, map_id, combine_id, out)
    return out


# --------------------------------------------------------------------------- aggregation
@njit(cache=True)
def fold(acc, phi, first, dur, agg_id, alpha):
    """Fold one segment's map value ``phi`` into an execution's accumulator ``acc`` in place.

    ``first`` says this is the execution's first segment (its launch snapshot); ``dur`` is the
    segment's duration (TimeWeighted accumulates ``dur * phi``, the weight total is kept by the
    caller).
    """
    d = phi.shape[0]
    if first and agg_id != AGG_TIME_WEIGHTED:      # the launch value (Static, EWMA)
        for f in range(d):
            acc[f] = phi[f]
    elif first:
        for f in range(d):
            acc[f] = dur * phi[f]
    elif agg_id == AGG_EWMA:
        beta = 1.0 - alpha
        for f in range(d):
            acc[f] = alpha * phi[f] + beta * acc[f]
    elif agg_id == AGG_TIME_WEIGHTED:
        for f in range(d):
            acc[f] += dur * phi[f]


@njit(cache=True)
def finalize(acc, wsum, seen, me, map_id, combine_id, agg_id):
    """Finish one execution's accumulator: divide TimeWeighted sums by the total duration; an
    execution with no segment (zero length) gets the map of itself alone."""
    if not seen:
        dem = np.empty((1, 3), dtype=np.float64)
        dem[0] = me
        dq, top, tot = _set_stats(dem, 1, combine_id)
        _phi(dem, dq, 0, top, tot, 1, map_id, combine_id, acc)
    elif agg_id == AGG_TIME_WEIGHTED:
        for f in range(acc.shape[0]):
            acc[f] = acc[f] / wsum


@njit(cache=True)
def _fold_segments(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                   skip_seen):
    """Fold every (segment, member) map value into ``out`` (a, n, d), ``wsum`` and ``seen`` (n,) in
    place, segment by segment, for the aggregations ``agg_ids``. ``skip_seen`` (Static only) skips
    the members that already have their launch value. The loop of :func:`features` and
    :func:`features_into`, so both run the same arithmetic in the same order."""
    d = out.shape[2]
    na = agg_ids.shape[0]
    top = np.zeros((3, 2), dtype=np.float64)
    tot = np.zeros(3, dtype=np.int64)
    phi = np.empty(d, dtype=np.float64)
    dq = quantize(dem)
    for s in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[s]
        hi = seg_ptr[s + 1]
        k = hi - lo
        if skip_seen:
            need = False
            for a in range(lo, hi):
                if not seen[members[a]]:
                    need = True
                    break
            if not need:
                continue
        _stats(dem, dq, members, lo, k, top, tot, combine_id)
        dur = seg_end[s] - seg_start[s]
        for a in range(lo, hi):
            i = members[a]
            if skip_seen and seen[i]:
                continue
            _phi(dem, dq, i, top, tot, k, map_id, combine_id, phi)
            first = not seen[i]
            for j in range(na):
                # fold() written out on indices (same arithmetic), without a row view
                agg = agg_ids[j]
                if first and agg != AGG_TIME_WEIGHTED:
                    for f in range(d):
                        out[j, i, f] = phi[f]
                elif first:
                    for f in range(d):
                        out[j, i, f] = dur * phi[f]
                elif agg == AGG_EWMA:
                    alpha = alphas[j]
                    beta = 1.0 - alpha
                    for f in range(d):
                        out[j, i, f] = alpha * phi[f] + beta * out[j, i, f]
                elif agg == AGG_TIME_WEIGHTED:
                    for f in range(d):
                        out[j, i, f] += dur * phi[f]
            if first:
                wsum[i] = dur
            else:
                wsum[i] += dur
            seen[i] = True


@njit(cache=True)
def features(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas):
    """Aggregated built-in features of every execution for several aggregations of one map at
    once: (a, n, d), the map evaluated once per (segment, member). Segments must be in time
    order per GPU, which the sweep guarantees."""
    n = dem.shape[0]
    out = np.zeros((agg_ids.shape[0], n, n_features(map_id)), dtype=np.float64)
    wsum = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.bool_)
    only_static = True
    for j in range(agg_ids.shape[0]):
        if agg_ids[j] != AGG_STATIC:
            only_static = False
    _fold_segments(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                   only_static)
    for j in range(agg_ids.shape[0]):
        for i in range(n):
            finalize(out[j, i], wsum[i], seen[i], dem[i], map_id, combine_id, agg_ids[j])
    return out


@njit(cache=True)
def stream_close(acc, wsum, seen, cur, settled, k, dur):
    """Close a streaming segment of duration ``dur`` for the members (rows 0..k-1) that were in
    it (``settled``): fold ``dur * cur`` into their TimeWeighted sums, as :func:`features` does."""
    for a in range(k):
        if settled[a]:
            fold(acc[a], cur[a], not seen[a], dur, AGG_TIME_WEIGHTED, 0.0)
            if seen[a]:
                wsum[a] += dur
            else:
                wsum[a] = dur
            seen[a] = True


@njit(cache=True)
def stream_settle(acc, seen, cur, dem, k, map_id, combine_id, agg_id, alpha):
    """A new segment starts with the running set rows 0..k-1: its map goes into ``cur`` and, for
    Static and EWMA, is folded (launch snapshot for new members, smoothing for the others)."""
    if k == 0:
        return
    dq, top, tot = _set_stats(dem, k, combine_id)
    for a in range(k):
        _phi(dem, dq, a, top, tot, k, map_id, combine_id, cur[a])
        if agg_id != AGG_TIME_WEIGHTED:
            fold(acc[a], cur[a], not seen[a], 0.0, agg_id, alpha)
            seen[a] = True


# --------------------------------------------------------------------------- windows (bounded memory)
@njit(cache=True)
def features_into(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen):
    """:func:`features` folding into caller-owned state ``out`` (a, n, d), ``wsum`` and ``seen``
    (n,) without finalising: one time window of a longer timeline, whose executions carry their
    accumulators from the window before. The same arithmetic in the same order as
    :func:`features`, so windows chained this way equal the one-shot result to the bit."""
    _fold_segments(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                   False)


@njit(cache=True)
def finalize_rows(out, wsum, seen, dem, rows, map_id, combine_id, agg_ids):
    """:func:`finalize` of rows ``rows`` of ``out`` (a, n, d) for every aggregation."""
    for j in range(agg_ids.shape[0]):
        for r in range(rows.shape[0]):
            i = rows[r]
            finalize(out[j, i], wsum[i], seen[i], dem[i], map_id, combine_id, agg_ids[j])
