"""Event-driven fluid simulation of executions sharing GPUs.

Between two events (an arrival, a launch or a completion on a GPU) the running set of that GPU
is fixed, so every execution's rate is constant (:func:`interfpred.sim.contention.rates`) and
its remaining solo work falls linearly; the next event time is found in closed form, so progress
is integrated exactly, with no time step.  GPUs are independent of each other.

Two ways to feed it:

* ``queue=False``: executions start exactly at the given times (a schedule decided elsewhere;
  ``max_concurrency`` is not enforced).
* ``queue=True``: the given times are arrivals; each GPU launches its arrivals in FIFO order
  whenever fewer than ``max_concurrency`` run, and a latency counts from the launch.

Examples
--------
>>> res = simulate(["resnet50", "vgg19"], [8, 8], [0.0, 0.0], spec="l4", seed=0)
>>> res.trace
Trace(2 executions, devices=['gpu0'])
>>> bool(np.all(res.trace.latency_ms > res.trace.solo_ms))   # together, both run slower
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from interfpred._core.deprecation import renamed_keywords
from interfpred._core.jit import njit
from interfpred.constants import SIM_DEFAULT_GPU, SIM_FINISH_RTOL
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.sim._event_kernels import advance, event_scratch, retire, time_to_next_finish
from interfpred.sim._executions import (
    check_seed,
    check_times,
    device_codes,
    engine_plan,
    execution_columns,
    sorted_trace,
)
from interfpred.sim.contention import GpuSpec, check_fits, get_gpu_spec, rates_kernel
from interfpred.sim.zoo import zoo_profiles

__all__ = ["SimResult", "simulate", "simulate_work", "noisy_work"]


# ---------------------------------------------------------------------------- kernel
@njit(cache=True)
def _run_device(order, time, work, sm, l2, dram, limit, cap0, cap1, cap2, theta, eps, start_out, end_out):
    """Simulate one GPU: ``order`` indexes its executions sorted by time (ties: input order)."""
    n = order.shape[0]
    run, rem, rate, tau, lsm, ll2, ldr, dem, frozen = event_scratch(limit if limit < n else n)
    nrun = 0
    p = 0       # next arrival (position in order)
    head = 0    # next to launch; the FIFO queue is order[head:p]
    t = 0.0
    while p < n or nrun > 0:
        tmin = time_to_next_finish(rem, rate, tau, nrun)
        ta = time[order[p]] if p < n else np.inf
        if nrun > 0 and t + tmin <= ta:
            # completion(s): advance to the earliest finish, retire every execution done then
            advance(rem, rate, nrun, tmin)
            t = t + tmin
            j = 0
            while j < nrun:
                e = run[j]
                if tau[j] <= tmin or rem[j] <= SIM_FINISH_RTOL * work[e]:
                    end_out[e] = t
                    nrun = retire(j, nrun, run, rem, rate, tau)
                else:
                    j += 1
        else:
            if nrun > 0:
                advance(rem, rate, nrun, ta - t)
            t = ta
            p += 1
        # launch from the FIFO queue while there is room
        while nrun < limit and head < p:
            e = order[head]
            head += 1
            start_out[e] = t
            run[nrun] = e
            rem[nrun] = work[e]
            nrun += 1
        if nrun > 0:
            for j in range(nrun):
                e = run[j]
                lsm[j] = sm[e]
                ll2[j] = l2[e]
                ldr[j] = dram[e]
            rates_kernel(lsm, ll2, ldr, nrun, cap0, cap1, cap2, theta, eps, dem, rate, frozen)


@njit(cache=True)
def _run_all(offsets, order, time, work, sm, l2, dram, limit, cap0, cap1, cap2, theta, eps, start_out, end_out):
    for g in range(offsets.shape[0] - 1):
        _run_device(order[offsets[g]:offsets[g + 1]], time, work, sm, l2, dram, limit,
                    cap0, cap1, cap2, theta, eps, start_out, end_out)


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
    """The raw engine: launch and end times of executions given their work and demands.

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
    if dem.shape != (n, 3):
        raise InterfpredError(f"demands has shape {dem.shape}, expected ({n}, 3) columns sm, l2, dram")
    check_times(time)
    bad = np.flatnonzero(~np.isfinite(work) | (work <= 0))
    if bad.size:
        raise InterfpredError(f"work_ms {work[bad[0]]!r} (execution {int(bad[0])}) must be positive and finite")
    if dem.size and (not np.all(np.isfinite(dem)) or dem.min() < 0):
        raise InterfpredError("demands must be finite fractions of peak >= 0")
    check_fits(dem[:, 0], dem[:, 1], dem[:, 2], spec, labels=lambda i: f"execution {i}")
    if device is None:
        codes = np.zeros(n, dtype=np.int64)
    else:
        dev = np.asarray(device)
        if dev.shape != (n,):
            raise InterfpredError(f"device has shape {dev.shape}, expected ({n},)")
        codes = np.unique(dev.astype(str), return_inverse=True)[1].astype(np.int64)
    order, offsets, start, end, limit = engine_plan(codes, time, spec, queue)
    _run_all(offsets, order, time, work, np.ascontiguousarray(dem[:, 0]), np.ascontiguousarray(dem[:, 1]),
             np.ascontiguousarray(dem[:, 2]), limit, spec.capacity_sm, spec.capacity_l2,
             spec.capacity_dram, spec.theta, spec.epsilon, start, end)
    return start, end


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


@renamed_keywords(gpu="device")
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
        ``"gpu0"``. ``gpu=`` is its deprecated spelling.
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
