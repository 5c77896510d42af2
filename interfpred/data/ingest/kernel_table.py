"""Kernel launches as a table, and their sum as one solo profile.

A :class:`KernelTable` holds one row per kernel launch (name, duration in milliseconds, SM, L2
and DRAM throughputs as fractions of peak, plus the identity columns the source file had);
:func:`profile_from_kernels` sums the launches of one Nsight Compute report into a
:class:`~interfpred.Profile`. :func:`interfpred.data.ingest.read_kernels` builds tables from Nsight
Compute files; see docs/profiling.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from interfpred._core.patterns import compile_pattern
from interfpred.constants import PROFILE_SIGNIFICANT_DIGITS
from interfpred.data.profiles import Profile
from interfpred.errors import InputError, InterfpredError

__all__ = ["KernelTable", "profile_from_kernels"]


class KernelTable:
    """One row per kernel launch read from an Nsight Compute file, as numpy columns.

    ``name``, ``duration_ms`` (float64, > 0), ``sm``, ``l2``, ``dram`` (float64 fractions of peak in
    [0, 1]) and ``lines`` (the line of each launch's first row in the file, 0 when unknown) are
    always there; the identity columns the file had (``id``, ``process_id``, ``process_name``,
    ``host_name``, ``kernel_time``, ``context``, ``stream``, ``block_size``, ``grid_size``,
    ``device``, ``cc``, ``nvtx``, ``nvtx_range`` ...) are string arrays read by :meth:`column`.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1], identity={"stream": ["7", "7"]})
    >>> len(t), t.identity_columns, t.column("stream").tolist()
    (2, ('stream',), ['7', '7'])
    >>> t.filter(kernel="^b").name.tolist()
    ['b']
    """

    def __init__(self, *, name: np.ndarray, duration_ms: np.ndarray, sm: np.ndarray,
                 l2: np.ndarray, dram: np.ndarray, lines: np.ndarray,
                 identity: dict[str, np.ndarray], path: str | None) -> None:
        # Internal constructor: arrays already validated (read_kernels / from_columns).
        self._name = name
        self._num = {"duration_ms": duration_ms, "sm": sm, "l2": l2, "dram": dram}
        self._lines = lines
        self._identity = identity
        self._path = path
        for arr in (name, lines, *self._num.values(), *identity.values()):
            arr.setflags(write=False)

    @classmethod
    def from_columns(cls, *, name: Sequence[str], duration_ms: Sequence[float] | np.ndarray,
                     sm: Sequence[float] | np.ndarray, l2: Sequence[float] | np.ndarray,
                     dram: Sequence[float] | np.ndarray,
                     identity: Mapping[str, Sequence[str]] | None = None,
                     lines: Sequence[int] | None = None, path: str | os.PathLike[str] | None = None,
                     ) -> KernelTable:
        """Build a table from equal-length columns, checking every value."""
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
        for k, v in [*num.items(), ("lines", lines_a), *ident.items()]:
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
        return cls(name=name_a, lines=lines_a, identity=ident,
                   path=None if path is None else os.fspath(path), **num)

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
    def identity_columns(self) -> tuple[str, ...]:
        """Names of the identity columns present (process, stream, NVTX range, device ...)."""
        return tuple(self._identity)

    def column(self, name: str) -> np.ndarray:
        """One column by name: a numeric column, ``name``, ``lines`` or an identity column."""
        fixed = {"name": self._name, "lines": self._lines, **self._num}
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
def profile_from_kernels(kernels: KernelTable, *, gpu: str, model: str, batch_size: int,
                         iterations: int = 1, kernel_filter: str | None = None,
                         nvtx_filter: str | None = None) -> Profile:
    """Sum the kernel launches of one Nsight Compute report into a solo :class:`~interfpred.Profile`.

    ``solo_ms`` is the summed kernel time divided by ``iterations`` (the number of batches the
    profiled program executed); the throughputs are duration-weighted means over the launches.
    Every number is rounded to ``PROFILE_SIGNIFICANT_DIGITS`` significant digits (more than
    Nsight prints), so a percentage of 10.877 becomes 0.10877, not 0.10876999999999999.
    ``kernel_filter`` and ``nvtx_filter`` (regular expressions, searched) keep only matching
    launches, e.g. one batch size's NVTX range of a report that profiled several.

    Examples
    --------
    >>> t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 3.0], sm=[0.2, 0.6],
    ...                              l2=[0.1, 0.1], dram=[0.5, 0.1])
    >>> p = profile_from_kernels(t, gpu="l4", model="m", batch_size=8, iterations=2)
    >>> p.solo_ms, p.sm, p.dram
    (2.0, 0.5, 0.2)
    """
    if not isinstance(kernels, KernelTable):
        raise InterfpredError(f"kernels must be a KernelTable, got {type(kernels).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations <= 0:
        raise InterfpredError(f"iterations {iterations!r} must be a positive integer")
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
    return Profile(gpu=gpu, model=model, batch_size=batch_size,
                   solo_ms=float(f"{total / int(iterations):.{digits}g}"), **values)
