"""The phase-structured ground truth: executions of a model family's programs, with hidden factors.

Each execution runs its program (:class:`~interfpred.sim.operators.Program`) operator by
operator on the simulator's event engine (:func:`interfpred.sim.engine.simulate_programs`).
Between two events (an arrival, a launch, an operator boundary of any running execution, a
completion) the set of *operators* running on a GPU is fixed, and the rate of each execution
follows from the demands of the operators running at that instant
(:func:`interfpred.sim.contention.rates`):

1. L2 pollution, amplified by footprint overflow:
   ``dram'_j = min(1, dram_j (1 + theta P l2_j sum_{i != j} l2_i))`` with
   ``P = 1 + kappa min(1, max(0, sum_{i in A} f_i / L2_MB - 1))`` (``f_i`` the hidden L2
   footprint; once the combined footprint is twice the L2, the cache is thrashed and the
   pollution stops growing);
2. max-min fair progressive filling over the capacities, giving fair shares ``r_j``;
3. concurrency overhead: ``r_j / (1 + epsilon (|A| - 1))``;
4. latency hiding: the execution progresses at ``r_j ** h_j`` (``h_j`` its hidden factor).

Noise scales a whole pass: every operator of an execution takes ``exp(sigma N(0, 1))`` times
its table duration.  With one operator per program, footprints 0 and ``h = 1`` this is the fluid
truth (:func:`interfpred.sim.engine.simulate_work` runs such programs).

Examples
--------
>>> res = simulate_phased(["resnet50", "bert"], [8, 2], [0.0, 0.0], spec="v100", seed=0)
>>> res.trace.model.tolist(), bool(res.slowdown.min() > 1.0)
(['resnet50', 'bert'], True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interfpred.constants import SIM_MAX_PHASES, SIM_PHASED_DEFAULT_GPU
from interfpred.sim._executions import device_codes, execution_columns, sorted_trace
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.engine import SimResult, noisy_work, simulate_programs
from interfpred.sim.operators import PhaseZoo
from interfpred.sim.orion import phase_zoo

__all__ = ["simulate_phased"]


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
