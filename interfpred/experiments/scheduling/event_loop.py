"""E3's serving system: requests, dynamic batching and ground-truth execution on simulated GPUs.

:class:`EventLoop` runs on ``n_devices`` simulated GPUs whose batches progress by the simulator's
ground truth (:func:`interfpred.sim.contention.rates`, the truth rates the simulator's engine
uses, recomputed on the running set at every event, exact fluid integration between events,
log-normal noise on each batch's solo work per the GPU spec). Under the phase-structured truth
each batch also carries its model's hidden L2 footprint and latency-hiding factor
(:mod:`interfpred.sim.operators`), which only the ground truth and the oracle see; each pass stays
one operator.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from interfpred.constants import E3_FINISH_TIME_RTOL, SIM_FINISH_RTOL, TRACKER_FINISH_RTOL
from interfpred.data.profiles import ProfileTable
from interfpred.serving.projection.generic import project_fluid
from interfpred.sim.contention import GpuSpec, rates
from interfpred.sim.operators import HiddenFactors

if TYPE_CHECKING:
    from interfpred.experiments.scheduling.policies import Policy

__all__ = ["Batch", "DeviceState", "EventLoop", "project_truth"]


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


@dataclass
class DeviceState:
    """One simulated GPU: its running batches, their true rates and the usage counters."""

    running: list[Batch] = field(default_factory=list)
    rates: np.ndarray = field(default_factory=lambda: np.empty(0))
    busy_since: float | None = None
    busy_ms: float = 0.0
    conc_area: float = 0.0
    max_running: int = 0


class EventLoop:
    """The event loop: arrivals, dynamic batching, ground-truth execution."""

    def __init__(self, profiles: ProfileTable, spec: GpuSpec, n_devices: int, slo_ms: dict[str, float],
                 rng: np.random.Generator, max_batch: int, hidden: Mapping[str, HiddenFactors] | None = None) -> None:
        self.profiles = profiles
        self.hidden = hidden
        self.spec = spec
        self.limit = spec.max_concurrency
        self.devices = [DeviceState() for _ in range(n_devices)]
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

    def _set_rates(self, device: DeviceState) -> None:
        if device.running:
            foot, hide = self.hidden_arrays(device.running)
            device.rates = rates(np.array([b.demand for b in device.running]), self.spec, footprint_mb=foot,
                                 hiding=hide)
        else:
            device.rates = np.empty(0)

    def run(self, policy: Policy, arrival: np.ndarray, model: np.ndarray) -> dict[str, Any]:
        n = len(arrival)
        deadline = np.array([arrival[i] + self.slo[model[i]] for i in range(n)])
        done_at = np.full(n, np.nan)
        queues: dict[str, deque[int]] = {m: deque() for m in self.slo}
        p = 0
        t = 0.0
        next_bid = 0
        while True:
            tc = math.inf
            for dev in self.devices:
                for b, r in zip(dev.running, dev.rates):
                    tc = min(tc, t + b.remaining / r)
            ta = arrival[p] if p < n else math.inf
            if tc == math.inf and ta == math.inf:
                break
            t_new = min(tc, ta)
            dt = t_new - t
            for dev in self.devices:
                k = len(dev.running)
                if k:
                    dev.conc_area += k * dt
                for b, r in zip(dev.running, dev.rates):
                    b.remaining -= r * dt
            t = t_new
            # completions
            for g, dev in enumerate(self.devices):
                fin = [b for b, r in zip(dev.running, dev.rates)
                       if b.remaining <= SIM_FINISH_RTOL * b.work or b.remaining / r <= E3_FINISH_TIME_RTOL * max(t, 1.0)]
                if not fin:
                    continue
                for b in fin:
                    dev.running.remove(b)
                    done_at[b.requests] = t
                    policy.on_finish(g, b, t)
                if not dev.running:
                    assert dev.busy_since is not None  # set when its first batch started
                    dev.busy_ms += t - dev.busy_since
                    dev.busy_since = None
                self._set_rates(dev)
            while p < n and arrival[p] <= t:
                queues[model[p]].append(p)
                p += 1
            # dispatch
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
                    gi = policy.place(next_bid, m, size, dl, t)
                    if gi is None:
                        continue
                    q = queues[m]
                    reqs = np.array([q.popleft() for _ in range(size)], dtype=np.int64)
                    sm, l2, dr, solo = self.profile(m, size)
                    work = solo * math.exp(self.spec.sigma * self.rng.standard_normal())
                    b = Batch(next_bid, m, size, reqs, dl, t, np.array([sm, l2, dr]), solo, work, work)
                    if self.hidden is not None:
                        b.foot, b.hide = self.hidden[m].footprint_mb(size), self.hidden[m].hiding
                    next_bid += 1
                    dev = self.devices[gi]
                    if not dev.running:
                        dev.busy_since = t
                    dev.running.append(b)
                    dev.max_running = max(dev.max_running, len(dev.running))
                    self._set_rates(dev)
                    self.batch_sizes.append(size)
                    policy.on_start(gi, b, t)
                    placed = True
                    break
                if not placed:
                    break
        return {"deadline": deadline, "done_at": done_at, "end_ms": t}
