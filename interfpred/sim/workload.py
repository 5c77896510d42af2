"""Workloads for the simulator: Poisson arrival streams and the paper's scenario.

Load is the offered utilisation per GPU, ``rho = sum_m lambda_m E[solo_m] / n_gpus``: arrival
rate of each model times its mean solo latency (over its batch-size distribution), summed, per
GPU.  ``rho = 1`` would keep one GPU busy if executions ran one at a time without interference;
co-location serves more than that, until contention eats the gain.  ``rho`` above the
concurrency limit cannot be served even without contention, and is refused.

Everything is deterministic given ``seed`` (a :class:`numpy.random.Generator` is built from it).

Examples
--------
>>> arr = poisson_arrivals(["resnet50", "vgg19"], rho=0.5, executions=1000, seed=1)
>>> len(arr), sorted(set(arr.model.tolist()))
(1000, ['resnet50', 'vgg19'])
>>> round(offered_load(arr, zoo_profiles("l4")), 1)    # measured rho of the drawn stream
0.5
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from interfpred._io import recover, replace_folder, temp_folder
from interfpred.constants import (
    SCHEMA_VERSION,
    SIM_DEFAULT_EXECUTIONS,
    SIM_DEFAULT_TRUTH,
    SIM_HIDDEN_SEED,
    SIM_RHO_LIGHT,
    SIM_RHO_MODERATE,
    SIM_RHO_STRESS,
)
from interfpred.errors import InterfpredError
from interfpred.profiles import ProfileTable
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.engine import simulate
from interfpred.sim.operators import PhaseZoo
from interfpred.sim.orion import paper_sets, scenario_family
from interfpred.sim.phased import simulate_phased
from interfpred.sim.zoo import zoo_profiles
from interfpred.trace import Trace

__all__ = [
    "Arrivals",
    "Scenario",
    "poisson_arrivals",
    "offered_load",
    "simulate_arrivals",
    "paper_scenario",
    "mix_scenario",
    "write_scenario",
    "PAPER_TRAIN_MODELS",
    "PAPER_NEW_MODELS",
]

#: E2's training models and the models that only appear at test time.
PAPER_TRAIN_MODELS = ("resnet50", "vgg19", "roberta_base", "vit_b16")
PAPER_NEW_MODELS = ("convnext_b", "yolov8n")
#: Batch sizes of the homogeneous sets (uniform over these).
PAPER_BATCH_SIZES = (1, 2, 4, 8, 16)
#: Test set 3's heterogeneous batch-size ranges (uniform over each inclusive range) and load shares.
PAPER_HETERO_BATCHES = {
    "resnet50": (1, 32), "vgg19": (1, 8), "convnext_b": (1, 16),
    "roberta_base": (8, 32), "vit_b16": (1, 32), "yolov8n": (16, 32),
}
PAPER_HETERO_WEIGHTS = {
    "resnet50": 3.0, "vgg19": 1.0, "convnext_b": 1.0, "roberta_base": 2.0, "vit_b16": 1.0, "yolov8n": 2.0,
}

BatchSpec = Sequence[int] | Mapping[int, float]


@dataclass(frozen=True)
class Arrivals:
    """A stream of arriving executions (columns aligned, sorted by time).

    Examples
    --------
    >>> a = Arrivals(id=np.array([0, 1]), gpu=np.array(["gpu0", "gpu0"]), model=np.array(["vgg19", "vgg19"]),
    ...              batch_size=np.array([1, 2]), time_ms=np.array([0.0, 3.0]))
    >>> len(Arrivals.concat([a, a.shifted(10.0, first_id=2)]))
    4
    """

    id: np.ndarray
    gpu: np.ndarray
    model: np.ndarray
    batch_size: np.ndarray
    time_ms: np.ndarray

    def __len__(self) -> int:
        return len(self.id)

    def shifted(self, offset_ms: float, *, first_id: int) -> Arrivals:
        """The same stream later by ``offset_ms`` with ids renumbered from ``first_id``."""
        return Arrivals(id=np.arange(first_id, first_id + len(self), dtype=np.int64), gpu=self.gpu,
                        model=self.model, batch_size=self.batch_size, time_ms=self.time_ms + offset_ms)

    @staticmethod
    def concat(parts: Sequence[Arrivals]) -> Arrivals:
        """Streams one after another (times must not go back)."""
        return Arrivals(**{k: np.concatenate([getattr(p, k) for p in parts])
                           for k in ("id", "gpu", "model", "batch_size", "time_ms")})


def _batch_table(models: Sequence[str], batch_sizes: BatchSpec | Mapping[str, BatchSpec] | None,
                 profiles: ProfileTable, gpu: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """model -> (batch sizes, probabilities), validated against the profiled range."""
    out = {}
    for m in models:
        profiled = profiles.batch_sizes(m, gpu)  # raises for an unknown model, listing the known
        spec: BatchSpec | None
        if isinstance(batch_sizes, Mapping) and batch_sizes and all(isinstance(k, str) for k in batch_sizes):
            spec = cast(Mapping[str, BatchSpec], batch_sizes).get(m)   # per model
        else:
            spec = cast("BatchSpec | None", batch_sizes)                # one distribution for every model
        if spec is None:
            sizes, w = np.asarray(profiled, dtype=np.int64), np.ones(len(profiled))
        elif isinstance(spec, Mapping):
            sizes = np.asarray(list(spec.keys()))
            w = np.asarray(list(spec.values()), dtype=np.float64)
        else:
            sizes = np.asarray(list(spec))
            w = np.ones(len(sizes))
        if sizes.size == 0:
            raise InterfpredError(f"batch sizes of model {m!r} are empty")
        if sizes.dtype.kind not in "iu" and not np.all(sizes == np.round(sizes.astype(float))):
            raise InterfpredError(f"batch sizes {sizes.tolist()} of model {m!r} must be integers")
        sizes = sizes.astype(np.int64)
        bad = sizes[(sizes < profiled[0]) | (sizes > profiled[-1])]
        if bad.size:
            raise InterfpredError(f"batch size {int(bad[0])} of model {m!r} is outside the profiled range "
                                  f"{profiled[0]}..{profiled[-1]} on gpu {gpu!r}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise InterfpredError(f"batch-size weights of model {m!r} must be >= 0 with a positive sum, got {w.tolist()}")
        out[m] = (sizes, w / w.sum())
    return out


def _mean_solo(profiles: ProfileTable, gpu: str, model: str, sizes: np.ndarray, prob: np.ndarray) -> float:
    solo = profiles.lookup_arrays([model] * len(sizes), sizes, gpus=gpu)["solo_ms"]
    return float(np.dot(prob, solo))


def poisson_arrivals(
    models: Sequence[str],
    *,
    rho: float,
    executions: int,
    profiles: ProfileTable | None = None,
    gpu: GpuSpec | str = "l4",
    batch_sizes: BatchSpec | Mapping[str, BatchSpec] | None = None,
    weights: Mapping[str, float] | None = None,
    gpus: int = 1,
    start_ms: float = 0.0,
    first_id: int = 0,
    seed: int | np.random.Generator | None = 0,
) -> Arrivals:
    """Independent Poisson arrivals per model at offered utilisation ``rho`` per GPU.

    Parameters
    ----------
    models
        Model names (profiled on ``gpu``).
    rho
        Offered utilisation per GPU, ``sum_m lambda_m E[solo_m] / gpus``; in (0, max_concurrency].
    executions
        Number of arrivals to draw (all models together).
    profiles
        Solo profiles; default the synthetic zoo of ``gpu``.
    gpu
        GPU preset or spec whose profiles set the mean latencies (and whose concurrency bounds rho).
    batch_sizes
        Batch-size distribution: a sequence (uniform over it), a mapping batch -> weight, or a
        mapping model -> either; default uniform over the profiled sizes.
    weights
        Share of the load per model (default equal shares).
    gpus
        Number of GPUs ``gpu0..``; each arrival goes to one uniformly at random.
    start_ms
        Time origin of the stream; the first arrival comes one exponential gap after it.
    first_id
        Id of the first arrival (ids are consecutive).
    seed
        Seed or Generator.

    Returns
    -------
    Arrivals

    Examples
    --------
    >>> a = poisson_arrivals(["yolov8n"], rho=0.2, executions=3, batch_sizes={8: 1.0}, gpus=2, seed=0)
    >>> a.batch_size.tolist(), a.gpu.tolist()
    ([8, 8, 8], ['gpu1', 'gpu1', 'gpu0'])
    >>> poisson_arrivals(["yolov8n"], rho=0.0, executions=3)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: rho 0.0 must be in (0, 4] (offered utilisation per GPU; above max_concurrency 4 no GPU can keep up)
    """
    spec = get_gpu_spec(gpu)
    profiles = zoo_profiles(spec.name) if profiles is None else profiles
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise InterfpredError(f"rho {rho!r} is not a number") from None
    if not (np.isfinite(rho) and 0.0 < rho <= spec.max_concurrency):
        raise InterfpredError(f"rho {rho!r} must be in (0, {spec.max_concurrency}] (offered utilisation per GPU; "
                              f"above max_concurrency {spec.max_concurrency} no GPU can keep up)")
    if not isinstance(executions, int | np.integer) or executions < 0:
        raise InterfpredError(f"executions {executions!r} must be a non-negative integer")
    if not isinstance(gpus, int | np.integer) or gpus < 1:
        raise InterfpredError(f"gpus {gpus!r} must be a positive integer")
    if not np.isfinite(start_ms) or start_ms < 0:
        raise InterfpredError(f"start_ms {start_ms!r} must be a finite time >= 0")
    models = list(models)
    if not models:
        raise InterfpredError("models is empty")
    if len(set(models)) != len(models):
        raise InterfpredError(f"models {models} has duplicates")
    table = _batch_table(models, batch_sizes, profiles, spec.name)
    w = np.ones(len(models)) if weights is None else np.array([float(weights.get(m, 0.0)) for m in models])
    if weights is not None:
        unknown = sorted(set(weights) - set(models))
        if unknown:
            raise InterfpredError(f"weights name model(s) {', '.join(unknown)} not in models {models}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InterfpredError(f"weights must be >= 0 with a positive sum, got {w.tolist()}")
    w = w / w.sum()
    mean_solo = np.array([_mean_solo(profiles, spec.name, m, *table[m]) for m in models])
    lam = rho * gpus * w / mean_solo              # arrivals per ms, per model
    total = lam.sum()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    times = start_ms + np.cumsum(rng.exponential(1.0 / total, size=executions))
    which = rng.choice(len(models), size=executions, p=lam / total)
    batch = np.empty(executions, dtype=np.int64)
    for i, m in enumerate(models):
        idx = np.flatnonzero(which == i)
        sizes, prob = table[m]
        batch[idx] = rng.choice(sizes, size=idx.size, p=prob)
    gpu_idx = rng.integers(0, gpus, size=executions)
    names = np.array([f"gpu{g}" for g in range(gpus)])
    return Arrivals(id=np.arange(first_id, first_id + executions, dtype=np.int64), gpu=names[gpu_idx],
                    model=np.asarray(models)[which], batch_size=batch, time_ms=times)


def offered_load(arrivals: Arrivals, profiles: ProfileTable, gpu: str = "l4") -> float:
    """Measured offered utilisation per GPU of a stream: total solo work / (span x GPUs).

    The span is from 0 to the last arrival.
    """
    if len(arrivals) == 0:
        return 0.0
    solo = profiles.lookup_arrays(arrivals.model, arrivals.batch_size, gpus=gpu)["solo_ms"]
    return float(solo.sum() / (arrivals.time_ms.max() * len(np.unique(arrivals.gpu))))


def simulate_arrivals(arrivals: Arrivals, *, spec: GpuSpec | str = "l4", profiles: ProfileTable | None = None,
                      seed: int | np.random.Generator | None = 0, zoo: PhaseZoo | None = None):
    """Run an arrival stream through the FIFO queue and the engine (a :class:`SimResult`).

    With ``zoo`` the phase-structured engine (:func:`interfpred.sim.phased.simulate_phased`)
    runs the stream on that family's programs; without, the fluid engine on ``profiles``.

    Examples
    --------
    >>> a = poisson_arrivals(["vgg19", "resnet50"], rho=0.9, executions=200, seed=0)
    >>> r = simulate_arrivals(a, seed=0)
    >>> len(r.trace), bool(np.all(r.slowdown > 0.9))
    (200, True)
    """
    if zoo is not None:
        return simulate_phased(arrivals.model, arrivals.batch_size, arrivals.time_ms, gpu=arrivals.gpu,
                               id=arrivals.id, spec=spec, zoo=zoo, queue=True, seed=seed)
    return simulate(arrivals.model, arrivals.batch_size, arrivals.time_ms, gpu=arrivals.gpu, id=arrivals.id,
                    spec=spec, profiles=profiles, queue=True, seed=seed)


@dataclass(frozen=True)
class Scenario:
    """Named simulated traces and the profiles they were simulated from.

    Attributes
    ----------
    profiles
        The solo profiles (time averages of the programs under the phase-structured truth).
    spec
        The GPU type.
    traces
        Set name -> Trace (sorted by launch, ``solo_ms`` = noisy solo work).
    arrival_ms
        Set name -> arrival time per trace row.
    sets
        Set name -> description (phases with models, rho, batch sizes, first id, count).
    """

    profiles: ProfileTable
    spec: GpuSpec
    traces: dict[str, Trace]
    arrival_ms: dict[str, np.ndarray]
    sets: dict[str, dict] = field(default_factory=dict)
    seed: int | None = None
    zoo: PhaseZoo | None = None
    family: str = "synthetic"

    @property
    def source(self) -> str:
        """The label of the profiles' family (what their ``source`` column says)."""
        return "orion operators, derived demands" if self.family == "orion" else "synthetic"

    @property
    def truth(self) -> str:
        """``"phases"`` (operator-level truth on :attr:`zoo`) or ``"fluid"``."""
        return "fluid" if self.zoo is None else "phases"

    def manifest(self) -> dict:
        """A JSON-able description (what :func:`write_scenario` stores as scenario.json)."""
        source = self.source
        extra = {"zoo": self.family} if self.zoo is None else {"zoo": self.family, "max_phases": self.zoo.max_phases,
                                                                "hidden_seed": SIM_HIDDEN_SEED}
        return {"schema_version": SCHEMA_VERSION, "source": source, "truth": self.truth, **extra, "seed": self.seed,
                "gpu": self.spec.model_dump(), "sets": self.sets,
                "files": {"profiles": "profiles.csv", **{k: f"{k}.csv" for k in self.traces}}}


def _run_phases(name: str, phases: list[dict], *, spec: GpuSpec, profiles: ProfileTable, gpus: int,
                first_id: int, seed: np.random.SeedSequence, zoo: PhaseZoo | None = None
                ) -> tuple[Trace, np.ndarray, dict]:
    arr_rng, noise_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    parts: list[Arrivals] = []
    t0 = 0.0
    next_id = first_id
    described = []
    for ph in phases:
        a = poisson_arrivals(ph["models"], rho=ph["rho"], executions=ph["executions"], profiles=profiles,
                             gpu=spec, batch_sizes=ph.get("batch_sizes"), weights=ph.get("weights"),
                             gpus=gpus, start_ms=t0, first_id=next_id, seed=arr_rng)
        parts.append(a)
        described.append({**{k: v for k, v in ph.items() if k != "batch_sizes"},
                          "batch_sizes": _describe_batches(ph.get("batch_sizes")),
                          "first_id": next_id, "start_ms": t0})
        if len(a):
            t0 = float(a.time_ms[-1])
        next_id += len(a)
    arrivals = Arrivals.concat(parts)
    res = simulate_arrivals(arrivals, spec=spec, profiles=profiles, seed=noise_rng, zoo=zoo)
    return res.trace, res.arrival_ms, {"name": name, "gpus": gpus, "phases": described}


def _describe_batches(b) -> object:
    if b is None:
        return "all profiled"
    if isinstance(b, Mapping):
        return {str(k): (list(map(int, v)) if isinstance(v, Sequence | range | np.ndarray) else
                         {str(kk): float(vv) for kk, vv in v.items()} if isinstance(v, Mapping) else float(v))
                for k, v in b.items()}
    return [int(x) for x in b]


def _split(total: int, parts: int) -> list[int]:
    base = [total // parts] * parts
    for i in range(total % parts):
        base[i] += 1
    return base


def paper_scenario(gpu: GpuSpec | str = "l4", *, seed: int = 0, executions: int = SIM_DEFAULT_EXECUTIONS,
                   gpus: int = 1, profiles: ProfileTable | None = None, truth: str = SIM_DEFAULT_TRUTH,
                   zoo: str | PhaseZoo | None = None) -> Scenario:
    """The paper's E2 sets, simulated on a model family.

    The synthetic family's sets are listed below; the orion family's use
    :data:`~interfpred.sim.orion.ORION_TRAIN_MODELS` (resnet50, mobilenetv2, bert, transformer_xl)
    for training and test 1, :data:`~interfpred.sim.orion.ORION_NEW_MODELS` (efficientnet,
    retinanet) for test 2, and all seven (with resnet101, seen nowhere else) for test 3.

    * ``train``: {resnet50, vgg19, roberta_base, vit_b16} at moderate load (rho 0.9), batch sizes
      uniform over 1, 2, 4, 8, 16 (experiments split it 75/25);
    * ``test1``: the same models, a light phase (rho 0.3) then a stress phase (rho 1.4), half each;
    * ``test2``: the new models {convnext_b, yolov8n} at moderate load, same batch sizes;
    * ``test3``: all six, heterogeneous batch sizes (a different range per model, 1..32 in all),
      unequal load shares, and loads light, moderate, stress, moderate in quarters.

    Parameters
    ----------
    gpu
        GPU preset name or spec (profiles default to its synthetic zoo).
    seed
        Seed of everything (arrivals and noise; sets use independent child seeds).
    executions
        Executions per set (small values make quick traces; at least 4).
    gpus
        GPUs per set (``gpu0..``), arrivals spread uniformly; rho is per GPU.
    profiles
        Override the zoo (must cover the six models on ``gpu``; fluid truth only).
    truth
        ``"phases"`` (operator-level ground truth with hidden per-model factors) or ``"fluid"``
        (one demand vector per execution, the profile's).
    zoo
        Family: ``"orion"``, ``"synthetic"``, a :class:`~interfpred.sim.operators.PhaseZoo`, or None
        (under ``truth="phases"`` orion on a v100, else synthetic; under ``"fluid"`` synthetic).
        The fluid truth on the orion family runs its profiles (each pass's time-averaged demand,
        without the hidden factors): the phase structure and hidden factors removed, the rest equal.

    Examples
    --------
    >>> sc = paper_scenario("l4", seed=0, executions=400)
    >>> sorted(sc.traces), len(sc.traces["test3"])
    (['test1', 'test2', 'test3', 'train'], 400)
    >>> sorted(set(sc.traces["test2"].model.tolist()))
    ['convnext_b', 'yolov8n']
    """
    spec = get_gpu_spec(gpu)
    profiles, pz, family = scenario_family(spec, truth, zoo, profiles)
    if not isinstance(executions, int | np.integer) or executions < 4:
        raise InterfpredError(f"executions {executions!r} must be an integer >= 4 (executions per set)")
    train, new, every, hetero_b, hetero_w = paper_sets(family)
    half = _split(executions, 2)
    quarter = _split(executions, 4)
    bs = list(PAPER_BATCH_SIZES)
    hetero = {m: list(range(lo, hi + 1)) for m, (lo, hi) in hetero_b.items()}
    plans = {
        "train": [dict(models=train, rho=SIM_RHO_MODERATE, executions=executions, batch_sizes=bs)],
        "test1": [dict(models=train, rho=SIM_RHO_LIGHT, executions=half[0], batch_sizes=bs),
                  dict(models=train, rho=SIM_RHO_STRESS, executions=half[1], batch_sizes=bs)],
        "test2": [dict(models=new, rho=SIM_RHO_MODERATE, executions=executions, batch_sizes=bs)],
        "test3": [dict(models=every, rho=r, executions=q, batch_sizes=hetero, weights=hetero_w)
                  for r, q in zip((SIM_RHO_LIGHT, SIM_RHO_MODERATE, SIM_RHO_STRESS, SIM_RHO_MODERATE), quarter)],
    }
    children = np.random.SeedSequence(check_seed(seed)).spawn(len(plans))
    traces, arrivals, sets = {}, {}, {}
    for i, (name, phases) in enumerate(plans.items()):
        trace, arr, desc = _run_phases(name, phases, spec=spec, profiles=profiles, gpus=gpus,
                                       first_id=i * 10 ** (len(str(executions)) + 1), seed=children[i], zoo=pz)
        traces[name], arrivals[name], sets[name] = trace, arr, desc
    return Scenario(profiles=profiles, spec=spec, traces=traces, arrival_ms=arrivals, sets=sets, seed=seed, zoo=pz,
                    family=family)


def mix_scenario(models: Sequence[str], *, rho: float, gpu: GpuSpec | str = "l4", seed: int = 0,
                 executions: int = SIM_DEFAULT_EXECUTIONS, batch_sizes: BatchSpec | None = None, gpus: int = 1,
                 profiles: ProfileTable | None = None, truth: str = SIM_DEFAULT_TRUTH,
                 zoo: str | PhaseZoo | None = None) -> Scenario:
    """One set, ``trace``: the given models at one load (a custom workload); ``truth`` and ``zoo``
    as in :func:`paper_scenario`.

    Examples
    --------
    >>> sc = mix_scenario(["resnet50", "yolov8n"], rho=0.7, executions=50, batch_sizes=[1, 32])
    >>> list(sc.traces), sorted(set(sc.traces["trace"].batch_size.tolist()))
    (['trace'], [1, 32])
    """
    spec = get_gpu_spec(gpu)
    profiles, pz, family = scenario_family(spec, truth, zoo, profiles)
    phases = [dict(models=list(models), rho=rho, executions=executions, batch_sizes=batch_sizes)]
    trace, arr, desc = _run_phases("trace", phases, spec=spec, profiles=profiles, gpus=gpus, first_id=0,
                                   seed=np.random.SeedSequence(check_seed(seed)), zoo=pz)
    return Scenario(profiles=profiles, spec=spec, traces={"trace": trace}, arrival_ms={"trace": arr},
                    sets={"trace": desc}, seed=seed, zoo=pz, family=family)


def check_seed(seed: object) -> int | None:
    """``seed`` if it is None or a non-negative integer, else an :class:`InterfpredError`.

    Examples
    --------
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: seed -1 must be a non-negative integer (or None)
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InterfpredError(f"seed {seed!r} must be a non-negative integer (or None)")
    return int(seed)


def write_scenario(scenario: Scenario, out: str | os.PathLike[str], *, force: bool = False,
                   operators: bool = False) -> list[str]:
    """Write ``profiles.csv``, one ``<set>.csv`` per trace and ``scenario.json`` into ``out``.

    With ``operators`` (phase-structured truth only) also ``operators.csv``: the operator-level
    profile of every (model, batch size) the traces hold, one row per operator (or phase) with
    its solo ``duration_ms`` and demands ``sm, l2, dram``; the hidden per-model factors are not in it.

    The files are written into a temporary folder beside ``out`` which replaces it only once
    complete, so ``out`` is never left half-written; a run killed at any point leaves the old
    ``out`` (or a leftover the next run puts back and cleans up: :func:`interfpred._io.recover`).  An existing non-empty ``out`` is refused unless
    ``force`` (then it is replaced as a whole).  Returns the file names written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "sim"
    >>> write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10), out)
    ['profiles.csv', 'trace.csv', 'scenario.json']
    >>> write_scenario(mix_scenario(["vgg19"], rho=0.5, executions=10), out)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: output folder ... exists and is not empty; pass --force (force=True) to replace it
    """
    out = os.path.abspath(os.fspath(out))
    recover(out)  # a run killed while replacing ``out`` left it aside: put it back first
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise InterfpredError(f"output {out} exists and is not a folder")
        if os.listdir(out) and not force:
            raise InterfpredError(f"output folder {out} exists and is not empty; pass --force (force=True) to replace it")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise InterfpredError(f"parent folder {parent} of the output does not exist")
    tmp = temp_folder(out)
    if operators and scenario.zoo is None:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InterfpredError("an operator-level profile needs the phase-structured truth (truth 'phases')")
    names = ["profiles.csv", *(f"{k}.csv" for k in scenario.traces), *(["operators.csv"] if operators else []),
             "scenario.json"]
    try:
        scenario.profiles.to_csv(os.path.join(tmp, "profiles.csv"))
        if operators and scenario.zoo is not None:
            keys = {(str(m), int(b)) for t in scenario.traces.values() for m, b in zip(t.model, t.batch_size)}
            cols = scenario.zoo.operator_rows(keys)
            with open(os.path.join(tmp, "operators.csv"), "w", encoding="utf-8", newline="") as fh:
                fh.write(",".join(cols) + "\n")
                for row in zip(*cols.values()):
                    fh.write(",".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")
        for k, t in scenario.traces.items():
            t.to_csv(os.path.join(tmp, f"{k}.csv"))
        with open(os.path.join(tmp, "scenario.json"), "w", encoding="utf-8") as fh:
            json.dump(scenario.manifest(), fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o755)
        replace_folder(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    return names
