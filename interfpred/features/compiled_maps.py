"""Compiled built-in feature maps and their temporal aggregation (internal to interfpred).

Each built-in map described once, as data (:data:`MAP_DESCRIPTIONS`: its columns in order, each
a term kind and a resource), the maps of one running set read from it (each member against the
others), the affine form of a linear model over a map (what the serving layer's compiled
projection evaluates), and the folds of per-segment map values into Static, EWMA and
TimeWeighted features, in one pass over a timeline's segments or event by event. Everything
here works on plain arrays and scalars and never validates; the public wrappers in
:mod:`interfpred.features.extractors`, :mod:`interfpred.features.batch` and
:mod:`interfpred.features.chunked` check their inputs first.

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
from interfpred.features._sweep import segment_end, take_events

# Map, combine and aggregation codes (named in interfpred.features.maps).
MAP_DEFAULT = 0
MAP_GPULETS = 1
MAP_RICH = 2
MAP_CORUNNERS = 3
COMBINE_SUM = 0
COMBINE_MAX = 1
AGG_STATIC = 0
AGG_EWMA = 1
AGG_TIME_WEIGHTED = 2

# Resources: the columns of a demand row (sm, l2, dram), as in constants.RESOURCES.
SM = 0
L2 = 1
DRAM = 2
N_RESOURCES = 3

# Term kinds: what one feature column of a built-in map measures, for one resource r.
TERM_OWN = 0          # the member's own demand me_r
TERM_OTHER = 1        # the others' demand other_r: summed, or the worst one (combine "max"); 0 alone
TERM_PRODUCT = 2      # own demand times the others', me_r * other_r
TERM_TOTAL = 3        # the whole running set's demand T_r
TERM_EXCESS = 4       # the total's excess over capacity, max(0, T_r - 1)
TERM_N_OTHERS = 5     # the number of co-runners (of no resource)
N_RESOURCE_TERMS = 5  # the kinds that belong to a resource: TERM_OWN .. TERM_EXCESS
N_TERM_KINDS = 6
#: Columns of a row of :data:`MAP_TERMS`: the term kind and its resource (-1: none).
TERM_KIND = 0
TERM_RESOURCE = 1
#: The feature name of each term kind, ``{r}`` the resource's name (constants.RESOURCES).
TERM_NAMES = {TERM_OWN: "{r}_me", TERM_OTHER: "{r}_other", TERM_PRODUCT: "{r}_me_x_other", TERM_TOTAL: "{r}_total",
              TERM_EXCESS: "{r}_excess", TERM_N_OTHERS: "n_others"}


def _per_resource(kind: int, resources: tuple[int, ...] = (SM, L2, DRAM)) -> tuple[tuple[int, int], ...]:
    """Columns of term ``kind``, one per resource of ``resources`` in that order."""
    return tuple((kind, r) for r in resources)


#: Each built-in map described once: its feature columns in order, each a (term kind, resource)
#: pair. The compiled map, its affine form, the std-bound pattern vectors of the serving layer and
#: the feature names (:data:`TERM_NAMES`, :func:`interfpred.features.maps.feature_names`) are all
#: read from this description.
MAP_DESCRIPTIONS: dict[int, tuple[tuple[int, int], ...]] = {
    MAP_DEFAULT: _per_resource(TERM_OWN) + _per_resource(TERM_OTHER),
    MAP_GPULETS: _per_resource(TERM_OWN, (L2, DRAM)) + _per_resource(TERM_OTHER, (L2, DRAM)),
    MAP_RICH: (_per_resource(TERM_OWN) + _per_resource(TERM_OTHER) + _per_resource(TERM_PRODUCT)
               + _per_resource(TERM_TOTAL) + _per_resource(TERM_EXCESS) + ((TERM_N_OTHERS, -1),)),
    MAP_CORUNNERS: ((TERM_N_OTHERS, -1),),
}


def _term_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:data:`MAP_DESCRIPTIONS` as the arrays the compiled code reads (as constants): the terms of
    every map padded with -1 (maps, widest, 2), each map's width, and the column of each (map,
    kind, resource) term (-1: the map lacks it; TERM_N_OTHERS at resource 0)."""
    n_maps = max(MAP_DESCRIPTIONS) + 1
    widest = max(len(d) for d in MAP_DESCRIPTIONS.values())
    terms = np.full((n_maps, widest, 2), -1, dtype=np.int64)
    width = np.zeros(n_maps, dtype=np.int64)
    column = np.full((n_maps, N_TERM_KINDS, N_RESOURCES), -1, dtype=np.int64)
    for map_id, desc in MAP_DESCRIPTIONS.items():
        width[map_id] = len(desc)
        for f, (kind, r) in enumerate(desc):
            if not (0 <= kind < N_TERM_KINDS and (r == -1 if kind == TERM_N_OTHERS else 0 <= r < N_RESOURCES)):
                raise ValueError(f"map {map_id} column {f}: term ({kind}, {r}) is not a known kind and resource")
            slot = max(r, 0)
            if column[map_id, kind, slot] >= 0:
                raise ValueError(f"map {map_id} column {f}: term ({kind}, {r}) is already column "
                                 f"{column[map_id, kind, slot]}")
            terms[map_id, f] = (kind, r)
            column[map_id, kind, slot] = f
    for a in (terms, width, column):
        a.flags.writeable = False
    return terms, width, column


#: :data:`MAP_DESCRIPTIONS` as constant arrays (see :func:`_term_tables`).
MAP_TERMS, MAP_WIDTH, TERM_COLUMN = _term_tables()


@njit(cache=True)
def n_features(map_id: int) -> int:
    return MAP_WIDTH[map_id]


# --------------------------------------------------------------------------- maps
#: Fixed-point scale of the order-independent sums: demands (fractions in [0, 1]) are summed
#: as int64 in units of 2**-50 (about 9e-16), exactly and in any order. The public wrappers keep
#: a running set at or below constants.MAX_RUNNING_SET (4096) members, so a sum cannot overflow.
_SCALE = 2.0 ** 50
INV_SCALE = 2.0 ** -50


@njit(cache=True, inline="always")
def _q(v):
    return np.int64(np.floor(v * _SCALE + 0.5))


@njit(cache=True)
def quantize(dem):
    """Fixed-point copy of demands (n, 3) in units of 2**-50 (int64)."""
    out = np.empty(dem.shape, dtype=np.int64)
    quantize_into(dem, out)
    return out


@njit(cache=True, inline="always")
def quantize_into(dem, out):
    """:func:`quantize` into ``out`` (n, 3) int64."""
    for i in range(dem.shape[0]):
        for r in range(N_RESOURCES):
            out[i, r] = _q(dem[i, r])


@njit(cache=True, inline="always")
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
        s0 += dq[i, SM]
        s1 += dq[i, L2]
        s2 += dq[i, DRAM]
    tot[SM] = s0
    tot[L2] = s1
    tot[DRAM] = s2
    if combine_id == COMBINE_SUM:
        return
    for r in range(N_RESOURCES):
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
    top = np.zeros((N_RESOURCES, 2), dtype=np.float64)
    tot = np.zeros(N_RESOURCES, dtype=np.int64)
    dq = quantize(dem[:k])
    _stats(dem, dq, np.arange(k), 0, k, top, tot, combine_id)
    return dq, top, tot


@njit(cache=True, inline="always")
def set_total(tot, r):
    """The running set's total demand of resource ``r`` from its fixed-point sums ``tot``."""
    return tot[r] * INV_SCALE


@njit(cache=True, inline="always")
def others_sum(tot, dq, i, r):
    """The others' summed demand of resource ``r`` for member ``i`` (fixed-point ``total - me``)."""
    return (tot[r] - dq[i, r]) * INV_SCALE


@njit(cache=True, inline="always")
def worst_other(me, first, second):
    """The largest demand among the others, from the set's largest two values ``first`` and ``second``:
    the second largest if I am (a copy of) the largest."""
    return second if me == first else first


@njit(cache=True, inline="always")
def _phi(dem, dq, i, top, tot, k, map_id, combine_id, out):
    """The built-in map of member ``dem[i]`` of a running set of k given by its stats, into
    ``out``: each column the term the map's description names for it (indices, not row views,
    keep the hot loop free of reference counting)."""
    me0 = dem[i, SM]
    me1 = dem[i, L2]
    me2 = dem[i, DRAM]
    o0 = 0.0
    o1 = 0.0
    o2 = 0.0
    if k > 1:
        if combine_id == COMBINE_SUM:
            o0 = others_sum(tot, dq, i, SM)
            o1 = others_sum(tot, dq, i, L2)
            o2 = others_sum(tot, dq, i, DRAM)
        else:
            o0 = worst_other(me0, top[SM, 0], top[SM, 1])
            o1 = worst_other(me1, top[L2, 0], top[L2, 1])
            o2 = worst_other(me2, top[DRAM, 0], top[DRAM, 1])
    # Every term kind of every resource, each stored in the column the map's description gives it
    # (-1: the map lacks it). The column lookups read a constant table: under a constant map (the
    # sweep's specialised paths) they fold away, leaving the map's own stores; written out on
    # indices, without a helper taking ``out``, so the hot loop holds no reference counting.
    for r in range(N_RESOURCES):
        me = me0 if r == SM else (me1 if r == L2 else me2)
        o = o0 if r == SM else (o1 if r == L2 else o2)
        c = TERM_COLUMN[map_id, TERM_OWN, r]
        if c >= 0:
            out[c] = me
        c = TERM_COLUMN[map_id, TERM_OTHER, r]
        if c >= 0:
            out[c] = o
        c = TERM_COLUMN[map_id, TERM_PRODUCT, r]
        if c >= 0:
            out[c] = me * o
        c = TERM_COLUMN[map_id, TERM_TOTAL, r]
        ce = TERM_COLUMN[map_id, TERM_EXCESS, r]
        if c >= 0 or ce >= 0:
            total = set_total(tot, r)
            if c >= 0:
                out[c] = total
            if ce >= 0:
                out[ce] = max(0.0, total - 1.0)
    c = TERM_COLUMN[map_id, TERM_N_OTHERS, 0]
    if c >= 0:
        out[c] = k - 1.0


# --------------------------------------------------------------------------- affine form
# An affine model ``b + w . phi`` over a built-in map, for member i of a running set of k with
# own demand me_r and others' demand other_r (0 when alone) of each resource r, is
#
#     b + sum_r (own_r me_r + (other_r + product_r me_r) other_r(i) + total_r T_r + excess_r max(0, T_r - 1))
#       + n_others (k - 1)
#
# with T_r the set's total demand. :func:`affine_terms` reads own_r, other_r, ... out of ``w`` by
# the map's description (a term the map lacks weighs 0), so a projection that keeps the set's sums
# up to date as members finish evaluates the model without the map.


@njit(cache=True)
def affine_terms(w, map_id):
    """The weights ``w`` of an affine model over map ``map_id``, by the term they weigh:
    ``(terms, n_others)``, ``terms[kind, r]`` (N_RESOURCE_TERMS, N_RESOURCES) for the kinds
    TERM_OWN .. TERM_EXCESS and the weight of the co-runner count; a term the map lacks weighs 0."""
    terms = np.zeros((N_RESOURCE_TERMS, N_RESOURCES))
    return terms, affine_terms_into(w, map_id, terms)


@njit(cache=True, inline="always")
def affine_terms_into(w, map_id, terms):
    """:func:`affine_terms` into ``terms`` (N_RESOURCE_TERMS, N_RESOURCES); returns the co-runner count's weight."""
    terms[:] = 0.0
    n_others = 0.0
    for f in range(MAP_WIDTH[map_id]):
        kind = MAP_TERMS[map_id, f, TERM_KIND]
        if kind == TERM_N_OTHERS:
            n_others = w[f]
        else:
            terms[kind, MAP_TERMS[map_id, f, TERM_RESOURCE]] = w[f]
    return n_others


@njit(cache=True, inline="always")
def affine_own(terms, b, me0, me1, me2):
    """``b`` plus the terms of a member with own demand (me0, me1, me2) that depend on it alone."""
    return b + terms[TERM_OWN, SM] * me0 + terms[TERM_OWN, L2] * me1 + terms[TERM_OWN, DRAM] * me2


@njit(cache=True, inline="always")
def affine_other_weight(terms, r, me):
    """The weight of the others' demand of resource ``r`` for a member whose own demand of it is ``me``."""
    return terms[TERM_OTHER, r] + terms[TERM_PRODUCT, r] * me


@njit(cache=True, inline="always")
def affine_set(terms, n_others, tot, k):
    """The terms of a running set of ``k`` with fixed-point sums ``tot`` that depend on the set alone."""
    g = 0.0
    for r in range(N_RESOURCES):
        total = set_total(tot, r)
        g += terms[TERM_TOTAL, r] * total + terms[TERM_EXCESS, r] * max(0.0, total - 1.0)
    return g + n_others * (k - 1.0)


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
    dem = np.empty((k, N_RESOURCES), dtype=np.float64)
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
        dem = np.empty((1, N_RESOURCES), dtype=np.float64)
        dem[0] = me
        # dem.shape[0] (1), not a literal 1: a literal compiles _set_stats apart from its other callers'
        dq, top, tot = _set_stats(dem, dem.shape[0], combine_id)
        _phi(dem, dq, 0, top, tot, 1, map_id, combine_id, acc)
    elif agg_id == AGG_TIME_WEIGHTED:
        for f in range(acc.shape[0]):
            acc[f] = acc[f] / wsum


@njit(cache=True, inline="always")
def _fold_segment(members, lo, hi, dur, dem, dq, map_id, combine_id, agg_ids, alphas, out, wsum, seen, skip_seen,
                  top, tot, phi):
    """Fold one segment of duration ``dur`` whose running set is ``members[lo:hi]`` into ``out`` (a, n, d),
    ``wsum`` and ``seen`` (n,) in place, for the aggregations ``agg_ids``; ``top``, ``tot`` and ``phi``
    are scratch. ``skip_seen`` (Static only) skips the members that already have their launch value.
    The one body every fold runs (over a timeline's stored segments or inside a sweep), so all of them
    do the same arithmetic in the same order."""
    d = out.shape[2]
    na = agg_ids.shape[0]
    k = hi - lo
    if skip_seen:
        need = False
        for a in range(lo, hi):
            if not seen[members[a]]:
                need = True
                break
        if not need:
            return
    _stats(dem, dq, members, lo, k, top, tot, combine_id)
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
def _fold_segments(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                   skip_seen):
    """Fold every stored segment (CSR ``seg_ptr``, ``members``) into ``out``, ``wsum`` and ``seen`` in
    place, segment by segment (:func:`_fold_segment`)."""
    top = np.zeros((N_RESOURCES, 2), dtype=np.float64)
    tot = np.zeros(N_RESOURCES, dtype=np.int64)
    phi = np.empty(out.shape[2], dtype=np.float64)
    dq = quantize(dem)
    for s in range(seg_ptr.shape[0] - 1):
        _fold_segment(members, seg_ptr[s], seg_ptr[s + 1], seg_end[s] - seg_start[s], dem, dq, map_id, combine_id,
                      agg_ids, alphas, out, wsum, seen, skip_seen, top, tot, phi)


@njit(cache=True)
def _only_static(agg_ids):
    for j in range(agg_ids.shape[0]):
        if agg_ids[j] != AGG_STATIC:
            return False
    return True


@njit(cache=True)
def features(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas):
    """Aggregated built-in features of every execution for several aggregations of one map at
    once: (a, n, d), the map evaluated once per (segment, member) of a stored timeline. Segments
    must be in time order per GPU, which the sweep guarantees."""
    n = dem.shape[0]
    out = np.zeros((agg_ids.shape[0], n, n_features(map_id)), dtype=np.float64)
    wsum = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.bool_)
    _fold_segments(seg_start, seg_end, seg_ptr, members, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                   _only_static(agg_ids))
    finalize_rows(out, wsum, seen, dem, np.arange(n), map_id, combine_id, agg_ids)
    return out


def sweep_features_into(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen, t0, t1,
                        max_running, skip_seen):
    """:func:`_sweep_features_body` through the kernel compiled for the map and combine: the default and the
    rich map under the sum combine (the maps the library uses by default) each have their own, whose loops
    are free of the branches on the map and the combine; every other pair takes :func:`_sweep_any`. The
    arithmetic and its order are the same on every path. Each kernel compiles on its first use, so a
    process that uses one map compiles one."""
    if combine_id == COMBINE_SUM and map_id == MAP_DEFAULT:
        return _sweep_default_sum(gcode, start, end, so, eo, dem, agg_ids, alphas, out, wsum, seen, t0, t1,
                                  max_running, skip_seen)
    if combine_id == COMBINE_SUM and map_id == MAP_RICH:
        return _sweep_rich_sum(gcode, start, end, so, eo, dem, agg_ids, alphas, out, wsum, seen, t0, t1, max_running,
                               skip_seen)
    return _sweep_any(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen, t0, t1,
                      max_running, skip_seen)


@njit(cache=True)
def _sweep_default_sum(gcode, start, end, so, eo, dem, agg_ids, alphas, out, wsum, seen, t0, t1, max_running,
                       skip_seen):
    return _sweep_features_body(gcode, start, end, so, eo, dem, MAP_DEFAULT, COMBINE_SUM, agg_ids, alphas, out, wsum,
                                seen, t0, t1, max_running, skip_seen)


@njit(cache=True)
def _sweep_rich_sum(gcode, start, end, so, eo, dem, agg_ids, alphas, out, wsum, seen, t0, t1, max_running, skip_seen):
    return _sweep_features_body(gcode, start, end, so, eo, dem, MAP_RICH, COMBINE_SUM, agg_ids, alphas, out, wsum,
                                seen, t0, t1, max_running, skip_seen)


@njit(cache=True)
def _sweep_any(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen, t0, t1,
               max_running, skip_seen):
    return _sweep_features_body(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                                t0, t1, max_running, skip_seen)


@njit(cache=True, inline="always")
def _sweep_features_body(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen, t0,
                         t1, max_running, skip_seen):
    """Sweep the executions ``so``/``eo`` (as :func:`~interfpred.features._sweep.sweep` takes them)
    and fold each segment that opens in ``[t0, t1)`` into ``out``, ``wsum`` and ``seen`` in place as
    soon as it is known, holding only the running set: memory O(n + running set), time O(events x
    running set), and the arithmetic of :func:`features` in the same order, so the result equals it to
    the bit. Returns ``(stop, folded)``: -1 or the row whose launch made more than ``max_running`` run
    at once (the sweep stops there), and the number of segments folded."""
    m = so.shape[0]
    n = dem.shape[0]
    running = np.empty(max(m, 1), dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    top = np.zeros((N_RESOURCES, 2), dtype=np.float64)
    tot = np.zeros(N_RESOURCES, dtype=np.int64)
    phi = np.empty(out.shape[2], dtype=np.float64)
    dq = quantize(dem)
    nrun = 0
    folded = 0
    a = 0
    b = 0
    while a < m or b < m:
        g, t, a, b, nrun, stop = take_events(gcode, start, end, so, eo, a, b, running, pos, nrun, max_running)
        if stop >= 0:
            return stop, folded
        if nrun > 0 and t0 <= t < t1:
            dur = segment_end(gcode, start, end, so, eo, a, b, g) - t
            _fold_segment(running, 0, nrun, dur, dem, dq, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                          skip_seen, top, tot, phi)
            folded += 1
    return -1, folded


def sweep_features(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, max_running):
    """:func:`features` of a trace straight from its events (:func:`sweep_features_into` over the whole
    time line, then finalised), never storing the timeline: ``(out, stop)``."""
    n = dem.shape[0]
    out = np.zeros((agg_ids.shape[0], n, n_features(map_id)), dtype=np.float64)
    wsum = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.bool_)
    stop, _ = sweep_features_into(gcode, start, end, so, eo, dem, map_id, combine_id, agg_ids, alphas, out, wsum, seen,
                                  -np.inf, np.inf, max_running, bool(_only_static(agg_ids)))
    finalize_rows(out, wsum, seen, dem, np.arange(n), map_id, combine_id, agg_ids)
    return out, int(stop)


@njit(cache=True)
def stream_close(acc, wsum, seen, cur, settled, k, dur):
    """Close a streaming segment of duration ``dur`` for the members (rows 0..k-1) that were in
    it (``settled``): fold ``dur * cur`` into their TimeWeighted sums, as :func:`features` does."""
    for a in range(k):
        if settled[a]:
            # np.int64, not the literal code: the same types as fold's Python callers, one compile
            fold(acc[a], cur[a], not seen[a], dur, np.int64(AGG_TIME_WEIGHTED), 0.0)
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
def finalize_rows(out, wsum, seen, dem, rows, map_id, combine_id, agg_ids):
    """:func:`finalize` of rows ``rows`` of ``out`` (a, n, d) for every aggregation (its division written
    out on indices for the rows that saw a segment, without a row view per row: the common case)."""
    d = out.shape[2]
    for j in range(agg_ids.shape[0]):
        tw = agg_ids[j] == AGG_TIME_WEIGHTED
        for r in range(rows.shape[0]):
            i = rows[r]
            if not seen[i]:
                # seen[i] (False here), not a literal False: the same types as finalize's Python callers, one compile
                finalize(out[j, i], wsum[i], seen[i], dem[i], map_id, combine_id, agg_ids[j])
            elif tw:
                w = wsum[i]
                for f in range(d):
                    out[j, i, f] = out[j, i, f] / w
