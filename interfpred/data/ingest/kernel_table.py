"""Kernel launches as a table, and their sum as one solo profile.

A :class:`KernelTable` holds one row per kernel launch (name, duration in milliseconds, SM, L2
and DRAM throughputs as fractions of peak, the launch configuration where the file has it, plus the
identity columns the source file had); :func:`profile_from_kernels` sums the launches of one Nsight
Compute report into a :class:`~interfpred.Profile`, with the kernel statistics of
:func:`kernel_statistics` as its optional columns. :func:`interfpred.data.ingest.read_kernels` builds tables from Nsight
Compute files; see docs/profiling.md.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from interfpred._core.patterns import compile_pattern
from interfpred.constants import (
    KERNEL_COMPLETE,
    KERNEL_FILL_WAVES,
    KERNEL_LAUNCH_COLUMNS,
    KERNEL_OCCUPANCY_LIMIT_COLUMNS,
    KERNEL_PROFILE_COLUMNS,
    KERNEL_TAIL_PERCENTILE,
    KERNEL_TRUNCATED,
    PROFILE_SIGNIFICANT_DIGITS,
)
from interfpred.data.ingest.ncu_log import TruncatedReportError, TruncatedReportWarning, Truncation
from interfpred.data.profiles import Profile
from interfpred.errors import InputError, InterfpredError

__all__ = ["KernelTable", "kernel_statistics", "profile_from_kernels"]


class KernelTable:
    """One row per kernel launch read from an Nsight Compute file, as numpy columns.

    ``name``, ``duration_ms`` (float64, > 0), ``sm``, ``l2``, ``dram`` (float64 fractions of peak in
    [0, 1]) and ``lines`` (the line of each launch's first row in the file, 0 when unknown) are
    always there; the identity columns the file had (``id``, ``process_id``, ``process_name``,
    ``host_name``, ``kernel_time``, ``context``, ``stream``, ``block_size``, ``grid_size``,
    ``device``, ``cc``, ``nvtx``, ``nvtx_range`` ...) are string arrays read by :meth:`column`.

    The launch columns (``KERNEL_LAUNCH_COLUMNS``) are float64 arrays, NaN where the file does not
    say (never zero in its place): ``grid_blocks`` (blocks in the grid), ``block_threads``
    (threads per block), ``waves_per_sm``, ``registers_per_thread``, ``shared_mem_per_block``
    (bytes), ``occupancy_limit_blocks``, ``occupancy_limit_registers``,
    ``occupancy_limit_shared_mem``, ``occupancy_limit_warps`` (resident blocks per SM each resource
    allows), ``sm_count`` and ``theoretical_occupancy`` (fraction of the SM's warp slots).
    :attr:`launch_columns` names those known for at least one launch. :attr:`truncation` holds
    the evidence when ncu's log says the report was cut short.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1], identity={"stream": ["7", "7"]})
    >>> len(t), t.identity_columns, t.column("stream").tolist()
    (2, ('stream',), ['7', '7'])
    >>> t.filter(kernel="^b").name.tolist()
    ['b']
    >>> t.launch_columns, float(t.column("waves_per_sm")[0])
    ((), nan)
    """

    def __init__(self, *, name: np.ndarray, duration_ms: np.ndarray, sm: np.ndarray,
                 l2: np.ndarray, dram: np.ndarray, lines: np.ndarray,
                 identity: dict[str, np.ndarray], path: str | None,
                 launch: Mapping[str, np.ndarray] | None = None,
                 truncation: Truncation | None = None) -> None:
        # Internal constructor: arrays already validated (read_kernels / from_columns).
        self._name = name
        self._num = {"duration_ms": duration_ms, "sm": sm, "l2": l2, "dram": dram}
        self._lines = lines
        self._identity = identity
        self._path = path
        given = dict(launch or {})
        self._launch = {k: given[k] if k in given else np.full(len(name), np.nan) for k in KERNEL_LAUNCH_COLUMNS}
        self._truncation = truncation
        for arr in (name, lines, *self._num.values(), *identity.values(), *self._launch.values()):
            arr.setflags(write=False)

    @classmethod
    def from_columns(cls, *, name: Sequence[str], duration_ms: Sequence[float] | np.ndarray,
                     sm: Sequence[float] | np.ndarray, l2: Sequence[float] | np.ndarray,
                     dram: Sequence[float] | np.ndarray,
                     identity: Mapping[str, Sequence[str]] | None = None,
                     lines: Sequence[int] | None = None, path: str | os.PathLike[str] | None = None,
                     launch: Mapping[str, Sequence[float] | np.ndarray] | None = None,
                     truncation: Truncation | None = None,
                     ) -> KernelTable:
        """Build a table from equal-length columns, checking every value.

        ``launch`` maps launch column names (``KERNEL_LAUNCH_COLUMNS``) to numbers, NaN where
        unknown; a known value must be finite and >= 0 (``theoretical_occupancy`` at most 1).
        """
        name_a = np.asarray(list(name), dtype=object).astype(str)
        n = len(name_a)
        try:
            num = {k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in
                   (("duration_ms", duration_ms), ("sm", sm), ("l2", l2), ("dram", dram))}
            lines_a = (np.zeros(n, dtype=np.int64) if lines is None
                       else np.asarray(lines, dtype=np.int64).reshape(-1))
        except (TypeError, ValueError) as exc:
            raise InterfpredError(f"kernel columns must be numeric: {exc}") from None
        ident = {k: np.asarray(list(v), dtype=object).astype(str) for k, v in (identity or {}).items()}
        unknown = [k for k in (launch or {}) if k not in KERNEL_LAUNCH_COLUMNS]
        if unknown:
            raise InterfpredError(f"unknown launch column(s) {', '.join(unknown)}; launch columns are "
                                  f"{', '.join(KERNEL_LAUNCH_COLUMNS)}")
        try:
            launch_a = {k: np.array(v, dtype=np.float64).reshape(-1) for k, v in (launch or {}).items()}
        except (TypeError, ValueError) as exc:
            raise InterfpredError(f"launch columns must be numeric: {exc}") from None
        for k, v in [*num.items(), ("lines", lines_a), *ident.items(), *launch_a.items()]:
            if len(v) != n:
                raise InterfpredError(f"column {k} has {len(v)} rows, name has {n}")
        d = num["duration_ms"]
        bad = np.flatnonzero(~np.isfinite(d) | (d <= 0))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"duration_ms {float(d[i])!r} of kernel {str(name_a[i])!r} must be positive and finite",
                             path=path, line=int(lines_a[i]) or i + 1)
        for r in ("sm", "l2", "dram"):
            v = num[r]
            bad = np.flatnonzero(~np.isfinite(v) | (v < 0) | (v > 1))
            if bad.size:
                i = int(bad[0])
                raise InputError(f"{r} {float(v[i])!r} of kernel {str(name_a[i])!r} must be a fraction of peak in [0, 1]",
                                 path=path, line=int(lines_a[i]) or i + 1)
        for k, v in launch_a.items():
            top = 1.0 if k == "theoretical_occupancy" else math.inf
            bad = np.flatnonzero(np.isinf(v) | (v < 0) | (v > top))
            if bad.size:
                i = int(bad[0])
                rule = "a fraction in [0, 1]" if k == "theoretical_occupancy" else "finite and >= 0"
                raise InputError(f"{k} {float(v[i])!r} of kernel {str(name_a[i])!r} must be {rule}, or NaN "
                                 "when unknown", path=path, line=int(lines_a[i]) or i + 1)
        return cls(name=name_a, lines=lines_a, identity=ident,
                   path=None if path is None else os.fspath(path), launch=launch_a, truncation=truncation,
                   **num)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self._name)

    def __repr__(self) -> str:
        total = float(self._num["duration_ms"].sum())
        src = f", path={self._path!r}" if self._path else ""
        return f"KernelTable({len(self)} kernels, {total:.6g} ms in all{src})"

    @property
    def name(self) -> np.ndarray:
        """Kernel names (read-only string array)."""
        return self._name

    @property
    def duration_ms(self) -> np.ndarray:
        """Kernel durations in milliseconds."""
        return self._num["duration_ms"]

    @property
    def sm(self) -> np.ndarray:
        """Compute (SM) throughput, fraction of peak."""
        return self._num["sm"]

    @property
    def l2(self) -> np.ndarray:
        """L2 cache throughput, fraction of peak."""
        return self._num["l2"]

    @property
    def dram(self) -> np.ndarray:
        """DRAM throughput, fraction of peak."""
        return self._num["dram"]

    @property
    def lines(self) -> np.ndarray:
        """Line of each launch's first row in the source file (0 when unknown)."""
        return self._lines

    @property
    def path(self) -> str | None:
        """The file the table was read from, if any."""
        return self._path

    @property
    def launch_columns(self) -> tuple[str, ...]:
        """Names of the launch columns known for at least one launch (the others are all NaN)."""
        return tuple(k for k, v in self._launch.items() if not np.isnan(v).all())

    @property
    def truncation(self) -> Truncation | None:
        """Evidence in ncu's log that the report was cut short, or None (complete, or cannot tell)."""
        return self._truncation

    @property
    def identity_columns(self) -> tuple[str, ...]:
        """Names of the identity columns present (process, stream, NVTX range, device ...)."""
        return tuple(self._identity)

    def column(self, name: str) -> np.ndarray:
        """One column by name: a numeric or launch column, ``name``, ``lines`` or an identity column."""
        fixed = {"name": self._name, "lines": self._lines, **self._num, **self._launch}
        if name in fixed:
            return fixed[name]
        if name in self._identity:
            return self._identity[name]
        raise KeyError(f"no column {name!r}; columns are {', '.join([*fixed, *self._identity])}")

    def take(self, index: np.ndarray | Sequence[int] | Sequence[bool]) -> KernelTable:
        """The rows at ``index`` (integer positions or a boolean mask), as a new table."""
        idx = np.asarray(index)
        if idx.dtype == bool and len(idx) != len(self):
            raise InterfpredError(f"mask has {len(idx)} entries, the table has {len(self)} rows")
        return KernelTable(name=self._name[idx], lines=self._lines[idx],
                           identity={k: v[idx] for k, v in self._identity.items()},
                           launch={k: v[idx] for k, v in self._launch.items()}, truncation=self._truncation,
                           path=self._path, **{k: v[idx] for k, v in self._num.items()})

    def filter(self, *, kernel: str | None = None, nvtx: str | None = None) -> KernelTable:
        """Launches whose name matches regex ``kernel`` and whose NVTX stack matches ``nvtx``.

        Both are searched, so a plain substring works, at bounded cost whatever the pattern
        (:func:`~interfpred._core.patterns.compile_pattern`: RE2 syntax with google-re2, else
        its safe subset of literals, ``.``, ``.*``, anchors and ``|``).
        """
        mask = np.ones(len(self), dtype=bool)
        if kernel is not None:
            rx = compile_pattern(kernel, "kernel_filter")
            mask &= np.fromiter((rx.search(s) for s in self._name), bool, len(self))
        if nvtx is not None:
            if "nvtx" not in self._identity:
                raise InterfpredError(
                    "nvtx filter given but the file has no NVTX column (profile with ncu --nvtx)")
            rx = compile_pattern(nvtx, "nvtx_filter")
            mask &= np.fromiter((rx.search(s) for s in self._identity["nvtx"]), bool, len(self))
        return self.take(mask)


# ---------------------------------------------------------------------------------- profile
def _weighted_mean(d: np.ndarray, v: np.ndarray) -> float:
    """Duration-weighted mean of ``v`` over the launches where it is known; NaN when none is."""
    known = ~np.isnan(v)
    if not known.any():
        return math.nan
    # math.fsum is exactly rounded, so the result does not depend on the order of the launches
    return math.fsum(d[known] * v[known]) / math.fsum(d[known])


def kernel_statistics(kernels: KernelTable, *, iterations: int = 1) -> dict[str, float]:
    """Per-batch statistics of a report's kernel launches that explain blocking under spatial sharing.

    With ``d`` the per-launch durations (ms) and ``iterations`` the batches the report holds:
    ``kernels`` launches per batch (n / iterations); ``kernel_sum_ms`` summed duration per batch;
    ``kernel_mean_ms``, ``kernel_p90_ms`` (``KERNEL_TAIL_PERCENTILE``, linear interpolation) and
    ``kernel_max_ms`` of ``d``; ``kernel_residual_ms`` = sum(d^2) / (2 sum(d)), the mean time left
    in the kernel running when a co-runner's kernel arrives at a random instant; and, over the
    launches whose launch columns are known (NaN when none is): ``fill_fraction``, the share of
    kernel time in launches with ``waves_per_sm`` >= ``KERNEL_FILL_WAVES`` (they fill every SM);
    ``waves_mean``, the duration-weighted mean of ``waves_per_sm``; ``occupancy_blocks``, the
    duration-weighted mean of each launch's resident-block limit per SM (the smallest of its
    ``occupancy_limit_*`` columns); ``kernel_occupancy``, the duration-weighted mean of each launch's
    theoretical occupancy (the share of an SM's warps its resident blocks take: how much room a
    co-runner's kernel finds beside it). Sums are exactly rounded: the result does not depend on the
    order of the launches.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1], launch={"waves_per_sm": [0.5, 2.0]})
    >>> s = kernel_statistics(t, iterations=2)
    >>> s["kernels"], s["kernel_sum_ms"], s["kernel_residual_ms"], s["fill_fraction"], s["waves_mean"]
    (1.0, 2.0, 1.25, 0.75, 1.625)
    >>> s["occupancy_blocks"], s["kernel_occupancy"]
    (nan, nan)
    """
    if not isinstance(kernels, KernelTable):
        raise InterfpredError(f"kernels must be a KernelTable, got {type(kernels).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations <= 0:
        raise InterfpredError(f"iterations {iterations!r} must be a positive integer")
    if len(kernels) == 0:
        raise InterfpredError("no kernel launches: the statistics need at least one")
    d = kernels.duration_ms
    n = len(d)
    total = math.fsum(d)
    waves = kernels.column("waves_per_sm")
    known = ~np.isnan(waves)
    fill = (math.fsum(d[known & (waves >= KERNEL_FILL_WAVES)]) / math.fsum(d[known])) if known.any() else math.nan
    limits = np.column_stack([kernels.column(c) for c in KERNEL_OCCUPANCY_LIMIT_COLUMNS])
    limit_known = ~np.isnan(limits).all(axis=1)
    block_limit = np.full(n, np.nan)
    block_limit[limit_known] = np.nanmin(limits[limit_known], axis=1)
    return {
        "kernels": n / int(iterations),
        "kernel_sum_ms": total / int(iterations),
        "kernel_mean_ms": total / n,
        "kernel_p90_ms": float(np.percentile(d, KERNEL_TAIL_PERCENTILE)),
        "kernel_max_ms": float(d.max()),
        "kernel_residual_ms": math.fsum(d * d) / (2.0 * total),
        "fill_fraction": fill,
        "waves_mean": _weighted_mean(d, waves),
        "occupancy_blocks": _weighted_mean(d, block_limit),
        "kernel_occupancy": _weighted_mean(d, kernels.column("theoretical_occupancy")),
    }


def _statistics_extra(stats: Mapping[str, float], truncated: bool) -> dict[str, str]:
    """The optional profile columns as text: repr-level floats, empty when unknown."""
    out = {k: "" if math.isnan(v) else repr(float(v)) for k, v in stats.items()}
    out["truncated"] = KERNEL_TRUNCATED if truncated else KERNEL_COMPLETE
    return {k: out[k] for k in KERNEL_PROFILE_COLUMNS}


def profile_from_kernels(kernels: KernelTable, *, gpu: str, model: str, batch_size: int,
                         iterations: int = 1, kernel_filter: str | None = None,
                         nvtx_filter: str | None = None, allow_truncated: bool = False) -> Profile:
    """Sum the kernel launches of one Nsight Compute report into a solo :class:`~interfpred.Profile`.

    ``solo_ms`` is the summed kernel time divided by ``iterations`` (the number of batches the
    profiled program executed); the throughputs are duration-weighted means over the launches.
    Every number is rounded to ``PROFILE_SIGNIFICANT_DIGITS`` significant digits (more than
    Nsight prints), so a percentage of 10.877 becomes 0.10877, not 0.10876999999999999.
    ``kernel_filter`` and ``nvtx_filter`` (regular expressions, searched) keep only matching
    launches, e.g. one batch size's NVTX range of a report that profiled several.

    The profile's ``extra`` holds the columns ``KERNEL_PROFILE_COLUMNS``: the
    :func:`kernel_statistics` of the selected launches (repr of the float, empty when unknown) and
    ``truncated``. A report whose ncu log says it was cut short (:attr:`KernelTable.truncation`)
    raises :class:`~interfpred.data.ingest.ncu_log.TruncatedReportError` naming the evidence,
    unless ``allow_truncated``: then it is kept with ``truncated`` = "1" and a
    :class:`~interfpred.data.ingest.ncu_log.TruncatedReportWarning`.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1])
    >>> p = profile_from_kernels(t, gpu="l4", model="m", batch_size=8, iterations=2)
    >>> p.solo_ms, p.sm, p.dram
    (2.0, 0.5, 0.2)
    >>> p.extra["kernels"], p.extra["kernel_max_ms"], p.extra["waves_mean"], p.extra["truncated"]
    ('1.0', '3.0', '', '0')
    """
    if not isinstance(kernels, KernelTable):
        raise InterfpredError(f"kernels must be a KernelTable, got {type(kernels).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations <= 0:
        raise InterfpredError(f"iterations {iterations!r} must be a positive integer")
    cut = kernels.truncation
    if cut is not None:
        what = (f"ncu stopped before the profiled program ended: {cut.evidence}; the report holds only "
                f"the {len(kernels)} kernel launches profiled until then, not whole batches")
        if not allow_truncated:
            raise TruncatedReportError(
                f"{what}; refused (keep it with allow_truncated=True, interfpred ingest --allow-truncated, "
                "marked truncated=1)", path=kernels.path, line=cut.line)
        where = f"{kernels.path} line {cut.line}: " if kernels.path else ""
        warnings.warn(f"{where}{what}; kept as asked, marked truncated=1", TruncatedReportWarning, stacklevel=2)
    selected = kernels
    if kernel_filter is not None or nvtx_filter is not None:
        selected = kernels.filter(kernel=kernel_filter, nvtx=nvtx_filter)
    where = f" in {kernels.path}" if kernels.path else ""
    if len(selected) == 0:
        if len(kernels) == 0:
            raise InterfpredError(f"no kernel launches{where}")
        raise InterfpredError(
            f"no kernel launch{where} matches kernel_filter={kernel_filter!r} nvtx_filter={nvtx_filter!r} "
            f"({len(kernels)} launches, e.g. {str(kernels.name[0])!r})")
    d = selected.duration_ms
    total = float(d.sum())
    # Nsight prints at most about 7 significant digits: keep PROFILE_SIGNIFICANT_DIGITS, dropping the
    # float noise of the unit conversion and the weighted mean (0.10876999999999999 -> 0.10877).
    digits = PROFILE_SIGNIFICANT_DIGITS
    values = {r: float(f"{float(np.clip(np.dot(d, selected.column(r)) / total, 0.0, 1.0)):.{digits}g}")
              for r in ("sm", "l2", "dram")}
    extra = _statistics_extra(kernel_statistics(selected, iterations=iterations), cut is not None)
    return Profile(gpu=gpu, model=model, batch_size=batch_size,
                   solo_ms=float(f"{total / int(iterations):.{digits}g}"), extra=extra, **values)
