"""The simulator's event engine: executions run programs of operators on GPUs that share nothing.

One compiled event loop serves both ground truths.  Every execution runs a program, a sequence
of operators with solo durations and demands; between two events on a GPU (an arrival, a
launch, an operator boundary, a completion) the set of running operators is fixed, so every
execution's rate is constant (:func:`interfpred.sim.contention.rates`) and its remaining work on
its operator falls linearly; the next event time is found in closed form, so progress is
integrated exactly, with no time step.  GPUs are independent of each other.

* :func:`simulate_programs` is the raw engine: operator arrays, programs, per-execution noise
  scale and the phase-structured truth's hidden factors (L2 footprint, latency hiding).
* :func:`simulate_work` and :func:`simulate` are the fluid truth: one operator per execution
  (its noisy solo work and its profile's demands), footprints 0, hiding factors 1.
* :func:`interfpred.sim.phased.simulate_phased` runs a model family's programs with their
  hidden factors.

Three ways to feed it:

* ``queue=False``: executions start exactly at the given times (a schedule decided elsewhere;
  ``max_concurrency`` is not enforced).
* ``queue=True``: the given times are arrivals; each GPU launches its arrivals in FIFO order
  whenever fewer than ``max_concurrency`` run, and a latency counts from the launch.
* a **policy hook** (:class:`PolicyEngine`): what starts where is decided while the engine runs, by
  a :class:`PolicyHook` called at every event (an arrival, a completion) across all GPUs; the
  serving experiment's dynamic batching and admission policies run on it.

Examples
--------
>>> res = simulate(["resnet50", "vgg19"], [8, 8], [0.0, 0.0], spec="l4", seed=0)
>>> res.trace
Trace(2 executions, devices=['gpu0'])
>>> bool(np.all(res.trace.latency_ms > res.trace.solo_ms))   # together, both run slower
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from interfpred.constants import E3_FINISH_TIME_RTOL, SIM_DEFAULT_GPU, SIM_FINISH_RTOL
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.sim._event_steps import run_programs
from interfpred.sim._executions import (
    check_seed,
    check_times,
    device_codes,
    engine_plan,
    execution_columns,
    sorted_trace,
)
from interfpred.sim.contention import GpuSpec, check_fits, check_hidden, get_gpu_spec, rates
from interfpred.sim.zoo import zoo_profiles

__all__ = ["DeviceState", "Execution", "PolicyEngine", "PolicyHook", "SimResult", "simulate", "simulate_programs",
           "simulate_work", "noisy_work"]


# ---------------------------------------------------------------------------- the engine
def _check_operators(dur: np.ndarray, dem: np.ndarray, spec: GpuSpec, *, dur_name: str, dem_name: str,
                     label: str) -> None:
    """Refuse durations that are not positive and finite and demands that are not finite, >= 0 and
    within the GPU's capacities; ``label`` names an element in the messages (``"operator"``)."""
    n = dur.size
    if dem.shape != (n, 3):
        raise InterfpredError(f"{dem_name} has shape {dem.shape}, expected ({n}, 3) columns sm, l2, dram")
    bad = np.flatnonzero(~np.isfinite(dur) | (dur <= 0))
    if bad.size:
        raise InterfpredError(f"{dur_name} {dur[bad[0]]!r} ({label} {int(bad[0])}) must be positive and finite")
    if dem.size and (not np.all(np.isfinite(dem)) or dem.min() < 0):
        raise InterfpredError(f"{dem_name} must be finite fractions of peak >= 0")
    check_fits(dem[:, 0], dem[:, 1], dem[:, 2], spec, labels=lambda i: f"{label} {i}")


def _run(offsets: np.ndarray, dur: np.ndarray, dem: np.ndarray, prog: np.ndarray, time: np.ndarray,
         codes: np.ndarray, scale: np.ndarray, foot: np.ndarray, hide: np.ndarray, spec: GpuSpec, queue: bool
         ) -> tuple[np.ndarray, np.ndarray, int]:
    """Run checked arrays through the compiled event loop: ``start, end, events``."""
    order, dev_off, start, end, limit = engine_plan(codes, time, spec, queue)
    events = run_programs(dev_off, order, time, prog, scale, foot, hide, offsets, dur,
                          np.ascontiguousarray(dem[:, 0]), np.ascontiguousarray(dem[:, 1]),
                          np.ascontiguousarray(dem[:, 2]), limit, spec.capacity_sm, spec.capacity_l2,
                          spec.capacity_dram, spec.theta, spec.epsilon, spec.l2_mb, spec.kappa, start, end)
    return start, end, int(events)




# ---------------------------------------------------------------------------- public
def noisy_work(solo_ms: np.ndarray, sigma: float, seed: int | np.random.Generator | None) -> np.ndarray:
    """Solo work with log-normal noise: ``solo_ms * exp(sigma * N(0, 1))``, one draw per element.

    Examples
    --------
    >>> noisy_work(np.array([10.0, 10.0]), 0.0, seed=1).tolist()
    [10.0, 10.0]
    >>> bool(np.array_equal(noisy_work(np.ones(5), 0.1, 7), noisy_work(np.ones(5), 0.1, 7)))
    True
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))
    z = rng.standard_normal(len(solo_ms))
    return np.asarray(solo_ms, dtype=np.float64) * np.exp(sigma * z)


def simulate_work(
    work_ms: Sequence[float] | np.ndarray,
    demands: Sequence[Sequence[float]] | np.ndarray,
    time_ms: Sequence[float] | np.ndarray,
    device: Sequence[str] | np.ndarray | Sequence[int] | None = None,
    *,
    spec: GpuSpec | str = SIM_DEFAULT_GPU,
    queue: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The fluid truth on raw work and demands: launch and end times (each execution a one-operator program).

    Parameters
    ----------
    work_ms
        (n,) solo work of each execution (ms it would take alone), positive.
    demands
        (n, 3) solo throughputs ``sm, l2, dram`` (fractions of peak, within the GPU's capacities).
    time_ms
        (n,) arrival times (``queue=True``) or start times (``queue=False``), finite, >= 0.
    device
        (n,) GPU of each execution (names or integers); None puts all on one GPU.
    spec
        The GPU type (every device is one of this type).
    queue
        Whether to queue arrivals FIFO under ``spec.max_concurrency`` per GPU.

    Returns
    -------
    start_ms, end_ms
        (n,) launch and completion times, aligned with the inputs.

    Examples
    --------
    >>> s, e = simulate_work([4.0], [[0.5, 0.3, 0.2]], [1.0])
    >>> float(s[0]), float(e[0])
    (1.0, 5.0)
    >>> s, e = simulate_work([4.0, 4.0], [[0.8, 0.4, 0.3]] * 2, [0.0, 0.0])
    >>> bool(e[0] == e[1]), round(float(e[0]), 4)
    (True, 6.592)
    """
    spec = get_gpu_spec(spec)
    work = np.ascontiguousarray(work_ms, dtype=np.float64)
    time = np.ascontiguousarray(time_ms, dtype=np.float64)
    dem = np.asarray(demands, dtype=np.float64)
    n = len(work)
    if work.ndim != 1:
        raise InterfpredError(f"work_ms has shape {work.shape}, expected (n,)")
    if time.shape != (n,):
        raise InterfpredError(f"time_ms has shape {time.shape}, expected ({n},) like work_ms")
    _check_operators(work, dem, spec, dur_name="work_ms", dem_name="demands", label="execution")
    check_times(time)
    codes = device_codes(device, n)[1]
    each = np.arange(n, dtype=np.int64)     # execution i runs program i, its one operator
    start, end, _ = _run(np.arange(n + 1, dtype=np.int64), work, dem, each, time, codes, np.ones(n), np.zeros(n),
                         np.ones(n), spec, queue)
    return start, end


def simulate_programs(
    offsets: np.ndarray,
    op_duration_ms: np.ndarray,
    op_demands: np.ndarray,
    program: np.ndarray,
    time_ms: np.ndarray,
    device: np.ndarray | None = None,
    *,
    scale: np.ndarray | None = None,
    footprint_mb: np.ndarray | None = None,
    hiding: np.ndarray | None = None,
    spec: GpuSpec | str = SIM_DEFAULT_GPU,
    queue: bool = True,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The raw operator-level engine: launch and end times, and the number of events.

    Parameters
    ----------
    offsets
        (P + 1,) program ``i`` is operators ``offsets[i]:offsets[i + 1]`` (non-empty).
    op_duration_ms, op_demands
        (O,) solo durations and (O, 3) demands ``sm, l2, dram`` of all operators.
    program
        (n,) program index of each execution.
    time_ms
        (n,) arrival (``queue=True``) or start times, finite, >= 0.
    device
        (n,) GPU of each execution; None puts all on one.
    scale
        (n,) factor on every operator duration of an execution (noise); default 1.
    footprint_mb, hiding
        (n,) hidden L2 footprint (default 0) and latency-hiding factor (default 1).
    spec
        GPU type; ``queue`` as in :func:`simulate_work`.

    Examples
    --------
    >>> s, e, ev = simulate_programs(np.array([0, 2]), np.array([1.0, 3.0]), np.array([[.8, .4, .2], [.2, .4, .8]]),
    ...                              np.array([0]), np.array([0.0]))
    >>> float(e[0]), ev
    (4.0, 3)
    """
    spec = get_gpu_spec(spec)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    dur = np.ascontiguousarray(op_duration_ms, dtype=np.float64)
    dem = np.asarray(op_demands, dtype=np.float64)
    prog = np.ascontiguousarray(program, dtype=np.int64)
    time = np.ascontiguousarray(time_ms, dtype=np.float64)
    n = prog.shape[0]
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or np.any(np.diff(offsets) < 1) \
            or offsets[-1] != dur.size:
        raise InterfpredError(f"offsets must rise from 0 to {dur.size} (the operator count) with each program "
                              "non-empty")
    _check_operators(dur, dem, spec, dur_name="op_duration_ms", dem_name="op_demands", label="operator")
    if prog.ndim != 1 or (n and (prog.min() < 0 or prog.max() >= offsets.size - 1)):
        raise InterfpredError(f"program indices must lie in 0..{offsets.size - 2}")
    if time.shape != (n,):
        raise InterfpredError(f"time_ms has shape {time.shape}, expected ({n},)")
    check_times(time)
    scale_a = np.ones(n) if scale is None else np.ascontiguousarray(scale, dtype=np.float64)
    if scale_a.shape != (n,) or not np.all(np.isfinite(scale_a)) or (n and scale_a.min() <= 0):
        raise InterfpredError(f"scale must be ({n},) finite values > 0")
    foot, hide = check_hidden(footprint_mb, hiding, n)
    codes = device_codes(device, n)[1]
    return _run(offsets, dur, dem, prog, time, codes, scale_a, foot, hide, spec, queue)


@dataclass(frozen=True)
class SimResult:
    """What :func:`simulate` returns.

    Attributes
    ----------
    trace
        The executions sorted by launch: ``start_ms`` is the launch time, ``end_ms`` the
        completion, ``solo_ms`` the execution's noisy solo work (what it would take alone).
    arrival_ms
        Arrival time of each trace row (equal to ``start_ms`` when nothing queued).
    spec
        The GPU type simulated.
    events
        Events the engine processed (arrivals, operator boundaries, completions), when known.
    """

    trace: Trace
    arrival_ms: np.ndarray
    spec: GpuSpec
    events: int | None = None

    @property
    def wait_ms(self) -> np.ndarray:
        """Time each execution waited in the queue, ``start_ms - arrival_ms``."""
        return self.trace.start_ms - self.arrival_ms

    @property
    def slowdown(self) -> np.ndarray:
        """Observed latency / noisy solo work, per trace row (>= 1 up to rounding)."""
        return self.trace.latency_ms / self.trace.solo_ms


def simulate(
    model: Sequence[str] | np.ndarray,
    batch_size: Sequence[int] | np.ndarray,
    time_ms: Sequence[float] | np.ndarray,
    *,
    device: Sequence[str] | np.ndarray | None = None,
    id: Sequence[int] | np.ndarray | None = None,
    spec: GpuSpec | str = SIM_DEFAULT_GPU,
    profiles: ProfileTable | None = None,
    queue: bool = True,
    seed: int | np.random.Generator | None = 0,
) -> SimResult:
    """Simulate executions of profiled models on GPUs of one type; the ground truth as a Trace.

    Parameters
    ----------
    model, batch_size
        (n,) model name and batch size of each execution; both must be profiled for
        ``spec.name`` in ``profiles`` (between profiled batch sizes, profiles interpolate).
    time_ms
        (n,) arrival times (``queue=True``) or start times (``queue=False``), finite, >= 0.
    device
        (n,) device (GPU instance) of each execution (e.g. ``"gpu0"``, ``"gpu1"``); default all
        ``"gpu0"``.
    id
        (n,) unique execution ids; default ``0..n-1``.
    spec
        A :class:`~interfpred.sim.contention.GpuSpec` or preset name (``"l4"``, ``"a100"``).
    profiles
        Solo profiles; default the synthetic zoo for ``spec.name``.
    queue
        True: FIFO queue per GPU under ``spec.max_concurrency``; False: start at the given times.
    seed
        Seed (or Generator) of the noise on solo work; the same seed gives the identical trace.

    Returns
    -------
    SimResult
        ``.trace`` (a :class:`~interfpred.data.trace.Trace` sorted by launch, with ``solo_ms`` = noisy
        solo work) and ``.arrival_ms`` aligned with it.

    Examples
    --------
    >>> r = simulate(["vit_b16"] * 6, [4] * 6, [0.0] * 6, spec="l4", seed=3)
    >>> r.trace.start_ms.tolist()[:4], bool(r.wait_ms[4:].min() > 0)   # 4 run, 2 wait
    ([0.0, 0.0, 0.0, 0.0], True)
    >>> simulate(["bert"], [1], [0.0])
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no profile for model 'bert' on gpu 'l4'; known models: convnext_b, resnet50, roberta_base, vgg19, vit_b16, yolov8n
    """
    spec = get_gpu_spec(spec)
    if profiles is None:
        profiles = zoo_profiles(spec.name)
    model_a, batch_a, time, ids = execution_columns(model, batch_size, time_ms, id)
    names, codes = device_codes(device, len(model_a))
    prof = profiles.lookup_arrays(model_a, batch_a, gpus=spec.name)
    check_fits(prof["sm"], prof["l2"], prof["dram"], spec,
                labels=lambda i: f"model {model_a[i]!r} batch {int(batch_a[i])}")
    work = noisy_work(prof["solo_ms"], spec.sigma, seed)
    dem = np.column_stack([prof["sm"], prof["l2"], prof["dram"]])
    start, end = simulate_work(work, dem, time, codes, spec=spec, queue=queue)
    trace, arrival = sorted_trace(ids, names[codes], model_a, batch_a, start, end, work, time)
    return SimResult(trace=trace, arrival_ms=arrival, spec=spec)


# ---------------------------------------------------------------------------- the policy hook
@dataclass(eq=False)
class Execution:
    """One execution launched through a :class:`PolicyEngine`: its demand, noisy solo work and the work
    left; ``foot`` and ``hide`` are its hidden L2 footprint and latency-hiding factor (read only when
    the engine runs the phase-structured truth). A policy may subclass it to carry its own fields."""

    demand: np.ndarray
    work: float
    remaining: float
    foot: float = 0.0
    hide: float = 1.0


@dataclass
class DeviceState:
    """One simulated GPU of a :class:`PolicyEngine`: its running executions, their truth rates and the
    usage counters (busy time, the integral of the running count, the most running at once)."""

    running: list[Any] = field(default_factory=list)
    rates: np.ndarray = field(default_factory=lambda: np.empty(0))
    busy_since: float | None = None
    busy_ms: float = 0.0
    conc_area: float = 0.0
    max_running: int = 0


class PolicyHook(Protocol):
    """What a :class:`PolicyEngine` calls at every event, in this order: :meth:`finished` for every
    completion (device by device), :meth:`arrive` for every arrival up to now, then :meth:`dispatch`,
    which launches with :meth:`PolicyEngine.launch`."""

    def finished(self, device: int, execution: Any, t: float) -> None:
        """``execution`` (already off ``device``'s running set) completed at ``t``."""

    def arrive(self, i: int, t: float) -> None:
        """Arrival ``i`` (its index in the engine's arrival times) came at or before ``t``."""

    def dispatch(self, t: float) -> None:
        """Launch what should start at ``t``."""


class PolicyEngine:
    """The event engine with a policy hook: ``n_devices`` GPUs of one type whose launches a
    :class:`PolicyHook` decides at every event.

    Between two events every running execution progresses at its truth rate
    (:func:`interfpred.sim.contention.rates` of its GPU's running set, recomputed at every launch
    and completion), integrated exactly; the next event is the earliest completion or arrival. An
    execution counts as finished when its remaining work is within ``SIM_FINISH_RTOL`` of its work
    or its time to finish within ``E3_FINISH_TIME_RTOL`` of the clock (at least 1 ms), so that one
    completion is never split into two events by rounding.

    Parameters
    ----------
    spec
        The GPU type.
    n_devices
        GPUs, indexed ``0..n_devices-1`` (:attr:`devices`).
    hidden
        Whether the truth reads each execution's ``foot`` and ``hide`` (the phase-structured truth);
        False: the fluid truth.

    Examples
    --------
    >>> class Now:                                  # launch every arrival at once on GPU 0
    ...     def __init__(self): self.engine, self.ends = None, {}
    ...     def arrive(self, i, t): self.engine.launch(0, Execution(np.array([0.8, 0.4, 0.3]), 4.0, 4.0), t)
    ...     def finished(self, g, x, t): self.ends[len(self.ends)] = round(float(t), 4)
    ...     def dispatch(self, t): pass
    >>> pol = Now(); pol.engine = PolicyEngine("l4", 1)
    >>> round(pol.engine.run(np.array([0.0, 0.0]), pol), 4), pol.ends    # as simulate_work's two executions
    (6.592, {0: 6.592, 1: 6.592})
    """

    def __init__(self, spec: GpuSpec | str, n_devices: int, *, hidden: bool = False) -> None:
        self.spec = get_gpu_spec(spec)
        self.hidden = bool(hidden)
        self.devices = [DeviceState() for _ in range(int(n_devices))]

    def _set_rates(self, device: DeviceState) -> None:
        if device.running:
            foot = np.array([x.foot for x in device.running]) if self.hidden else None
            hide = np.array([x.hide for x in device.running]) if self.hidden else None
            device.rates = rates(np.array([x.demand for x in device.running]), self.spec, footprint_mb=foot,
                                 hiding=hide)
        else:
            device.rates = np.empty(0)

    def launch(self, g: int, execution: Any, t: float) -> None:
        """Start ``execution`` (an :class:`Execution` or anything with its fields) on GPU ``g`` at ``t``."""
        dev = self.devices[g]
        if not dev.running:
            dev.busy_since = t
        dev.running.append(execution)
        dev.max_running = max(dev.max_running, len(dev.running))
        self._set_rates(dev)

    def run(self, arrival_ms: np.ndarray, policy: PolicyHook) -> float:
        """Run until nothing runs and nothing is left to arrive; returns the clock then (ms).

        ``arrival_ms`` (n,) sorted arrival times, handed to ``policy.arrive`` in order.
        """
        n = len(arrival_ms)
        p = 0
        t = 0.0
        while True:
            tc = math.inf
            for dev in self.devices:
                for x, r in zip(dev.running, dev.rates):
                    tc = min(tc, t + x.remaining / r)
            ta = arrival_ms[p] if p < n else math.inf
            if tc == math.inf and ta == math.inf:
                break
            t_new = min(tc, ta)
            dt = t_new - t
            for dev in self.devices:
                k = len(dev.running)
                if k:
                    dev.conc_area += k * dt
                for x, r in zip(dev.running, dev.rates):
                    x.remaining -= r * dt
            t = t_new
            for g, dev in enumerate(self.devices):
                fin = [x for x, r in zip(dev.running, dev.rates)
                       if x.remaining <= SIM_FINISH_RTOL * x.work or x.remaining / r <= E3_FINISH_TIME_RTOL * max(t, 1.0)]
                if not fin:
                    continue
                for x in fin:
                    dev.running.remove(x)
                    policy.finished(g, x, t)
                if not dev.running:
                    assert dev.busy_since is not None  # set when its first execution started
                    dev.busy_ms += t - dev.busy_since
                    dev.busy_since = None
                self._set_rates(dev)
            while p < n and arrival_ms[p] <= t:
                policy.arrive(p, t)
                p += 1
            policy.dispatch(t)
        return float(t)
