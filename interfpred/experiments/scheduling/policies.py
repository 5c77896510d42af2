"""E3's policies: where and whether a batch may start (admission and placement).

* ``fifo`` (a): one batch at a time per GPU (Clockwork-like): a batch starts only on an idle GPU.
* ``gpulets`` (b): co-location admitted by gpulets' static prediction: every execution of the
  would-be running set is predicted to take ``solo x max(1, a)`` from its own start, ``a`` the
  :class:`~interfpred.GpuletsModel` on the gpulets map (co-runners combined by ``max``) of that
  whole set; admitted when all meet their deadlines. Coefficients fitted on simulated pairs
  (:func:`~interfpred.experiments.scheduling.pairs.fit_pair_models`).
* ``tracker`` (c): a :class:`~interfpred.Fleet` of :class:`~interfpred.ColocationTracker` with one
  shared RLS warm-started on the same pair data, learning online from every batch that finishes;
  ``calibrated`` (e) is (c) admitting on a :class:`~interfpred.Calibrated` RLS's latency bound.
* ``oracle`` (d): the same deadline check and placement rule as (c), but projecting with the
  ground-truth rates and the true remaining work of the running batches (the candidate's work is
  its profile solo latency). An oracle of *prediction*, not of scheduling.

Every co-location policy runs at most ``spec.max_concurrency`` batches per GPU, always accepts a
batch on an idle GPU, and places among feasible GPUs by the least added projected latency
(:func:`interfpred.serving.placement.least_added_latency`).
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import numpy as np

from interfpred._core.targets import latency_from_prediction
from interfpred.experiments.scheduling.dispatch import Batch, project_truth
from interfpred.features import Static
from interfpred.predictors import GpuletsModel
from interfpred.serving.fleet import Fleet
from interfpred.serving.placement import added_latency, least_added_latency, meets_deadlines

if TYPE_CHECKING:
    from interfpred.experiments.scheduling.dispatch import Dispatcher

__all__ = ["FifoPolicy", "GpuletsPolicy", "OraclePolicy", "Policy", "TrackerPolicy"]


class Policy(abc.ABC):
    """Admission and placement; sees the serving state read-only."""

    name = ""

    def __init__(self, sim: Dispatcher) -> None:
        self.sim = sim

    @abc.abstractmethod
    def place(self, bid: int, model: str, size: int, deadline: float, t: float) -> int | None:
        """The device (its index) to launch batch ``bid`` on now, or None to keep it queued."""

    def on_start(self, g: int, batch: Batch, t: float) -> None:
        pass

    def on_finish(self, g: int, batch: Batch, t: float) -> None:
        pass

    def idle(self) -> int | None:
        """The first idle device, or None."""
        for g, dev in enumerate(self.sim.devices):
            if not dev.running:
                return g
        return None


class FifoPolicy(Policy):
    name = "fifo"

    def place(self, bid, model, size, deadline, t):
        return self.idle()


class GpuletsPolicy(Policy):
    name = "gpulets"

    def __init__(self, sim: Dispatcher, model: GpuletsModel, margin: float) -> None:
        super().__init__(sim)
        self.model = model
        self.margin = margin
        self.ex = Static(feature_map="gpulets", combine="max", target="slowdown")

    def _ends(self, members: list[tuple[np.ndarray, float, float]]) -> np.ndarray:
        dem = np.array([m[0] for m in members])
        a = self.model.predict(self.ex.map_running_set(dem))   # the slowdown, clamped as on every path
        return np.array([m[2] for m in members]) + latency_from_prediction(a, [m[1] for m in members], "slowdown")

    def place(self, bid, model, size, deadline, t):
        idle = self.idle()
        sm, l2, dr, solo = self.sim.profile(model, size)
        options = []
        for g, dev in enumerate(self.sim.devices):
            if len(dev.running) >= self.sim.limit:
                continue
            running = [(b.demand, b.solo, b.start) for b in dev.running]
            with_c = self._ends(running + [(np.array([sm, l2, dr]), solo, t)])
            if not meets_deadlines(t, with_c, [b.deadline for b in dev.running] + [deadline], self.margin):
                continue
            options.append((g, added_latency(t, with_c[-1], with_c[:-1], self._ends(running) if running else ())))
        best = least_added_latency(options)
        return best[0] if best else idle


class TrackerPolicy(Policy):
    name = "tracker"

    def __init__(self, sim: Dispatcher, fleet: Fleet) -> None:
        super().__init__(sim)
        self.fleet = fleet
        self.errors: list[float] = []

    def place(self, bid, model, size, deadline, t):
        g = self.fleet.choose_device((bid, model, size), deadline, t)
        if g is None:
            return self.idle()
        return int(g)

    def on_start(self, g, batch, t):
        self.fleet.start(str(g), batch.id, batch.model, batch.size, t, deadline=max(batch.deadline, t))

    def on_finish(self, g, batch, t):
        res = self.fleet.finish(batch.id, t)
        self.errors.append(abs(res.relative_error))


class OraclePolicy(Policy):
    name = "oracle"

    def place(self, bid, model, size, deadline, t):
        sm, l2, dr, solo = self.sim.profile(model, size)
        spec = self.sim.spec
        options = []
        for g, dev in enumerate(self.sim.devices):
            if len(dev.running) >= self.sim.limit:
                continue
            k = len(dev.running)
            dem = np.empty((k + 1, 3))
            rem = np.empty(k + 1)
            foot, hide = self.sim.hidden_arrays(dev.running + [(model, size)])
            for a, b in enumerate(dev.running):
                dem[a] = b.demand
                rem[a] = b.remaining
            dem[k] = (sm, l2, dr)
            rem[k] = solo
            with_c = project_truth(spec, dem, rem, t, foot, hide)
            if not meets_deadlines(t, with_c, [b.deadline for b in dev.running] + [deadline], 0.0):
                continue
            base = project_truth(spec, dem[:k], rem[:k], t, None if foot is None else foot[:k],
                                 None if hide is None else hide[:k]) if k else ()
            options.append((g, added_latency(t, with_c[k], with_c[:k], base)))
        best = least_added_latency(options)
        return best[0] if best else self.idle()
