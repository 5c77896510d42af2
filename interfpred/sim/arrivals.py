"""Arrival streams for the simulator: Poisson arrivals per model at an offered load, and running them.

Load is the offered utilisation per device, ``rho = sum_m lambda_m E[solo_m] / n_devices``:
arrival rate of each model times its mean solo latency (over its batch-size distribution),
summed, per device. ``rho`` above the concurrency limit cannot be served even without
contention, and is refused (see docs/simulator.md). Everything is deterministic given ``seed``.

Examples
--------
>>> arr = poisson_arrivals(["resnet50", "vgg19"], rho=0.5, executions=1000, seed=1)
>>> len(arr), sorted(set(arr.model.tolist()))
(1000, ['resnet50', 'vgg19'])
>>> round(offered_load(arr, zoo_profiles("l4")), 1)    # measured rho of the drawn stream
0.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from interfpred._core.limits import check_limit
from interfpred.constants import SIM_CONTEXT_SWITCH_MS, SIM_DEFAULT_GPU, SIM_MIN_RHO, SIM_TIMESLICE_QUANTUM_MS
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.sim._executions import check_seed
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.engine import SimResult, simulate
from interfpred.sim.mechanisms import MigInstance, simulate_mechanism
from interfpred.sim.operators import PhaseZoo
from interfpred.sim.phased import simulate_phased
from interfpred.sim.zoo import zoo_profiles

__all__ = ["Arrivals", "BatchSpec", "offered_load", "poisson_arrivals", "simulate_arrivals"]

#: A batch-size distribution: a sequence (uniform over it) or a mapping batch size -> weight.
BatchSpec = Sequence[int] | Mapping[int, float]


@dataclass(frozen=True)
class Arrivals:
    """A stream of arriving executions (columns aligned, sorted by time).

    Examples
    --------
    >>> a = Arrivals(id=np.array([0, 1]), device=np.array(["gpu0", "gpu0"]), model=np.array(["vgg19", "vgg19"]),
    ...              batch_size=np.array([1, 2]), time_ms=np.array([0.0, 3.0]))
    >>> len(Arrivals.concat([a, a.shifted(10.0, first_id=2)]))
    4
    """

    id: np.ndarray
    device: np.ndarray
    model: np.ndarray
    batch_size: np.ndarray
    time_ms: np.ndarray

    def __len__(self) -> int:
        return len(self.id)

    def shifted(self, offset_ms: float, *, first_id: int) -> Arrivals:
        """The same stream later by ``offset_ms`` with ids renumbered from ``first_id``."""
        return Arrivals(id=np.arange(first_id, first_id + len(self), dtype=np.int64), device=self.device,
                        model=self.model, batch_size=self.batch_size, time_ms=self.time_ms + offset_ms)

    @staticmethod
    def concat(parts: Sequence[Arrivals]) -> Arrivals:
        """Streams one after another (times must not go back)."""
        return Arrivals(**{k: np.concatenate([getattr(p, k) for p in parts])
                           for k in ("id", "device", "model", "batch_size", "time_ms")})


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
    spec: GpuSpec | str = SIM_DEFAULT_GPU,
    batch_sizes: BatchSpec | Mapping[str, BatchSpec] | None = None,
    weights: Mapping[str, float] | None = None,
    n_devices: int = 1,
    start_ms: float = 0.0,
    first_id: int = 0,
    seed: int | np.random.Generator | None = 0,
) -> Arrivals:
    """Independent Poisson arrivals per model at offered utilisation ``rho`` per device.

    Parameters
    ----------
    models
        Model names (profiled on ``spec``).
    rho
        Offered utilisation per device, ``sum_m lambda_m E[solo_m] / n_devices``; in (0, max_concurrency].
    executions
        Number of arrivals to draw (all models together).
    profiles
        Solo profiles; default the synthetic zoo of ``spec``.
    spec
        GPU preset or spec whose profiles set the mean latencies (and whose concurrency bounds rho).
    batch_sizes
        Batch-size distribution: a sequence (uniform over it), a mapping batch -> weight, or a
        mapping model -> either; default uniform over the profiled sizes.
    weights
        Share of the load per model (default equal shares).
    n_devices
        Number of devices (GPUs ``gpu0..``); each arrival goes to one uniformly at random.
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
    >>> a = poisson_arrivals(["yolov8n"], rho=0.2, executions=3, batch_sizes={8: 1.0}, n_devices=2, seed=0)
    >>> a.batch_size.tolist(), a.device.tolist()
    ([8, 8, 8], ['gpu1', 'gpu1', 'gpu0'])
    >>> poisson_arrivals(["yolov8n"], rho=0.0, executions=3)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: rho 0.0 must be in (0, 4] (offered utilisation per GPU; above max_concurrency 4 no GPU can keep up)
    """
    spec = get_gpu_spec(spec)
    profiles = zoo_profiles(spec.name) if profiles is None else profiles
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise InterfpredError(f"rho {rho!r} is not a number") from None
    if not (np.isfinite(rho) and 0.0 < rho <= spec.max_concurrency):
        raise InterfpredError(f"rho {rho!r} must be in (0, {spec.max_concurrency}] (offered utilisation per GPU; "
                              f"above max_concurrency {spec.max_concurrency} no GPU can keep up)")
    if rho < SIM_MIN_RHO:  # gaps so long that start + latency rounds back to start
        raise InterfpredError(f"rho {rho!r} is below SIM_MIN_RHO={SIM_MIN_RHO:g}: arrivals that sparse put the "
                              "times where a latency is lost to rounding")
    if not isinstance(executions, int | np.integer) or executions < 0:
        raise InterfpredError(f"executions {executions!r} must be a non-negative integer")
    check_limit("EXECUTIONS_MAX", int(executions), "executions")
    if not isinstance(n_devices, int | np.integer) or n_devices < 1:
        raise InterfpredError(f"n_devices {n_devices!r} must be a positive integer")
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
    lam = rho * n_devices * w / mean_solo              # arrivals per ms, per model
    total = lam.sum()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    times = start_ms + np.cumsum(rng.exponential(1.0 / total, size=executions))
    which = rng.choice(len(models), size=executions, p=lam / total)
    batch = np.empty(executions, dtype=np.int64)
    for i, m in enumerate(models):
        idx = np.flatnonzero(which == i)
        sizes, prob = table[m]
        batch[idx] = rng.choice(sizes, size=idx.size, p=prob)
    gpu_idx = rng.integers(0, n_devices, size=executions)
    names = np.array([f"gpu{g}" for g in range(n_devices)])
    return Arrivals(id=np.arange(first_id, first_id + executions, dtype=np.int64), device=names[gpu_idx],
                    model=np.asarray(models)[which], batch_size=batch, time_ms=times)


def offered_load(arrivals: Arrivals, profiles: ProfileTable, spec: GpuSpec | str = SIM_DEFAULT_GPU) -> float:
    """Measured offered utilisation per device of a stream: total solo work / (span x devices).

    The span is from 0 to the last arrival; ``spec`` (a GpuSpec or a name) names the GPU the
    profiles are looked up under.
    """
    if len(arrivals) == 0:
        return 0.0
    solo = profiles.lookup_arrays(arrivals.model, arrivals.batch_size, gpus=spec.name if isinstance(spec, GpuSpec) else spec)["solo_ms"]
    return float(solo.sum() / (arrivals.time_ms.max() * len(np.unique(arrivals.device))))


def simulate_arrivals(arrivals: Arrivals, *, spec: GpuSpec | str = SIM_DEFAULT_GPU, profiles: ProfileTable | None = None,
                      seed: int | np.random.Generator | None = 0, zoo: PhaseZoo | None = None,
                      mechanism: str = "mps", layout: Sequence[MigInstance] | None = None,
                      instance: Sequence[int] | np.ndarray | None = None,
                      quantum_ms: float = SIM_TIMESLICE_QUANTUM_MS,
                      switch_ms: float = SIM_CONTEXT_SWITCH_MS) -> SimResult:
    """Run an arrival stream through the FIFO queue and the engine (a :class:`SimResult`).

    With ``zoo`` the phase-structured truth (:func:`interfpred.sim.phased.simulate_phased`)
    runs the stream on that family's programs; without, the fluid truth on ``profiles``.
    ``mechanism`` says how each GPU is shared (:func:`interfpred.sim.mechanisms.simulate_mechanism`):
    ``"mps"`` (the default, every batch beside every other), ``"time_slicing"`` (one model's
    context at a time; ``quantum_ms``, ``switch_ms``) or ``"mig"`` (``layout`` and each arrival's
    ``instance``; the arrivals' devices are then ignored); the phase-structured truth runs under
    MPS only.

    Examples
    --------
    >>> a = poisson_arrivals(["vgg19", "resnet50"], rho=0.9, executions=200, seed=0)
    >>> r = simulate_arrivals(a, seed=0)
    >>> len(r.trace), bool(np.all(r.slowdown > 0.9))
    (200, True)
    >>> t = simulate_arrivals(a, seed=0, mechanism="time_slicing")      # the same stream, one context at a time
    >>> bool(np.mean(t.trace.latency_ms) > np.mean(r.trace.latency_ms))
    True
    """
    if mechanism != "mps":
        if zoo is not None:
            raise InterfpredError(f"the phase-structured truth runs under mechanism 'mps' only, not {mechanism!r}")
        return simulate_mechanism(arrivals.model, arrivals.batch_size, arrivals.time_ms,
                                  device=None if mechanism == "mig" else arrivals.device, mechanism=mechanism,
                                  layout=layout, instance=instance, spec=spec, profiles=profiles,
                                  quantum_ms=quantum_ms, switch_ms=switch_ms, seed=seed, id=arrivals.id)
    if layout is not None or instance is not None:
        raise InterfpredError("layout and instance apply to mechanism 'mig' only, not 'mps'")
    if zoo is not None:
        return simulate_phased(arrivals.model, arrivals.batch_size, arrivals.time_ms, device=arrivals.device,
                               id=arrivals.id, spec=spec, zoo=zoo, queue=True, seed=seed)
    return simulate(arrivals.model, arrivals.batch_size, arrivals.time_ms, device=arrivals.device, id=arrivals.id,
                    spec=spec, profiles=profiles, queue=True, seed=seed)
