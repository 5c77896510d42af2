"""Steady-state slowdowns of two models sharing a simulated GPU, to check against published pairs.

Published pair measurements (Gavel's V100 table: training jobs launched together, each
running continuously) report a slowdown as solo throughput / co-located throughput.  The same
quantity here: each member repeats its pass back to back; member A's slowdown is measured over a
window in which B is running the whole time (A's passes are tiled to about ``span`` solo
milliseconds, B's to more than three times longer, so A finishes first), then the roles swap.
No parameter is fitted to the published figures; this only compares magnitudes.

Examples
--------
>>> sd = pair_slowdowns("v100", zoo="orion", batch_sizes=(8,), models=("resnet50", "bert"))
>>> sd.shape, bool(sd.min() >= 1.0)
((4,), True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from interfpred.constants import (
    SIM_MAX_PHASES,
    SIM_PHASED_DEFAULT_GPU,
    STEADY_PAIRS_CO_RUNNER_SPANS,
    STEADY_PAIRS_SPAN_MS,
)
from interfpred.errors import InterfpredError
from interfpred.sim.contention import GpuSpec, get_gpu_spec
from interfpred.sim.engine import simulate_programs
from interfpred.sim.operators import NEUTRAL, PhaseZoo, Program
from interfpred.sim.orion import phase_zoo

__all__ = ["GAVEL_V100_PAIRS", "pair_slowdowns", "summarise"]

#: Published magnitudes the check prints beside the simulator's: Gavel's V100 pair table (636 pair
#: sides of training jobs at scale 1: slowdown = solo / co-located throughput) and the range usually
#: reported for pairs of inference jobs under MPS shares.
GAVEL_V100_PAIRS = {"n": 636, "median": 1.67, "p90": 17.9, "max": 119.4, "min": 0.99}
INFERENCE_PAIRS_RANGE = (1.0, 1.3)


def _tile(p: Program, times: int) -> Program:
    return Program(np.tile(p.duration_ms, times), np.tile(p.demand, (times, 1)), np.tile(p.kind, times))


def pair_slowdowns(spec: str | GpuSpec = SIM_PHASED_DEFAULT_GPU, *, zoo: str | PhaseZoo | None = None,
                   truth: str = "phases", batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32), models: Sequence[str] | None = None,
                   span_ms: float = STEADY_PAIRS_SPAN_MS, seed: int = 0) -> np.ndarray:
    """Steady-state slowdown of every ordered pair (A beside B) of (model, batch size) items.

    Parameters
    ----------
    spec
        GPU preset or spec.
    zoo
        Family (``"orion"``, ``"synthetic"`` or a PhaseZoo; None: orion on a v100, else synthetic).
    truth
        ``"phases"`` or ``"fluid"`` (the same programs with neutral hidden factors, each pass one
        operator with its time-averaged demand: what the fluid truth sees).
    batch_sizes, models
        The items are every model (default all of the family) at every batch size.
    span_ms
        Solo length of the measured member's repeated passes.
    seed
        Noise seed.

    Returns
    -------
    numpy.ndarray
        One slowdown per ordered pair, A's, including A beside a copy of itself.
    """
    spec = get_gpu_spec(spec)
    if truth not in ("phases", "fluid"):
        raise InterfpredError(f"unknown truth {truth!r}; known: phases, fluid")
    pz = zoo if isinstance(zoo, PhaseZoo) else phase_zoo(spec.name, zoo, max_phases=SIM_MAX_PHASES)
    names = list(pz.models if models is None else models)
    items = [(m, int(b)) for m in names for b in batch_sizes]
    progs, hidden = [], []
    for m, b in items:
        p = pz.program(m, b)
        if truth == "fluid":
            p = Program([p.solo_ms], [p.mean_demand], [-1])
        progs.append(p)
        hidden.append(NEUTRAL if truth == "fluid" else pz.hidden[m])
    k = len(items)
    # program 2i: item i tiled to ~span; program 2i + 1: item i tiled to > 3 x the longest measured span
    longest = max(max(span_ms, p.solo_ms) for p in progs)
    tiled = []
    for p in progs:
        tiled.append(_tile(p, max(1, int(round(span_ms / p.solo_ms)))))
        tiled.append(_tile(p, math.ceil(STEADY_PAIRS_CO_RUNNER_SPANS * longest / p.solo_ms) + 1))
    offsets = np.cumsum([0, *(len(p) for p in tiled)])
    dur = np.concatenate([p.duration_ms for p in tiled])
    dem = np.concatenate([p.demand for p in tiled])
    first, second = np.divmod(np.arange(k * k), k)
    prog = np.empty(2 * k * k, dtype=np.int64)
    prog[0::2], prog[1::2] = 2 * first, 2 * second + 1
    item = np.empty(2 * k * k, dtype=np.int64)
    item[0::2], item[1::2] = first, second
    foot = np.array([hidden[i].footprint_mb(items[i][1]) for i in item])
    hide = np.array([hidden[i].hiding for i in item])
    rng = np.random.default_rng(seed)
    scale = np.exp(spec.sigma * rng.standard_normal(2 * k * k))
    device = np.repeat(np.arange(k * k), 2)
    start, end, _ = simulate_programs(offsets, dur, dem, prog, np.zeros(2 * k * k), device, scale=scale,
                                      footprint_mb=foot, hiding=hide, spec=spec, queue=False)
    solo = np.array([tiled[p].solo_ms for p in prog[0::2]]) * scale[0::2]
    if np.any(end[0::2] > end[1::2]):
        raise InterfpredError("a measured member outlived its co-runner; raise the co-runner's repetitions")
    return (end[0::2] - start[0::2]) / solo


def summarise(slowdowns: np.ndarray) -> dict[str, float]:
    """n, median, p90, max and the share within 1.3 of a set of pair slowdowns.

    Examples
    --------
    >>> summarise(np.array([1.0, 1.2, 2.0]))["median"]
    1.2
    """
    s = np.asarray(slowdowns, dtype=np.float64)
    return {"n": int(s.size), "median": float(np.median(s)), "p90": float(np.percentile(s, 90)),
            "max": float(s.max()), "within_1.3": float(np.mean(s <= 1.3))}
