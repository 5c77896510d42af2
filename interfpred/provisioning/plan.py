"""Pack models onto the fewest MIG GPUs under latency SLOs and request rates, and check any such plan.

The inputs are a measured table of configurations and an SLO per model. A *configuration* is one
model in one MIG instance of ``partition`` GPCs, at ``batch_size``, with ``processes`` MPS
processes of that model sharing the instance; the table gives the latency of one process's batch
there, so the instance serves ``processes * batch_size * 1000 / latency_ms`` requests/s. A
*segment* of a deployment is one such instance placed on one GPU (``placement``: its first MIG
memory slice). A deployment serves its SLOs when

1. every segment's configuration is in the table and is admitted under its model's SLO by the
   latency rule (:mod:`interfpred.provisioning.latency`: by default a request's whole latency,
   its batch filling, queueing and running, at p99 within the SLO; or the batch's latency within
   a fraction of the SLO) at some interval of request rates ``[lo, hi]``;
2. each model's rate can be split over its segments within their intervals (enough capacity, and
   enough requests to fill every segment's batches in time);
3. every GPU's instances form a valid MIG layout (:mod:`interfpred.provisioning.mig`).

:func:`plan` finds such a deployment on the fewest GPUs. Within one instance size only the
configurations that no other beats on both ends of the interval matter (every segment of that
size costs the same slot), so the problem is an integer program over *how many instances of each
such configuration each model gets* and *how many GPUs of each maximal layout* provide the slots; ``scipy.optimize.milp``
(HiGHS) solves it to proven optimality, and its LP relaxation, rounded up, is the lower bound
printed beside the plan. A second solve with the GPU count fixed uses the fewest GPCs.
:func:`validate_plan` checks any deployment (also one written by another tool) against the same rules,
and :func:`simulate_plan` sends each model's Poisson requests through it (:mod:`interfpred.sim.batching`):
a plan is :func:`feasible` when every model meets its SLO for at least 99 % of them.

Examples
--------
>>> table = ConfigTable.from_rows([("a", 1, 8, 1, 10.0), ("a", 2, 8, 1, 6.0), ("a", 7, 32, 2, 12.0),
...                                ("b", 1, 4, 1, 20.0), ("b", 3, 16, 2, 25.0)])
>>> slo = {"a": (3000.0, 40.0), "b": (500.0, 150.0)}
>>> p = plan(table, slo, gpu="a100-80gb")
>>> p.deployment.n_gpus, p.lower_bound
(2, 1)
>>> validate_plan(p.deployment, table, slo, gpu="a100-80gb").ok
True
>>> feasible(simulate_plan(p.deployment, table, slo, p.rates_rps))
True
>>> plan(table, slo, gpu="a100-80gb", rule=LatencyRule(max_exec_fraction=1.0)).deployment.n_gpus  # batch within the SLO
1
>>> plan(table, {"a": (10.0, 5.0)}, gpu="a100-80gb")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: model a: no configuration meets its latency SLO of 5 ms by the rule (...) (fastest: 6 ms, 2 GPCs, batch 8, 1 process)
"""

from __future__ import annotations

import csv
import io
import math
import os
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from interfpred._core.atomic import atomic_write_text, headed_csv_rows
from interfpred._core.limits import check_limit, limit, limit_error
from interfpred._core.numbers import check_range, parse_float, parse_int
from interfpred.constants import (
    CAPTURE_NAME_MAX,
    MAX_BATCH_SIZE,
    MAX_PROCESSES,
    PLAN_ATTAINMENT_MIN,
    PLAN_LP_BOUND_FUZZ,
    PLAN_RATE_RTOL,
    PLAN_SEED,
    PLAN_SIM_REQUESTS,
    PLAN_TIME_LIMIT_S,
    SLO_LATENCY_MAX_MS,
    SLO_RATE_MAX_RPS,
    SLO_RATE_MIN_RPS,
)
from interfpred.data.measurements import Measurements
from interfpred.errors import InputError, InterfpredError
from interfpred.provisioning.latency import LatencyRule, admitted_rates
from interfpred.provisioning.mig import check_layout, check_same_gpu, gpu_kind, layout_sizes, mig_profile, place
from interfpred.sim.batching import BatchingInstance, BatchingResult, simulate_batching

__all__ = ["DEPLOYMENT_COLUMNS", "SLO_COLUMNS", "ConfigTable", "Deployment", "Plan", "Segment", "Validation",
           "as_inputs", "check_slo", "feasible", "instance_rates", "plan", "read_slo", "simulate_plan",
           "validate_plan"]

#: Columns of a deployment CSV, in order.
DEPLOYMENT_COLUMNS = ("gpu", "model", "partition", "placement", "batch_size", "processes")
#: Columns of an SLO CSV, in order.
SLO_COLUMNS = ("model", "rate_rps", "latency_ms")

Slo = Mapping[str, tuple[float, float]]


# ------------------------------------------------------------------------------------------------ the measured table
@dataclass(frozen=True)
class ConfigTable:
    """Measured latency of one process per (model, GPCs, batch size, processes), in ms.

    ``gpus`` names the GPUs the configurations were measured on, when the source says (measurement
    runs do, in their ``gpu`` column); :func:`plan` and :func:`validate_plan` refuse another GPU.
    """

    latency_ms: Mapping[tuple[str, int, int, int], float]
    gpus: tuple[str, ...] = ()

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, int, int, int, float]]) -> ConfigTable:
        """From (model, GPCs, batch size, processes, latency ms) tuples; a key given twice is refused."""
        out: dict[tuple[str, int, int, int], float] = {}
        for i, (model, gpcs, batch, procs, ms) in enumerate(rows, start=1):
            key = (str(model), int(gpcs), int(batch), int(procs))
            if key in out and out[key] != float(ms):
                raise InputError(f"{key[0]} at {key[1]} GPCs, batch {key[2]}, {key[3]} processes given twice "
                                 f"({out[key]:g} and {float(ms):g} ms)", line=i)
            if not (math.isfinite(ms) and ms > 0) or min(key[1:]) < 1:
                raise InputError(f"configuration {key} with latency {ms!r} ms: need positive sizes and latency",
                                 line=i)
            out[key] = float(ms)
        return cls(out)

    @classmethod
    def from_measurements(cls, m: Measurements) -> ConfigTable:
        """From measurement runs with a ``partition`` column (GPCs): one configuration per run.

        A run's processes are its members (or its ``processes`` column, when present); its latency
        is the mean ``observed_ms`` of its members.
        """
        cols = m.columns()
        if "partition" not in cols:
            raise InterfpredError("the profiles have no 'partition' column (MIG GPCs per run): planning needs "
                                  "measurements such as dataset:parvagpu_a100")
        procs_col = cols.get("processes")
        rows = []
        for run in range(m.n_runs):
            idx = m.run_members(run)
            first = int(idx[0])
            where = f"run {m.run_names[run]!r}: "
            part = parse_int(str(cols["partition"][first]), where + "partition (GPCs)", lo=1, line=first + 1)
            procs = str(procs_col[first]).strip() if procs_col is not None else ""
            n_procs = parse_int(procs, where + "processes", lo=1, hi=MAX_PROCESSES, line=first + 1) if procs \
                else len(idx)
            rows.append((str(cols["model"][first]), part, int(cols["batch_size"][first]),
                         n_procs, float(np.mean(cols["observed_ms"][idx]))))
        gpus = tuple(sorted({str(g) for g in np.asarray(cols["gpu"]).tolist()})) if "gpu" in cols else ()
        return replace(cls.from_rows(rows), gpus=gpus)

    def check_gpu(self, gpu: str) -> None:
        """Refuse planning for ``gpu`` when the table was measured on MIG GPUs of another kind.

        Another GPU's latencies are used only when the caller names a scaling (:meth:`rescaled`).

        Examples
        --------
        >>> ConfigTable({("a", 1, 8, 1): 10.0}, gpus=("a100-80gb",)).check_gpu("h200-141gb")
        Traceback (most recent call last):
        ...
        interfpred.errors.InterfpredError: gpu 'h200-141gb': the profiles were measured on a100-80gb; plan for that GPU, give profiles measured on h200-141gb, or name a latency scaling (--scale-latency)
        """
        check_same_gpu(gpu, self.gpus, what="plan", scaling="--scale-latency")

    @property
    def models(self) -> tuple[str, ...]:
        """The models in the table, sorted."""
        return tuple(sorted({k[0] for k in self.latency_ms}))

    def throughput(self, key: tuple[str, int, int, int]) -> float:
        """Requests/s one instance of this configuration serves (all its processes together)."""
        return key[3] * key[2] * 1000.0 / self.latency_ms[key]

    def best(self, model: str, gpcs: int, slo_ms: float) -> tuple[str, int, int, int] | None:
        """The configuration of most throughput at this size whose latency meets ``slo_ms`` (ties: smaller batch)."""
        keys = [k for k, ms in self.latency_ms.items() if k[0] == model and k[1] == gpcs and ms <= slo_ms]
        return max(keys, key=lambda k: (self.throughput(k), -k[2], -k[3])) if keys else None

    def rescaled(self, factor: float, gpu: str) -> ConfigTable:
        """The table with every latency times ``factor``, as measured on ``gpu``: a scaling the user names.

        Examples
        --------
        >>> ConfigTable({("a", 1, 8, 1): 10.0}, gpus=("a100-80gb",)).rescaled(0.5, "h200-141gb")
        ConfigTable(latency_ms={('a', 1, 8, 1): 5.0}, gpus=('h200-141gb',))
        """
        if not (math.isfinite(factor) and factor > 0):
            raise InterfpredError(f"scale_latency {factor!r} must be a positive number (latencies are multiplied by it)")
        return ConfigTable({k: v * factor for k, v in self.latency_ms.items()}, gpus=(gpu_kind(gpu),))


# ------------------------------------------------------------------------------------------------ SLOs
def read_slo(path: str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """An SLO CSV ``model,rate_rps,latency_ms``: model -> (requests/s, latency SLO in ms).

    Rates are read within [``SLO_RATE_MIN_RPS``, ``SLO_RATE_MAX_RPS``] and latencies within
    (0, ``SLO_LATENCY_MAX_MS``] (:func:`check_slo`); a model name must be printable and at most
    ``CAPTURE_NAME_MAX`` characters long.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "slo.csv"
    >>> _ = f.write_text("model,rate_rps,latency_ms\\nresnet50,200,50\\n")
    >>> read_slo(f)
    {'resnet50': (200.0, 50.0)}
    >>> _ = f.write_text("model,rate_rps,latency_ms\\nresnet50,200,-5\\n")
    >>> read_slo(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...slo.csv line 2: latency_ms -5 must be a number in (0, 8.64e+07]
    >>> _ = f.write_text("model,rate_rps,latency_ms\\nresnet50,8_29,50\\n")
    >>> read_slo(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: ...slo.csv line 2: rate_rps '8_29' is not a number ...
    """
    out: dict[str, tuple[float, float]] = {}
    for line, f in headed_csv_rows(path, SLO_COLUMNS):
        model = _model_name(f[0], path, line)
        if model in out:
            raise InputError(f"model {model!r} given twice", path=path, line=line)
        out[model] = (parse_float(f[1], "rate_rps", path=path, line=line),
                      parse_float(f[2], "latency_ms", path=path, line=line))
        check_slo({model: out[model]}, path=path, line=line)
    if not out:
        raise InputError("has a header but no SLO rows", path=path)
    return out


def _model_name(text: str, path: str | os.PathLike[str], line: int) -> str:
    if not text:
        raise InputError("empty model name", path=path, line=line)
    if len(text) > CAPTURE_NAME_MAX:
        raise InputError(f"model name of {len(text)} characters is longer than {CAPTURE_NAME_MAX} (CAPTURE_NAME_MAX)",
                         path=path, line=line)
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        raise InputError(f"model name {text!r} holds the character {bad!r}; give printable characters",
                         path=path, line=line)
    return text


def check_slo(slo: Slo, *, path: str | os.PathLike[str] | None = None, line: int | None = None) -> Slo:
    """``slo`` if every rate is within [``SLO_RATE_MIN_RPS``, ``SLO_RATE_MAX_RPS``] requests/s and every
    latency SLO within (0, ``SLO_LATENCY_MAX_MS``] ms, else an :class:`InputError` naming the model.

    A rate below the minimum is no workload (no request arrives in any window a plan or an advice
    looks at), one above the maximum no deployment: both are refused, not planned.

    Examples
    --------
    >>> check_slo({"resnet50": (1e-300, 50.0)})
    Traceback (most recent call last):
    ...
    interfpred.errors.InputError: model 'resnet50': rate_rps 1e-300 must be a number in [0.001, 1e+09]
    """
    if not slo:
        raise InputError("no models: the SLO table is empty", path=path, line=line)
    for model, (rate, lat) in slo.items():
        check_range(float(rate), f"model {model!r}: rate_rps" if path is None else "rate_rps",
                    lo=SLO_RATE_MIN_RPS, hi=SLO_RATE_MAX_RPS, path=path, line=line)
        check_range(float(lat), f"model {model!r}: latency_ms" if path is None else "latency_ms",
                    lo=0.0, lo_open=True, hi=SLO_LATENCY_MAX_MS, path=path, line=line)
    return slo


def _index(text: str, what: str, path: str | os.PathLike[str], line: int, *, least: int,
           most: int | None = None) -> int:
    return parse_int(text, what, lo=least, hi=most, path=path, line=line)


# ------------------------------------------------------------------------------------------------ deployments
@dataclass(frozen=True)
class Segment:
    """One MIG instance of a deployment: which GPU, model, GPCs, first slice, batch size, MPS processes."""

    gpu: int
    model: str
    partition: int
    placement: int
    batch_size: int
    processes: int

    @property
    def key(self) -> tuple[str, int, int, int]:
        """Its configuration's key in a :class:`ConfigTable`."""
        return (self.model, self.partition, self.batch_size, self.processes)


@dataclass(frozen=True)
class Deployment:
    """A deployment: segments, ordered by GPU then placement."""

    segments: tuple[Segment, ...]

    @property
    def n_gpus(self) -> int:
        """GPUs with at least one segment."""
        return len({s.gpu for s in self.segments})

    def to_csv_text(self) -> str:
        """The deployment as CSV text (``gpu,model,partition,placement,batch_size,processes``)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(DEPLOYMENT_COLUMNS)
        for s in self.segments:
            w.writerow([getattr(s, c) for c in DEPLOYMENT_COLUMNS])
        return buf.getvalue()

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the deployment CSV atomically."""
        atomic_write_text(path, self.to_csv_text())

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Deployment:
        """From mappings with the deployment columns."""
        segs = [Segment(int(r["gpu"]), str(r["model"]), int(r["partition"]), int(r["placement"]),
                        int(r["batch_size"]), int(r["processes"])) for r in rows]
        return cls(tuple(segs))

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Deployment:
        """Read a deployment CSV, refusing a bad row by path and line."""
        segs: list[Segment] = []
        for line, f in headed_csv_rows(path, DEPLOYMENT_COLUMNS):
            segs.append(Segment(_index(f[0], "gpu", path, line, least=0),
                                _model_name(f[1], path, line),
                                _index(f[2], "partition", path, line, least=1),
                                _index(f[3], "placement", path, line, least=0),
                                _index(f[4], "batch_size", path, line, least=1, most=MAX_BATCH_SIZE),
                                _index(f[5], "processes", path, line, least=1, most=MAX_PROCESSES)))
            check_limit("PLAN_INSTANCES_MAX", len(segs), "a deployment with instances", path=path, line=line)
        return cls(tuple(segs))


@dataclass(frozen=True)
class Validation:
    """What a check of a deployment found: its problems (none when it serves every SLO) and figures.

    ``served_rps`` is each model's most requests/s its instances take within the SLO (by the rule),
    ``rates_rps`` the rate each segment is sent (:func:`instance_rates`; NaN when it has none).
    """

    problems: tuple[str, ...]
    n_gpus: int
    served_rps: Mapping[str, float] = field(default_factory=dict)
    rates_rps: tuple[float, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the deployment meets every rule."""
        return not self.problems


def _intervals(table: ConfigTable, keys: Sequence[tuple[str, int, int, int]], slo_ms: Sequence[float],
               rule: LatencyRule) -> tuple[np.ndarray, np.ndarray]:
    lat = [table.latency_ms[k] for k in keys]
    return admitted_rates(lat, [k[2] for k in keys], [k[3] for k in keys], list(slo_ms), rule)


def instance_rates(los: np.ndarray, his: np.ndarray, models: Sequence[str], slo: Slo) -> np.ndarray:
    """Each instance's rate: its model's rate split so that every instance gets at least ``lo`` and at most ``hi``.

    An instance gets its ``lo`` plus a share of what is left of its model's rate in proportion to its
    ``hi - lo``; NaN for a model whose instances cannot take its rate (``sum(lo) > rate`` or
    ``sum(hi) < rate``).

    Examples
    --------
    >>> instance_rates(np.array([100.0, 0.0]), np.array([500.0, 400.0]), ["a", "a"], {"a": (500.0, 10.0)}).tolist()
    [300.0, 200.0]
    """
    out = np.full(len(models), np.nan)
    names = np.asarray(models, dtype=object)
    for m, (rate, _) in slo.items():
        rows = np.flatnonzero(names == m)
        lo, hi = los[rows], his[rows]
        if not rows.size or not np.all(np.isfinite(lo)) or lo.sum() > rate or hi.sum() < rate * (1 - PLAN_RATE_RTOL):
            continue
        room = hi - lo
        left = rate - lo.sum()
        out[rows] = lo + (room * left / room.sum() if room.sum() > 0 else 0.0)
    return out


def validate_plan(deployment: Deployment, table: ConfigTable | Measurements, slo: Slo | str | os.PathLike[str], *,
                  gpu: str, replace: bool = False, rule: LatencyRule | None = None) -> Validation:
    """Check a deployment: configurations measured and admitted by the rule, rates served, MIG layouts valid.

    A configuration is admitted at the rates its :func:`~interfpred.provisioning.latency.admitted_rates`
    interval holds (``rule``: default the end-to-end rule at p99); a model is served when its rate
    can be split over its instances within their intervals (:func:`instance_rates`). With
    ``replace=True`` a GPU's layout counts as valid when its instance sizes fit *some* valid
    placement (the placements written are ignored); by default they are checked as written.
    ``table`` and ``slo`` as for :func:`plan`.
    """
    rule = LatencyRule() if rule is None else rule
    table, slo = as_inputs(table, slo)
    table.check_gpu(gpu)
    problems: list[str] = []
    by_gpu: dict[int, list[Segment]] = defaultdict(list)
    known = [s for s in deployment.segments if s.model in slo and s.key in table.latency_ms]
    lo_k, hi_k = _intervals(table, [s.key for s in known], [slo[s.model][1] for s in known], rule)
    interval = {id(s): (lo_k[i], hi_k[i]) for i, s in enumerate(known)}
    los = np.full(len(deployment.segments), np.nan)
    his = np.full(len(deployment.segments), np.nan)
    for i, s in enumerate(deployment.segments):
        by_gpu[s.gpu].append(s)
        where = f"gpu {s.gpu} slice {s.placement} ({s.model}, {s.partition} GPCs, batch {s.batch_size}, " \
                f"{s.processes} processes)"
        if s.model not in slo:
            problems.append(f"{where}: model {s.model} has no SLO")
            continue
        ms = table.latency_ms.get(s.key)
        if ms is None:
            problems.append(f"{where}: configuration not in the measured table")
            continue
        lo, hi = interval[id(s)]
        if not np.isfinite(hi):
            problems.append(f"{where}: latency {ms:.4g} ms is not admitted under the SLO of {slo[s.model][1]:g} ms "
                            f"by the rule ({rule.describe()})")
            continue
        los[i], his[i] = lo, hi
    served = {m: float(np.nansum(his[[s.model == m for s in deployment.segments]])) if deployment.segments
              else 0.0 for m in slo}
    floor = {m: float(np.nansum(los[[s.model == m for s in deployment.segments]])) if deployment.segments
             else 0.0 for m in slo}
    for model, (rate, _) in slo.items():
        if served[model] < rate * (1 - PLAN_RATE_RTOL):
            problems.append(f"model {model}: serves {served[model]:.4g} requests/s of {rate:g} needed")
        elif floor[model] > rate:
            problems.append(f"model {model}: its instances need {floor[model]:.4g} requests/s to fill their batches "
                            f"within the SLO, but it sends {rate:g}")
    for g, segs in sorted(by_gpu.items()):
        try:
            if replace:
                if place(gpu, [mig_profile(gpu, s.partition).gpcs for s in segs]) is None:
                    problems.append(f"gpu {g}: instances of {sorted((s.partition for s in segs), reverse=True)} "
                                    "GPCs fit no valid MIG layout")
            else:
                problems.extend(f"gpu {g}: {p}" for p in check_layout(gpu, [(s.partition, s.placement)
                                                                            for s in segs]))
        except InterfpredError as exc:
            problems.append(f"gpu {g}: {exc}")
    rates = instance_rates(los, his, [s.model for s in deployment.segments], slo)
    return Validation(tuple(problems), deployment.n_gpus, served, tuple(float(r) for r in rates))


def simulate_plan(deployment: Deployment, table: ConfigTable, slo: Slo, rates_rps: Sequence[float], *,
                  rule: LatencyRule | None = None, requests: int = PLAN_SIM_REQUESTS, seed: int = PLAN_SEED
                  ) -> BatchingResult:
    """Each model's SLO attainment when its requests run through the deployment (:func:`interfpred.sim.simulate_batching`).

    Every segment is sent its rate of ``rates_rps`` (as :func:`validate_plan` splits them); batch
    execution times spread as ``rule.exec_sigma`` says (the end-to-end rule's queueing model, also
    under an execution-share rule: the check is the same whatever rule admitted the plan).
    """
    rule = LatencyRule() if rule is None else rule
    inst = [BatchingInstance(s.model, s.batch_size, s.processes, table.latency_ms[s.key], float(r))
            for s, r in zip(deployment.segments, rates_rps, strict=True) if np.isfinite(r) and r > 0]
    return simulate_batching(inst, {m: lat for m, (_, lat) in slo.items()}, exec_sigma=rule.exec_sigma,
                             requests=requests, seed=seed)


def feasible(result: BatchingResult) -> bool:
    """Whether every model's simulated attainment reaches ``PLAN_ATTAINMENT_MIN`` (99 %)."""
    return all(a >= PLAN_ATTAINMENT_MIN for a in result.attainment.values())


# ------------------------------------------------------------------------------------------------ planning
@dataclass(frozen=True)
class Plan:
    """A plan: the deployment, the LP lower bound on GPUs (rounded up), the relaxation's value, time taken.

    ``rates_rps`` is the rate each segment is sent (in the deployment's order), ``rule`` the rule
    that admitted its configurations.
    """

    deployment: Deployment
    lower_bound: int
    lp_value: float
    optimal: bool
    seconds: float
    rates_rps: tuple[float, ...] = ()
    rule: LatencyRule = field(default_factory=LatencyRule)


@dataclass(frozen=True)
class _Candidate:
    key: tuple[str, int, int, int]
    lo: float
    hi: float


def _candidates(table: ConfigTable, slo: Slo, sizes: Sequence[int], rule: LatencyRule
                ) -> dict[str, dict[int, list[_Candidate]]]:
    """Per model and instance size, the configurations worth choosing: admitted at some rate the model can
    send, and not dominated (another takes at least as much and needs at most as little)."""
    known = set(table.models)
    for model in slo:
        if model not in known:
            raise InterfpredError(f"model {model}: not in the profiles (profiled: {', '.join(sorted(known))})")
    keys = [k for k in table.latency_ms if k[0] in slo and k[1] in sizes]
    lo, hi = _intervals(table, keys, [slo[k[0]][1] for k in keys], rule)
    out: dict[str, dict[int, list[_Candidate]]] = {m: defaultdict(list) for m in slo}
    pool: dict[tuple[str, int], list[_Candidate]] = defaultdict(list)
    for k, a, b in zip(keys, lo, hi, strict=True):
        if np.isfinite(b) and a <= slo[k[0]][0]:
            pool[(k[0], k[1])].append(_Candidate(k, float(a), float(b)))
    for (m, g), cands in pool.items():
        best_lo = math.inf
        for c in sorted(cands, key=lambda c: (-c.hi, c.lo, c.key[2], c.key[3])):
            if c.lo < best_lo:
                out[m][g].append(c)
                best_lo = c.lo
    for model, (rate, slo_ms) in slo.items():
        if out[model]:
            continue
        mine = [k for k in keys if k[0] == model]
        admitted = [k for k, b in zip(keys, hi, strict=True) if k[0] == model and np.isfinite(b)]
        if admitted:
            least = min(float(a) for k, a in zip(keys, lo, strict=True) if k[0] == model and np.isfinite(a))
            raise InterfpredError(f"model {model}: at {rate:g} requests/s no batch fills in time to meet its latency "
                                  f"SLO of {slo_ms:g} ms (the least rate any configuration needs: {least:.4g} "
                                  f"requests/s) by the rule ({rule.describe()})")
        fastest = min(mine, key=lambda k: table.latency_ms[k])
        raise InterfpredError(
            f"model {model}: no configuration meets its latency SLO of {slo_ms:g} ms by the rule ({rule.describe()}) "
            f"(fastest: {table.latency_ms[fastest]:.4g} ms, {fastest[1]} GPCs, batch {fastest[2]}, {fastest[3]} "
            f"process{'es' if fastest[3] > 1 else ''})")
    return out


def as_inputs(table: ConfigTable | Measurements, slo: Slo | str | os.PathLike[str]) -> tuple[ConfigTable, Slo]:
    """A :class:`ConfigTable` (given one, or measurement runs with a ``partition`` column) and SLOs (or a CSV)."""
    cfg = table if isinstance(table, ConfigTable) else ConfigTable.from_measurements(table)
    return cfg, (read_slo(slo) if isinstance(slo, (str, os.PathLike)) else check_slo(slo))


def plan(table: ConfigTable | Measurements, slo: Slo | str | os.PathLike[str], *, gpu: str,
         rule: LatencyRule | None = None, time_limit: float = PLAN_TIME_LIMIT_S) -> Plan:
    """The deployment on the fewest GPUs that serves every model's rate within its latency SLO.

    ``table`` is a :class:`ConfigTable` or measurement runs with a ``partition`` column (such as
    ``interfpred.data.datasets.parvagpu_a100()``); ``slo`` maps model -> (requests/s, latency ms)
    or names an SLO CSV (:func:`read_slo`); ``rule`` admits configurations (default the end-to-end
    rule at p99: :mod:`interfpred.provisioning.latency`). Each model's rate is split over its
    instances within their admitted intervals (:func:`instance_rates`). Raises
    :class:`InterfpredError` naming the model when a model is not in the table or no configuration
    meets its SLO, and when the solver stops without a plan within ``time_limit`` seconds.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    t0 = time.perf_counter()
    rule = LatencyRule() if rule is None else rule
    table, slo = as_inputs(table, slo)
    table.check_gpu(gpu)
    layouts = layout_sizes(gpu)
    sizes = sorted({g for lay in layouts for g in lay})
    choice = _candidates(table, slo, sizes, rule)
    # Before solving: the fewest instances any plan needs (each model on its largest intervals) within the limit.
    least = sum(math.ceil(rate / max(c.hi for cs in choice[m].values() for c in cs) * (1 - PLAN_RATE_RTOL))
                for m, (rate, _) in slo.items())
    if least > limit("PLAN_INSTANCES_MAX"):
        raise limit_error("PLAN_INSTANCES_MAX", least, "the MIG instances these rates need (at least)")
    pairs = [c for m in slo for g in sorted(choice[m]) for c in choice[m][g]]
    n_x, n_y = len(pairs), len(layouts)
    models = list(slo)
    a = np.zeros((2 * len(slo) + len(sizes), n_x + n_y))
    lo = np.zeros(a.shape[0])
    hi = np.zeros(a.shape[0])
    for j, c in enumerate(pairs):
        i = models.index(c.key[0])
        a[i, j] = c.hi                      # together the instances take at least the rate ...
        a[len(slo) + i, j] = c.lo           # ... and the rate fills each one's batches in time
        a[2 * len(slo) + sizes.index(c.key[1]), j] = 1.0
    for t, lay in enumerate(layouts):
        for g in lay:
            a[2 * len(slo) + sizes.index(g), n_x + t] -= 1.0
    for i, m in enumerate(models):
        lo[i], hi[i] = slo[m][0] * (1 - PLAN_RATE_RTOL), np.inf
        lo[len(slo) + i], hi[len(slo) + i] = -np.inf, slo[m][0]
    lo[2 * len(slo):], hi[2 * len(slo):] = -np.inf, 0.0
    cons = LinearConstraint(a, lo, hi)
    gpus = np.r_[np.zeros(n_x), np.ones(n_y)]
    ints = np.ones(n_x + n_y)
    opts = {"time_limit": time_limit}
    relax = milp(gpus, constraints=cons, integrality=np.zeros_like(ints), bounds=Bounds(0, np.inf), options=opts)
    first = milp(gpus, constraints=cons, integrality=ints, bounds=Bounds(0, np.inf), options=opts)
    if first.x is None:
        raise InterfpredError(f"the solver found no plan within {time_limit:g} s ({first.message})")
    n_gpus = round(float(first.fun))
    # Second pass: the same number of GPUs, the fewest GPCs in use (instances left unconfigured).
    gpcs = np.r_[[c.key[1] for c in pairs], np.zeros(n_y)]
    fixed = LinearConstraint(gpus[None, :], n_gpus, n_gpus)
    second = milp(gpcs, constraints=[cons, fixed], integrality=ints, bounds=Bounds(0, np.inf), options=opts)
    best = second if second.x is not None else first
    x = np.round(best.x).astype(int)
    check_limit("PLAN_INSTANCES_MAX", int(x[:n_x].sum()), "a plan with instances")
    deployment = _lay_out(gpu, [(c.key, int(x[j])) for j, c in enumerate(pairs)],
                          [(lay, int(x[n_x + t])) for t, lay in enumerate(layouts)])
    interval = {c.key: (c.lo, c.hi) for c in pairs}
    los = np.array([interval[s.key][0] for s in deployment.segments])
    his = np.array([interval[s.key][1] for s in deployment.segments])
    rates = instance_rates(los, his, [s.model for s in deployment.segments], slo)
    lp = float(relax.fun) if relax.x is not None else 0.0
    return Plan(deployment, int(math.ceil(lp - PLAN_LP_BOUND_FUZZ)), lp, bool(first.status == 0 and best.status == 0),
                time.perf_counter() - t0, tuple(float(r) for r in rates), rule)


def _lay_out(gpu: str, counts: Sequence[tuple[tuple[str, int, int, int], int]],
             gpus: Sequence[tuple[tuple[int, ...], int]]) -> Deployment:
    """Concrete segments: each GPU of a layout takes its valid placements; slots are filled by size."""
    wanted: dict[int, deque[tuple[str, int, int, int]]] = defaultdict(deque)
    for key, n in counts:
        wanted[key[1]].extend([key] * n)
    segs: list[Segment] = []
    index = 0
    for lay, n in gpus:
        slots = place(gpu, lay)
        assert slots is not None  # every layout of layout_sizes is placeable
        for _ in range(n):
            mine = []
            for g, start in slots:
                if wanted[g]:  # a slot no instance needs stays unconfigured
                    model, gpcs, batch, procs = wanted[g].popleft()
                    mine.append(Segment(index, model, gpcs, start, batch, procs))
            if mine:
                segs.extend(sorted(mine, key=lambda s: s.placement))
                index += 1
    left = [k for v in wanted.values() for k in v]
    if left:  # the slot constraint makes this impossible; a wrong table would land here
        raise InterfpredError(f"internal: {len(left)} instances found no slot")
    return Deployment(tuple(segs))
