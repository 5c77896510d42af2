"""Phase-structured models: a pass is a sequence of operators, each with a duration and demands.

A *program* is the operator sequence of one (model, batch size) on one GPU: per operator its solo
duration (ms) and demand ``(sm, l2, dram)``. A :class:`PhaseZoo` holds a family's programs and the
hidden per-model factors (:class:`HiddenFactors`: an L2 footprint per batch and a latency-hiding
factor) that no solo profile shows; :meth:`PhaseZoo.profiles` gives what a profiler reports, and
:meth:`PhaseZoo.reduced` merges operators into at most ``max_phases`` phases per pass (greedy Ward
merging, keeping each pass's work and time-averaged demand). See docs/simulator.md.

Examples
--------
>>> z = PhaseZoo.from_programs("toy", "l4", {("m", 1): ([1.0, 3.0], [[0.8, 0.4, 0.2], [0.2, 0.4, 0.8]])},
...                            hidden={"m": HiddenFactors(weights_mb=1.0, per_sample_mb=0.5, hiding=1.0)})
>>> p = z.profiles().lookup("m", 1)
>>> p.solo_ms, round(p.sm, 3), round(p.dram, 3)
(4.0, 0.35, 0.65)
>>> z.reduced(1).program("m", 1).duration_ms.tolist()
[4.0]
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import (
    SIM_FOOTPRINT_PER_SAMPLE_MB,
    SIM_FOOTPRINT_WEIGHTS_MB,
    SIM_HIDDEN_SEED,
    SIM_HIDING_RANGE,
    SIM_HIDING_SIGMA,
)
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError

__all__ = ["Program", "HiddenFactors", "PhaseZoo", "draw_hidden", "merge_phases"]


@dataclass(frozen=True, eq=False)
class Program:
    """The operator sequence of one pass: durations (ms) and demands (fractions of peak).

    Compared by identity (two programs with equal arrays are different objects).

    Attributes
    ----------
    duration_ms
        (n,) solo duration of each operator, positive.
    demand
        (n, 3) demands ``sm, l2, dram`` of each operator.
    kind
        (n,) roofline class per operator (1 compute-bound, 0 memory-bound, -1 unknown).
    """

    # Any array-like on construction; __post_init__ stores float64/int64 numpy arrays.
    duration_ms: Any
    demand: Any
    kind: Any

    def __post_init__(self) -> None:
        d = np.ascontiguousarray(self.duration_ms, dtype=np.float64)
        u = np.ascontiguousarray(self.demand, dtype=np.float64).reshape(-1, 3) if np.size(self.demand) else \
            np.empty((0, 3))
        k = np.ascontiguousarray(self.kind, dtype=np.int64)
        if d.ndim != 1 or d.size == 0:
            raise InterfpredError(f"a program needs at least one operator; got durations of shape {d.shape}")
        if u.shape != (d.size, 3) or k.shape != d.shape:
            raise InterfpredError(f"program demands {u.shape} and kinds {k.shape} must align with {d.size} durations")
        if not np.all(np.isfinite(d)) or d.min() <= 0:
            raise InterfpredError(f"operator duration {float(d[~np.isfinite(d) | (d <= 0)][0])!r} must be positive")
        if not np.all(np.isfinite(u)) or u.min() < 0 or u.max() > 1:
            raise InterfpredError("operator demands must be fractions of peak in [0, 1]")
        for name, arr in (("duration_ms", d), ("demand", u), ("kind", k)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return int(self.duration_ms.size)

    @property
    def solo_ms(self) -> float:
        """Sum of the operator durations."""
        return float(self.duration_ms.sum())

    @property
    def mean_demand(self) -> np.ndarray:
        """Duration-weighted mean demand ``(sm, l2, dram)`` (what a profiler summed over the pass reports)."""
        return self.duration_ms @ self.demand / self.duration_ms.sum()


@dataclass(frozen=True)
class HiddenFactors:
    """Per-model properties a solo profile does not report.

    Attributes
    ----------
    weights_mb, per_sample_mb
        L2 working-set footprint ``weights_mb + per_sample_mb * batch`` (MB).
    hiding
        Latency-hiding factor ``h``: progress rate = fair share ** h.
    """

    weights_mb: float
    per_sample_mb: float
    hiding: float

    def footprint_mb(self, batch_size: int) -> float:
        """L2 footprint of one execution at ``batch_size``.

        Examples
        --------
        >>> HiddenFactors(weights_mb=2.0, per_sample_mb=0.5, hiding=1.0).footprint_mb(4)
        4.0
        """
        return self.weights_mb + self.per_sample_mb * batch_size


#: Factors that make the phase-structured truth equal the fluid one (no footprint, h = 1).
NEUTRAL = HiddenFactors(weights_mb=0.0, per_sample_mb=0.0, hiding=1.0)


def draw_hidden(model: str, seed: int = SIM_HIDDEN_SEED) -> HiddenFactors:
    """The hidden factors of a model: drawn once, from a generator seeded by ``seed`` and the name.

    Footprint parts are log-normal with the medians and log-standard deviations of
    ``SIM_FOOTPRINT_WEIGHTS_MB`` and ``SIM_FOOTPRINT_PER_SAMPLE_MB``; ``hiding`` is log-normal
    with median 1 and log-standard deviation ``SIM_HIDING_SIGMA``, clipped to ``SIM_HIDING_RANGE``.
    A model keeps its factors whatever else is in the zoo.

    Examples
    --------
    >>> draw_hidden("resnet50") == draw_hidden("resnet50"), draw_hidden("resnet50") == draw_hidden("bert")
    (True, False)
    """
    rng = np.random.default_rng([int(seed), zlib.crc32(model.encode("utf-8"))])
    z = rng.standard_normal(3)
    (mw, sw), (ma, sa) = SIM_FOOTPRINT_WEIGHTS_MB, SIM_FOOTPRINT_PER_SAMPLE_MB
    lo, hi = SIM_HIDING_RANGE
    return HiddenFactors(weights_mb=float(mw * np.exp(sw * z[0])), per_sample_mb=float(ma * np.exp(sa * z[1])),
                         hiding=float(np.clip(np.exp(SIM_HIDING_SIGMA * z[2]), lo, hi)))


# ---------------------------------------------------------------------------- phase reduction
@njit(cache=True)
def _merge_kernel(dur, dem, max_phases, out_dur, out_dem, group):
    """Greedy Ward merging of neighbours until at most ``max_phases`` remain; returns the count.

    ``group[i]`` receives the phase index of operator ``i``.
    """
    n = dur.shape[0]
    m = n
    d = dur.copy()
    u = dem.copy()
    nxt = np.empty(n, dtype=np.int64)
    alive = np.ones(n, dtype=np.bool_)
    owner = np.arange(n)
    for i in range(n):
        nxt[i] = i + 1
    cost = np.empty(n)
    for i in range(n - 1):
        c = 0.0
        for r in range(3):
            x = u[i, r] - u[i + 1, r]
            c += x * x
        cost[i] = d[i] * d[i + 1] / (d[i] + d[i + 1]) * c
    if n > 0:
        cost[n - 1] = np.inf
    while m > max_phases:
        best = -1
        bc = np.inf
        for i in range(n):
            if alive[i] and cost[i] < bc:
                bc = cost[i]
                best = i
        j = nxt[best]
        tot = d[best] + d[j]
        for r in range(3):
            u[best, r] = (d[best] * u[best, r] + d[j] * u[j, r]) / tot
        d[best] = tot
        alive[j] = False
        owner[j] = best
        nxt[best] = nxt[j]
        m -= 1
        # refresh the costs of best and of its left neighbour
        k = nxt[best]
        if k < n:
            c = 0.0
            for r in range(3):
                x = u[best, r] - u[k, r]
                c += x * x
            cost[best] = d[best] * d[k] / (d[best] + d[k]) * c
        else:
            cost[best] = np.inf
        left = best - 1
        while left >= 0 and not alive[left]:
            left -= 1
        if left >= 0:
            c = 0.0
            for r in range(3):
                x = u[left, r] - u[best, r]
                c += x * x
            cost[left] = d[left] * d[best] / (d[left] + d[best]) * c
    p = -1
    for i in range(n):
        if alive[i]:
            p += 1
            out_dur[p] = d[i]
            for r in range(3):
                out_dem[p, r] = u[i, r]
            group[i] = p
        else:
            group[i] = p
    return p + 1


def merge_phases(program: Program, max_phases: int) -> tuple[Program, np.ndarray]:
    """Reduce a program to at most ``max_phases`` phases (see the module docstring).

    Returns the reduced program and, per original operator, the index of its phase.  A
    phase's kind is its operators' kind when they agree, else -1.

    Examples
    --------
    >>> p = Program([1.0, 1.0, 2.0], [[0.8, 0.4, 0.2], [0.8, 0.4, 0.2], [0.1, 0.5, 0.9]], [1, 1, 0])
    >>> q, group = merge_phases(p, 2)
    >>> q.duration_ms.tolist(), group.tolist(), q.kind.tolist()
    ([2.0, 2.0], [0, 0, 1], [1, 0])
    """
    if not isinstance(max_phases, int | np.integer) or max_phases < 1:
        raise InterfpredError(f"max_phases {max_phases!r} must be an integer >= 1")
    n = len(program)
    out_d, out_u = np.empty(n), np.empty((n, 3))
    group = np.empty(n, dtype=np.int64)
    m = _merge_kernel(program.duration_ms.copy(), np.ascontiguousarray(program.demand), int(max_phases),
                      out_d, out_u, group)
    kind = np.full(m, -1, dtype=np.int64)
    for p in range(m):
        ks = np.unique(program.kind[group == p])
        if ks.size == 1:
            kind[p] = ks[0]
    return Program(out_d[:m], np.clip(out_u[:m], 0.0, 1.0), kind), group


# ---------------------------------------------------------------------------- the zoo
@dataclass(frozen=True, eq=False)
class PhaseZoo:
    """Programs of a model family on one GPU, with each model's hidden factors.

    Attributes
    ----------
    family
        ``"orion"`` (real operator structure, derived demands) or ``"synthetic"``.
    gpu
        The GPU preset name the durations belong to.
    programs
        (model, batch size) -> :class:`Program`.
    hidden
        model -> :class:`HiddenFactors`.
    max_phases
        0 for the full operator sequences, else the phase bound they were reduced to.
    """

    family: str
    gpu: str
    programs: Mapping[tuple[str, int], Program]
    hidden: Mapping[str, HiddenFactors]
    max_phases: int = 0

    @classmethod
    def from_programs(cls, family: str, gpu: str, programs: Mapping[tuple[str, int], Program | tuple],
                      *, hidden: Mapping[str, HiddenFactors] | None = None) -> PhaseZoo:
        """Build a zoo; a program may be given as ``(durations, demands[, kinds])``; hidden factors
        default to :func:`draw_hidden` per model."""
        progs = {}
        for (m, b), p in programs.items():
            if not isinstance(p, Program):
                dur, dem, *kind = p
                p = Program(dur, dem, kind[0] if kind else np.full(len(dur), -1))
            progs[(str(m), int(b))] = p
        models = sorted({m for m, _ in progs})
        hid = dict(hidden or {})
        missing = [m for m in models if m not in hid]
        if hidden is not None and missing:
            raise InterfpredError(f"hidden factors missing for model(s) {', '.join(missing)}")
        for m in missing:
            hid[m] = draw_hidden(m)
        return cls(family=family, gpu=gpu, programs=progs, hidden=hid)

    @property
    def models(self) -> tuple[str, ...]:
        """Model names, sorted."""
        return tuple(sorted(self.hidden))

    def program(self, model: str, batch_size: int) -> Program:
        """The program of one (model, batch size); an unknown key raises naming the known ones."""
        try:
            return self.programs[(model, int(batch_size))]
        except KeyError:
            known = sorted({b for m, b in self.programs if m == model})
            if not known:
                raise InterfpredError(f"no program for model {model!r} in the {self.family} zoo on gpu "
                                      f"{self.gpu!r}; known models: {', '.join(self.models)}") from None
            raise InterfpredError(f"no program for model {model!r} batch size {batch_size!r} in the {self.family} "
                                  f"zoo; known batch sizes {known[0]}..{known[-1]}") from None

    def reduced(self, max_phases: int) -> PhaseZoo:
        """Every program reduced to at most ``max_phases`` phases (0: unchanged)."""
        if max_phases == 0:
            return self
        progs = {k: (p if len(p) <= max_phases else merge_phases(p, max_phases)[0])
                 for k, p in self.programs.items()}
        return PhaseZoo(family=self.family, gpu=self.gpu, programs=progs, hidden=self.hidden, max_phases=max_phases)

    def profiles(self) -> ProfileTable:
        """Solo profiles: ``solo_ms`` = sum of durations, ``sm, l2, dram`` = time averages."""
        keys = sorted(self.programs)
        mean = np.array([self.programs[k].mean_demand for k in keys]).reshape(-1, 3)
        return ProfileTable.from_columns(
            gpu=[self.gpu] * len(keys), model=[m for m, _ in keys], batch_size=[b for _, b in keys],
            solo_ms=[self.programs[k].solo_ms for k in keys], sm=np.clip(mean[:, 0], 0, 1),
            l2=np.clip(mean[:, 1], 0, 1), dram=np.clip(mean[:, 2], 0, 1),
            extra={"source": [self.source] * len(keys)})

    @property
    def source(self) -> str:
        """The label profiles carry in their ``source`` column."""
        return "orion operators, derived demands" if self.family == "orion" else "synthetic"

    def flat(self, keys: Sequence[tuple[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Operator arrays of the distinct ``keys`` for the engine.

        Returns ``(offsets, durations, demands)``: program ``i`` of ``keys`` is operators
        ``offsets[i]:offsets[i + 1]``.
        """
        progs = [self.program(m, b) for m, b in keys]
        lens = np.array([len(p) for p in progs], dtype=np.int64)
        offsets = np.zeros(len(progs) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        dur = np.concatenate([p.duration_ms for p in progs]) if progs else np.empty(0)
        dem = np.concatenate([p.demand for p in progs]) if progs else np.empty((0, 3))
        return offsets, dur, np.ascontiguousarray(dem)

    def operator_rows(self, keys: Iterable[tuple[str, int]] | None = None) -> dict[str, list]:
        """Operator-level profile columns (gpu, model, batch_size, op, kind, duration_ms, sm, l2, dram)."""
        cols: dict[str, list] = {k: [] for k in ("gpu", "model", "batch_size", "op", "kind", "duration_ms",
                                                 "sm", "l2", "dram")}
        for m, b in sorted(self.programs if keys is None else keys):
            p = self.program(m, b)
            n = len(p)
            cols["gpu"] += [self.gpu] * n
            cols["model"] += [m] * n
            cols["batch_size"] += [b] * n
            cols["op"] += list(range(n))
            cols["kind"] += p.kind.tolist()
            cols["duration_ms"] += p.duration_ms.tolist()
            for r, name in enumerate(("sm", "l2", "dram")):
                cols[name] += p.demand[:, r].tolist()
        return cols
