"""Event-driven simulation at operator (phase) level: the phase-structured ground truth.

Each execution runs its program (:class:`~interfpred.sim.operators.Program`) operator by
operator.  Between two events (an arrival, a launch, an operator boundary of any running
execution, a completion) the set of *operators* running on a GPU is fixed, and the rate of each
execution follows from the demands of the operators running at that instant:

1. L2 pollution, amplified by footprint overflow:
   ``dram'_j = min(1, dram_j (1 + theta P l2_j sum_{i != j} l2_i))`` with
   ``P = 1 + kappa min(1, max(0, sum_{i in A} f_i / L2_MB - 1))`` (``f_i`` the hidden L2
   footprint; once the combined footprint is twice the L2, the cache is thrashed and the
   pollution stops growing);
2. max-min fair progressive filling over the capacities, giving fair shares ``r_j``;
3. concurrency overhead: ``r_j / (1 + epsilon (|A| - 1))``;
4. latency hiding: the execution progresses at ``r_j ** h_j`` (``h_j`` its hidden factor).

Noise scales a whole pass: every operator of an execution takes ``exp(sigma N(0, 1))`` times
its table duration.  With one operator per program, footprints 0 and ``h = 1`` this is exactly
the fluid engine (:func:`interfpred.sim.engine.simulate_work`).

Examples
--------
>>> res = simulate_phased(["resnet50", "bert"], [8, 2], [0.0, 0.0], spec="v100", seed=0)
>>> res.trace.model.tolist(), bool(res.slowdown.min() > 1.0)
(['resnet50', 'bert'], True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interfpred._core.deprecation import renamed_keywords
from interfpred._core.jit import njit
from interfpred.constants import SIM_DEFAULT_GPU, SIM_FINISH_RTOL, SIM_MAX_PHASES, SIM_PHASED_DEFAULT_GPU
from interfpred.errors import InterfpredError
from interfpred.sim._event_kernels import advance, event_scratch, retire, time_to_next_finish
from interfpred.sim._executions import (
    check_times,
    device_codes,
    engine_plan,
    execution_columns,
    sorted_trace,
)
from interfpred.sim.contention import GpuSpec, check_fits, get_gpu_spec, rates_kernel
from interfpred.sim.engine import SimResult, noisy_work
from interfpred.sim.operators import PhaseZoo
from interfpred.sim.orion import phase_zoo

__all__ = ["simulate_programs", "simulate_phased"]


# ---------------------------------------------------------------------------- kernel
@njit(cache=True)
def _run_device(order, time, prog, scale, foot, hide, offsets, op_dur, op_sm, op_l2, op_dram, limit,
                cap0, cap1, cap2, theta, eps, l2mb, kappa, start_out, end_out):
    """Simulate one GPU; returns the number of events processed."""
    n = order.shape[0]
    size = limit if limit < n else n
    run, rem, rate, tau, lsm, ll2, ldr, dem, frozen = event_scratch(size)
    op = np.empty(size, dtype=np.int64)     # each slot's current operator
    nrun = 0
    p = 0
    head = 0
    t = 0.0
    events = 0
    while p < n or nrun > 0:
        events += 1
        tmin = time_to_next_finish(rem, rate, tau, nrun)
        ta = time[order[p]] if p < n else np.inf
        if nrun > 0 and t + tmin <= ta:
            advance(rem, rate, nrun, tmin)
            t = t + tmin
            j = 0
            while j < nrun:
                e = run[j]
                if tau[j] <= tmin or rem[j] <= SIM_FINISH_RTOL * op_dur[op[j]] * scale[e]:
                    op[j] += 1
                    if op[j] >= offsets[prog[e] + 1]:
                        end_out[e] = t
                        nrun = retire(j, nrun, run, rem, rate, tau)
                        op[j] = op[nrun]
                        continue
                    rem[j] = op_dur[op[j]] * scale[e]
                j += 1
        else:
            if nrun > 0:
                advance(rem, rate, nrun, ta - t)
            t = ta
            p += 1
        while nrun < limit and head < p:
            e = order[head]
            head += 1
            start_out[e] = t
            run[nrun] = e
            op[nrun] = offsets[prog[e]]
            rem[nrun] = op_dur[op[nrun]] * scale[e]
            nrun += 1
        if nrun > 0:
            ftot = 0.0
            for j in range(nrun):
                o = op[j]
                lsm[j] = op_sm[o]
                ll2[j] = op_l2[o]
                ldr[j] = op_dram[o]
                ftot += foot[run[j]]
            over = ftot / l2mb - 1.0
            if over > 1.0:
                over = 1.0
            pol = 1.0 + kappa * over if over > 0.0 else 1.0
            rates_kernel(lsm, ll2, ldr, nrun, cap0, cap1, cap2, theta * pol, eps, dem, rate, frozen)
            for j in range(nrun):
                h = hide[run[j]]
                if h != 1.0:
                    rate[j] = rate[j] ** h
    return events


@njit(cache=True)
def _run_all(dev_offsets, order, time, prog, scale, foot, hide, offsets, op_dur, op_sm, op_l2, op_dram, limit,
             cap0, cap1, cap2, theta, eps, l2mb, kappa, start_out, end_out):
    events = 0
    for g in range(dev_offsets.shape[0] - 1):
        events += _run_device(order[dev_offsets[g]:dev_offsets[g + 1]], time, prog, scale, foot, hide, offsets,
                              op_dur, op_sm, op_l2, op_dram, limit, cap0, cap1, cap2, theta, eps, l2mb, kappa,
                              start_out, end_out)
    return events


# ---------------------------------------------------------------------------- public
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
        GPU type; ``queue`` as in :func:`interfpred.sim.engine.simulate_work`.

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
    if dem.shape != (dur.size, 3):
        raise InterfpredError(f"op_demands has shape {dem.shape}, expected ({dur.size}, 3)")
    if dur.size and (not np.all(np.isfinite(dur)) or dur.min() <= 0):
        raise InterfpredError("op_duration_ms must be positive and finite")
    if not np.all(np.isfinite(dem)) or (dem.size and dem.min() < 0):
        raise InterfpredError("op_demands must be finite fractions of peak >= 0")
    check_fits(dem[:, 0], dem[:, 1], dem[:, 2], spec, labels=lambda i: f"operator {i}")
    if prog.ndim != 1 or (n and (prog.min() < 0 or prog.max() >= offsets.size - 1)):
        raise InterfpredError(f"program indices must lie in 0..{offsets.size - 2}")
    if time.shape != (n,):
        raise InterfpredError(f"time_ms has shape {time.shape}, expected ({n},)")
    check_times(time)

    def per_exec(x, default, name, positive):
        a = np.full(n, default) if x is None else np.ascontiguousarray(x, dtype=np.float64)
        if a.shape != (n,) or not np.all(np.isfinite(a)) or (n and (a.min() <= 0 if positive else a.min() < 0)):
            raise InterfpredError(f"{name} must be ({n},) finite values {'> 0' if positive else '>= 0'}")
        return a

    scale_a = per_exec(scale, 1.0, "scale", True)
    foot = per_exec(footprint_mb, 0.0, "footprint_mb", False)
    hide = per_exec(hiding, 1.0, "hiding", True)
    codes = np.zeros(n, dtype=np.int64) if device is None else device_codes(device, n)[1]
    order, dev_off, start, end, limit = engine_plan(codes, time, spec, queue)
    events = _run_all(dev_off, order, time, prog, scale_a, foot, hide, offsets, dur,
                      np.ascontiguousarray(dem[:, 0]), np.ascontiguousarray(dem[:, 1]),
                      np.ascontiguousarray(dem[:, 2]), limit, spec.capacity_sm, spec.capacity_l2,
                      spec.capacity_dram, spec.theta, spec.epsilon, spec.l2_mb, spec.kappa, start, end)
    return start, end, int(events)


@renamed_keywords(gpu="device")
def simulate_phased(
    model: Sequence[str] | np.ndarray,
    batch_size: Sequence[int] | np.ndarray,
    time_ms: Sequence[float] | np.ndarray,
    *,
    device: Sequence[str] | np.ndarray | None = None,
    id: Sequence[int] | np.ndarray | None = None,
    spec: GpuSpec | str = SIM_PHASED_DEFAULT_GPU,
    zoo: PhaseZoo | None = None,
    queue: bool = True,
    seed: int | np.random.Generator | None = 0,
) -> SimResult:
    """Simulate executions on the phase-structured ground truth; the result as a Trace.

    Parameters
    ----------
    model, batch_size, time_ms, device, id, queue, seed
        As in :func:`interfpred.sim.engine.simulate`.
    spec
        GPU preset or spec; its ``l2_mb`` and ``kappa`` drive the footprint rule.
    zoo
        The model family (:class:`~interfpred.sim.operators.PhaseZoo`); default
        :func:`interfpred.sim.orion.phase_zoo` of ``spec.name`` (orion on a v100, else synthetic),
        reduced to ``SIM_MAX_PHASES`` phases per pass.

    Returns
    -------
    SimResult
        ``trace.solo_ms`` is the noisy solo time of the pass (sum of its noisy operators);
        ``.events`` the number of events the engine processed.

    Examples
    --------
    >>> from interfpred.sim.orion import orion_zoo
    >>> full = simulate_phased(["resnet50"] * 2, [4, 4], [0.0, 0.0], zoo=orion_zoo(max_phases=0), seed=1)
    >>> full.events > 300
    True
    >>> simulate_phased(["vgg19"], [1], [0.0])
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: no program for model 'vgg19' in the orion zoo on gpu 'v100'; known models: bert, efficientnet, mobilenetv2, resnet101, resnet50, retinanet, transformer_xl
    """
    spec = get_gpu_spec(spec)
    if zoo is None:
        zoo = phase_zoo(spec.name, max_phases=SIM_MAX_PHASES)
    model_a, batch_a, time, ids = execution_columns(model, batch_size, time_ms, id)
    batch_a = batch_a.astype(np.int64)
    n = len(model_a)
    names, codes = device_codes(device, n)
    mnames, mcode = np.unique(model_a, return_inverse=True)
    width = int(batch_a.max()) + 1 if n else 1
    keys, inv = np.unique(mcode.astype(np.int64) * width + batch_a, return_inverse=True)
    key_list = [(str(mnames[k // width]), int(k % width)) for k in keys.tolist()]
    offsets, dur, dem = zoo.flat(key_list)
    solo = np.array([zoo.program(m, b).solo_ms for m, b in key_list])[inv] if n else np.empty(0)
    hidden = [zoo.hidden[m] for m, _ in key_list]
    foot = np.array([h.footprint_mb(b) for h, (_, b) in zip(hidden, key_list)])[inv] if n else np.empty(0)
    hide = np.array([h.hiding for h in hidden])[inv] if n else np.empty(0)
    scale = noisy_work(np.ones(n), spec.sigma, seed)
    start, end, events = simulate_programs(offsets, dur, dem, inv.astype(np.int64), time, codes, scale=scale,
                                           footprint_mb=foot, hiding=hide, spec=spec, queue=queue)
    work = solo * scale
    trace, arrival = sorted_trace(ids, names[codes], model_a, batch_a, start, end, work, time)
    return SimResult(trace=trace, arrival_ms=arrival, spec=spec, events=events)
