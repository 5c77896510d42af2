"""Entities of trace rows: which models each execution met, aggregated like its features.

For every execution of a trace, its own entity and its co-runners' entities weighted by the same
temporal aggregation as the throughput features (:mod:`interfpred.features`), so a predictor that
learns per-model terms sees them on the same footing as the features:

- ``"static"``: the co-runners at launch (the first segment), each counted once per execution;
- ``"ewma"``: the counts smoothed over arrivals and departures, ``c = alpha * current + (1 - alpha)
  * c`` from the launch counts on (an entity that left decays);
- ``"time_weighted"``: the duration-weighted mean count over every segment (1.0 for one co-runner
  present the whole time, 0.5 for one present half of it).

A zero-length execution meets nobody and has no co-runner. Entities are keyed by model name
(``key="model"``) or by model and batch size (``key="model_batch"``: ``"resnet50@8"``).

Examples
--------
>>> from interfpred import Trace
>>> tr = Trace(id=[1, 2, 3], device=["g"] * 3, model=["a", "b", "b"], batch_size=[1, 1, 2],
...            start_ms=[0.0, 1.0, 2.0], end_ms=[4.0, 3.0, 6.0])
>>> ent = trace_entities(tr, "time_weighted")
>>> ent.row(0)      # a: alone 1 ms, beside one b for 1 ms, beside two for 1 ms, one for 1 ms
('a', {'b': 1.0})
>>> trace_entities(tr, "static").row(0), trace_entities(tr, "static", key="model_batch").row(2)
(('a', {}), ('b@2', {'a@1': 1.0, 'b@1': 1.0}))
"""

from __future__ import annotations

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import MAX_RUNNING_SET
from interfpred.data.entities import Entities
from interfpred.data.frames import as_trace
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features._sweep import group_end, next_event, run_add, run_remove
from interfpred.features.compiled_maps import AGG_EWMA, AGG_STATIC
from interfpred.features.maps import AGG_IDS, aggregation_name
from interfpred.features.running_set import RunningSet
from interfpred.features.timeline import event_orders, refuse_crowd

__all__ = ["ENTITY_KEYS", "RunningEntities", "entity_names", "parent_entities", "trace_entities"]

#: How entities are keyed: by model, or by model and batch size.
ENTITY_KEYS = ("model", "model_batch")


def entity_names(model: np.ndarray, batch_size: np.ndarray, key: str = "model") -> np.ndarray:
    """The entity name of each (model, batch size): the model, or ``"model@batch"``.

    Examples
    --------
    >>> entity_names(np.array(["a", "b"]), np.array([8, 2.5]), key="model_batch").tolist()
    ['a@8', 'b@2.5']
    """
    if key not in ENTITY_KEYS:
        raise InterfpredError(f"entity key {key!r} is not one of {', '.join(ENTITY_KEYS)}")
    model = np.asarray(model).astype(str)
    if key == "model":
        return model
    return np.array([f"{m}@{float(b):g}" for m, b in zip(model.tolist(), np.asarray(batch_size).tolist())])


@njit(cache=True)
def _grow_slots(a, cap):
    """``a`` (rows, nv) with ``cap`` rows, the old rows copied and the new ones zero."""
    b = np.zeros((cap, a.shape[1]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def _grow_1d(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def _catch_up(p, e, r, t, nseg, cnt, code, start, tchg, acc, last, agg, beta):
    """Bring slot ``p``'s (row ``r``'s) weight of entity ``e`` up to time ``t`` / segment ``nseg``: since
    its last update the co-runner count of ``e`` was constant, so EWMA smooths towards it over the
    segments in between in one step and TimeWeighted adds count x time."""
    c = cnt[e] - (1 if code[r] == e else 0)
    if agg == AGG_EWMA:
        mm = nseg - last[p, e]
        if mm > 0:
            acc[p, e] = c + beta ** mm * (acc[p, e] - c)
            last[p, e] = nseg
    elif agg != AGG_STATIC:
        ref = max(tchg[e], start[r])
        if t > ref:
            acc[p, e] += c * (t - ref)


@njit(cache=True)
def _entity_sweep(gcode, start, end, so, eo, code, nv, agg, alpha, max_running):
    """Co-runner entity weights of every execution from the trace's events: ``(indptr, co, weight,
    stop)``, CSR by row, entities in code order, zero weights left out; ``stop`` as for
    :func:`~interfpred.features._sweep.sweep`.

    Each running execution holds a slot of weights per entity it has met. At an event only the
    entity of the executions starting or ending changes its count, so only that entity's weight is
    brought up to date in every slot (:func:`_catch_up`): time O(events x running set + executions x
    entities met), memory O(executions + running set x entities), never a (pair, segment) list.
    """
    m = so.shape[0]
    n = code.shape[0]
    beta = 1.0 - alpha
    cap = 16
    acc = np.zeros((cap, max(nv, 1)))
    last = np.zeros((cap, max(nv, 1)), dtype=np.int64)
    has = np.zeros((cap, max(nv, 1)), dtype=np.bool_)
    touched = np.zeros((cap, max(nv, 1)), dtype=np.int64)
    ntouched = np.zeros(cap, dtype=np.int64)
    free = np.arange(cap - 1, -1, -1).astype(np.int64)
    nfree = cap
    slot = np.full(n, -1, dtype=np.int64)
    running = np.empty(max(min(m, max_running + 1), 1), dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    cnt = np.zeros(max(nv, 1), dtype=np.int64)
    tchg = np.full(max(nv, 1), -np.inf)
    present = np.empty(max(nv, 1), dtype=np.int64)       # entities with cnt > 0, and where each sits
    ppos = np.full(max(nv, 1), -1, dtype=np.int64)
    npresent = 0
    mark = np.zeros(max(nv, 1), dtype=np.bool_)
    chg = np.empty(max(nv, 1), dtype=np.int64)
    blk_lo = np.zeros(n, dtype=np.int64)
    blk_n = np.zeros(n, dtype=np.int64)
    co = np.empty(16, dtype=np.int64)
    wt = np.empty(16)
    nout = 0
    nrun = 0
    nseg = 0
    cur_g = -1
    a = 0
    b = 0
    while a < m or b < m:
        g, t = next_event(gcode, start, end, so, eo, a, b)
        if g != cur_g:
            cur_g = g
            nseg = 0
        b2 = group_end(gcode, end, eo, b, g, t)
        a2 = group_end(gcode, start, so, a, g, t)
        # (1) the entities whose count changes now: every running slot's weight of them up to t
        nchg = 0
        for q in range(b, b2 + a2 - a):
            e = code[eo[q]] if q < b2 else code[so[a + q - b2]]
            if not mark[e]:
                mark[e] = True
                chg[nchg] = e
                nchg += 1
        for c_ in range(nchg):
            e = chg[c_]
            mark[e] = False
            for x in range(nrun):          # (an EWMA weight of an entity gone decays: catch up at count 0 too)
                r = running[x]
                if has[slot[r], e]:
                    _catch_up(slot[r], e, r, t, nseg, cnt, code, start, tchg, acc, last, agg, beta)
            tchg[e] = t
        # (2) the executions ending now: the rest of their weights up to t, emitted, slots freed
        for q in range(b, b2):
            i = eo[q]
            p = slot[i]
            k = ntouched[p]
            ents = np.sort(touched[p, :k])
            co = _grow_1d(co, nout + k)
            wt = _grow_1d(wt, nout + k)
            blk_lo[i] = nout
            total = end[i] - start[i]
            for x in range(k):
                e = ents[x]
                _catch_up(p, e, i, t, nseg, cnt, code, start, tchg, acc, last, agg, beta)
                w = acc[p, e] / total if agg != AGG_STATIC and agg != AGG_EWMA else acc[p, e]
                if w > 0.0:
                    co[nout] = e
                    wt[nout] = w
                    nout += 1
                acc[p, e] = 0.0
                has[p, e] = False
            blk_n[i] = nout - blk_lo[i]
            ntouched[p] = 0
            free[nfree] = p
            nfree += 1
            slot[i] = -1
            nrun = run_remove(running, pos, nrun, i)
            e = code[i]
            cnt[e] -= 1
            if cnt[e] == 0:
                last_e = present[npresent - 1]
                present[ppos[e]] = last_e
                ppos[last_e] = ppos[e]
                ppos[e] = -1
                npresent -= 1
        # (3) the launches: an entity new to the device joins every running slot at weight 0
        for q in range(a, a2):
            e = code[so[q]]
            cnt[e] += 1
            if cnt[e] == 1:
                present[npresent] = e
                ppos[e] = npresent
                npresent += 1
                for x in range(nrun):
                    p = slot[running[x]]
                    if not has[p, e]:
                        has[p, e] = True
                        acc[p, e] = 0.0
                        last[p, e] = nseg
                        touched[p, ntouched[p]] = e
                        ntouched[p] += 1
        # (4) each launch takes a slot holding the entities present, at their counts (its first segment)
        for q in range(a, a2):
            i = so[q]
            if nrun == max_running:
                return blk_lo, co[:nout], wt[:nout], i
            if nfree == 0:
                ncap = 2 * cap
                acc = _grow_slots(acc, ncap)
                last = _grow_slots(last, ncap)
                has = _grow_slots(has, ncap)
                touched = _grow_slots(touched, ncap)
                nt = np.zeros(ncap, dtype=np.int64)
                nt[:cap] = ntouched
                ntouched = nt
                free = np.empty(ncap, dtype=np.int64)
                for x in range(cap):
                    free[x] = ncap - 1 - x
                nfree = cap
                cap = ncap
            nfree -= 1
            p = free[nfree]
            slot[i] = p
            own = code[i]
            for x in range(npresent):
                e = present[x]
                has[p, e] = True
                touched[p, x] = e
                acc[p, e] = 0.0 if agg != AGG_STATIC and agg != AGG_EWMA else cnt[e] - (1.0 if own == e else 0.0)
                last[p, e] = nseg
            ntouched[p] = npresent
            nrun = run_add(running, pos, nrun, i)
        a = a2
        b = b2
        if nrun > 0:
            nseg += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        indptr[i + 1] = indptr[i] + blk_n[i]
    co_out = np.empty(nout, dtype=np.int64)
    wt_out = np.empty(nout)
    for i in range(n):
        lo = blk_lo[i]
        for x in range(blk_n[i]):
            co_out[indptr[i] + x] = co[lo + x]
            wt_out[indptr[i] + x] = wt[lo + x]
    return indptr, co_out, wt_out, -1


def trace_entities(trace: Trace, aggregation: str = "time_weighted", *, alpha: float = 0.5,
                   key: str = "model") -> Entities:
    """Own and co-runner entities of every execution of ``trace``, in its row order.

    Computed from the trace's start and end events in memory O(executions + running set x
    entities) and time O(events x running set), at any number of executions running at once (no
    list of co-running pairs is built). A TimeWeighted weight is divided by the execution's latency
    ``end_ms - start_ms``; it equals the sum over its segments to within rounding (about 1e-16
    relative).

    Parameters
    ----------
    trace
        The executions.
    aggregation
        ``"static"``, ``"ewma"`` or ``"time_weighted"`` (how co-runner counts are aggregated).
    alpha
        EWMA weight of the newest running set.
    key
        ``"model"`` or ``"model_batch"``.
    """
    trace = as_trace(trace)
    aggregation = aggregation_name(aggregation)
    names = entity_names(trace.model, trace.batch_size, key)
    vocab, code = np.unique(names, return_inverse=True)
    code = np.ascontiguousarray(code.reshape(-1), dtype=np.int64)
    _, gcode = trace.codes("device")
    start = np.ascontiguousarray(trace.start_ms, dtype=np.float64)
    end = np.ascontiguousarray(trace.end_ms, dtype=np.float64)
    so, eo = event_orders(gcode, start, end)
    indptr, co, weight, stop = _entity_sweep(gcode, start, end, so, eo, code, len(vocab), AGG_IDS[aggregation],
                                             float(alpha), MAX_RUNNING_SET)
    refuse_crowd(int(stop), gcode, start, end)
    return Entities(tuple(vocab.tolist()), code, indptr, co, weight)


class RunningEntities:
    """Live counterpart of :func:`trace_entities` for one GPU: each running execution's entity and
    its co-runners' counts, aggregated over the segments it has lived through.

    Feed it every start and finish in time order (events at one instant in any order: a segment
    of zero duration is no segment). :meth:`finish` returns ``(own, {co-runner: weight})``, the
    row :func:`trace_entities` gives for that execution.

    Its state lives on the device's :class:`~interfpred.features.running_set.RunningSet`: per
    running execution, its entity's code, its aggregated count of every entity beside it (a row
    over the entities met so far), its summed segment time and its segment count, in columns it
    registers there. It folds each segment when the set's clock moves and names each execution
    when the set adds it (hooks on the set), so the set's snapshot and restore undo its events
    too. Given the device's ``running_set`` (a tracker passes its timeline state's), the set's
    owner adds and removes the executions and moves the clock, and :meth:`row` reads an
    execution's entities; alone, it keeps a set of its own, fed by :meth:`start` and
    :meth:`finish`. The entity names it has met stay known (a vocabulary that only grows).

    Examples
    --------
    >>> running = RunningEntities("time_weighted")
    >>> running.start(1, "a", 1, 0.0)
    >>> running.start(2, "b", 1, 1.0)
    >>> running.finish(1, 4.0)          # beside b for 3 of its 4 ms
    ('a', {'b': 0.75})
    >>> running.names([2])
    ['b']
    """

    def __init__(self, aggregation: str = "time_weighted", *, alpha: float = 0.5, key: str = "model",
                 running_set: RunningSet | None = None) -> None:
        aggregation = aggregation_name(aggregation)
        if key not in ENTITY_KEYS:
            raise InterfpredError(f"entity key {key!r} is not one of {', '.join(ENTITY_KEYS)}")
        self.aggregation = aggregation
        self.alpha = float(alpha)
        self.key = key
        self._agg = AGG_IDS[aggregation]
        self._vocab: list[str] = []
        self._codes: dict[str, int] = {}
        self._names_memo: tuple[int, list[str]] | None = None
        self._own_clock = running_set is None
        rs = self._set = RunningSet() if running_set is None else running_set
        rs.register(_CODE, ((), np.int64))
        rs.register(_COUNTS, (_INITIAL_ENTITIES,))
        rs.register(_TOTAL, ())
        rs.register(_SEGMENTS, ((), np.int64))
        rs.on_clock(self._fold)
        rs.on_add(self._added)

    def entity_name(self, model: str, batch_size: float) -> str:
        """The entity name of (model, batch size) under this key."""
        return str(model) if self.key == "model" else f"{model}@{float(batch_size):g}"

    def names(self, ids: list) -> list[str]:
        """The entity names of running executions ``ids``."""
        rs, vocab = self._set, self._vocab
        code = rs.column(_CODE)
        return [vocab[code[rs.slot(i)]] for i in ids]

    def running_names(self) -> list[str]:
        """The entity names of the running set, in slot order (a new list; built once per membership)."""
        rs = self._set
        memo = self._names_memo
        if memo is None or memo[0] != rs.version:
            vocab = self._vocab
            memo = self._names_memo = (rs.version, [vocab[c] for c in rs.column(_CODE)[: len(rs)].tolist()])
        return list(memo[1])

    def advance(self, t: float) -> None:
        """Fold the segment from the previous event to ``t`` into every running execution (with a shared
        running set, its owner moves the clock and this does nothing)."""
        if self._own_clock and (self._set.now is None or t > self._set.now):
            self._set.move_clock(t)

    def _added(self, a: int) -> None:
        """The set added slot ``a``: its entity's code (its counts, time and segments start at zero)."""
        rs = self._set
        name = self.entity_name(rs.column("model")[a], rs.column("batch_size")[a])
        code = self._codes.get(name)
        if code is None:
            code = self._codes[name] = len(self._vocab)
            self._vocab.append(name)
        rs.column(_CODE)[a] = code

    def _fold(self, old: float | None, t: float) -> None:
        """The clock moves from ``old`` to ``t``: fold the segment between them into every running execution."""
        rs = self._set
        k = len(rs)
        if old is None or not t > old or k == 0:
            return
        counts = rs.column(_COUNTS)
        if counts.shape[1] < len(self._vocab):
            counts = rs.widen(_COUNTS, max(len(self._vocab), 2 * counts.shape[1]))
        code = rs.column(_CODE)[:k]
        # each member's current co-runners: the set's count of every entity, less itself
        cur = np.tile(np.bincount(code, minlength=counts.shape[1]).astype(np.float64), (k, 1))
        cur[np.arange(k), code] -= 1.0
        acc = counts[:k]
        nseg = rs.column(_SEGMENTS)[:k]
        if self._agg == AGG_STATIC:
            first = nseg == 0
            acc[first] = cur[first]
        elif self._agg == AGG_EWMA:
            alpha = self.alpha
            acc[:] = np.where((nseg == 0)[:, None], cur, alpha * cur + (1.0 - alpha) * acc)
        else:
            acc += (t - old) * cur
            rs.column(_TOTAL)[:k] += t - old
        nseg += 1

    def row(self, id: object) -> tuple[str, dict[str, float]]:
        """Running ``id``'s own entity and its co-runners aggregated up to the set's clock (read, not changed)."""
        rs, vocab = self._set, self._vocab
        a = rs.slot(id)
        acc = rs.column(_COUNTS)[a]
        seen = np.flatnonzero(acc > 0).tolist()
        if self.aggregation == "time_weighted":
            total = float(rs.column(_TOTAL)[a])
            co = {vocab[j]: float(acc[j]) / total for j in seen} if total > 0 else {}
        else:
            co = {vocab[j]: float(acc[j]) for j in seen}
        return vocab[rs.column(_CODE)[a]], {k: v for k, v in sorted(co.items()) if v > 0}

    def start(self, id: object, model: str, batch_size: float, t: float) -> None:
        """Execution ``id`` starts at ``t`` (alone only: the caller has checked id and time)."""
        self.advance(t)
        self._set.add(id, str(model), float(batch_size), (0.0, 0.0, 0.0), 0.0)

    def finish(self, id: object, t: float) -> tuple[str, dict[str, float]]:
        """Execution ``id`` ends at ``t`` (alone only): its own entity and aggregated co-runners."""
        self.advance(t)
        out = self.row(id)
        self._set.remove(id)
        return out


#: Columns of the running set that hold the entity state: the entity's code, its counts of every entity
#: beside it (widened as entities are met), its summed segment time, its segment count.
_CODE, _COUNTS, _TOTAL, _SEGMENTS = "entity", "entity_counts", "entity_time", "entity_segments"
#: Entities a fresh set's count rows hold before they widen.
_INITIAL_ENTITIES = 8


def parent_entities(ent: Entities) -> Entities:
    """The same rows with every ``"model@batch"`` entity named by its model (weights of co-runners that
    become one entity are added): model-level entities, as a per-pair baseline groups by.

    Examples
    --------
    >>> parent_entities(Entities.from_lists(["a@1"], [{"b@2": 1.0, "b@4": 0.5}])).row(0)
    ('a', {'b': 1.5})
    """
    names = [s.rsplit("@", 1)[0] for s in ent.names]
    vocab, code = np.unique(np.array(names, dtype=object).astype(str), return_inverse=True)
    code = code.reshape(-1).astype(np.int64)
    n, nv = len(ent), max(len(vocab), 1)
    rows = np.repeat(np.arange(n), np.diff(ent.indptr))
    keyv = rows * nv + code[ent.co]
    uniq, inv = np.unique(keyv, return_inverse=True)
    w = np.bincount(inv.reshape(-1), weights=ent.weight, minlength=len(uniq)) if len(uniq) else np.zeros(0)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(uniq // nv, minlength=n), out=indptr[1:])
    return Entities(tuple(vocab.tolist()), code[ent.own], indptr, (uniq % nv).astype(np.int64), w)
