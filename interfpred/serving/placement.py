"""Vectorised placement over many devices: every tracker's what-if in one compiled call, cached between events.

:class:`PlacementCache` answers, for every device of a fleet at once, what ``Fleet.choose_device``
asks of each: is a candidate feasible there, and how much projected latency would it add? It
keeps each device's running set (:meth:`~interfpred.serving.tracker.ColocationTracker.projection_inputs`) in
one block of a stacked array, rewritten only after an event on that device, and reuses each device's
projection without the candidate while time and weights are unchanged; the answers equal one
``what_if`` and one ``predict_finish`` per device to the bit. Devices whose tracker cannot take the
compiled path are left out for the caller to assess one by one. Devices whose tracker takes the
compiled pair-term path (:class:`~interfpred.EntityRLS`, :class:`~interfpred.KernelBlocking`) are
projected together too when every device has a predictor of its own: their terms are read once
after each event on the device (once per candidate entity), and kept stacked. The placement rule itself
(:func:`meets_deadlines`, :func:`added_latency`, :func:`least_added_latency`) is shared by the
fleet and the E3 policies. docs/scale.md gives the costs.

Examples
--------
>>> from interfpred import RLS, ColocationTracker
>>> from interfpred.sim.zoo import zoo_profiles
>>> toy = RLS().fit([[0.0] * 16, [1.0] * 16], [1.0, 0.5])     # the more pressure, the slower
>>> trs = {g: ColocationTracker(zoo_profiles("l4"), toy) for g in ("a", "b")}
>>> trs["a"].start(1, "vgg19", 8, 0.0)
>>> res = PlacementCache().assess_all(trs, {1: 100.0}.get, ("c", "resnet50", 4), 50.0, 1.0, margin=0.0)
>>> {g: (ok, round(added, 2)) for g, (ok, added) in res.items()}   # own latency + delay inflicted
{'a': (True, 6.36), 'b': (True, 4.78)}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import (
    MAX_RUNNING_SET,
    PLACEMENT_CANDIDATES_KEPT,
    PLACEMENT_ENTITIES_MAX,
    TRACKER_FINISH_RTOL,
    TRACKER_MIN_REMAINING,
)
from interfpred.serving.projection.affine import project_stacked_unchecked
from interfpred.serving.projection.entity import pairwise_project_stacked

__all__ = ["PlacementCache", "added_latency", "least_added_latency", "meets_deadlines"]

K = TypeVar("K", bound=Hashable)


def meets_deadlines(t: float, ends: Iterable[float], deadlines: Iterable[float], margin: float) -> bool:
    """Whether every projected end ``e`` meets its deadline ``D`` with the safety margin, seen from ``t``:
    ``t + (e - t) * (1 + margin) <= D``.

    >>> meets_deadlines(0.0, [10.0, 20.0], [11.5, 22.5], 0.1), meets_deadlines(0.0, [10.0], [10.5], 0.1)
    (True, False)
    """
    f = 1.0 + margin
    return all(t + (e - t) * f <= d for e, d in zip(ends, deadlines))


def added_latency(t: float, candidate_end: float, ends_with: Iterable[float], ends_without: Iterable[float]) -> float:
    """Projected latency a launch at ``t`` adds: the candidate's own plus the delay it inflicts on the running
    executions (their ends with it minus without it), summed in that order.

    >>> added_latency(1.0, 5.0, [4.0, 9.0], [3.0, 8.5])
    5.5
    """
    added = candidate_end - t
    for e1, e0 in zip(ends_with, ends_without):
        added += e1 - e0
    return added


def least_added_latency(options: Iterable[tuple[K, float]], *, tie_rtol: float = 0.0) -> list[K]:
    """Keys of the feasible ``(key, added_ms)`` options whose added latency is within ``tie_rtol`` (relative)
    of the least, in the given order; empty when there are none. The placement rule of
    :meth:`~interfpred.Fleet.choose_device` and of the E3 co-location policies.

    >>> least_added_latency([("a", 3.0), ("b", 2.0), ("c", 2.0)])
    ['b', 'c']
    >>> least_added_latency([("a", 2.0 + 1e-9), ("b", 2.0)], tie_rtol=1e-6)
    ['a', 'b']
    """
    opts: Sequence[tuple[K, float]] = list(options)
    if not opts:
        return []
    least = min(a for _, a in opts)
    return [k for k, a in opts if a <= least + tie_rtol * abs(least)]


@njit(cache=True)
def _judge(n, end_b, end_c, dl, use, t, f, deadline, ok, added):
    """Per used block g with n[g] running (deadlines dl[g]) and the candidate at row n[g] of
    ``end_c``: feasibility and added latency, summed in ``what_if`` order."""
    for g in range(n.shape[0]):
        if not use[g]:
            continue
        k = n[g]
        ec = end_c[g, k]
        good = t + (ec - t) * f <= deadline
        s = ec - t
        for j in range(k):
            e1 = end_c[g, j]
            s += e1 - end_b[g, j]
            if good and t + (e1 - t) * f > dl[g, j]:
                good = False
        ok[g] = good
        added[g] = s


class _TermStack:
    """The pair-term model arguments of many blocks, stacked: one row per block, padded to the widest
    (``A`` with 1, the rest with 0; the kernel reads only a block's own entries)."""

    def __init__(self, g: int, cap: int) -> None:
        self.valid = np.zeros(g, dtype=np.bool_)
        self.mode: list[tuple] = [()] * g
        self.U = np.zeros((g, cap), dtype=np.int64)
        self.W = np.zeros((g, 0))
        self.W2 = np.zeros((g, 0))
        self.B = np.zeros(g)
        self.B2 = np.zeros(g)
        self.ETA = np.zeros(g)
        self.S = np.zeros((g, 0))
        self.A = np.ones((g, 0))
        self.M = np.zeros((g, 0, 0))

    def _widen(self, v: int, d: int) -> None:
        g = self.B.shape[0]
        if d > self.W.shape[1]:
            self.W = np.hstack([self.W, np.zeros((g, d - self.W.shape[1]))])
            self.W2 = np.hstack([self.W2, np.zeros((g, d - self.W2.shape[1]))])
        if v > self.S.shape[1]:
            self.S = np.hstack([self.S, np.zeros((g, v - self.S.shape[1]))])
            self.A = np.hstack([self.A, np.ones((g, v - self.A.shape[1]))])
            M = np.zeros((g, v, v))
            M[:, :self.M.shape[1], :self.M.shape[2]] = self.M
            self.M = M

    def put(self, g: int, args: tuple) -> None:
        """Block ``g`` takes the arguments ``args`` of ``RunningSetProjector.pairwise_args``."""
        (map_id, combine_id, kind, w, b, u, S, M, A, w2, b2, eta, log_target, alone_solo, pred_rates, is_rate,
         rmin, rmax) = args
        d = w.shape[0]
        self._widen(max(S.shape[0], A.shape[0], M.shape[0]), d)
        self.U[g, :u.shape[0]] = u
        for row, values in ((self.W[g], w), (self.W2[g], w2), (self.S[g], S)):
            row[:] = 0.0
            row[:values.shape[0]] = values
        self.A[g] = 1.0
        self.A[g, :A.shape[0]] = A
        self.M[g] = 0.0
        self.M[g, :M.shape[0], :M.shape[1]] = M
        self.B[g] = b
        self.B2[g] = b2
        self.ETA[g] = eta
        self.mode[g] = (map_id, combine_id, kind, bool(log_target), bool(alone_solo), bool(pred_rates), bool(is_rate),
                        float(rmin), float(rmax), d)
        self.valid[g] = True

    def project(self, dem: np.ndarray, rem: np.ndarray, n: np.ndarray, n_run: np.ndarray, t: float, use: np.ndarray,
                mode: tuple, end: np.ndarray) -> np.ndarray:
        """Project the blocks ``use`` (all of ``mode``; ``n_run[g]`` of block ``g``'s ``n[g]`` members running,
        the rest candidates) into ``end``; their status (0: finite)."""
        map_id, combine_id, kind, log_target, alone_solo, pred_rates, is_rate, rmin, rmax, d = mode
        status = np.zeros(n.shape[0], dtype=np.int64)
        pairwise_project_stacked(dem, rem, n, n_run, float(t), use, map_id, combine_id, kind,
                                 np.ascontiguousarray(self.W[:, :d]), self.B, self.U, self.S, self.M, self.A,
                                 np.ascontiguousarray(self.W2[:, :d]), self.B2, self.ETA, log_target, alone_solo,
                                 pred_rates, is_rate, rmin, rmax, TRACKER_FINISH_RTOL, end, status)
        return status


class PlacementCache:
    """Stacked per-device projection state, kept between events, for :meth:`assess_all`.

    The trackers must be driven through the owner (``Fleet``), which calls :meth:`invalidate`
    on every start and finish; a device's block is refreshed on the next call after that.

    ``own_predictors``: every tracker has a predictor of its own, which learns only from that
    tracker's finishes (which invalidate its block), so each block keeps the weights read when it
    was refreshed. Otherwise (a predictor shared by several devices learns from any of them) the
    weights are read again on every call, once per distinct predictor.
    """

    def __init__(self, *, own_predictors: bool = False) -> None:
        self._names: tuple[str, ...] = ()
        self._stale: set[str] = set()
        self.own_predictors = bool(own_predictors)

    def invalidate(self, device: str) -> None:
        """Refresh ``device``'s block on the next call (after an event on it)."""
        self._stale.add(device)

    # ------------------------------------------------------------------ layout
    def _allocate(self, names: tuple[str, ...], cap: int) -> None:
        g = len(names)
        self._names = names
        self._row = {name: i for i, name in enumerate(names)}
        self._cap = cap
        self._dem = np.zeros((g, cap, 3))
        self._rem0 = np.zeros((g, cap))
        self._rates = np.zeros((g, cap))
        self._solo = np.zeros((g, cap))
        self._dl = np.full((g, cap), math.inf)
        self._t0 = np.zeros(g)
        self._now = np.full(g, -math.inf)
        self._n = np.zeros(g, dtype=np.int64)
        self._fast = np.zeros(g, dtype=np.bool_)
        self._mode: list[tuple] = [()] * g
        self._pred: list[Any] = [None] * g
        self._look: list[tuple] = [()] * g
        self._base = np.zeros((g, cap))
        self._base_ok = np.zeros(g, dtype=np.bool_)
        self._base_key: tuple | None = None
        self._modes: set[tuple] = set()
        self._W = np.zeros((g, 0))        # each block's weights at its refresh (own_predictors)
        self._B = np.zeros(g)
        self._LO = np.zeros(g)
        self._look_id = np.zeros(g, dtype=np.int64)   # index of the block's profile lookup in _look_keys
        self._look_keys: dict[tuple, int] = {}
        self._pw = np.zeros(g, dtype=np.bool_)       # blocks on the stacked pair-term path
        self._pw_inp: list[Any] = [None] * g
        self._pw_names: list[dict] = [{} for _ in range(g)]   # (model, batch_size) -> candidate entity, per block
        self._stacks: dict[str | None, _TermStack] = {}       # None: the running sets alone; else a candidate entity
        self._stale = set(names)

    def _refresh(self, trackers: Mapping[str, Any], deadline_of: Callable[[Any], float | None]) -> None:
        names = tuple(trackers)
        if names != self._names:
            self._allocate(names, 8)
        if self._stale:
            self._modes = set()     # the modes of the compiled blocks, once they are all refreshed
        for name in list(self._stale):
            self._stale.discard(name)
            g = self._row.get(name)
            if g is None:
                continue
            tr = trackers[name]
            self._base_ok[g] = False
            self._pred[g] = tr.predictor
            self._look[g] = (id(tr.profiles), tr.gpu, tr.extrapolate)
            self._look_id[g] = self._look_keys.setdefault(self._look[g], len(self._look_keys))
            for stack in self._stacks.values():
                stack.valid[g] = False
            inp = tr.projection_inputs()
            self._pw[g] = False
            if inp is None:
                self._fast[g] = False
                if self.own_predictors:
                    self._refresh_pairwise(g, tr, deadline_of)
                continue
            w = inp.weights
            if w.shape[0] > self._W.shape[1]:
                self._W = np.hstack([self._W, np.zeros((self._W.shape[0], w.shape[0] - self._W.shape[1]))])
            self._W[g] = 0.0
            self._W[g, :w.shape[0]] = w
            self._B[g] = inp.intercept
            self._LO[g] = inp.pred_lo
            self._fast[g] = True
            self._fill(g, inp, deadline_of)
            self._mode[g] = (inp.map_id, inp.combine_id, inp.is_rate, inp.min_rate, inp.max_rate,
                             inp.weights.shape[0])
        if not self._modes:
            self._modes = {m for m, fast in zip(self._mode, self._fast.tolist()) if fast}

    def _refresh_pairwise(self, g: int, tr: Any, deadline_of: Callable[[Any], float | None]) -> None:
        """Block ``g`` takes tracker ``tr``'s running set for the stacked pair-term path, where it can."""
        inp = tr.pairwise_inputs()
        if inp is None or len(set(inp.names)) >= PLACEMENT_ENTITIES_MAX:
            return
        self._pw[g] = True
        self._pw_inp[g] = inp
        self._fill(g, inp, deadline_of)

    def _fill(self, g: int, inp: Any, deadline_of: Callable[[Any], float | None]) -> None:
        """Block ``g`` holds the running set ``inp`` (a tracker's ``projection_inputs`` or ``pairwise_inputs``)."""
        k = len(inp.ids)
        if k + 1 > self._cap:
            self._grow(2 * (k + 1))
        self._n[g] = k
        for arr, values in ((self._dem, inp.dem), (self._rem0, inp.rem), (self._rates, inp.rates),
                            (self._solo, inp.solo)):
            arr[g, :k] = values
            arr[g, k:] = 0.0
        self._dl[g, :k] = [math.inf if d is None else float(d) for d in map(deadline_of, inp.ids)]
        self._t0[g] = inp.t0
        self._now[g] = -math.inf if inp.now is None else inp.now

    def _grow(self, cap: int) -> None:
        self._stacks = {}     # their entity rows have the old capacity
        for name in ("_dem", "_rem0", "_rates", "_solo", "_dl", "_base"):
            old = getattr(self, name)
            new = np.full((old.shape[0], cap) + old.shape[2:], math.inf if name == "_dl" else 0.0)
            new[:, :old.shape[1]] = old
            setattr(self, name, new)
        self._cap = cap

    # ------------------------------------------------------------------ answers
    def assess_all(self, trackers: Mapping[str, Any], deadline_of: Callable[[Any], float | None],
                   candidate: tuple[Any, str, float], deadline: float, t: float, *, margin: float,
                   max_running: int | None = None) -> dict[str, tuple[bool, float]]:
        """Device name -> ``(feasible, added_ms)`` for every device that takes the compiled path.

        ``deadline_of(id)`` gives a running id's deadline (None: none); a full device
        (``max_running``) is ``(False, inf)``. A candidate without a profile raises
        :class:`~interfpred.errors.InterfpredError`, as ``what_if`` does.
        """
        self._refresh(trackers, deadline_of)
        names = self._names
        n = self._n
        full = np.zeros(len(names), dtype=np.bool_)
        if max_running is not None:   # a refreshed compiled block holds its tracker's count; the others are asked
            counts = n.copy()
            for g in np.flatnonzero(~(self._fast | self._pw)).tolist():
                counts[g] = len(trackers[names[g]])
            full = counts >= max_running
        room = ~full & (n + 1 <= MAX_RUNNING_SET) & (self._now <= t)
        use = self._fast & room
        usep = self._pw & room
        out: dict[str, tuple[bool, float]] = {names[g]: (False, math.inf) for g in np.flatnonzero(full)}
        if not (use.any() or usep.any()):
            return out
        cid, model, batch = candidate
        gs = np.flatnonzero(use)
        rows = np.arange(len(names))
        # Weights once per distinct predictor (or kept per block), candidate once per distinct profile lookup.
        modes = self._modes if self.own_predictors else {self._mode[g] for g in gs}
        if not modes:
            W = B = LO = np.zeros(len(names))
        elif self.own_predictors:
            d = max(m[5] for m in modes)
            W = np.ascontiguousarray(self._W[:, :d])
            B = self._B
            LO = self._LO
        else:
            d = max(self._mode[g][5] for g in gs)
            W = np.zeros((len(names), d))
            B = np.zeros(len(names))
            LO = np.zeros(len(names))
            by_pred: dict[int, tuple] = {}
            for g in gs:
                p = self._pred[g]
                wb = by_pred.get(id(p))
                if wb is None:
                    inp = trackers[names[g]].projection_inputs()
                    wb = by_pred[id(p)] = (inp.weights, inp.intercept, inp.pred_lo)
                W[g, :wb[0].shape[0]] = wb[0]
                B[g] = wb[1]
                LO[g] = wb[2]
        cand = np.zeros((len(names), 4))
        both = np.flatnonzero(use | usep)
        look = self._look_id[both]
        for li in np.unique(look).tolist():
            sel_g = both[look == li]
            cand[sel_g] = trackers[names[sel_g[0]]].candidate_demand(cid, model, batch)
        # Remaining work at t, as ColocationTracker.remaining_ms computes it (blocks with t == t0 keep rem0).
        dt = np.where(t > self._t0, t - self._t0, 0.0)[:, None]
        rem = self._rem0 - self._rates * dt
        np.maximum(rem, TRACKER_MIN_REMAINING * self._solo, out=rem)
        base_key = (t, W.tobytes(), B.tobytes(), LO.tobytes())
        if base_key != self._base_key:
            self._base_ok[:] = False
            self._base_key = base_key
        dem = self._dem.copy()
        dem[rows[both], n[both]] = cand[both, :3]
        rem[rows[both], n[both]] = cand[both, 3]
        ok = np.zeros(len(names), dtype=np.bool_)
        added = np.zeros(len(names))
        f = 1.0 + margin
        end_c = np.zeros_like(rem)
        for mode in modes:
            sel = use & np.array([m == mode for m in self._mode], dtype=np.bool_) if len(modes) > 1 else use
            map_id, combine_id, is_rate, rmin, rmax, _ = mode
            need = sel & ~self._base_ok
            if need.any():
                project_stacked_unchecked(self._dem, rem, n, t, W, B, LO, need, map_id, combine_id, is_rate, rmin,
                                          rmax, self._base)
                self._base_ok |= need
            project_stacked_unchecked(dem, rem, n + 1, t, W, B, LO, sel, map_id, combine_id, is_rate, rmin, rmax,
                                      end_c)
            _judge(n, self._base, end_c, self._dl, sel, float(t), f, float(deadline), ok, added)
        if usep.any():
            usep = self._project_pairwise(usep, model, batch, dem, rem, t, end_c)
            _judge(n, self._base, end_c, self._dl, usep, float(t), f, float(deadline), ok, added)
        okl = ok.tolist()
        addl = added.tolist()
        for gi in np.flatnonzero(use | usep).tolist():
            out[names[gi]] = (okl[gi], addl[gi])
        return out

    def _stack(self, key: str | None) -> _TermStack:
        stack = self._stacks.get(key)
        if stack is None:
            if key is not None and len(self._stacks) > PLACEMENT_CANDIDATES_KEPT:
                del self._stacks[next(k for k in self._stacks if k is not None)]   # the oldest candidate
            stack = self._stacks[key] = _TermStack(len(self._names), self._cap)
        return stack

    def _project_pairwise(self, usep: np.ndarray, model: Any, batch: Any, dem: np.ndarray, rem: np.ndarray,
                          t: float, end_c: np.ndarray) -> np.ndarray:
        """Project the pair-term blocks ``usep`` with the candidate (rows ``n[g]`` of ``dem`` and ``rem``)
        into ``end_c`` and, where not kept, without it into the base; the blocks projected (a block
        whose predictor gives no terms now, or whose projection is not finite, is left to the caller)."""
        n = self._n
        base = self._stack(None)
        groups: dict[str, list[int]] = {}
        for g in np.flatnonzero(usep).tolist():
            inp = self._pw_inp[g]
            known = self._pw_names[g]
            cname = known.get((model, batch))
            if cname is None:
                cname = known[(model, batch)] = inp.entity_name(model, batch)
            groups.setdefault(cname, []).append(g)
        done = np.zeros_like(usep)
        for cname, members in groups.items():
            stack = self._stack(cname)
            for g in members:
                inp = self._pw_inp[g]
                if not stack.valid[g]:
                    args = inp.terms([*inp.names, cname])
                    if args is None:
                        continue
                    stack.put(g, args)
                if not (base.valid[g] or n[g] == 0):
                    args = inp.terms(inp.names)
                    if args is None:
                        continue
                    base.put(g, args)
                done[g] = True
            for mode in {stack.mode[g] for g in members if done[g]}:
                sel = done & np.array([m == mode for m in stack.mode], dtype=np.bool_)
                status = stack.project(dem, rem, n + 1, n, t, sel, mode, end_c)
                need = sel & ~self._base_ok & (n > 0)
                if need.any():
                    status |= base.project(self._dem, rem, n, n, t, need, mode, self._base)
                    self._base_ok |= need & (status == 0)
                done &= status == 0
        return done
