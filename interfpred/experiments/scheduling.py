"""E3: SLO-aware serving on the ground-truth simulator, with and without co-location.

A request-level serving system runs on ``E3_GPUS`` simulated GPUs whose executions progress by
the simulator's ground truth (:func:`interfpred.sim.contention` rates recomputed on the running
set at every event, exact fluid integration between events, log-normal noise on each batch's
solo work per the GPU spec). Everything is deterministic given the seed.  Under the
phase-structured truth (``ctx.truth == "phases"``, the default of ``interfpred reproduce``) each
batch also carries its model's hidden L2 footprint and latency-hiding factor
(:mod:`interfpred.sim.operators`), which only the ground truth and the oracle see; each pass stays
one operator (the synthetic zoo has no phases).

**Requests.** Poisson arrivals of single requests for the six zoo models, equal shares, drawn by
:func:`interfpred.sim.workload.poisson_arrivals` with batch size 1: the load ``rho`` is the
offered utilisation per GPU *if every request ran alone at batch size 1*,
``sum_m lambda_m solo_m(1) / n_gpus``; dynamic batching serves more than ``rho = 1``.

**SLO.** Request of model ``m`` must complete within ``E3_SLO_FACTOR`` (5) times the solo
latency of ``m`` at batch size ``E3_SLO_BATCH`` (8) after its arrival (a fixed per-model SLO,
the solo latency of a typical batch; resnet50: 36.7 ms, vgg19: 113 ms).

**Dynamic batching (shared by all policies).** One FIFO queue per model. At every event
(arrival, completion) the dispatcher: drops requests that cannot finish in time even alone at
batch size 1 (Clockwork's early rejection; they count as missed); forms, for every non-empty
queue, the largest batch (at most ``E3_MAX_BATCH``, 32, oldest requests first) whose *solo*
latency still meets its oldest request's deadline; offers these candidates to the policy in
order of that deadline (EDF across models), launching the first one the policy places; and
repeats until nothing is placed. A batch's deadline is its oldest request's.

**Policies** (they differ only in where and whether a batch may start):

* ``fifo`` (a): one batch at a time per GPU (Clockwork-like): a batch starts only on an idle GPU.
* ``gpulets`` (b): co-location admitted by gpulets' static prediction: every execution of the
  would-be running set (running batches and the candidate) is predicted to take
  ``solo x max(1, a)`` from its own start, ``a`` the :class:`~interfpred.GpuletsModel` on the gpulets map
  (co-runners combined by ``max``, gpulets' pairwise worst case) of that whole set; admitted
  when all meet their deadlines. The coefficients are **fitted on pair data from the
  simulator** (every pair of the six models at batch sizes 1..32 in powers of two, started
  together; the published RTX 2080 Ti coefficients describe another GPU).
* ``tracker`` (c): :class:`~interfpred.Fleet` of :class:`~interfpred.ColocationTracker`
  (default extractor: time-weighted rich map, target rate) with one shared
  :class:`~interfpred.RLS` that is warm-started by ``fit`` on the *same* pair data (time-weighted
  features of the pair trace) and then learns online from every batch that finishes.
* ``oracle`` (d): the same deadline check and placement rule as (c), but the projection uses the
  ground-truth rates and the true remaining work of the running batches (the candidate's work
  is its profile solo latency: the oracle does not see the noise of a batch not yet launched).
  It is an oracle of *prediction*, not of scheduling: it places greedily by the same rule, so
  another policy can occasionally serve slightly more (the bound is not strict).
* ``calibrated`` (e): (c) with a :class:`~interfpred.Calibrated` RLS (fitted on the same pair
  data, then learning online) whose tracker projections use the ``E3_QUANTILE`` (0.99) latency
  bound of every batch instead of the mean, with margin ``E3_BOUND_MARGIN`` (0).

Every co-location policy runs at most ``spec.max_concurrency`` (4) batches per GPU, always
accepts a batch on an idle GPU, and places among feasible GPUs by the least added projected
latency (:mod:`interfpred.fleet`); (b) and (c) use the safety margin ``E3_MARGIN`` on projected
remaining times, the oracle none.

**Metrics** per (policy, load): SLO attainment (requests completed within their SLO / all
requests; dropped count as missed), p50 / p99 latency of completed requests, goodput
(requests within SLO per second, all GPUs), GPU busy fraction (share of time a GPU runs at
least one batch, averaged over GPUs, from the first arrival to the last completion), mean batch
size and mean concurrency, and for (c) the mean absolute relative error of the tracker's
latency prediction of each finished batch (before learning from it).
"""

from __future__ import annotations

import abc
import math
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interfpred.constants import (
    E3_BOUND_MARGIN,
    E3_BOUND_SCALE,
    E3_BOUND_WINDOW,
    E3_FULL_LOADS,
    E3_FULL_REQUESTS,
    E3_GPUS,
    E3_MARGIN,
    E3_MAX_BATCH,
    E3_PAIR_BATCHES,
    E3_QUANTILE,
    E3_QUICK_LOADS,
    E3_QUICK_REQUESTS,
    E3_SLO_BATCH,
    E3_SLO_FACTOR,
    SIM_FINISH_RTOL,
)
from interfpred.errors import InterfpredError
from interfpred.experiments.bounds import bound_goal, bound_verdict, fit_calibrated_pair_model
from interfpred.experiments.report import ReproduceContext, Section, markdown_table, text_table
from interfpred.features import Static, TimeWeighted, transform_many
from interfpred.fleet import Fleet
from interfpred.predictors import RLS, GpuletsModel
from interfpred.profiles import ProfileTable
from interfpred.sim.contention import GpuSpec, get_gpu_spec, rates_kernel
from interfpred.sim.engine import simulate
from interfpred.sim.operators import HiddenFactors, PhaseZoo, Program
from interfpred.sim.orion import synthetic_phase_zoo
from interfpred.sim.phased import simulate_phased
from interfpred.sim.workload import poisson_arrivals
from interfpred.sim.zoo import zoo_profiles
from interfpred.tracker import ColocationTracker

_NO_MPL = "_(figure skipped: matplotlib is not installed; `pip install \".[plot]\"` draws it)_"

__all__ = ["POLICIES", "ServingResult", "fit_pair_models", "run_e3", "simulate_serving"]

#: Policy names in report order: (a), (b), (c), (d), (e).
POLICIES = ("fifo", "gpulets", "tracker", "oracle", "calibrated")
_LABELS = {"fifo": "(a) one at a time, FIFO", "gpulets": "(b) gpulets static", "tracker": "(c) tracker + RLS",
           "oracle": "(d) oracle", "calibrated": f"(e) tracker, {E3_QUANTILE:g} bound"}


# ---------------------------------------------------------------------------- ground truth helper
class _Truth:
    """Ground-truth rates of a running set on one GPU type (compiled kernel, preallocated).

    With footprints and hiding factors (the phase-structured truth's hidden per-model factors,
    one operator per pass) the pollution strength grows with the footprint overflow and each
    fair share ``r`` becomes the progress rate ``r ** h``, as in :mod:`interfpred.sim.phased`.
    """

    def __init__(self, spec: GpuSpec, cap: int) -> None:
        self.spec = spec
        self._buf = [np.empty(cap) for _ in range(3)]
        self._dem = np.empty((cap, 3))
        self._frozen = np.empty(cap, dtype=np.bool_)

    def rates(self, dem: np.ndarray, foot: np.ndarray | None = None, hide: np.ndarray | None = None) -> np.ndarray:
        k = dem.shape[0]
        out = np.empty(k)
        if k == 0:
            return out
        s = self.spec
        theta = s.theta
        if foot is not None:
            over = min(1.0, max(0.0, float(np.sum(foot)) / s.l2_mb - 1.0))
            theta = s.theta * (1.0 + s.kappa * over)
        sm, l2, dr = (np.ascontiguousarray(dem[:, j]) for j in range(3))
        rates_kernel(sm, l2, dr, k, s.capacity_sm, s.capacity_l2, s.capacity_dram, theta, s.epsilon,
                     self._dem, out, self._frozen)
        if hide is not None:
            out = out ** hide
        return out


def _project_truth(truth: _Truth, dem: np.ndarray, rem: np.ndarray, t: float, foot: np.ndarray | None = None,
                   hide: np.ndarray | None = None) -> np.ndarray:
    """Fluid projection with the true rates: end time of every member."""
    n = dem.shape[0]
    end = np.empty(n)
    idx = np.arange(n)
    r = rem.copy()
    while idx.size:
        rate = truth.rates(dem[idx], None if foot is None else foot[idx], None if hide is None else hide[idx])
        tau = r[idx] / rate
        tmin = float(tau.min())
        done = tau <= tmin * (1.0 + 1e-12)
        end[idx[done]] = t + tmin
        r[idx] -= rate * tmin
        idx = idx[~done]
        t += tmin
    return end


# ---------------------------------------------------------------------------- serving state
@dataclass
class _Batch:
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
class _Gpu:
    running: list[_Batch] = field(default_factory=list)
    rates: np.ndarray = field(default_factory=lambda: np.empty(0))
    busy_since: float | None = None
    busy_ms: float = 0.0
    conc_area: float = 0.0
    max_running: int = 0


class _Policy(abc.ABC):
    """Admission and placement; sees the serving state read-only."""

    name = ""

    def __init__(self, sim: _Serving) -> None:
        self.sim = sim

    @abc.abstractmethod
    def place(self, bid: int, model: str, size: int, deadline: float, t: float) -> int | None:
        """The GPU to launch batch ``bid`` on now, or None to keep it queued."""

    def on_start(self, g: int, batch: _Batch, t: float) -> None:
        pass

    def on_finish(self, g: int, batch: _Batch, t: float) -> None:
        pass

    def _idle(self) -> int | None:
        for g, gpu in enumerate(self.sim.gpus):
            if not gpu.running:
                return g
        return None


class _Fifo(_Policy):
    name = "fifo"

    def place(self, bid, model, size, deadline, t):
        return self._idle()


class _Gpulets(_Policy):
    name = "gpulets"

    def __init__(self, sim: _Serving, model: GpuletsModel, margin: float) -> None:
        super().__init__(sim)
        self.model = model
        self.margin = margin
        self.ex = Static(feature_map="gpulets", combine="max", target="slowdown")

    def _ends(self, members: list[tuple[np.ndarray, float, float]]) -> np.ndarray:
        dem = np.array([m[0] for m in members])
        a = self.model.predict(self.ex.map_running_set(dem))
        return np.array([m[2] + m[1] * max(1.0, float(x)) for m, x in zip(members, a)])

    def place(self, bid, model, size, deadline, t):
        idle = self._idle()
        sm, l2, dr, solo = self.sim.profile(model, size)
        best, best_added = None, math.inf
        f = 1.0 + self.margin
        for g, gpu in enumerate(self.sim.gpus):
            if len(gpu.running) >= self.sim.limit:
                continue
            run = [(b.demand, b.solo, b.start) for b in gpu.running]
            with_c = self._ends(run + [(np.array([sm, l2, dr]), solo, t)])
            ok = all(t + (e - t) * f <= b.deadline for e, b in zip(with_c, gpu.running))
            ok = ok and t + (with_c[-1] - t) * f <= deadline
            if not ok:
                continue
            added = with_c[-1] - t
            if run:
                added += float(np.sum(with_c[:-1] - self._ends(run)))
            if added < best_added:
                best, best_added = g, added
        return best if best is not None else idle


class _Tracker(_Policy):
    name = "tracker"

    def __init__(self, sim: _Serving, fleet: Fleet) -> None:
        super().__init__(sim)
        self.fleet = fleet
        self.errors: list[float] = []

    def place(self, bid, model, size, deadline, t):
        g = self.fleet.choose_gpu((bid, model, size), deadline, t)
        if g is None:
            return self._idle()
        return int(g)

    def on_start(self, g, batch, t):
        self.fleet.start(str(g), batch.id, batch.model, batch.size, t, deadline=max(batch.deadline, t))

    def on_finish(self, g, batch, t):
        res = self.fleet.finish(batch.id, t)
        self.errors.append(abs(res.relative_error))


class _Oracle(_Policy):
    name = "oracle"

    def place(self, bid, model, size, deadline, t):
        sm, l2, dr, solo = self.sim.profile(model, size)
        truth = self.sim.truth
        best, best_added = None, math.inf
        for g, gpu in enumerate(self.sim.gpus):
            if len(gpu.running) >= self.sim.limit:
                continue
            k = len(gpu.running)
            dem = np.empty((k + 1, 3))
            rem = np.empty(k + 1)
            foot, hide = self.sim.hidden_arrays(gpu.running + [(model, size)])
            for a, b in enumerate(gpu.running):
                dem[a] = b.demand
                rem[a] = b.remaining
            dem[k] = (sm, l2, dr)
            rem[k] = solo
            with_c = _project_truth(truth, dem, rem, t, foot, hide)
            if with_c[k] > deadline or any(e > b.deadline for e, b in zip(with_c[:k], gpu.running)):
                continue
            added = with_c[k] - t
            if k:
                added += float(np.sum(with_c[:k] - _project_truth(
                    truth, dem[:k], rem[:k], t, None if foot is None else foot[:k], None if hide is None else hide[:k])))
            if added < best_added:
                best, best_added = g, added
        return best if best is not None else self._idle()


class _Serving:
    """The event loop: arrivals, dynamic batching, ground-truth execution."""

    def __init__(self, profiles: ProfileTable, spec: GpuSpec, n_gpus: int, slo_ms: dict[str, float],
                 rng: np.random.Generator, max_batch: int, hidden: Mapping[str, HiddenFactors] | None = None) -> None:
        self.profiles = profiles
        self.hidden = hidden
        self.spec = spec
        self.limit = spec.max_concurrency
        self.gpus = [_Gpu() for _ in range(n_gpus)]
        self.slo = slo_ms
        self.rng = rng
        self.max_batch = max_batch
        self.truth = _Truth(spec, max(8, spec.max_concurrency + 1))
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
            m, size = (b.model, b.size) if isinstance(b, _Batch) else b
            h = self.hidden[m]
            foot[i], hide[i] = h.footprint_mb(size), h.hiding
        return foot, hide

    def _set_rates(self, gpu: _Gpu) -> None:
        if gpu.running:
            foot, hide = self.hidden_arrays(gpu.running)
            gpu.rates = self.truth.rates(np.array([b.demand for b in gpu.running]), foot, hide)
        else:
            gpu.rates = np.empty(0)

    def run(self, policy: _Policy, arrival: np.ndarray, model: np.ndarray) -> dict[str, Any]:
        n = len(arrival)
        deadline = np.array([arrival[i] + self.slo[model[i]] for i in range(n)])
        done_at = np.full(n, np.nan)
        queues: dict[str, deque[int]] = {m: deque() for m in self.slo}
        p = 0
        t = 0.0
        next_bid = 0
        while True:
            tc = math.inf
            for gpu in self.gpus:
                for b, r in zip(gpu.running, gpu.rates):
                    tc = min(tc, t + b.remaining / r)
            ta = arrival[p] if p < n else math.inf
            if tc == math.inf and ta == math.inf:
                break
            t_new = min(tc, ta)
            dt = t_new - t
            for gpu in self.gpus:
                k = len(gpu.running)
                if k:
                    gpu.conc_area += k * dt
                for b, r in zip(gpu.running, gpu.rates):
                    b.remaining -= r * dt
            t = t_new
            # completions
            for g, gpu in enumerate(self.gpus):
                fin = [b for b, r in zip(gpu.running, gpu.rates)
                       if b.remaining <= SIM_FINISH_RTOL * b.work or b.remaining / r <= 1e-12 * max(t, 1.0)]
                if not fin:
                    continue
                for b in fin:
                    gpu.running.remove(b)
                    done_at[b.requests] = t
                    policy.on_finish(g, b, t)
                if not gpu.running:
                    assert gpu.busy_since is not None  # set when its first batch started
                    gpu.busy_ms += t - gpu.busy_since
                    gpu.busy_since = None
                self._set_rates(gpu)
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
                    b = _Batch(next_bid, m, size, reqs, dl, t, np.array([sm, l2, dr]), solo, work, work)
                    if self.hidden is not None:
                        b.foot, b.hide = self.hidden[m].footprint_mb(size), self.hidden[m].hiding
                    next_bid += 1
                    gpu = self.gpus[gi]
                    if not gpu.running:
                        gpu.busy_since = t
                    gpu.running.append(b)
                    gpu.max_running = max(gpu.max_running, len(gpu.running))
                    self._set_rates(gpu)
                    self.batch_sizes.append(size)
                    policy.on_start(gi, b, t)
                    placed = True
                    break
                if not placed:
                    break
        return {"deadline": deadline, "done_at": done_at, "end_ms": t}


# ---------------------------------------------------------------------------- public
@dataclass
class ServingResult:
    """Outcome of one serving simulation (one policy, one load)."""

    policy: str
    load: float
    requests: int
    attainment: float
    p50_ms: float
    p99_ms: float
    goodput_rps: float
    busy: float
    dropped: float
    mean_batch: float
    mean_concurrency: float
    max_concurrency: int = 0
    tracker_error: float | None = None
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in self.__dict__.items()}


def fit_pair_models(profiles: ProfileTable, spec: GpuSpec, *, seed: int = 0,
                    batches: tuple[int, ...] = E3_PAIR_BATCHES,
                    hidden: Mapping[str, HiddenFactors] | None = None) -> tuple[GpuletsModel, RLS]:
    """gpulets coefficients and a warm RLS (rich, time-weighted, rate) fitted on simulated pairs.

    Every unordered pair of (model, batch size) over the zoo's models and ``batches`` runs on its
    own GPU, both started at 0, under the ground truth with noise; gpulets is fitted on the
    static gpulets map against slowdown, the RLS on the time-weighted rich map against rate.

    Examples
    --------
    >>> g, r = fit_pair_models(zoo_profiles("l4"), get_gpu_spec("l4"), batches=(1, 8))
    >>> g.coefficients_.shape, r.n_seen_ > 0
    ((5,), True)
    """
    keys = [(m, b) for m in profiles.models for b in batches]
    model, batch, gpu = [], [], []
    for i in range(len(keys)):
        for j in range(i, len(keys)):
            pair = f"p{i}_{j}"
            for m, b in (keys[i], keys[j]):
                model.append(m)
                batch.append(b)
                gpu.append(pair)
    if hidden is None:
        res = simulate(model, batch, np.zeros(len(model)), gpu=gpu, spec=spec, profiles=profiles, queue=False,
                       seed=seed)
    else:  # the same passes as one operator each, with the hidden factors (the phase-structured truth)
        p = profiles.lookup_arrays([m for m, _ in keys], [b for _, b in keys], gpus=spec.name)
        progs = {k: Program([p["solo_ms"][i]], [[p["sm"][i], p["l2"][i], p["dram"][i]]], [-1])
                 for i, k in enumerate(keys)}
        zoo = PhaseZoo.from_programs("synthetic", spec.name, progs, hidden={m: hidden[m] for m, _ in keys})
        res = simulate_phased(model, batch, np.zeros(len(model)), gpu=gpu, spec=spec, zoo=zoo, queue=False,
                              seed=seed)
    static, tw = transform_many([Static(feature_map="gpulets", combine="max", target="slowdown"),
                                 TimeWeighted(feature_map="rich", target="rate")], res.trace, profiles)
    g = GpuletsModel(clip=True)
    g.fit(static.X, static.y)
    r = RLS()
    r.fit(tw.X, tw.y)
    return g, r


def simulate_serving(policy: str, load: float, *, requests: int, seed: int = 0, gpu: str | GpuSpec = "l4",
                     n_gpus: int = E3_GPUS, profiles: ProfileTable | None = None,
                     models: tuple[str, ...] | None = None, slo_factor: float = E3_SLO_FACTOR,
                     slo_batch: int = E3_SLO_BATCH, max_batch: int = E3_MAX_BATCH, margin: float = E3_MARGIN,
                     pair_models: tuple[GpuletsModel, RLS] | None = None,
                     hidden: Mapping[str, HiddenFactors] | None = None,
                     calibrated: Any = None, quantile: float = E3_QUANTILE) -> ServingResult:
    """Serve ``requests`` Poisson requests at ``load`` with one policy; see the module docstring.

    Parameters
    ----------
    policy
        ``"fifo"``, ``"gpulets"``, ``"tracker"`` or ``"oracle"``.
    load
        Offered utilisation per GPU at batch size 1 (``rho`` of ``poisson_arrivals``).
    requests
        Number of requests.
    seed
        Seeds the arrivals (the same for every policy) and the noise.
    pair_models
        ``fit_pair_models`` output to reuse (fitted here when omitted and needed); the RLS is
        cloned through its state, never modified.
    hidden
        Hidden per-model factors (L2 footprint, latency hiding) of the phase-structured truth,
        e.g. ``synthetic_phase_zoo(gpu).hidden``; None runs the fluid truth.  Policies other than
        the oracle never see them.
    calibrated, quantile
        Policy (e): the :class:`~interfpred.Calibrated` pair model
        (:func:`interfpred.experiments.bounds.fit_calibrated_pair_model`, fitted here when
        omitted; copied, never modified) and the latency quantile the tracker admits on.

    Examples
    --------
    >>> r = simulate_serving("fifo", 0.5, requests=200, seed=1)
    >>> 0.0 <= r.attainment <= 1.0, r.mean_concurrency <= 1.0
    (True, True)
    """
    if policy not in POLICIES:
        raise InterfpredError(f"policy {policy!r} is not one of {', '.join(POLICIES)}")
    spec = get_gpu_spec(gpu)
    profiles = zoo_profiles(spec.name) if profiles is None else profiles
    models = tuple(profiles.models) if models is None else tuple(models)
    if not (isinstance(requests, int) and requests > 0):
        raise InterfpredError(f"requests {requests!r} must be a positive integer")
    slo = {m: slo_factor * float(profiles.lookup_arrays([m], [slo_batch], gpus=spec.name)["solo_ms"][0])
           for m in models}
    arr = poisson_arrivals(list(models), rho=load, executions=requests, profiles=profiles, spec=spec,
                           batch_sizes={1: 1.0}, n_devices=n_gpus, seed=seed)
    sim = _Serving(profiles, spec, n_gpus, slo, np.random.default_rng([seed, 1]), max_batch, hidden)
    pol: _Policy
    if policy in ("gpulets", "tracker") and pair_models is None:
        pair_models = fit_pair_models(profiles, spec, seed=seed, hidden=hidden)
    if policy == "calibrated":
        cal = fit_calibrated_pair_model(profiles, spec, seed=seed, quantiles=(quantile,), scale=E3_BOUND_SCALE,
                                        window=E3_BOUND_WINDOW, hidden=hidden) if calibrated is None else calibrated
        shared = type(cal).from_state(cal.to_state())
        fleet = Fleet({str(g): ColocationTracker(profiles, shared, gpu=spec.name) for g in range(n_gpus)},
                      margin=E3_BOUND_MARGIN, max_running=spec.max_concurrency, quantile=quantile)
        pol = _Tracker(sim, fleet)
    elif policy == "fifo":
        pol = _Fifo(sim)
    elif policy == "gpulets":
        assert pair_models is not None
        pol = _Gpulets(sim, pair_models[0], margin)
    elif policy == "tracker":
        assert pair_models is not None
        warm = pair_models[1]
        shared = type(warm).from_state(warm.to_state())
        fleet = Fleet({str(g): ColocationTracker(profiles, shared, gpu=spec.name) for g in range(n_gpus)},
                      margin=margin, max_running=spec.max_concurrency)
        pol = _Tracker(sim, fleet)
    else:
        pol = _Oracle(sim)
    t0 = time.perf_counter()
    out = sim.run(pol, arr.time_ms, arr.model.astype(str))
    wall = time.perf_counter() - t0
    done, dl = out["done_at"], out["deadline"]
    lat = done - arr.time_ms
    ok = np.isfinite(done) & (done <= dl * (1 + 1e-12))
    completed = lat[np.isfinite(lat)]
    span = max(out["end_ms"] - float(arr.time_ms[0]), 1e-9)
    busy = float(np.mean([g.busy_ms for g in sim.gpus])) / span
    conc = float(np.sum([g.conc_area for g in sim.gpus]) / max(np.sum([g.busy_ms for g in sim.gpus]), 1e-9))
    err = float(np.mean(pol.errors)) if isinstance(pol, _Tracker) and pol.errors else None
    return ServingResult(policy=policy, load=float(load), requests=requests, attainment=float(ok.mean()),
                         p50_ms=float(np.percentile(completed, 50)) if completed.size else math.nan,
                         p99_ms=float(np.percentile(completed, 99)) if completed.size else math.nan,
                         goodput_rps=float(ok.sum()) / span * 1000.0, busy=busy,
                         dropped=float(np.mean(~np.isfinite(done))),
                         mean_batch=float(np.mean(sim.batch_sizes)) if sim.batch_sizes else 0.0,
                         mean_concurrency=conc, max_concurrency=max(g.max_running for g in sim.gpus),
                         tracker_error=err, wall_s=wall)


def _goals(results: dict[str, list[ServingResult]], loads: list[float]) -> dict[str, Any]:
    """Where (c) holds >= 99% while (a) is below 90%, and (c)'s goodput against (d)'s there."""
    rows = []
    for i, load in enumerate(loads):
        a, c, d = results["fifo"][i], results["tracker"][i], results["oracle"][i]
        ratio = c.goodput_rps / d.goodput_rps if d.goodput_rps > 0 else math.nan
        rows.append({"load": load, "fifo": a.attainment, "tracker": c.attainment, "goodput_ratio": ratio,
                     "met": bool(a.attainment < 0.90 and c.attainment >= 0.99 and ratio >= 0.90)})
    met = [r for r in rows if r["met"]]
    return {"met": bool(met), "loads_met": [r["load"] for r in met], "per_load": rows}


def run_e3(ctx: ReproduceContext) -> Section:
    """Section E3 of ``interfpred reproduce``: SLO attainment of the four policies across loads.

    Writes ``e3_slo_attainment.png`` into ``ctx.out_dir``; ``Section.data`` holds every number.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from interfpred.experiments.report import ReproduceContext
    >>> sec = run_e3(ReproduceContext(pathlib.Path(tempfile.mkdtemp()), quick=True))  # doctest: +SKIP
    """
    small = ctx.executions is not None  # the tests' size knob: few requests, the quick loads
    loads = list(E3_QUICK_LOADS if (ctx.quick or small) else E3_FULL_LOADS)
    requests = ctx.executions if ctx.executions is not None else (
        E3_QUICK_REQUESTS if ctx.quick else E3_FULL_REQUESTS)
    spec = get_gpu_spec(ctx.gpu)
    profiles = zoo_profiles(spec.name)
    hidden = synthetic_phase_zoo(spec.name).hidden if ctx.truth == "phases" else None
    ctx.progress("E3: fitting gpulets and the warm RLS on simulated pairs")
    pair = fit_pair_models(profiles, spec, seed=ctx.seed, batches=E3_PAIR_BATCHES, hidden=hidden)
    cal = fit_calibrated_pair_model(profiles, spec, seed=ctx.seed, batches=E3_PAIR_BATCHES, quantiles=(E3_QUANTILE,),
                                    scale=E3_BOUND_SCALE, window=E3_BOUND_WINDOW, hidden=hidden)
    results: dict[str, list[ServingResult]] = {p: [] for p in POLICIES}
    for load in loads:
        ctx.progress(f"E3: serving {requests} requests at load {load:g} with {len(POLICIES)} policies")
        for pol in POLICIES:
            results[pol].append(simulate_serving(pol, load, requests=requests, seed=ctx.seed, profiles=profiles,
                                                 gpu=spec, pair_models=pair, hidden=hidden, calibrated=cal))
    goals = _goals(results, loads)
    header = ["load", "policy", "SLO attain.", "p50 ms", "p99 ms", "goodput req/s", "GPU busy", "dropped",
              "mean batch", "mean conc."]
    rows = []
    for i, load in enumerate(loads):
        for pol in POLICIES:
            r = results[pol][i]
            rows.append([f"{load:g}", _LABELS[pol], r.attainment, r.p50_ms, r.p99_ms, r.goodput_rps, r.busy,
                         r.dropped, r.mean_batch, r.mean_concurrency])
    fig = _plot(ctx, loads, results)
    err = [r.tracker_error for r in results["tracker"]]
    verdict = _verdict(goals) + "\n\n" + bound_verdict(bound := bound_goal(results, loads))
    truth = ("phase-structured ground truth with the synthetic zoo's hidden per-model L2 footprints and latency "
             "hiding, one operator per pass: the serving simulator does not run multi-operator phases"
             if hidden is not None else "fluid ground-truth contention on the synthetic zoo's profiles")
    setup = (f"{E3_GPUS} simulated {spec.name.upper()} GPUs ({truth}; noise sigma={spec.sigma}), six zoo models, "
             f"{requests} Poisson requests per run, SLO = {E3_SLO_FACTOR:g} x solo latency at batch "
             f"{E3_SLO_BATCH}, dynamic batching up to {E3_MAX_BATCH}, at most {spec.max_concurrency} batches per GPU, "
             f"margin {E3_MARGIN:g} for (b) and (c); (e) is (c) admitting on the {E3_QUANTILE:g} latency bound of a "
             f"Calibrated RLS (ACI, {E3_BOUND_SCALE} scale, window {E3_BOUND_WINDOW}, fitted on the same pairs), margin "
             f"{E3_BOUND_MARGIN:g}; load = offered utilisation per GPU at batch size 1. "
             "See interfpred/experiments/scheduling.py for the exact rules.")
    figure = f"![SLO attainment against load]({fig})" if fig is not None else _NO_MPL
    md = "\n\n".join([setup, markdown_table(header, rows), figure,
                      "Tracker's mean absolute relative latency error per finished batch (before learning), "
                      "per load: " + ", ".join(f"{e:.3f}" for e in err if e is not None), verdict])
    terminal = "\n".join([setup, "", text_table(header, rows), "", verdict])
    data = {"loads": loads, "requests": requests, "seed": ctx.seed, "quick": ctx.quick, "truth": ctx.truth,
            "config": {"gpus": E3_GPUS, "slo_factor": E3_SLO_FACTOR, "slo_batch": E3_SLO_BATCH,
                       "max_batch": E3_MAX_BATCH, "margin": E3_MARGIN, "gpu": spec.name},
            "results": {p: [r.as_dict() for r in results[p]] for p in POLICIES}, "goals": goals,
            "bound_goal": bound}
    return Section(title="E3: SLO-aware scheduling with co-location", markdown=md, terminal=terminal,
                   figures=[fig] if fig is not None else [], data=data)


def _verdict(goals: dict[str, Any]) -> str:
    if goals["met"]:
        return (f"Goal met at load(s) {', '.join(f'{x:g}' for x in goals['loads_met'])}: (c) holds >= 99% SLO "
                "attainment where (a) falls below 90%, with goodput within 10% of the oracle (d).")
    lines = ["Goal NOT met at any measured load ((c) >= 99% where (a) < 90%, goodput within 10% of (d)); per load:"]
    for r in goals["per_load"]:
        lines.append(f"- load {r['load']:g}: (a) {r['fifo']:.3f}, (c) {r['tracker']:.3f}, "
                     f"goodput (c)/(d) {r['goodput_ratio']:.3f}")
    return "\n".join(lines)


def _plot(ctx: ReproduceContext, loads: list[float], results: dict[str, list[ServingResult]]) -> str | None:
    """Draw the attainment figure; None (figure skipped) when matplotlib is not installed."""
    from interfpred.experiments.paper import _pyplot

    plt = _pyplot()
    if plt is None:
        return None

    name = "e3_slo_attainment.png"
    fig, ax = plt.subplots(figsize=(6, 4))
    for pol, marker in zip(POLICIES, "osD^v"):
        ax.plot(loads, [r.attainment for r in results[pol]], marker=marker, label=_LABELS[pol])
    ax.axhline(0.99, color="grey", lw=0.8, ls="--")
    ax.axhline(0.90, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("offered load per GPU (utilisation at batch size 1)")
    ax.set_ylabel("SLO attainment")
    ax.set_title("E3: SLO attainment against load")
    ax.legend(fontsize=8)
    fig.tight_layout()
    from interfpred._io import atomic_open

    with atomic_open(ctx.out_dir / name, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return name
