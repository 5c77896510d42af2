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
from interfpred.data.entities import Entities
from interfpred.data.frames import as_trace
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.features._segment_maps import AGG_EWMA, AGG_STATIC
from interfpred.features.maps import AGG_IDS, aggregation_name
from interfpred.features.timeline import trace_segments

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
def _coo(seg_start, seg_end, seg_ptr, members, code, n, agg, alpha):
    """(row, entity code, weight) of every (execution, co-member, segment), weights by aggregation."""
    nseg = seg_ptr.shape[0] - 1
    nseen = np.zeros(n, dtype=np.int64)
    total = np.zeros(n)
    size = 0
    for s in range(nseg):
        k = seg_ptr[s + 1] - seg_ptr[s]
        size += k * (k - 1)
        for a in range(seg_ptr[s], seg_ptr[s + 1]):
            i = members[a]
            nseen[i] += 1
            total[i] += seg_end[s] - seg_start[s]
    rows = np.empty(size, dtype=np.int64)
    ents = np.empty(size, dtype=np.int64)
    wts = np.empty(size)
    kth = np.zeros(n, dtype=np.int64)
    q = 0
    beta = 1.0 - alpha
    for s in range(nseg):
        dur = seg_end[s] - seg_start[s]
        for a in range(seg_ptr[s], seg_ptr[s + 1]):
            i = members[a]
            kth[i] += 1
            if agg == AGG_STATIC:
                wt = 1.0 if kth[i] == 1 else 0.0
            elif agg == AGG_EWMA:
                later = nseen[i] - kth[i]          # segments of i after this one
                wt = beta ** later if kth[i] == 1 else alpha * beta ** later
            else:
                wt = dur / total[i]
            for b in range(seg_ptr[s], seg_ptr[s + 1]):
                if b != a:
                    rows[q] = i
                    ents[q] = code[members[b]]
                    wts[q] = wt
                    q += 1
    return rows, ents, wts


def trace_entities(trace: Trace, aggregation: str = "time_weighted", *, alpha: float = 0.5, key: str = "model",
                   segments: tuple[np.ndarray, ...] | None = None) -> Entities:
    """Own and co-runner entities of every execution of ``trace``, in its row order.

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
    segments
        ``(seg_start, seg_end, seg_ptr, seg_members)`` of this trace when already computed.
    """
    trace = as_trace(trace)
    aggregation = aggregation_name(aggregation)
    names = entity_names(trace.model, trace.batch_size, key)
    vocab, code = np.unique(names, return_inverse=True)
    code = np.ascontiguousarray(code.reshape(-1), dtype=np.int64)
    n = len(trace)
    if segments is None:
        segments = trace_segments(trace)
    rows, ents, wts = _coo(*segments, code, n, AGG_IDS[aggregation], float(alpha))
    nv = len(vocab)
    keyv = rows * nv + ents
    uniq, inv = np.unique(keyv, return_inverse=True)
    w = np.bincount(inv.reshape(-1), weights=wts, minlength=len(uniq)) if len(uniq) else np.zeros(0)
    keep = w > 0.0
    uniq, w = uniq[keep], w[keep]
    r, e = uniq // max(nv, 1), uniq % max(nv, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    return Entities(tuple(vocab.tolist()), code, indptr, e.astype(np.int64), w)


class RunningEntities:
    """Live counterpart of :func:`trace_entities` for one GPU: each running execution's entity and
    its co-runners' counts, aggregated over the segments it has lived through.

    Feed it every start and finish in time order (events at one instant in any order: a segment
    of zero duration is no segment). :meth:`finish` returns ``(own, {co-runner: weight})``, the
    row :func:`trace_entities` gives for that execution.

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

    def __init__(self, aggregation: str = "time_weighted", *, alpha: float = 0.5, key: str = "model") -> None:
        aggregation = aggregation_name(aggregation)
        if key not in ENTITY_KEYS:
            raise InterfpredError(f"entity key {key!r} is not one of {', '.join(ENTITY_KEYS)}")
        self.aggregation = aggregation
        self.alpha = float(alpha)
        self.key = key
        self._name: dict = {}
        self._acc: dict = {}
        self._total: dict = {}
        self._nseg: dict = {}
        self._t: float | None = None

    def entity_name(self, model: str, batch_size: float) -> str:
        """The entity name of (model, batch size) under this key."""
        return str(model) if self.key == "model" else f"{model}@{float(batch_size):g}"

    def names(self, ids: list) -> list[str]:
        """The entity names of running executions ``ids``."""
        return [self._name[i] for i in ids]

    def advance(self, t: float) -> None:
        """Fold the segment from the previous event to ``t`` into every running execution."""
        if self._t is not None and t > self._t and self._name:
            dur = t - self._t
            counts: dict[str, float] = {}
            for name in self._name.values():
                counts[name] = counts.get(name, 0.0) + 1.0
            agg, alpha = self.aggregation, self.alpha
            for i, own in self._name.items():
                cur = {k: c - (k == own) for k, c in counts.items() if c - (k == own) > 0}
                acc, first = self._acc[i], self._nseg[i] == 0
                if agg == "static":
                    if first:
                        self._acc[i] = cur
                elif agg == "ewma":
                    self._acc[i] = cur if first else {k: alpha * cur.get(k, 0.0) + (1.0 - alpha) * acc.get(k, 0.0)
                                                      for k in acc.keys() | cur.keys()}
                else:  # a new dict (never in place), so a shallow copy of this object can undo an event
                    acc = dict(acc)
                    for k, c in cur.items():
                        acc[k] = acc.get(k, 0.0) + dur * c
                    self._acc[i] = acc
                    self._total[i] += dur
                self._nseg[i] += 1
        if self._t is None or t > self._t:
            self._t = t

    def start(self, id: object, model: str, batch_size: float, t: float) -> None:
        """Execution ``id`` starts at ``t`` (the caller has checked id and time)."""
        self.advance(t)
        self._name[id] = self.entity_name(model, batch_size)
        self._acc[id] = {}
        self._total[id] = 0.0
        self._nseg[id] = 0

    def finish(self, id: object, t: float) -> tuple[str, dict[str, float]]:
        """Execution ``id`` ends at ``t``: its own entity and aggregated co-runners."""
        self.advance(t)
        own = self._name.pop(id)
        acc = self._acc.pop(id)
        total = self._total.pop(id)
        self._nseg.pop(id)
        if self.aggregation == "time_weighted":
            acc = {k: v / total for k, v in acc.items()} if total > 0 else {}
        return own, {k: v for k, v in sorted(acc.items()) if v > 0}


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
