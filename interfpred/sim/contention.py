"""The simulator's ground truth: how fast each execution runs beside the others.

Every running execution progresses at a rate in (0, 1] of its solo speed (see
docs/simulator.md), and the rates of a running set ``A`` follow from the demands
``u_j = (sm_j, l2_j, dram_j)`` (fractions of peak) of what each runs at that instant (its whole
pass under the fluid truth, its current operator under the phase-structured one):

1. L2 pollution raises DRAM traffic: ``dram'_j = min(1, dram_j (1 + theta P l2_j sum_{i != j} l2_i))``,
   with ``P = 1 + kappa min(1, max(0, sum_{i in A} f_i / l2_mb - 1))`` for hidden L2 footprints
   ``f_i`` (``P = 1`` under the fluid truth, whose footprints are 0).
2. Max-min fair progressive filling: the rates of all unfrozen executions rise together until
   one reaches 1 (it freezes) or a resource ``k`` reaches its capacity
   ``sum_j r_j u'_jk = capacity_k`` (every unfrozen execution with ``u'_jk > 0`` freezes).
3. Concurrency overhead: every rate is divided by ``1 + epsilon (|A| - 1)``.
4. Latency hiding: each execution progresses at its fair share to the power of its hidden
   factor ``h_j`` (1 under the fluid truth).

:func:`rates` computes them for any running set; the event engine calls the same compiled
kernel at every event.  Noise lives on the solo work, not on the rates: see
:func:`interfpred.sim.engine.noisy_work`.

Examples
--------
>>> spec = get_gpu_spec("l4")
>>> float(rates([[0.3, 0.2, 0.1]], spec)[0])            # alone: full speed
1.0
>>> r = rates([[0.8, 0.4, 0.3], [0.8, 0.4, 0.3]], spec)  # two SM-heavy twins share the SMs
>>> bool(r[0] == r[1]), round(float(r[0]), 4)
(True, 0.6068)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from interfpred.constants import (
    BOUNDARY_RTOL,
    SIM_DEFAULT_GPU,
    SIM_EPSILON,
    SIM_FOOTPRINT_KAPPA,
    SIM_L2_MB,
    SIM_MAX_CONCURRENCY,
    SIM_SIGMA,
    SIM_THETA,
)
from interfpred.errors import InterfpredError
from interfpred.sim._truth_rates import pollute, truth_rates

__all__ = ["GpuSpec", "GPU_PRESETS", "check_fits", "check_hidden", "get_gpu_spec", "rates", "effective_demands"]


class GpuSpec(BaseModel):
    """One simulated GPU type: resource capacities and contention constants.

    Capacities are the aggregate throughput the GPU can deliver when several executions
    overlap, as a fraction of the peak that profiles are measured against; a solo profile never
    needs more than the capacity (the simulator refuses one that does).

    Parameters
    ----------
    name
        The GPU name; profiles for it are looked up under this name.
    capacity_sm, capacity_l2, capacity_dram
        Aggregate capacity per resource, fractions of peak in (0, 1].
    theta
        L2 pollution strength (how much co-runners' L2 traffic inflates one's DRAM demand).
    epsilon
        Concurrency overhead per extra co-runner.
    sigma
        Standard deviation of the log-normal noise on solo work.
    max_concurrency
        Executions run at once when drawn from a queue; later arrivals wait (FIFO).
    l2_mb
        L2 cache capacity in MB (the phase-structured ground truth compares the running set's
        combined L2 footprint with it).
    kappa
        How fast L2 pollution grows once the running set's footprint overflows the L2: the
        pollution term is multiplied by ``1 + kappa * min(1, max(0, footprint / l2_mb - 1))``.

    Examples
    --------
    >>> GpuSpec(name="mygpu", theta=0.5).capacities
    (1.0, 1.0, 1.0)
    >>> get_gpu_spec("l4").model_copy(update={"theta": 2.0}).theta
    2.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    capacity_sm: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    capacity_l2: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    capacity_dram: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    theta: float = Field(SIM_THETA, ge=0.0, allow_inf_nan=False)
    epsilon: float = Field(SIM_EPSILON, ge=0.0, allow_inf_nan=False)
    sigma: float = Field(SIM_SIGMA, ge=0.0, le=1.0, allow_inf_nan=False)
    max_concurrency: int = Field(SIM_MAX_CONCURRENCY, ge=1)
    l2_mb: float = Field(SIM_L2_MB, gt=0.0, allow_inf_nan=False)
    kappa: float = Field(SIM_FOOTPRINT_KAPPA, ge=0.0, allow_inf_nan=False)

    @property
    def capacities(self) -> tuple[float, float, float]:
        """``(capacity_sm, capacity_l2, capacity_dram)``."""
        return (self.capacity_sm, self.capacity_l2, self.capacity_dram)


#: The built-in GPU types.  ``l4`` uses the default constants; its achievable DRAM bandwidth
#: under overlap is 90% of peak and its L2 95%; L2 48 MB (NVIDIA L4 datasheet).  ``a100``
#: (A100-40GB) has far more DRAM bandwidth, so pollution hurts less (theta 0.6) and overlap costs
#: less (epsilon 0.02); L2 40 MB.  ``v100`` (V100-16GB, 80 SMs, 900 GB/s HBM2) has a small L2 of
#: 6 MB (Volta whitepaper), so combined working sets overflow it easily; its other constants are
#: the defaults (like the L4, an older part with no more headroom under overlap).
GPU_PRESETS: dict[str, GpuSpec] = {
    "l4": GpuSpec(name="l4", capacity_sm=1.0, capacity_l2=0.95, capacity_dram=0.90,
                  theta=SIM_THETA, epsilon=SIM_EPSILON, sigma=SIM_SIGMA, l2_mb=48.0),
    "a100": GpuSpec(name="a100", capacity_sm=1.0, capacity_l2=1.0, capacity_dram=0.93,
                    theta=0.6, epsilon=0.02, sigma=SIM_SIGMA, l2_mb=40.0),
    "v100": GpuSpec(name="v100", capacity_sm=1.0, capacity_l2=0.95, capacity_dram=0.90,
                    theta=SIM_THETA, epsilon=SIM_EPSILON, sigma=SIM_SIGMA, l2_mb=6.0),
}


def get_gpu_spec(spec: str | GpuSpec = SIM_DEFAULT_GPU, **overrides: float) -> GpuSpec:
    """A GPU preset by name (or a given spec), with optional field overrides.

    Examples
    --------
    >>> get_gpu_spec("a100", sigma=0.0).sigma
    0.0
    >>> get_gpu_spec("h100")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: unknown GPU preset 'h100'; known presets: a100, l4, v100 (or pass a GpuSpec)
    """
    if isinstance(spec, str) and spec in GPU_PRESETS:
        spec = GPU_PRESETS[spec]
    elif not isinstance(spec, GpuSpec):
        raise InterfpredError(
            f"unknown GPU preset {spec!r}; known presets: {', '.join(sorted(GPU_PRESETS))} (or pass a GpuSpec)")
    if overrides:
        unknown = sorted(set(overrides) - set(GpuSpec.model_fields))
        if unknown:
            raise InterfpredError(f"unknown GpuSpec field(s) {', '.join(unknown)}; fields: "
                                  f"{', '.join(GpuSpec.model_fields)}")
        spec = GpuSpec.model_validate({**spec.model_dump(), **overrides})
    return spec


# ---------------------------------------------------------------------------- public
def _as_demands(demands: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    d = np.asarray(demands, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != 3:
        raise InterfpredError(f"demands has shape {d.shape}, expected (k, 3) columns sm, l2, dram")
    if d.size and not (d.min() >= 0.0 and d.max() <= 1.0):     # NaN fails both comparisons
        bad = d[~np.isfinite(d) | (d < 0) | (d > 1)][0]
        raise InterfpredError(f"demand {bad!r} is not a fraction of peak in [0, 1]")
    return d


def effective_demands(demands: Sequence[Sequence[float]] | np.ndarray,
                      spec: GpuSpec | str = SIM_DEFAULT_GPU) -> np.ndarray:
    """Demands of a running set after L2 pollution (step 1 of the rate model), shape (k, 3).

    Examples
    --------
    >>> effective_demands([[0.5, 0.5, 0.4], [0.5, 0.5, 0.4]], "l4")[0].tolist()
    [0.5, 0.5, 0.5]
    """
    spec = get_gpu_spec(spec)
    d = np.ascontiguousarray(_as_demands(demands))
    out = np.empty_like(d)
    pollute(d[:, 0].copy(), d[:, 1].copy(), d[:, 2].copy(), len(d), spec.theta, out)
    return out


def rates(demands: Sequence[Sequence[float]] | np.ndarray, spec: GpuSpec | str = SIM_DEFAULT_GPU, *,
          footprint_mb: Sequence[float] | np.ndarray | None = None,
          hiding: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Ground-truth rates (fractions of solo speed) of a running set on one GPU.

    The one truth-rate function: the event engine computes its rates with the same compiled
    kernel at every event.

    Parameters
    ----------
    demands
        (k, 3) throughputs ``sm, l2, dram`` (fractions of peak) of what the k executions running
        together run now (their solo profiles under the fluid truth, e.g.
        ``np.column_stack([p["sm"], p["l2"], p["dram"]])`` from :meth:`ProfileTable.lookup_arrays`).
        Order does not matter beyond aligning the output.
    spec
        A :class:`GpuSpec` or a preset name.
    footprint_mb, hiding
        (k,) hidden L2 footprints (MB, default 0) and latency-hiding factors (> 0, default 1) of
        the phase-structured truth: pollution grows once the footprints together overflow
        ``spec.l2_mb``, and each fair share ``r`` becomes ``r ** hiding``.  The defaults give the
        fluid truth.

    Returns
    -------
    numpy.ndarray
        (k,) rates in (0, 1]; an execution with solo latency ``s`` running alone in a segment of
        length ``d`` completes ``rate * d`` ms of its solo work.  ``k = 0`` gives an empty array.

    Notes
    -----
    The max-min fair allocation is computed exactly (a handful of rounds, at most one per
    resource plus one) by a compiled kernel; a call costs a few microseconds, most of it this
    wrapper's validation.  ``max_concurrency`` does not limit ``k`` here: an oracle may ask about
    any set.

    Examples
    --------
    >>> r = rates([[0.9, 0.3, 0.2], [0.6, 0.3, 0.3], [0.2, 0.1, 0.1]], "l4")
    >>> [round(float(x), 4) for x in r]
    [0.5549, 0.5549, 0.5549]
    >>> tight = GpuSpec(name="tiny", l2_mb=2.0)
    >>> d = [[0.6, 0.5, 0.5], [0.5, 0.6, 0.6]]
    >>> bool(np.all(rates(d, tight, footprint_mb=[1.5, 1.5]) < rates(d, tight)))   # the L2 overflows
    True
    >>> [round(float(x), 4) for x in rates(d, tight, hiding=[0.5, 2.0])]
    [0.824, 0.4609]
    """
    spec = get_gpu_spec(spec)
    d = _as_demands(demands)
    k = len(d)
    foot, hide = check_hidden(footprint_mb, hiding, k)
    out = np.empty(k)
    if k == 0:
        return out
    truth_rates(np.ascontiguousarray(d[:, 0]), np.ascontiguousarray(d[:, 1]), np.ascontiguousarray(d[:, 2]),
                foot, hide, k, spec.capacity_sm, spec.capacity_l2, spec.capacity_dram, spec.theta, spec.epsilon,
                spec.l2_mb, spec.kappa, np.empty((k, 3)), out, np.empty(k, dtype=np.bool_))
    return out


def check_hidden(footprint_mb: Sequence[float] | np.ndarray | None, hiding: Sequence[float] | np.ndarray | None,
                 n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hidden L2 footprints (default 0 MB) and latency-hiding factors (default 1) of ``n`` executions, checked.

    Examples
    --------
    >>> check_hidden(None, [0.5, 2.0], 2)[0].tolist()
    [0.0, 0.0]
    >>> check_hidden([1.0], None, 2)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: footprint_mb must be (2,) finite values >= 0
    """
    def one(x: Sequence[float] | np.ndarray | None, default: float, name: str, positive: bool) -> np.ndarray:
        if x is None:
            return np.full(n, default)
        a = np.ascontiguousarray(x, dtype=np.float64)
        # NaN fails both comparisons; the E3 event loop calls this at every event, so two reductions only
        if a.shape != (n,) or (n and not ((a.min() > 0.0 if positive else a.min() >= 0.0) and a.max() < math.inf)):
            raise InterfpredError(f"{name} must be ({n},) finite values {'> 0' if positive else '>= 0'}")
        return a

    return one(footprint_mb, 0.0, "footprint_mb", False), one(hiding, 1.0, "hiding", True)


def check_fits(sm: np.ndarray, l2: np.ndarray, dram: np.ndarray, spec: GpuSpec, *,
               labels: Callable[[int], str] | None = None) -> None:
    """Refuse solo demands above the GPU's capacity (a solo run cannot use more than exists).

    ``labels(i)`` names element ``i`` in the message (``"execution 3"``).

    Examples
    --------
    >>> check_fits(np.array([1.2]), np.array([0.1]), np.array([0.1]), get_gpu_spec("l4"))
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: solo sm demand 1.2 exceeds gpu 'l4' capacity_sm 1.0: a solo run cannot use more than the GPU delivers; use a GpuSpec with capacity_sm >= 1.2
    """
    for name, arr, cap in (("sm", sm, spec.capacity_sm), ("l2", l2, spec.capacity_l2),
                           ("dram", dram, spec.capacity_dram)):
        bad = np.flatnonzero(arr > cap * (1.0 + BOUNDARY_RTOL))
        if bad.size:
            i = int(bad[0])
            who = f" ({labels(i)})" if labels is not None else ""
            raise InterfpredError(
                f"solo {name} demand {float(arr[i])!r}{who} exceeds gpu {spec.name!r} capacity_{name} {cap}: "
                f"a solo run cannot use more than the GPU delivers; use a GpuSpec with capacity_{name} >= "
                f"{math.ceil(float(arr[i]) * 1000) / 1000}")
