"""E3: SLO-aware serving on the ground-truth simulator, with and without co-location.

Requests for the six zoo models arrive as Poisson streams, equal shares, single requests
(:func:`interfpred.sim.workload.poisson_arrivals` at batch size 1): the load ``rho`` is the offered
utilisation per GPU *if every request ran alone at batch size 1*; dynamic batching serves more than
``rho = 1``. A request of model ``m`` must complete within ``E3_SLO_FACTOR`` times the solo latency of
``m`` at batch size ``E3_SLO_BATCH`` after its arrival. The serving system and its dynamic batching
are :mod:`interfpred.experiments.scheduling.dispatch`, the policy hook of the simulator's engine
(:class:`interfpred.sim.engine.PolicyEngine`, the ground truth); the five policies
:mod:`interfpred.experiments.scheduling.policies`; the pair data gpulets and the warm RLS are fitted
on :mod:`interfpred.experiments.scheduling.pairs`.

**Metrics** per (policy, load): SLO attainment (requests completed within their SLO / all
requests; dropped count as missed), p50 / p99 latency of completed requests, goodput (requests
within SLO per second, all GPUs), GPU busy fraction (share of time a GPU runs at least one batch,
averaged over GPUs, from the first arrival to the last completion), mean batch size and mean
concurrency, and for (c) the mean absolute relative error of the tracker's latency prediction of
each finished batch (before learning from it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.constants import (
    E3_BOUND_MARGIN,
    E3_BOUND_SCALE,
    E3_BOUND_WINDOW,
    E3_DEADLINE_RTOL,
    E3_DEVICES,
    E3_FULL_LOADS,
    E3_FULL_REQUESTS,
    E3_GOAL_FIFO_BELOW,
    E3_GOAL_GOODPUT_RATIO,
    E3_GOAL_TRACKER_AT_LEAST,
    E3_MARGIN,
    E3_MAX_BATCH,
    E3_PAIR_BATCHES,
    E3_QUANTILE,
    E3_QUICK_LOADS,
    E3_QUICK_REQUESTS,
    E3_SLO_BATCH,
    E3_SLO_FACTOR,
    SIM_DEFAULT_GPU,
)
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.evaluation.text_tables import Column, markdown_table, percent, text_table
from interfpred.experiments.bounds import bound_goal, bound_verdict, fit_calibrated_pair_model
from interfpred.experiments.plotting import NO_MPL
from interfpred.experiments.report import ReproduceContext, Section
from interfpred.experiments.scheduling.dispatch import Dispatcher
from interfpred.experiments.scheduling.pairs import fit_pair_models
from interfpred.experiments.scheduling.plot import plot_attainment
from interfpred.experiments.scheduling.policies import FifoPolicy, GpuletsPolicy, OraclePolicy, Policy, TrackerPolicy
from interfpred.predictors import RLS, GpuletsModel
from interfpred.serving.fleet import Fleet
from interfpred.serving.tracker import ColocationTracker
from interfpred.sim.arrivals import poisson_arrivals
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.operators import HiddenFactors
from interfpred.sim.orion import synthetic_phase_zoo
from interfpred.sim.zoo import zoo_profiles

__all__ = ["POLICIES", "ServingResult", "fit_pair_models", "run_e3", "simulate_serving"]

#: Policy names in report order: (a), (b), (c), (d), (e).
POLICIES = ("fifo", "gpulets", "tracker", "oracle", "calibrated")
_LABELS = {"fifo": "(a) one at a time, FIFO", "gpulets": "(b) gpulets static", "tracker": "(c) tracker + RLS",
           "oracle": "(d) oracle", "calibrated": f"(e) tracker, {E3_QUANTILE:g} bound"}


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


def simulate_serving(policy: str, load: float, *, requests: int, seed: int = 0,
                     spec: str | GpuSpec = SIM_DEFAULT_GPU, n_devices: int = E3_DEVICES, profiles: ProfileTable | None = None,
                     models: tuple[str, ...] | None = None, slo_factor: float = E3_SLO_FACTOR,
                     slo_batch: int = E3_SLO_BATCH, max_batch: int = E3_MAX_BATCH, margin: float = E3_MARGIN,
                     pair_models: tuple[GpuletsModel, RLS] | None = None,
                     hidden: Mapping[str, HiddenFactors] | None = None,
                     calibrated: Any = None, quantile: float = E3_QUANTILE) -> ServingResult:
    """Serve ``requests`` Poisson requests at ``load`` with one policy; see the module docstring.

    Parameters
    ----------
    policy
        One of :data:`POLICIES`: ``"fifo"``, ``"gpulets"``, ``"tracker"``, ``"oracle"`` or ``"calibrated"``.
    load
        Offered utilisation per GPU at batch size 1 (``rho`` of ``poisson_arrivals``).
    requests
        Number of requests.
    seed
        Seeds the arrivals (the same for every policy) and the noise.
    spec, n_devices
        The simulated GPU (a :class:`~interfpred.sim.GpuSpec` or a preset name) and how many
        devices of it serve the requests.
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
    spec = get_gpu_spec(spec)
    profiles = zoo_profiles(spec.name) if profiles is None else profiles
    models = tuple(profiles.models) if models is None else tuple(models)
    if not (isinstance(requests, int) and requests > 0):
        raise InterfpredError(f"requests {requests!r} must be a positive integer")
    slo = {m: slo_factor * float(profiles.lookup_arrays([m], [slo_batch], gpus=spec.name)["solo_ms"][0])
           for m in models}
    arr = poisson_arrivals(list(models), rho=load, executions=requests, profiles=profiles, spec=spec,
                           batch_sizes={1: 1.0}, n_devices=n_devices, seed=seed)
    sim = Dispatcher(profiles, spec, n_devices, slo, np.random.default_rng([seed, 1]), max_batch, hidden)
    pol: Policy
    if policy in ("gpulets", "tracker") and pair_models is None:
        pair_models = fit_pair_models(profiles, spec, seed=seed, hidden=hidden)
    if policy == "calibrated":
        cal = fit_calibrated_pair_model(profiles, spec, seed=seed, quantiles=(quantile,), scale=E3_BOUND_SCALE,
                                        window=E3_BOUND_WINDOW, hidden=hidden) if calibrated is None else calibrated
        shared = type(cal).from_state(cal.to_state())
        fleet = Fleet({str(g): ColocationTracker(profiles, shared, gpu=spec.name) for g in range(n_devices)},
                      margin=E3_BOUND_MARGIN, max_running=spec.max_concurrency, quantile=quantile)
        pol = TrackerPolicy(sim, fleet)
    elif policy == "fifo":
        pol = FifoPolicy(sim)
    elif policy == "gpulets":
        assert pair_models is not None
        pol = GpuletsPolicy(sim, pair_models[0], margin)
    elif policy == "tracker":
        assert pair_models is not None
        warm = pair_models[1]
        shared = type(warm).from_state(warm.to_state())
        fleet = Fleet({str(g): ColocationTracker(profiles, shared, gpu=spec.name) for g in range(n_devices)},
                      margin=margin, max_running=spec.max_concurrency)
        pol = TrackerPolicy(sim, fleet)
    else:
        pol = OraclePolicy(sim)
    t0 = time.perf_counter()
    out = sim.run(pol, arr.time_ms, arr.model.astype(str))
    wall = time.perf_counter() - t0
    done, dl = out["done_at"], out["deadline"]
    lat = done - arr.time_ms
    ok = np.isfinite(done) & (done <= dl * (1 + E3_DEADLINE_RTOL))
    completed = lat[np.isfinite(lat)]
    span = max(out["end_ms"] - float(arr.time_ms[0]), 1e-9)
    busy = float(np.mean([g.busy_ms for g in sim.devices])) / span
    conc = float(np.sum([g.conc_area for g in sim.devices]) / max(np.sum([g.busy_ms for g in sim.devices]), 1e-9))
    err = float(np.mean(pol.errors)) if isinstance(pol, TrackerPolicy) and pol.errors else None
    return ServingResult(policy=policy, load=float(load), requests=requests, attainment=float(ok.mean()),
                         p50_ms=float(np.percentile(completed, 50)) if completed.size else math.nan,
                         p99_ms=float(np.percentile(completed, 99)) if completed.size else math.nan,
                         goodput_rps=float(ok.sum()) / span * 1000.0, busy=busy,
                         dropped=float(np.mean(~np.isfinite(done))),
                         mean_batch=float(np.mean(sim.batch_sizes)) if sim.batch_sizes else 0.0,
                         mean_concurrency=conc, max_concurrency=max(g.max_running for g in sim.devices),
                         tracker_error=err, wall_s=wall)


def _goals(results: dict[str, list[ServingResult]], loads: list[float]) -> dict[str, Any]:
    """Where (c) holds >= 99% while (a) is below 90%, and (c)'s goodput against (d)'s there."""
    rows = []
    for i, load in enumerate(loads):
        a, c, d = results["fifo"][i], results["tracker"][i], results["oracle"][i]
        ratio = c.goodput_rps / d.goodput_rps if d.goodput_rps > 0 else math.nan
        rows.append({"load": load, "fifo": a.attainment, "tracker": c.attainment, "goodput_ratio": ratio,
                     "met": bool(a.attainment < E3_GOAL_FIFO_BELOW and c.attainment >= E3_GOAL_TRACKER_AT_LEAST
                                 and ratio >= E3_GOAL_GOODPUT_RATIO)})
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
                                                 spec=spec, pair_models=pair, hidden=hidden, calibrated=cal))
    goals = _goals(results, loads)
    # shares of requests (attainment, dropped) and of time (busy) are fractions inside, shown in percent
    header: list[str | Column] = ["load", "policy", percent("SLO attain."), Column("p50", unit="ms"),
                                  Column("p99", unit="ms"), Column("goodput", unit="req/s"), percent("GPU busy"),
                                  percent("dropped"), "mean batch", "mean conc."]
    rows = []
    for i, load in enumerate(loads):
        for pol in POLICIES:
            r = results[pol][i]
            rows.append([f"{load:g}", _LABELS[pol], r.attainment, r.p50_ms, r.p99_ms, r.goodput_rps, r.busy,
                         r.dropped, r.mean_batch, r.mean_concurrency])
    fig = plot_attainment(ctx.out_dir, loads, {p: [r.attainment for r in results[p]] for p in POLICIES}, _LABELS)
    err = [r.tracker_error for r in results["tracker"]]
    verdict = _verdict(goals) + "\n\n" + bound_verdict(bound := bound_goal(results, loads))
    truth = ("phase-structured ground truth with the synthetic zoo's hidden per-model L2 footprints and latency "
             "hiding, one operator per pass: the serving simulator does not run multi-operator phases"
             if hidden is not None else "fluid ground-truth contention on the synthetic zoo's profiles")
    setup = (f"{E3_DEVICES} simulated {spec.name.upper()} GPUs ({truth}; noise sigma={spec.sigma}), six zoo models, "
             f"{requests} Poisson requests per run, SLO = {E3_SLO_FACTOR:g} x solo latency at batch "
             f"{E3_SLO_BATCH}, dynamic batching up to {E3_MAX_BATCH}, at most {spec.max_concurrency} batches per GPU, "
             f"margin {E3_MARGIN:g} for (b) and (c); (e) is (c) admitting on the {E3_QUANTILE:g} latency bound of a "
             f"Calibrated RLS (ACI, {E3_BOUND_SCALE} scale, window {E3_BOUND_WINDOW}, fitted on the same pairs), margin "
             f"{E3_BOUND_MARGIN:g}; load = offered utilisation per GPU at batch size 1. "
             "See interfpred/experiments/scheduling/experiment.py for the exact rules.")
    figure = f"![SLO attainment against load]({fig})" if fig is not None else NO_MPL
    md = "\n\n".join([setup, markdown_table(header, rows), figure,
                      "Tracker's mean absolute relative latency error per finished batch (before learning), "
                      "per load: " + ", ".join(f"{100 * e:.1f} %" for e in err if e is not None), verdict])
    terminal = "\n".join([setup, "", text_table(header, rows), "", verdict])
    data = {"loads": loads, "requests": requests, "seed": ctx.seed, "quick": ctx.quick, "truth": ctx.truth,
            "config": {"devices": E3_DEVICES, "slo_factor": E3_SLO_FACTOR, "slo_batch": E3_SLO_BATCH,
                       "max_batch": E3_MAX_BATCH, "margin": E3_MARGIN, "gpu": spec.name},
            "results": {p: [r.as_dict() for r in results[p]] for p in POLICIES}, "goals": goals,
            "bound_goal": bound}
    return Section(title="E3: SLO-aware scheduling with co-location", markdown=md, terminal=terminal,
                   figures=[fig] if fig is not None else [], data=data)


def _verdict(goals: dict[str, Any]) -> str:
    if goals["met"]:
        return (f"Goal met at load(s) {', '.join(f'{x:g}' for x in goals['loads_met'])}: (c) holds >= "
                f"{E3_GOAL_TRACKER_AT_LEAST:.0%} SLO attainment where (a) falls below {E3_GOAL_FIFO_BELOW:.0%}, with "
                f"goodput within {1 - E3_GOAL_GOODPUT_RATIO:.0%} of the oracle (d).")
    lines = [f"Goal NOT met at any measured load ((c) >= {E3_GOAL_TRACKER_AT_LEAST:.0%} where (a) < "
             f"{E3_GOAL_FIFO_BELOW:.0%}, goodput within {1 - E3_GOAL_GOODPUT_RATIO:.0%} of (d)); per load:"]
    for r in goals["per_load"]:
        lines.append(f"- load {r['load']:g}: (a) {100 * r['fifo']:.1f} %, (c) {100 * r['tracker']:.1f} %, "
                     f"goodput (c)/(d) {r['goodput_ratio']:.3f}")
    return "\n".join(lines)
