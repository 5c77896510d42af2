"""Which sharing mechanism serves given models, rates and latency SLOs best: time-slicing, MPS or MIG.

:func:`advise` runs the same requests (each model's rate, Poisson, seeded) on the same GPUs under
each mechanism in the simulator (:func:`interfpred.sim.simulate_mechanism`) and ranks the
mechanisms by *SLO attainment* (the fraction of requests whose response time, arrival to
completion, is within their model's latency SLO), then by throughput (the share of the offered
requests completed within the simulated window), both in steps of ``ADVISE_RANK_STEP`` (half a
percent: finer differences are the draws'), then by the lower p99 response time. How each
mechanism is set up:

* **setups**: every mechanism is run under each fraction ``f`` of ``ADVISE_SLO_FRACTIONS`` and
  keeps its best (the ranking's order below); under time-slicing and MPS each model then runs the
  largest profiled batch whose solo latency on the whole GPU is at most ``f`` times its SLO (the
  smallest if none is); requests arrive in batches of that size (batch formation is not
  simulated), spread evenly over the GPUs;
* **MIG**: the partitions come from the planner (:func:`interfpred.provisioning.plan`) on a table
  of configurations (model, GPCs, batch size, MPS processes) whose latencies are the simulator's
  steady state for those processes sharing the instance; it plans each model's rate over
  ``ADVISE_UTILISATION`` within ``f`` times its SLO. When that plan needs more GPUs
  than given (or no configuration meets an SLO), and on GPUs the plan leaves over, each GPU takes the
  valid MIG layout whose instances, each given to the model least served so far, maximise the least
  served model's capacity over rate. A model's requests are split over its instances by their
  throughput.

Each mechanism draws its own Poisson batches at the same request rates (seeded), since its batch
sizes differ; ``offered_rps`` says what arrived.

With a fitted interference model (``model``, an :class:`~interfpred.InterferenceModel`) the
response times are the model's prediction on the simulated schedule (its latency of every batch
beside the co-runners it met, plus the batch's queueing), under MPS and inside each MIG instance
(with the instance's stretched profiles); where its predictor is calibrated
(:class:`~interfpred.Calibrated`), its upper latency bound at its highest quantile instead, so the
attainment is a conservative one. Time-slicing has no co-running across contexts for a model to
predict: it stays simulated. The table says which figure came from where.

Examples
--------
>>> a = advise({"resnet50": (400.0, 20.0), "yolov8n": (300.0, 20.0)}, spec="a100", duration_s=2.0)
>>> [(s.mechanism, round(100 * s.attainment, 1), round(s.p99_ms, 2)) for s in a.ranking]
[('mps', 100.0, 4.63), ('mig', 100.0, 14.25), ('time_slicing', 100.0, 16.01)]
>>> a.ranking[0].setup
'batches within 0.125 x SLO: resnet50 batch 2; yolov8n batch 1'
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from interfpred._core.atomic import json_ready
from interfpred._core.limits import check_limit
from interfpred.constants import (
    ADVISE_DEFAULT_GPU,
    ADVISE_DURATION_S,
    ADVISE_MAX_PROCESSES,
    ADVISE_MIN_REQUESTS,
    ADVISE_RANK_STEP,
    ADVISE_SEED,
    ADVISE_SLO_FRACTIONS,
    ADVISE_UTILISATION,
    MECHANISMS,
    PLAN_ATTAINMENT_MIN,
    SIM_CONTEXT_SWITCH_MS,
    SIM_TIMESLICE_QUANTUM_MS,
)
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.provisioning.latency import LatencyRule
from interfpred.provisioning.mig import (
    MIG_GPUS,
    MIG_MEMORY_SLICES,
    check_layout,
    gpu_kind,
    layout_sizes,
    mig_profile,
    place,
)
from interfpred.provisioning.plan import ConfigTable, Segment, check_slo, plan, read_slo
from interfpred.provisioning.sources import advise_inputs
from interfpred.sim import (
    GPU_PRESETS,
    GpuSpec,
    MigInstance,
    SimResult,
    check_time_slicing,
    get_gpu_spec,
    instance_demands,
    rates,
    simulate_mechanism,
)

__all__ = ["ADVICE_COLUMNS", "Advice", "MechanismScore", "advise", "mig_gpu_of", "mig_instances",
           "simulated_configs"]

#: Columns of an advice table (CSV), in order.
ADVICE_COLUMNS = ("rank", "mechanism", "attainment", "throughput_rps", "offered_rps", "p99_ms", "source", "setup")

Slo = Mapping[str, tuple[float, float]]


class LatencyModel(Protocol):
    """What :func:`advise` needs of a fitted interference model (an ``InterferenceModel``)."""

    @property
    def predictor(self) -> Any: ...

    def predict_latency(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
                        quantile: float | None = None) -> np.ndarray: ...


@dataclass(frozen=True)
class MechanismScore:
    """One mechanism's figures on the workload.

    ``attainment`` is a fraction in [0, 1] (requests within SLO over requests arrived),
    ``throughput_rps`` requests completed per second within the window, ``offered_rps`` requests
    arrived per second in it (the Poisson draw of the rates), ``p99_ms`` the 99th
    percentile response time, ``source`` where the response times came from, ``setup`` how the
    mechanism was configured (batch sizes, MIG instances), ``per_model`` each model's attainment.
    """

    mechanism: str
    attainment: float
    throughput_rps: float
    offered_rps: float
    p99_ms: float
    source: str
    setup: str
    per_model: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Advice:
    """The mechanisms ranked best first, the GPUs they ran on, and the seconds the advice took."""

    ranking: tuple[MechanismScore, ...]
    gpus: int
    spec: str
    seconds: float
    mig_plan_gpus: int | None = None
    verdict: str = ""

    def rows(self) -> list[dict[str, Any]]:
        """One mapping per mechanism with :data:`ADVICE_COLUMNS` (attainment as a fraction)."""
        return [{"rank": i, **{k: v for k, v in asdict(s).items() if k != "per_model"}}
                for i, s in enumerate(self.ranking, start=1)]

    def to_csv_text(self) -> str:
        """The ranking as CSV (:data:`ADVICE_COLUMNS`; attainment a fraction)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(ADVICE_COLUMNS)
        for r in self.rows():
            w.writerow([repr(r[c]) if isinstance(r[c], float) else r[c] for c in ADVICE_COLUMNS])
        return buf.getvalue()

    def to_json(self) -> dict[str, Any]:
        """The advice as a JSON-able mapping (every figure, per-model attainment included)."""
        return {"gpus": self.gpus, "spec": self.spec, "seconds": self.seconds, "mig_plan_gpus": self.mig_plan_gpus,
                "verdict": self.verdict,
                "ranking": [{"rank": i, **asdict(s), "per_model": dict(s.per_model)}
                            for i, s in enumerate(self.ranking, start=1)]}

    def to_json_text(self) -> str:
        """:meth:`to_json` as text (no NaN: a missing figure is null)."""
        return json.dumps(json_ready(self.to_json()), indent=2, allow_nan=False) + "\n"


# ------------------------------------------------------------------------------------------------ MIG geometry
def mig_gpu_of(spec: GpuSpec | str) -> str:
    """The MIG profile table a simulated GPU is partitioned by: its kind's (refused when it has none).

    Examples
    --------
    >>> mig_gpu_of("a100"), mig_gpu_of("h200")
    ('a100-40gb', 'h200-141gb')
    >>> mig_gpu_of("l4")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: gpu 'l4' has no MIG; MIG runs on: a100-40gb, a100-80gb, h100-80gb, h200-141gb
    """
    name = spec.name if isinstance(spec, GpuSpec) else str(spec)
    kind = gpu_kind(name)
    if kind not in MIG_GPUS:
        raise InterfpredError(f"gpu {name!r} has no MIG; MIG runs on: {', '.join(MIG_GPUS)}")
    return kind


def _as_spec(spec: GpuSpec | str) -> GpuSpec:
    """A GpuSpec as given, a simulator preset by name, or the spec of a GPU kind (:func:`advise_inputs`)."""
    if isinstance(spec, GpuSpec) or spec in GPU_PRESETS:
        return get_gpu_spec(spec)
    return advise_inputs(None, spec)[0]


def _instance(gpu: str, index: int, gpcs: int, placement: int, processes: int = 1) -> MigInstance:
    p = mig_profile(gpu, gpcs)
    return MigInstance(index, f"{p.gpcs}g@{placement}", p.sms / mig_profile(gpu, 7).sms,
                       p.memory_slices / MIG_MEMORY_SLICES, processes)


def mig_instances(gpu: str, segments: Sequence[Segment]) -> list[MigInstance]:
    """The simulator's instances of a deployment's segments, every GPU's layout checked against ``gpu``'s MIG table.

    An instance holds its profile's SMs over the whole GPU's (the 7-GPC profile's) and its memory
    slices over 8.

    Examples
    --------
    >>> [i.name for i in mig_instances("a100-40gb", [Segment(0, "a", 4, 0, 8, 1), Segment(0, "b", 3, 4, 8, 2)])]
    ['gpu0/4g@0', 'gpu0/3g@4']
    >>> mig_instances("a100-40gb", [Segment(0, "a", 4, 0, 8, 1), Segment(0, "b", 4, 4, 8, 1)])
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: gpu 0: 4 GPCs (4g.20gb) at slice 4: 4g.20gb may start only at slice 0
    """
    by_gpu: dict[int, list[Segment]] = defaultdict(list)
    for s in segments:
        by_gpu[s.gpu].append(s)
    for g, segs in sorted(by_gpu.items()):
        problems = check_layout(gpu, [(s.partition, s.placement) for s in segs])
        if problems:
            raise InterfpredError(f"gpu {g}: {problems[0]}")
    return [_instance(gpu, s.gpu, s.partition, s.placement, s.processes) for s in segments]


# ------------------------------------------------------------------------------------------------ configurations
def simulated_configs(profiles: ProfileTable, models: Sequence[str], *, spec: GpuSpec | str = ADVISE_DEFAULT_GPU,
                      max_processes: int = ADVISE_MAX_PROCESSES) -> ConfigTable:
    """The planner's table from the simulator: latency of one of ``p`` batches running together in an instance.

    For every model, MIG size of ``spec``'s table, profiled batch size and ``p`` in
    ``1..max_processes``: the batch's solo time in the instance (:func:`interfpred.sim.instance_demands`)
    over the rate ``p`` identical batches run at there under the MPS truth (no noise: steady state).

    Examples
    --------
    >>> from interfpred.sim import zoo_profiles
    >>> t = simulated_configs(zoo_profiles("a100"), ["resnet50"], spec="a100")
    >>> t.latency_ms[("resnet50", 1, 8, 2)] > t.latency_ms[("resnet50", 1, 8, 1)] > t.latency_ms[("resnet50", 7, 8, 1)]
    True
    """
    spec = _as_spec(spec)
    gpu = mig_gpu_of(spec)
    sizes = sorted({g for lay in layout_sizes(gpu) for g in lay})
    rows = []
    for m in models:
        batches = np.asarray(profiles.batch_sizes(m, spec.name), dtype=np.int64)
        prof = profiles.lookup_arrays([m] * len(batches), batches, gpus=spec.name)
        dem = np.column_stack([prof["sm"], prof["l2"], prof["dram"]])
        for g in sizes:
            stretch, d = instance_demands(dem, _instance(gpu, 0, g, mig_profile(gpu, g).placements[0]), spec)
            for j, b in enumerate(batches):
                for p in range(1, max_processes + 1):
                    r = float(rates(np.repeat(d[j:j + 1], p, axis=0), spec)[0])
                    rows.append((m, g, int(b), p, float(prof["solo_ms"][j] * stretch[j] / r)))
    return ConfigTable.from_rows(rows)


# ------------------------------------------------------------------------------------------------ the advice
def _check_slo(slo: Slo, profiles: ProfileTable, spec: GpuSpec, duration_s: float) -> float:
    """Refuse a workload that cannot be simulated as asked; return its least solo work in ms (every request
    in the batch size of least solo time per request)."""
    check_slo(slo)
    work_ms = 0.0
    for m, (rate, _lat) in slo.items():
        if rate * duration_s < ADVISE_MIN_REQUESTS:
            raise InterfpredError(f"model {m}: {rate:g} requests/s over {duration_s:g} s is fewer than "
                                  f"{ADVISE_MIN_REQUESTS} request(s) (ADVISE_MIN_REQUESTS): nothing to rank; raise the "
                                  "rate or the duration")
        sizes = profiles.batch_sizes(m, spec.name)   # an unknown model is refused here, naming the profiled ones
        prof = profiles.lookup_arrays([m] * len(sizes), np.asarray(sizes), gpus=spec.name)
        missing = [k for k in ("sm", "l2", "dram") if not np.all(np.isfinite(prof[k]))]
        if missing:
            raise InterfpredError(f"model {m}: its profile on gpu {spec.name!r} lacks {', '.join(missing)}; the "
                                  "simulator needs the sm, l2 and dram throughputs of every profiled batch size")
        fastest = int(np.argmin(prof["solo_ms"]))
        if prof["solo_ms"][fastest] > _lat:
            raise InterfpredError(f"model {m}: its fastest profiled batch (batch {sizes[fastest]}) takes "
                                  f"{prof['solo_ms'][fastest]:.4g} ms alone on the whole {spec.name}, more than its "
                                  f"latency SLO of {_lat:g} ms: no sharing mechanism can meet it")
        work_ms += rate * duration_s * float(np.min(prof["solo_ms"] / np.asarray(sizes, dtype=np.float64)))
    # the most batches one mechanism draws (batch size 1): bounded before anything is simulated
    check_limit("ADVISE_REQUESTS_MAX", math.ceil(sum(r for r, _ in slo.values()) * duration_s),
                "requests of the advice (rates x duration)")
    return work_ms


def _batch_for(profiles: ProfileTable, model: str, slo_ms: float, spec: GpuSpec, fraction: float) -> int:
    sizes = np.asarray(profiles.batch_sizes(model, spec.name), dtype=np.int64)
    solo = profiles.lookup_arrays([model] * len(sizes), sizes, gpus=spec.name)["solo_ms"]
    fit = sizes[solo <= slo_ms * fraction]
    return int(fit.max()) if fit.size else int(sizes.min())


def _batches(rng: np.random.Generator, rate_per_ms: float, horizon_ms: float) -> np.ndarray:
    """Poisson arrival times at ``rate_per_ms`` in ``[0, horizon_ms)``."""
    n = int(rng.poisson(rate_per_ms * horizon_ms))
    return np.sort(rng.uniform(0.0, horizon_ms, size=n))


def _score(mechanism: str, res: SimResult, response: np.ndarray, slo: Slo, horizon_ms: float, source: str,
           setup: str, unserved: Mapping[str, float]) -> MechanismScore:
    t = res.trace
    b = t.batch_size.astype(np.float64)
    limit = np.array([slo[m][1] for m in t.model.tolist()]) if len(t) else np.empty(0)
    within = response <= limit
    lost = float(sum(unserved.values()))
    per = {}
    for m in slo:
        mine = t.model == m
        total = float(b[mine].sum()) + unserved.get(m, 0.0)
        per[m] = float(b[mine & within].sum()) / total if total else float("nan")
    arrived = float(b.sum()) + lost
    done = float(b[t.end_ms <= horizon_ms].sum())
    p99 = float(np.percentile(np.repeat(response, t.batch_size), 99)) if len(t) else float("nan")
    if lost:
        p99 = float("inf")
    return MechanismScore(mechanism, float(b[within].sum()) / arrived if arrived else float("nan"),
                          done * 1000.0 / horizon_ms, arrived * 1000.0 / horizon_ms, p99, source, setup, per)


def _table_for(models: Sequence[str], batch: Sequence[int], solo: np.ndarray, dem: np.ndarray,
               gpu: str) -> ProfileTable:
    return ProfileTable.from_columns(gpu=[gpu] * len(models), model=list(models), batch_size=list(batch),
                                     solo_ms=solo.tolist(), sm=dem[:, 0].tolist(), l2=dem[:, 1].tolist(),
                                     dram=dem[:, 2].tolist())


def _model_response(model: LatencyModel, res: SimResult, profiles: ProfileTable) -> tuple[np.ndarray, str]:
    levels = tuple(getattr(model.predictor, "levels_", ()) or ())
    t = res.trace
    if levels:
        q = max(levels)
        lat = model.predict_latency(t, profiles, quantile=q)
        return res.wait_ms + lat, f"model bound q={q:g}"
    return res.wait_ms + model.predict_latency(t, profiles), "model"


def _shared(mechanism: str, slo: Slo, profiles: ProfileTable, spec: GpuSpec, gpus: int, horizon_ms: float,
            seed: int, model: LatencyModel | None, quantum_ms: float, switch_ms: float, fraction: float
            ) -> MechanismScore:
    rng = np.random.default_rng(seed)
    names, batch, arrive, device = [], [], [], []
    setup = []
    for m, (rate, lat) in slo.items():
        b = _batch_for(profiles, m, lat, spec, fraction)
        setup.append(f"{m} batch {b}")
        for g in range(gpus):
            times = _batches(rng, rate / b / gpus / 1000.0, horizon_ms)
            names += [m] * len(times)
            batch += [b] * len(times)
            arrive.append(times)
            device += [f"gpu{g}"] * len(times)
    when = np.concatenate(arrive) if arrive else np.empty(0)
    res = simulate_mechanism(names, batch, when, mechanism=mechanism, device=device, spec=spec, profiles=profiles,
                             quantum_ms=quantum_ms, switch_ms=switch_ms, seed=seed)
    response = res.trace.end_ms - res.arrival_ms
    source = "simulation"
    if model is not None and mechanism == "mps" and len(res.trace):
        keys = sorted(set(zip(res.trace.model.tolist(), res.trace.batch_size.tolist())))
        prof = profiles.lookup_arrays([k[0] for k in keys], [k[1] for k in keys], gpus=spec.name)
        table = _table_for([k[0] for k in keys], [k[1] for k in keys], prof["solo_ms"],
                           np.column_stack([prof["sm"], prof["l2"], prof["dram"]]), spec.name)
        response, source = _model_response(model, res, table)
    elif model is not None:
        source = "simulation (no cross-context co-running to predict)"
    return _score(mechanism, res, response, slo, horizon_ms, source, "; ".join(setup), {})


def _fill_gpu(gpu: str, table: ConfigTable, slo: Slo, capacity: dict[str, float], index: int, fraction: float,
              forced: Sequence[tuple[str, int, int, int]] = ()) -> list[Segment]:
    """GPU ``index``'s segments: the ``forced`` configurations plus, in the layout that best serves the
    least-served model, one instance per free slot, each given to the least-served model at that point."""
    def config(m: str, g: int) -> tuple[str, int, int, int] | None:
        best = table.best(m, g, slo[m][1] * fraction)
        if best is None:  # none meets the SLO with the headroom at this size: the fastest still serves requests
            keys = [k for k in table.latency_ms if k[0] == m and k[1] == g]
            best = min(keys, key=lambda k: table.latency_ms[k]) if keys else None
        return best

    have = [k[1] for k in forced]
    best_plan: tuple[tuple[float, float], list[tuple[str, int, int, int]]] | None = None
    for lay in layout_sizes(gpu):
        free = list(lay)
        if not _take(free, have):   # the layout must hold the forced instances
            continue
        cap = dict(capacity)
        extra = []
        for g in sorted(free, reverse=True):
            options = [(cap[m] / slo[m][0], m, k) for m in slo if (k := config(m, g)) is not None]
            if options:
                _, m, k = min(options)
                cap[m] += table.throughput(k)
                extra.append(k)
        ratios = [cap[m] / slo[m][0] for m in slo]
        score = (min(ratios), sum(ratios))
        if best_plan is None or score > best_plan[0]:
            best_plan = (score, extra)
    assert best_plan is not None  # a planned GPU's instances form a valid layout, inside some maximal one
    for k in best_plan[1]:
        capacity[k[0]] += table.throughput(k)
    pool = [*forced, *best_plan[1]]
    slots = place(gpu, [k[1] for k in pool])
    assert slots is not None  # sizes within a layout of layout_sizes always fit
    segs = []
    for g, start in slots:
        k = next(x for x in pool if x[1] == g)
        pool.remove(k)
        segs.append(Segment(index, k[0], g, start, k[2], k[3]))
    return sorted(segs, key=lambda s: s.placement)


def _take(pool: list[int], wanted: Sequence[int]) -> bool:
    """Remove ``wanted`` from ``pool`` (a multiset); False if it does not hold them all."""
    for g in wanted:
        if g not in pool:
            return False
        pool.remove(g)
    return True


def _mig_segments(slo: Slo, table: ConfigTable, spec: GpuSpec, gpus: int, fraction: float
                  ) -> tuple[list[Segment], int | None]:
    """The planner's instances (when its plan fits ``gpus``), every GPU's free slots then filled."""
    gpu = mig_gpu_of(spec)
    planned_segs: list[Segment] = []
    planned: int | None = None
    try:
        # batches arrive formed in this simulation: the batch's own latency is what the SLO share bounds
        p = plan(table, {m: (r / ADVISE_UTILISATION, lat) for m, (r, lat) in slo.items()}, gpu=gpu,
                 rule=LatencyRule(max_exec_fraction=fraction))
        planned = p.deployment.n_gpus
        if planned <= gpus:
            planned_segs = list(p.deployment.segments)
    except InterfpredError:
        pass  # no configuration meets some SLO with the headroom: the layouts below serve what they can
    capacity = {m: 0.0 for m in slo}
    for s in planned_segs:
        capacity[s.model] += table.throughput(s.key)
    segs: list[Segment] = []
    for g in range(gpus):
        forced = [s.key for s in planned_segs if s.gpu == g]
        segs += _fill_gpu(gpu, table, slo, capacity, g, fraction, forced)
    return segs, planned


def _mig(slo: Slo, profiles: ProfileTable, table: ConfigTable, spec: GpuSpec, gpus: int, horizon_ms: float,
         seed: int, model: LatencyModel | None, fraction: float) -> tuple[MechanismScore, int | None]:
    gpu = mig_gpu_of(spec)
    segs, planned = _mig_segments(slo, table, spec, gpus, fraction)
    layout = mig_instances(gpu, segs)
    rng = np.random.default_rng(seed)
    names, batch, arrive, inst = [], [], [], []
    unserved: dict[str, float] = {}
    for m, (rate, _) in slo.items():
        mine = [k for k, s in enumerate(segs) if s.model == m]
        if not mine:
            unserved[m] = rate * horizon_ms / 1000.0
            continue
        tput = np.array([table.throughput(segs[k].key) for k in mine])
        for k, share in zip(mine, tput / tput.sum()):
            b = segs[k].batch_size
            times = _batches(rng, rate * share / b / 1000.0, horizon_ms)
            names += [m] * len(times)
            batch += [b] * len(times)
            arrive.append(times)
            inst += [k] * len(times)
    when = np.concatenate(arrive) if arrive else np.empty(0)
    res = simulate_mechanism(names, batch, when, mechanism="mig", layout=layout, instance=np.asarray(inst, dtype=int),
                             spec=spec, profiles=profiles, seed=seed)
    response = res.trace.end_ms - res.arrival_ms
    source = "simulation"
    if model is not None and len(res.trace):
        response = np.empty(len(res.trace))
        prof_all = profiles.lookup_arrays(res.trace.model, res.trace.batch_size, gpus=spec.name)
        dem_all = np.column_stack([prof_all["sm"], prof_all["l2"], prof_all["dram"]])
        for ins in layout:
            rows = np.flatnonzero(res.trace.device == ins.name)
            if not rows.size:
                continue
            stretch, d = instance_demands(dem_all[rows], ins, spec)
            keys: dict[tuple[str, int], int] = {}
            for j, r in enumerate(rows):
                keys.setdefault((str(res.trace.model[r]), int(res.trace.batch_size[r])), j)
            pick = np.array(list(keys.values()))
            table_k = _table_for([k_[0] for k_ in keys], [k_[1] for k_ in keys],
                                 prof_all["solo_ms"][rows][pick] * stretch[pick], d[pick], spec.name)
            part = SimResult(trace=res.trace.take(rows), arrival_ms=res.arrival_ms[rows], spec=spec)
            response[rows], source = _model_response(model, part, table_k)
    setup = "; ".join(f"gpu{s.gpu} {s.partition}g@{s.placement} {s.model} batch {s.batch_size} x{s.processes}"
                      for s in segs)
    return _score("mig", res, response, slo, horizon_ms, source, setup, unserved), planned


def advise(slo: Slo | str | os.PathLike[str], *, profiles: ProfileTable | ConfigTable | None = None,
           spec: GpuSpec | str | None = None,
           gpus: int = 1, model: LatencyModel | None = None, mechanisms: Sequence[str] = MECHANISMS,
           duration_s: float = ADVISE_DURATION_S, seed: int = ADVISE_SEED,
           quantum_ms: float = SIM_TIMESLICE_QUANTUM_MS, switch_ms: float = SIM_CONTEXT_SWITCH_MS,
           progress: Callable[[str], None] | None = None) -> Advice:
    """Rank sharing mechanisms for models at request rates under latency SLOs, best first.

    Parameters
    ----------
    slo
        model -> (requests/s, latency SLO in ms), or an SLO CSV ``model,rate_rps,latency_ms``
        (:func:`interfpred.provisioning.read_slo`).
    profiles
        Solo profiles of the models (default the simulator's synthetic zoo), or a table of MIG x MPS
        configurations such as ``plan`` reads (:func:`~interfpred.provisioning.sources.profiles_from_configs`).
    spec
        The GPU: a kind (``a100-80gb``, ``h200-141gb``, ...; default the profiles' own, refused when
        the profiles were measured on another) or a :class:`~interfpred.sim.GpuSpec`
        (:func:`~interfpred.provisioning.sources.advise_inputs`). MIG needs a kind with a MIG table
        (:func:`mig_gpu_of`).
    gpus
        GPUs the workload runs on (the same number under every mechanism).
    model
        A fitted interference model: its predicted response times instead of the simulator's
        (see the module docstring); :func:`interfpred.model.kernel_contention_model` is the
        kernel-blocking model of the shipped H200 spatial-sharing runs (``advise --contention kernels``).
    mechanisms
        Which to rank (default all of ``time_slicing, mps, mig``).
    duration_s, seed
        Simulated seconds of requests and the seed of arrivals and noise.
    quantum_ms, switch_ms
        Time-slicing's quantum and context-switch cost (defaults: the switch cost measured on an
        H200, :func:`interfpred.sim.switch_cost_ms`).
    progress
        Called with a short message before each mechanism and setup is simulated.

    Raises
    ------
    InterfpredError
        A model without a profile, a bad rate or SLO, an SLO shorter than the model's fastest batch
        alone on the whole GPU (no mechanism can meet it), an unknown mechanism, MIG on a GPU without it;
        a run beyond ``GPUS_MAX`` GPUs, ``ADVISE_REQUESTS_MAX`` requests or (time-slicing) ``QUANTA_MAX``
        quanta, a model expecting fewer than ``ADVISE_MIN_REQUESTS`` requests, a switch longer than
        the quantum: all checked before anything is simulated.
    """
    t0 = time.perf_counter()
    spec, profiles = advise_inputs(profiles, spec)
    slo = read_slo(slo) if isinstance(slo, (str, os.PathLike)) else dict(slo)

    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)) or gpus < 1:
        raise InterfpredError(f"gpus {gpus!r} must be a positive integer")
    check_limit("GPUS_MAX", int(gpus), "gpus")
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise InterfpredError(f"duration_s {duration_s!r} must be a positive number of seconds")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InterfpredError(f"seed {seed!r} must be a non-negative integer")
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown or not mechanisms:
        raise InterfpredError(f"mechanism {unknown[0] if unknown else None!r} is not one of {', '.join(MECHANISMS)}")
    if "time_slicing" in mechanisms:
        q, c = check_time_slicing(quantum_ms, switch_ms)
        if c > q:  # the GPU would mostly switch: figures of no real time-slicing, refused rather than ranked
            raise InterfpredError(f"switch_ms {switch_ms!r} is longer than the quantum_ms {quantum_ms!r} it buys: "
                                  "give a context-switch cost of at most the quantum")
    if "mig" in mechanisms:
        try:
            mig_gpu_of(spec)
        except InterfpredError as exc:
            raise InterfpredError(f"{exc}; rank the others without it (mechanisms time_slicing, mps)") from None
    work_ms = _check_slo(slo, profiles, spec, float(duration_s))

    horizon = float(duration_s) * 1000.0
    if "time_slicing" in mechanisms:  # its simulation steps through every busy quantum (idle time is skipped)
        check_limit("QUANTA_MAX", math.ceil(work_ms / float(quantum_ms)),
                    "time-slicing quanta (the requests' solo work over --quantum-ms)")
    scores, planned = [], None
    table = simulated_configs(profiles, list(slo), spec=spec) if "mig" in mechanisms else None
    say = progress or (lambda _msg: None)
    for mech in dict.fromkeys(mechanisms):
        tried: list[tuple[MechanismScore, int | None]] = []
        for f in ADVISE_SLO_FRACTIONS:      # each mechanism at the best of a few setups
            say(f"simulating {mech} with batches within {f:g} x SLO")
            n = None
            if mech == "mig":
                assert table is not None
                s, n = _mig(slo, profiles, table, spec, int(gpus), horizon, seed, model, f)
            else:
                s = _shared(mech, slo, profiles, spec, int(gpus), horizon, seed, model, quantum_ms, switch_ms, f)
            tried.append((replace(s, setup=f"batches within {f:g} x SLO: {s.setup}"), n))
        best, n = min(tried, key=lambda t: _rank_key(t[0]))
        scores.append(best)
        planned = n if mech == "mig" else planned
    order = sorted(scores, key=lambda s: (*_rank_key(s), MECHANISMS.index(s.mechanism)))
    if "mig" not in mechanisms and _nan0(order[0].attainment) < PLAN_ATTAINMENT_MIN:
        planned = _planned_gpus(slo, profiles, spec)      # the verdict's count, when MIG was not ranked
    return Advice(tuple(order), int(gpus), spec.name, time.perf_counter() - t0, planned,
                  _verdict(order[0], int(gpus), planned, slo, profiles, spec))


def _planned_gpus(slo: Slo, profiles: ProfileTable, spec: GpuSpec) -> int | None:
    """GPUs the MIG planner needs for the rates (with ``ADVISE_UTILISATION`` headroom), None without MIG."""
    try:
        gpu = mig_gpu_of(spec)
        table = simulated_configs(profiles, list(slo), spec=spec)
        p = plan(table, {m: (r / ADVISE_UTILISATION, lat) for m, (r, lat) in slo.items()}, gpu=gpu,
                 rule=LatencyRule(max_exec_fraction=max(ADVISE_SLO_FRACTIONS)))
    except InterfpredError:
        return None
    return p.deployment.n_gpus


def _verdict(best: MechanismScore, gpus: int, planned: int | None, slo: Slo, profiles: ProfileTable,
             spec: GpuSpec) -> str:
    """One line: served, or overloaded and how many GPUs it needs."""
    att = _nan0(best.attainment)
    if att >= PLAN_ATTAINMENT_MIN:
        return (f"served: {best.mechanism} meets the SLOs for {100 * att:.1f} % of requests on {gpus} "
                f"GPU{'s' if gpus > 1 else ''}")
    # the least solo work per second of requests (each model at its cheapest batch per request), over headroom
    work = 0.0
    for m, (rate, _) in slo.items():
        sizes = np.asarray(profiles.batch_sizes(m, spec.name), dtype=np.float64)
        solo = profiles.lookup_arrays([m] * len(sizes), sizes.astype(np.int64), gpus=spec.name)["solo_ms"]
        work += rate * float(np.min(solo / sizes)) / 1000.0
    least = max(1, math.ceil(work / ADVISE_UTILISATION))
    need = f"the MIG plan needs {planned}" if planned is not None else f"at least {least} by solo work"
    more = planned if planned is not None else least
    short = f"; give --gpus {max(more, gpus + 1)}" if more > gpus else "; more GPUs alone may not help"
    return (f"overloaded: on {gpus} GPU{'s' if gpus > 1 else ''} the best mechanism ({best.mechanism}) meets the SLOs "
            f"for {100 * att:.1f} % of requests (99 % needed); {need} GPU{'s' if (planned or least) > 1 else ''}"
            f"{short}")


def _nan0(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def _rank_key(s: MechanismScore) -> tuple[float, float, float]:
    """Best first: the most attainment, then the most of the offered requests served (both in steps of
    ``ADVISE_RANK_STEP``), then the lowest p99."""
    served = s.throughput_rps / s.offered_rps if s.offered_rps > 0 else 0.0
    step = ADVISE_RANK_STEP
    return (-round(_nan0(s.attainment) / step), -round(served / step),
            s.p99_ms if math.isfinite(s.p99_ms) else math.inf)
