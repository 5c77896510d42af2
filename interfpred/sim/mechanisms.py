"""Sharing mechanisms: the same executions run under MPS, MIG or time-slicing.

:func:`simulate_mechanism` runs one set of executions (models, batch sizes, arrival times) on
simulated GPUs shared in one of three ways, so a workload can be compared across them:

``mps``
    Every execution on a GPU may overlap every other (up to ``spec.max_concurrency``, FIFO
    queue): the contention truth of :mod:`interfpred.sim.contention`. This *is*
    :func:`interfpred.sim.engine.simulate`, called unchanged.
``mig``
    Each GPU is partitioned into instances (MIG GPU instances; :func:`interfpred.provisioning.mig_layout`
    builds them from a valid MIG layout); every execution runs in one instance, and instances
    share nothing, so an execution never meets one of another instance. An instance holds the
    fraction ``s`` of the GPU's SMs and ``f`` of its L2 and DRAM bandwidth (a MIG instance of
    ``m`` of the 8 memory slices: ``f = m / 8``). A batch whose whole-GPU profile needs more than
    that runs slower alone, by the stretch ``x = max(1, sm / (s c_sm), l2 / (f c_l2), dram / (f c_dram))``
    (``c`` the GPU's capacities: the resource it needs most sets its pace), and its demands as
    fractions of the *instance's* peak are ``sm / (s x)``, ``l2 / (f x)``, ``dram / (f x)``.
    Inside an instance the MPS truth applies to those demands, with the instance's ``processes``
    as its concurrency limit (one batch per MPS process). The trace's ``solo_ms`` is the
    execution's solo time *in its instance* (noisy whole-GPU work times ``x``).
``time_slicing``
    Each model on a GPU is one context (one process); the GPU runs one context at a time. The
    running context holds the GPU for up to ``quantum_ms`` while another context has work, then
    the next context with work (round robin) takes it after ``switch_ms`` of idle switching (by default
    the cost measured on an H200: :func:`switch_cost_ms`); a
    context with nothing left gives the GPU up at once, and a context alone keeps it without
    switching. Inside the running context its batches (up to ``spec.max_concurrency``, FIFO)
    overlap under the MPS truth; the other contexts' launched batches make no progress. So with
    ``k`` contexts busy, each batch takes about ``k`` times its solo time plus the switches.

The noise on solo work is drawn as :func:`~interfpred.sim.engine.simulate` draws it (same seed,
same rows: the same noisy work under every mechanism), so differences between mechanisms are the
mechanisms', not the noise's.

Examples
--------
>>> a = simulate_mechanism(["resnet50", "vgg19"], [8, 8], [0.0, 0.0], mechanism="mps", spec="a100", seed=0)
>>> halves = [MigInstance(0, "4g@0", 56 / 98, 0.5), MigInstance(0, "3g@4", 42 / 98, 0.5)]
>>> b = simulate_mechanism(["resnet50", "vgg19"], [8, 8], [0.0, 0.0], mechanism="mig", spec="a100",
...                        layout=halves, instance=[0, 1], seed=0)
>>> t = simulate_mechanism(["resnet50", "vgg19"], [8, 8], [0.0, 0.0], mechanism="time_slicing", spec="a100",
...                        seed=0)
>>> [round(float(r.trace.latency_ms.max()), 2) for r in (a, b, t)]
[10.86, 15.42, 16.06]
>>> b.trace.device.tolist()
['gpu0/4g@0', 'gpu0/3g@4']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from interfpred.constants import (
    BOUNDARY_RTOL,
    MECHANISMS,
    SIM_CONTEXT_SWITCH_MS,
    SIM_DEFAULT_GPU,
    SIM_TIMESLICE_QUANTUM_MS,
)
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.sim._executions import check_times, device_codes, execution_columns, sorted_trace
from interfpred.sim.contention import GpuSpec, check_fits, get_gpu_spec, rates
from interfpred.sim.engine import SimResult, noisy_work, simulate, simulate_work
from interfpred.sim.zoo import zoo_profiles

__all__ = ["MigInstance", "check_time_slicing", "instance_demands", "simulate_mechanism", "switch_cost_ms"]


@dataclass(frozen=True)
class MigInstance:
    """One instance of a partitioned GPU: its GPU (index), label, shares of SMs and of memory bandwidth, processes.

    ``sm_share`` and ``mem_share`` are fractions in (0, 1]; the instances of one GPU together hold
    at most all of it. ``processes`` is how many batches run in it at once (one per MPS process).

    Examples
    --------
    >>> MigInstance(0, "3g@4", 42 / 98, 0.5, processes=2).name
    'gpu0/3g@4'
    """

    gpu: int
    label: str
    sm_share: float
    mem_share: float
    processes: int = 1

    @property
    def name(self) -> str:
        """The device name its executions carry in a trace: ``gpu<i>/<label>``."""
        return f"gpu{self.gpu}/{self.label}"


def instance_demands(demands: np.ndarray, instance: MigInstance, spec: GpuSpec | str = SIM_DEFAULT_GPU
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Stretch (solo slowdown in the instance) and demands as fractions of the instance's peak.

    ``demands`` is (n, 3) ``sm, l2, dram`` of whole-GPU profiles. Returns ``stretch`` (n,) >= 1 and
    (n, 3) demands within the GPU's capacities (see the module docstring for the formula).

    Examples
    --------
    >>> x, d = instance_demands(np.array([[0.6, 0.3, 0.2], [0.1, 0.1, 0.1]]), MigInstance(0, "3g", 3 / 7, 0.5),
    ...                         "a100")
    >>> [round(float(v), 3) for v in x], [round(float(v), 3) for v in d[0]]
    ([1.4, 1.0], [1.0, 0.429, 0.286])
    """
    spec = get_gpu_spec(spec)
    share = np.array([instance.sm_share, instance.mem_share, instance.mem_share])
    dem = np.asarray(demands, dtype=np.float64).reshape(-1, 3)
    need = dem / (share * np.array(spec.capacities))
    stretch = np.maximum(1.0, need.max(axis=1))
    return stretch, dem / share / stretch[:, None]


def simulate_mechanism(
    model: Sequence[str] | np.ndarray,
    batch_size: Sequence[int] | np.ndarray,
    time_ms: Sequence[float] | np.ndarray,
    *,
    mechanism: str = "mps",
    device: Sequence[str] | np.ndarray | None = None,
    layout: Sequence[MigInstance] | None = None,
    instance: Sequence[int] | np.ndarray | None = None,
    spec: GpuSpec | str = SIM_DEFAULT_GPU,
    profiles: ProfileTable | None = None,
    quantum_ms: float = SIM_TIMESLICE_QUANTUM_MS,
    switch_ms: float = SIM_CONTEXT_SWITCH_MS,
    seed: int | np.random.Generator | None = 0,
    id: Sequence[int] | np.ndarray | None = None,
) -> SimResult:
    """Simulate arriving executions on GPUs shared by one mechanism (``mps``, ``mig`` or ``time_slicing``).

    Parameters
    ----------
    model, batch_size, time_ms
        (n,) model, batch size and arrival time of each execution (profiled on ``spec.name``).
    mechanism
        ``"mps"`` (:func:`~interfpred.sim.engine.simulate` with its FIFO queue, unchanged),
        ``"mig"`` or ``"time_slicing"``; see the module docstring.
    device
        (n,) GPU of each execution under ``mps`` and ``time_slicing`` (default all ``gpu0``); under
        ``mig`` the instance names the GPU.
    layout, instance
        ``mig`` only: the instances (those of one GPU hold at most all of it; a MIG layout from
        :func:`interfpred.provisioning.mig_layout`) and the (n,) index into ``layout`` of each
        execution's instance.
    spec, profiles
        The simulated GPU type and its solo profiles (default the synthetic zoo).
    quantum_ms, switch_ms
        ``time_slicing`` only: the quantum and the context-switch cost (ms).
    seed
        Seed of the noise on solo work (the same draws under every mechanism).
    id
        (n,) unique execution ids; default ``0..n-1``.

    Returns
    -------
    SimResult
        ``trace.start_ms`` is the launch (entry into a process's running set, the instance's or
        the context's), ``arrival_ms`` the arrival; a request's response time is ``end - arrival``.

    Examples
    --------
    >>> simulate_mechanism(["vgg19"], [1], [0.0], mechanism="streams")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: mechanism 'streams' is not one of time_slicing, mps, mig
    """
    if mechanism not in MECHANISMS:
        raise InterfpredError(f"mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")
    if mechanism != "mig" and (layout is not None or instance is not None):
        raise InterfpredError(f"layout and instance apply to mechanism 'mig' only, not {mechanism!r}")
    if mechanism == "mps":
        return simulate(model, batch_size, time_ms, device=device, id=id, spec=spec, profiles=profiles, queue=True,
                        seed=seed)
    spec = get_gpu_spec(spec)
    profiles = zoo_profiles(spec.name) if profiles is None else profiles
    model_a, batch_a, time, ids = execution_columns(model, batch_size, time_ms, id)
    check_times(time)
    prof = profiles.lookup_arrays(model_a, batch_a, gpus=spec.name)
    dem = np.column_stack([prof["sm"], prof["l2"], prof["dram"]])
    check_fits(dem[:, 0], dem[:, 1], dem[:, 2], spec, labels=lambda i: f"model {model_a[i]!r} batch {int(batch_a[i])}")
    work = noisy_work(prof["solo_ms"], spec.sigma, seed)
    if mechanism == "mig":
        if device is not None:
            raise InterfpredError("under mechanism 'mig' an execution's instance names its GPU: pass instance, "
                                  "not device")
        names, start, end, work = _run_mig(model_a, batch_a, time, work, dem, layout, instance, spec)
    else:
        names, codes = device_codes(device, len(model_a))
        start, end = _time_slicing(model_a, time, work, dem, codes, spec, *check_time_slicing(quantum_ms, switch_ms))
        names = names[codes]
    trace, arrival = sorted_trace(ids, names, model_a, batch_a, start, end, work, time)
    return SimResult(trace=trace, arrival_ms=arrival, spec=spec)


def switch_cost_ms(kept: float, quantum_ms: float = SIM_TIMESLICE_QUANTUM_MS) -> float:
    """The context-switch cost (ms) that leaves ``kept`` of one workload's throughput to two time-sliced ones.

    Two contexts always busy take turns: each runs a quantum ``q`` and the GPU then idles ``c``
    switching, so together they get ``q / (q + c)`` of the GPU and ``c = q (1 / kept - 1)``.
    Measured pairs on an H200 kept 0.76-0.79 (``H200_TIMESLICE_KEPT``, 0.775, is the middle), which
    at a 2 ms quantum is the default switch cost ``SIM_CONTEXT_SWITCH_MS``.

    Examples
    --------
    >>> round(switch_cost_ms(0.775, 2.0), 3), round(switch_cost_ms(0.76), 3), round(switch_cost_ms(0.79), 3)
    (0.581, 0.632, 0.532)
    """
    if not (0.0 < kept <= 1.0):
        raise InterfpredError(f"kept {kept!r} must be a share of throughput in (0, 1]")
    return float(quantum_ms) * (1.0 / kept - 1.0)


def check_time_slicing(quantum_ms: float, switch_ms: float) -> tuple[float, float]:
    """Time-slicing's quantum (> 0) and context-switch cost (>= 0) in ms, checked.

    Examples
    --------
    >>> check_time_slicing(2, 0.05)
    (2.0, 0.05)
    >>> check_time_slicing(0.0, 0.05)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: quantum_ms 0.0 must be a positive finite number of ms
    """
    def number(x: float, name: str) -> float:
        try:
            return float(x)
        except (TypeError, ValueError):
            raise InterfpredError(f"{name} {x!r} is not a number") from None

    q, c = number(quantum_ms, "quantum_ms"), number(switch_ms, "switch_ms")
    if not (np.isfinite(q) and q > 0):
        raise InterfpredError(f"quantum_ms {quantum_ms!r} must be a positive finite number of ms")
    if not (np.isfinite(c) and c >= 0):
        raise InterfpredError(f"switch_ms {switch_ms!r} must be a finite number of ms >= 0")
    return q, c


# ---------------------------------------------------------------------------- MIG
def _check_mig_layout(layout: Sequence[MigInstance] | None, instance: Sequence[int] | np.ndarray | None,
                      n: int) -> np.ndarray:
    if layout is None or instance is None:
        raise InterfpredError("mechanism 'mig' needs layout (the instances) and instance (each execution's)")
    if not layout:
        raise InterfpredError("layout has no instance")
    held: dict[int, np.ndarray] = {}
    for k, inst in enumerate(layout):
        if not isinstance(inst, MigInstance):
            raise InterfpredError(f"layout[{k}] is {inst!r}, expected a MigInstance")
        if not all(0.0 < float(x) <= 1.0 for x in (inst.sm_share, inst.mem_share)):
            raise InterfpredError(f"layout[{k}] ({inst.name}): shares {inst.sm_share!r}, {inst.mem_share!r} must "
                                  "be fractions in (0, 1]")
        if int(inst.processes) < 1:
            raise InterfpredError(f"layout[{k}] ({inst.name}): processes {inst.processes!r} must be >= 1")
        held[inst.gpu] = held.get(inst.gpu, np.zeros(2)) + (inst.sm_share, inst.mem_share)
        if np.any(held[inst.gpu] > 1.0 + BOUNDARY_RTOL):
            raise InterfpredError(f"layout: the instances of gpu {inst.gpu} hold more than the whole GPU (up to "
                                  f"{inst.name}: SM share {held[inst.gpu][0]:.4g}, memory {held[inst.gpu][1]:.4g})")
    names = [inst.name for inst in layout]
    if len(set(names)) != len(names):
        raise InterfpredError(f"layout names an instance twice: {sorted(names)}")
    idx = np.asarray(instance)
    if idx.shape != (n,) or (n and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= len(layout))):
        raise InterfpredError(f"instance must be ({n},) integers in 0..{len(layout) - 1} (indices into layout)")
    return idx.astype(np.int64)


def _run_mig(model: np.ndarray, batch: np.ndarray, time: np.ndarray, work: np.ndarray, dem: np.ndarray,
             layout: Sequence[MigInstance] | None, instance: Sequence[int] | np.ndarray | None, spec: GpuSpec
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each instance is its own engine run (instances share nothing): names, start, end, solo work in the instance."""
    n = len(model)
    idx = _check_mig_layout(layout, instance, n)
    assert layout is not None
    start, end, inst_work = np.full(n, np.nan), np.full(n, np.nan), work.copy()
    names = np.array([inst.name for inst in layout])
    for k, inst in enumerate(layout):
        rows = np.flatnonzero(idx == k)
        if not rows.size:
            continue
        stretch, d = instance_demands(dem[rows], inst, spec)
        inst_work[rows] = work[rows] * stretch
        limited = spec.model_copy(update={"max_concurrency": int(inst.processes)})
        start[rows], end[rows] = simulate_work(inst_work[rows], d, time[rows], spec=limited, queue=True)
    return names[idx], start, end, inst_work


# ---------------------------------------------------------------------------- time-slicing
def _time_slicing(model: np.ndarray, time: np.ndarray, work: np.ndarray, dem: np.ndarray, codes: np.ndarray,
                  spec: GpuSpec, quantum: float, switch: float) -> tuple[np.ndarray, np.ndarray]:
    start, end = np.full(len(model), np.nan), np.full(len(model), np.nan)
    for dev in np.unique(codes):
        rows = np.flatnonzero(codes == dev)
        rows = rows[np.lexsort((rows, time[rows]))]      # arrival order, ties in input order
        _one_gpu(rows, model, time, work, dem, spec, quantum, switch, start, end)
    return start, end


def _one_gpu(rows: np.ndarray, model: np.ndarray, time: np.ndarray, work: np.ndarray, dem: np.ndarray,
             spec: GpuSpec, quantum: float, switch: float, start: np.ndarray, end: np.ndarray) -> None:
    """One GPU's contexts (one per model) sharing it in time slices; fills ``start`` and ``end`` of ``rows``."""
    contexts = sorted(set(model[rows].tolist()))
    ctx_of = {m: c for c, m in enumerate(contexts)}
    waiting: list[deque[int]] = [deque() for _ in contexts]
    running: list[list[int]] = [[] for _ in contexts]
    left = work.copy()
    limit = spec.max_concurrency
    t, nxt = 0.0, 0
    active, last, slice_end = -1, -1, 0.0

    def arrive(upto: float) -> None:
        nonlocal nxt
        while nxt < len(rows) and time[rows[nxt]] <= upto:
            i = int(rows[nxt])
            c = ctx_of[model[i]]
            if len(running[c]) < limit:
                running[c].append(i)
                start[i] = time[i]
            else:
                waiting[c].append(i)
            nxt += 1

    def busy(c: int) -> bool:
        return bool(running[c])

    while True:
        arrive(t)
        if active < 0:
            pending = [c for c in range(len(contexts)) if busy(c)]
            if not pending:
                if nxt >= len(rows):
                    return
                t = float(time[rows[nxt]])
                continue
            # round robin: the first context with work after the one that ran last
            active = min(pending, key=lambda c: (c - last - 1) % len(contexts))
            if last >= 0 and active != last and switch > 0:
                t += switch
                arrive(t)
            last = active
            slice_end = t + quantum
        run = running[active]
        r = rates(dem[run], spec)
        finish = [t + left[i] / r[j] for j, i in enumerate(run)]
        t_next = min(min(finish), slice_end, float(time[rows[nxt]]) if nxt < len(rows) else np.inf)
        dt = t_next - t
        done = []
        for j, i in enumerate(run):
            if finish[j] <= t_next * (1.0 + BOUNDARY_RTOL):
                done.append(i)
            else:
                left[i] -= r[j] * dt
        t = t_next
        for i in done:
            run.remove(i)
            left[i] = 0.0
            end[i] = t
            if waiting[active]:
                k = waiting[active].popleft()
                run.append(k)
                start[k] = t
        arrive(t)
        if not run:
            active = -1          # nothing left in this context: the next one takes the GPU now
        elif t >= slice_end * (1.0 - BOUNDARY_RTOL):
            if any(busy(c) for c in range(len(contexts)) if c != active):
                active = -1      # quantum used up and someone waits: switch
            else:
                slice_end = t + quantum
