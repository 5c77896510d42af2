"""E3's serving system: requests, dynamic batching and the policy, on the simulator's engine.

:class:`Dispatcher` is the policy hook of :class:`interfpred.sim.engine.PolicyEngine`, which runs
``n_devices`` simulated GPUs whose batches progress by the simulator's ground truth
(:func:`interfpred.sim.contention.rates`, recomputed on the running set at every event, exact fluid
integration between events); the dispatcher draws each batch's log-normal noise on its solo work
per the GPU spec. Under the phase-structured truth each batch also carries its model's hidden L2
footprint and latency-hiding factor (:mod:`interfpred.sim.operators`), which only the ground truth
and the oracle see; each pass stays one operator.

**Dynamic batching** (shared by all policies): one FIFO queue per model. At every event (arrival,
completion) the dispatcher drops requests that cannot finish in time even alone at batch size 1
(Clockwork's early rejection; they count as missed); forms, for every non-empty queue, the
largest batch (at most ``max_batch``, oldest requests first) whose *solo* latency still meets its
oldest request's deadline; offers these candidates to the policy
(:mod:`interfpred.experiments.scheduling.policies`) in order of that deadline (EDF across models),
launching the first one the policy places; and repeats until nothing is placed. A batch's
deadline is its oldest request's.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from interfpred.constants import TRACKER_FINISH_RTOL
from interfpred.data.profiles import ProfileTable
from interfpred.serving.projection.generic import project_fluid
from interfpred.sim.contention import GpuSpec, rates
from interfpred.sim.engine import PolicyEngine
from interfpred.sim.operators import HiddenFactors

if TYPE_CHECKING:
    from interfpred.experiments.scheduling.policies import Policy

__all__ = ["Batch", "Dispatcher", "project_truth"]


# ---------------------------------------------------------------------------- ground truth
def project_truth(spec: GpuSpec, dem: np.ndarray, rem: np.ndarray, t: float, foot: np.ndarray | None = None,
                  hide: np.ndarray | None = None) -> np.ndarray:
    """Fluid projection with the true rates: end time of every member (footprints and hiding factors optional)."""
    def rates_of(members: np.ndarray) -> np.ndarray:
        return rates(dem[members], spec, footprint_mb=None if foot is None else foot[members],
                     hiding=None if hide is None else hide[members])

    return project_fluid(rates_of, rem, t, rtol=TRACKER_FINISH_RTOL)


# ---------------------------------------------------------------------------- serving state
@dataclass
class Batch:
    """A batch launched on a GPU: its requests, deadline, demand and (true) solo and remaining work."""

    id: int
    model: str
    size: int
    requests: np.ndarray
    deadline: float
    start: float
    demand: np.ndarray
    solo: float
    work: float
    remaining: float
    foot: float = 0.0
    hide: float = 1.0


class Dispatcher:
    """Requests, dynamic batching and a policy over the GPUs of a :class:`~interfpred.sim.engine.PolicyEngine`.

    :attr:`devices` are the engine's (each with its running batches, their true rates and the usage
    counters); :meth:`run` serves one stream of requests through ``policy``.
    """

    def __init__(self, profiles: ProfileTable, spec: GpuSpec, n_devices: int, slo_ms: dict[str, float],
                 rng: np.random.Generator, max_batch: int, hidden: Mapping[str, HiddenFactors] | None = None) -> None:
        self.profiles = profiles
        self.hidden = hidden
        self.spec = spec
        self.limit = spec.max_concurrency
        self.engine = PolicyEngine(spec, n_devices, hidden=hidden is not None)
        self.devices = self.engine.devices
        self.slo = slo_ms
        self.rng = rng
        self.max_batch = max_batch
        self._prof: dict[tuple[str, int], tuple[float, float, float, float]] = {}
        self.batch_sizes: list[int] = []

    def profile(self, model: str, size: int) -> tuple[float, float, float, float]:
        key = (model, size)
        p = self._prof.get(key)
        if p is None:
            v = self.profiles.lookup_arrays([model], [size], gpus=self.spec.name)
            p = (float(v["sm"][0]), float(v["l2"][0]), float(v["dram"][0]), float(v["solo_ms"][0]))
            self._prof[key] = p
        return p

    def hidden_arrays(self, members: list) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Footprints and hiding factors of running batches or ``(model, size)`` candidates (None: fluid)."""
        if self.hidden is None:
            return None, None
        foot, hide = np.empty(len(members)), np.empty(len(members))
        for i, b in enumerate(members):
            m, size = (b.model, b.size) if isinstance(b, Batch) else b
            h = self.hidden[m]
            foot[i], hide[i] = h.footprint_mb(size), h.hiding
        return foot, hide

    def run(self, policy: Policy, arrival: np.ndarray, model: np.ndarray) -> dict[str, Any]:
        """Serve requests arriving at ``arrival`` (sorted) for ``model`` under ``policy``: every request's
        deadline and completion time (NaN: dropped) and the clock when the last batch finished."""
        n = len(arrival)
        self._policy = policy
        self._model = model
        self._deadline = np.array([arrival[i] + self.slo[model[i]] for i in range(n)])
        self._done_at = np.full(n, np.nan)
        self._queues: dict[str, deque[int]] = {m: deque() for m in self.slo}
        self._next_bid = 0
        end = self.engine.run(arrival, self)
        return {"deadline": self._deadline, "done_at": self._done_at, "end_ms": end}

    # -- the engine's policy hook ------------------------------------------------------------------
    def finished(self, device: int, batch: Batch, t: float) -> None:
        """A batch completed: its requests are done."""
        self._done_at[batch.requests] = t
        self._policy.on_finish(device, batch, t)

    def arrive(self, i: int, t: float) -> None:
        """Request ``i`` joins its model's queue."""
        self._queues[self._model[i]].append(i)

    def dispatch(self, t: float) -> None:
        """Drop the hopeless requests, offer each queue's batch to the policy in deadline order, launch."""
        queues, deadline, policy = self._queues, self._deadline, self._policy
        while True:
            cands = []
            for m, q in queues.items():
                while q and deadline[q[0]] < t + self.profile(m, 1)[3]:
                    q.popleft()             # cannot make it even alone: dropped (missed)
                if not q:
                    continue
                dl = deadline[q[0]]
                size = min(len(q), self.max_batch)
                while size > 1 and t + self.profile(m, size)[3] > dl:
                    size -= 1
                cands.append((dl, m, size))
            if not cands:
                break
            cands.sort()
            placed = False
            for dl, m, size in cands:
                gi = policy.place(self._next_bid, m, size, dl, t)
                if gi is None:
                    continue
                q = queues[m]
                reqs = np.array([q.popleft() for _ in range(size)], dtype=np.int64)
                sm, l2, dr, solo = self.profile(m, size)
                work = solo * math.exp(self.spec.sigma * self.rng.standard_normal())
                b = Batch(self._next_bid, m, size, reqs, dl, t, np.array([sm, l2, dr]), solo, work, work)
                if self.hidden is not None:
                    b.foot, b.hide = self.hidden[m].footprint_mb(size), self.hidden[m].hiding
                self._next_bid += 1
                self.engine.launch(gi, b, t)
                self.batch_sizes.append(size)
                policy.on_start(gi, b, t)
                placed = True
                break
            if not placed:
                break
