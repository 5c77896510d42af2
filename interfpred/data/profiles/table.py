"""The profile table: many solo profiles as columns, with (model, batch size, share) lookup.

See :mod:`interfpred.data.profiles` for the overview and docs/data.md for the CSV layout.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from interfpred._core.atomic import atomic_open, read_text
from interfpred.constants import (
    DEFAULT_PROCESSES,
    DEFAULT_SHARE,
    LATENCY_MIN_MS,
    MAX_BATCH_SIZE,
    PROFILE_COLUMNS,
    PROFILE_DUPLICATE_RTOL,
    RESOURCES,
)
from interfpred.data.profiles.csv_format import read_profile_columns, write_profile_csv
from interfpred.data.profiles.interpolate import NUMERIC, interpolate_group
from interfpred.data.profiles.record import Profile
from interfpred.data.sharing import sharing_key_problem
from interfpred.errors import InputError, InterfpredError

__all__ = ["ProfileTable"]


class ProfileTable:
    """Columnar table of profiles with fast (model, batch size) lookup.

    Build it with :meth:`from_profiles`, :meth:`from_csv` or :meth:`from_columns`.
    Rows are kept sorted by (gpu, model, mechanism, partition, processes, share, batch_size);
    identical duplicate rows collapse to one, duplicates that disagree are an error.

    Optional text columns ``mechanism`` (``time_slicing``, ``mps``, ``mig``), ``partition`` (MIG
    GPCs such as ``3`` or a profile name such as ``3g.40gb``) and ``processes`` (a positive
    integer) are part of a profile's key beside ``share``: a lookup names them (empty, the
    default, means unspecified, today's behaviour), matches ``mechanism`` and ``partition``
    exactly and interpolates linearly in ``processes`` between the two profiled counts around it.

    Lookups between two profiled batch sizes interpolate every numeric column linearly
    between the two neighbours; outside the profiled range they raise unless
    ``extrapolate=True``, which extends the line through the two nearest profiled sizes
    (throughputs clipped to [0, 1], latency kept positive).

    Examples
    --------
    >>> t = ProfileTable.from_columns(gpu=["l4", "l4"], model=["bert", "bert"], batch_size=[1, 4],
    ...                               solo_ms=[2.0, 5.0], sm=[0.2, 0.5], l2=[0.1, 0.2], dram=[0.3, 0.6])
    >>> len(t), t.models, t.batch_sizes("bert")
    (2, ('bert',), (1, 4))
    >>> t.lookup("bert", 8)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: batch size 8 of model 'bert' on gpu 'l4' is outside the profiled range 1..4; pass extrapolate=True to extend it linearly
    >>> t.lookup("bert", 7, extrapolate=True).solo_ms
    8.0
    """

    def __init__(
        self,
        *,
        gpu: np.ndarray,
        model: np.ndarray,
        batch_size: np.ndarray,
        solo_ms: np.ndarray,
        sm: np.ndarray,
        l2: np.ndarray,
        dram: np.ndarray,
        share: np.ndarray | None = None,
        extra: dict[str, np.ndarray] | None = None,
    ) -> None:
        # Internal constructor: arrays already validated and sorted by the from_* builders.
        self._gpu = gpu
        self._model = model
        self._batch = batch_size
        self._share = np.full(len(batch_size), DEFAULT_SHARE) if share is None else share
        self._num = {"solo_ms": solo_ms, "sm": sm, "l2": l2, "dram": dram}
        self._extra = dict(extra or {})
        for arr in (gpu, model, batch_size, self._share, solo_ms, sm, l2, dram, *self._extra.values()):
            arr.setflags(write=False)
        # (gpu, model) -> (start, stop) slice into the sorted rows.
        self._groups: dict[tuple[str, str], tuple[int, int]] = {}
        n = len(batch_size)
        start = 0
        for i in range(1, n + 1):
            if i == n or gpu[i] != gpu[start] or model[i] != model[start]:
                self._groups[(str(gpu[start]), str(model[start]))] = (start, i)
                start = i
        self._gpus = tuple(sorted({g for g, _ in self._groups}))
        # (gpu, model, mechanism, partition) -> (start, stop): rows sorted by processes, share, batch inside.
        self._mech = self._extra.get("mechanism", np.full(n, "", dtype=str))
        self._part = self._extra.get("partition", np.full(n, "", dtype=str))
        procs = self._extra.get("processes")
        self._procs = (np.full(n, DEFAULT_PROCESSES, dtype=np.int64) if procs is None else
                       np.array([int(v) if v else DEFAULT_PROCESSES for v in procs.tolist()], dtype=np.int64))
        self._keys: dict[tuple[str, str, str, str], tuple[int, int]] = {}
        start = 0
        for i in range(1, n + 1):
            if i == n or (gpu[i], model[i], self._mech[i], self._part[i]) != (
                    gpu[start], model[start], self._mech[start], self._part[start]):
                self._keys[(str(gpu[start]), str(model[start]), str(self._mech[start]), str(self._part[start]))] = \
                    (start, i)
                start = i

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_columns(
        cls,
        *,
        gpu: Sequence[str],
        model: Sequence[str],
        batch_size: Sequence[int],
        solo_ms: Sequence[float],
        sm: Sequence[float | None] | None = None,
        l2: Sequence[float | None] | None = None,
        dram: Sequence[float | None] | None = None,
        share: Sequence[float] | None = None,
        extra: dict[str, Sequence[str]] | None = None,
        path: str | os.PathLike[str] | None = None,
        lines: Sequence[int] | None = None,
    ) -> ProfileTable:
        """Build a table from equal-length columns, validating every row.

        A counter (``sm``, ``l2``, ``dram``) left out, or None/NaN in a row, is missing: it is
        kept as NaN, never as zero. ``share`` (MPS active thread percentage, (0, 100]) defaults
        to 100. ``path`` and ``lines`` only serve error messages (a CSV reader passes them).

        Examples
        --------
        >>> t = ProfileTable.from_columns(gpu=["v100"] * 2, model=["m"] * 2, batch_size=[8, 8],
        ...                               solo_ms=[10.0, 6.0], share=[50, 100])
        >>> t.lookup("m", 8, share=75).solo_ms, t.lookup("m", 8).sm
        (8.0, None)
        """
        gpu_a = np.asarray(gpu, dtype=object).astype(str)
        model_a = np.asarray(model, dtype=object).astype(str)
        n = len(gpu_a)
        sm_a, l2_a, dram_a = (np.full(n, np.nan) if v is None else [np.nan if x is None else x for x in v]
                              for v in (sm, l2, dram))
        share_a = np.full(n, DEFAULT_SHARE) if share is None else share
        lines = list(lines) if lines is not None else [i + 1 for i in range(n)]
        cols = {"model": model_a}
        try:
            batch_a = np.asarray(batch_size, dtype=np.float64)
            nums = {k: np.asarray(v, dtype=np.float64) for k, v in
                    (("solo_ms", solo_ms), ("sm", sm_a), ("l2", l2_a), ("dram", dram_a), ("share", share_a))}
        except (TypeError, ValueError) as exc:
            raise InterfpredError(f"profile columns must be numeric: {exc}") from None
        extra_a = {k: np.asarray(v, dtype=object).astype(str) for k, v in (extra or {}).items()}
        for name, arr in [("batch_size", batch_a), *nums.items(), *extra_a.items()] + list(cols.items()):
            if len(arr) != n:
                raise InterfpredError(f"column {name} has {len(arr)} rows, gpu has {n}")
        for name in extra_a:
            if name in PROFILE_COLUMNS:
                raise InterfpredError(f"extra column {name!r} clashes with a profile column")
        problem = sharing_key_problem(extra_a)
        if problem is not None:
            raise InputError(problem[1], path=path, line=lines[problem[0]])
        mech_a = extra_a.get("mechanism", np.full(n, "", dtype=str))
        part_a = extra_a.get("partition", np.full(n, "", dtype=str))
        procs_a = (np.array([int(v) if v else DEFAULT_PROCESSES for v in extra_a["processes"].tolist()])
                   if "processes" in extra_a else np.full(n, DEFAULT_PROCESSES))
        # Row validation, vectorised; the first bad row is reported.
        checks = [
            ("gpu", np.char.str_len(gpu_a) == 0, "must not be empty"),
            ("model", np.char.str_len(model_a) == 0, "must not be empty"),
            ("batch_size", ~np.isfinite(batch_a) | (batch_a <= 0) | (batch_a != np.round(batch_a)),
             "must be a positive integer"),
            ("batch_size", np.isfinite(batch_a) & (batch_a > MAX_BATCH_SIZE),
             f"is larger than MAX_BATCH_SIZE={MAX_BATCH_SIZE}"),
            ("solo_ms", ~np.isfinite(nums["solo_ms"]) | ~(nums["solo_ms"] >= LATENCY_MIN_MS),
             f"must be a positive finite latency in ms, at least LATENCY_MIN_MS={LATENCY_MIN_MS:g}"),
        ]
        for r in RESOURCES:
            v = nums[r]
            checks.append((r, np.isinf(v) | (v < 0) | (v > 1),
                           "must be a fraction of peak in [0, 1] (divide Nsight's % by 100), or empty if not measured"))
        checks.append(("share", ~np.isfinite(nums["share"]) | (nums["share"] <= 0) | (nums["share"] > 100),
                       "must be an MPS active thread percentage in (0, 100]"))
        first_bad = None
        for name, bad, expected in checks:
            idx = np.flatnonzero(bad)
            if idx.size and (first_bad is None or idx[0] < first_bad[0]):
                col = {"gpu": gpu_a, "model": model_a, "batch_size": batch_a, **nums}[name]
                first_bad = (int(idx[0]), f"{name} {col[idx[0]].item()!r} {expected}")
        if first_bad is not None:
            raise InputError(first_bad[1], path=path, line=lines[first_bad[0]])
        batch_i = batch_a.astype(np.int64)
        order = np.lexsort((batch_i, nums["share"], procs_a, part_a, mech_a, model_a, gpu_a))
        gpu_a, model_a, batch_i = gpu_a[order], model_a[order], batch_i[order]
        mech_a, part_a, procs_a = mech_a[order], part_a[order], procs_a[order]
        nums = {k: v[order] for k, v in nums.items()}
        extra_a = {k: v[order] for k, v in extra_a.items()}
        lines_sorted = [lines[i] for i in order]
        # Duplicates: identical rows collapse, disagreeing rows are an error.
        same = np.zeros(n, dtype=bool)
        if n > 1:
            same[1:] = ((gpu_a[1:] == gpu_a[:-1]) & (model_a[1:] == model_a[:-1]) & (batch_i[1:] == batch_i[:-1])
                        & (nums["share"][1:] == nums["share"][:-1]) & (mech_a[1:] == mech_a[:-1])
                        & (part_a[1:] == part_a[:-1]) & (procs_a[1:] == procs_a[:-1]))
        for i in np.flatnonzero(same):
            for k, v in nums.items():
                both_missing = math.isnan(v[i]) and math.isnan(v[i - 1])
                if not both_missing and not math.isclose(v[i], v[i - 1], rel_tol=PROFILE_DUPLICATE_RTOL, abs_tol=0.0):
                    at = "" if nums["share"][i] == DEFAULT_SHARE else f", share={float(nums['share'][i]):g}"
                    at += _key_words(str(mech_a[i]), str(part_a[i]), int(procs_a[i]), sep=", ")
                    raise InputError(
                        f"duplicate profile for (gpu={str(gpu_a[i])!r}, model={str(model_a[i])!r}, "
                        f"batch_size={batch_i[i]}{at}) disagrees with line {lines_sorted[i - 1]}: "
                        f"{k} {float(v[i])!r} != {float(v[i - 1])!r}",
                        path=path, line=lines_sorted[i])
        keep = ~same
        return cls(
            gpu=gpu_a[keep], model=model_a[keep], batch_size=batch_i[keep],
            **{k: np.ascontiguousarray(v[keep]) for k, v in nums.items()},
            extra={k: v[keep] for k, v in extra_a.items()},
        )

    @classmethod
    def from_profiles(cls, profiles: Iterable[Profile]) -> ProfileTable:
        """Build a table from :class:`Profile` records (extra fields become columns)."""
        profiles = list(profiles)
        extra_names: list[str] = []
        for p in profiles:
            for k in p.extra:
                if k not in extra_names:
                    extra_names.append(k)
        return cls.from_columns(
            gpu=[p.gpu for p in profiles], model=[p.model for p in profiles],
            batch_size=[p.batch_size for p in profiles], solo_ms=[p.solo_ms for p in profiles],
            sm=[p.sm for p in profiles], l2=[p.l2 for p in profiles], dram=[p.dram for p in profiles],
            share=[p.share for p in profiles], extra={k: [p.extra.get(k, "") for p in profiles] for k in extra_names},
        )

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> ProfileTable:
        """Read a tidy profile CSV (``gpu,model,batch_size,solo_ms,sm,l2,dram`` plus any extras).

        ``sm``, ``l2`` and ``dram`` may be absent or empty in a row (not measured: NaN, never
        zero); an optional ``share`` column gives the MPS active thread percentage (default 100).
        Errors name the file and the line of the offending value.
        """
        table = cls.from_csv_text(read_text(path), path=path)
        if len(table) == 0:
            raise InputError("has a header but no profile rows", path=path)
        return table

    @classmethod
    def from_csv_text(cls, text: str, *, path: str | os.PathLike[str] | None = None) -> ProfileTable:
        """Parse the text of a profile CSV (see :meth:`from_csv`); ``path`` only serves error messages.

        Examples
        --------
        >>> t = ProfileTable.from_csv_text("gpu,model,batch_size,solo_ms\\nl4,m,2,1.5\\n")
        >>> len(t), t.lookup("m", 2).sm
        (1, None)
        """
        return cls.from_columns(**read_profile_columns(text, path=path))

    # ------------------------------------------------------------------ output
    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the table as a tidy CSV, atomically (temporary file, then rename)."""
        with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
            write_profile_csv(self, fh)

    def to_csv_text(self) -> str:
        """The CSV text :meth:`to_csv` would write."""
        buf = io.StringIO()
        write_profile_csv(self, buf)
        return buf.getvalue()

    def merge(self, other: ProfileTable) -> ProfileTable:
        """Rows of both tables; a key present in both with different numbers is an error."""
        extra_names = list(dict.fromkeys([*self.extra_columns, *other.extra_columns]))

        def col(t: ProfileTable, k: str) -> list[Any]:  # an extra column one table lacks is empty there
            return [""] * len(t) if k in extra_names and k not in t.extra_columns else list(t.column(k))

        return ProfileTable.from_columns(
            gpu=col(self, "gpu") + col(other, "gpu"), model=col(self, "model") + col(other, "model"),
            batch_size=col(self, "batch_size") + col(other, "batch_size"),
            share=col(self, "share") + col(other, "share"),
            **cast(dict[str, Any], {k: col(self, k) + col(other, k) for k in NUMERIC}),
            extra={k: col(self, k) + col(other, k) for k in extra_names},
        )

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self._batch)

    def __iter__(self) -> Iterator[Profile]:
        for i in range(len(self)):
            yield self._row(i)

    def __repr__(self) -> str:
        return f"ProfileTable({len(self)} profiles, gpus={list(self._gpus)}, models={list(self.models)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProfileTable):
            return NotImplemented
        return self.to_csv_text() == other.to_csv_text()

    @property
    def gpus(self) -> tuple[str, ...]:
        """The GPUs in the table, sorted."""
        return self._gpus

    @property
    def models(self) -> tuple[str, ...]:
        """The models in the table, sorted."""
        return tuple(sorted({m for _, m in self._groups}))

    @property
    def extra_columns(self) -> tuple[str, ...]:
        """Names of the columns kept beyond the profile columns."""
        return tuple(self._extra)

    def column(self, name: str) -> np.ndarray:
        """One column as a read-only array (profile columns or extra columns)."""
        fixed = {"gpu": self._gpu, "model": self._model, "batch_size": self._batch, "share": self._share, **self._num}
        if name in fixed:
            return fixed[name]
        if name in self._extra:
            return self._extra[name]
        raise KeyError(f"no column {name!r}; columns are {', '.join([*fixed, *self._extra])}")

    def batch_sizes(self, model: str, gpu: str | None = None) -> tuple[int, ...]:
        """The profiled batch sizes of ``model`` on ``gpu``."""
        lo, hi = self._group(model, gpu)
        return tuple(sorted({int(b) for b in self._batch[lo:hi]}))

    def shares(self, model: str, gpu: str | None = None) -> tuple[float, ...]:
        """The profiled MPS shares of ``model`` on ``gpu``, ascending."""
        lo, hi = self._group(model, gpu)
        return tuple(sorted({float(v) for v in self._share[lo:hi]}))

    def _row(self, i: int) -> Profile:
        return Profile(
            gpu=str(self._gpu[i]), model=str(self._model[i]), batch_size=int(self._batch[i]),
            **{k: _none_if_nan(self._num[k][i]) for k in NUMERIC}, share=float(self._share[i]),
            extra={k: str(v[i]) for k, v in self._extra.items()},
        )

    def _group(self, model: str, gpu: str | None) -> tuple[int, int]:
        if gpu is None:
            if len(self._gpus) > 1:
                raise InterfpredError(
                    f"the table holds profiles of several GPUs ({', '.join(self._gpus)}); pass gpu=")
            if not self._gpus:
                raise InterfpredError("the profile table is empty")
            gpu = self._gpus[0]
        key = (gpu, model)
        if key not in self._groups:
            known = sorted(m for g, m in self._groups if g == gpu)
            if gpu not in self._gpus:
                raise InterfpredError(f"no profiles for gpu {gpu!r}; known gpus: {', '.join(self._gpus)}")
            raise InterfpredError(
                f"no profile for model {model!r} on gpu {gpu!r}; known models: {', '.join(known)}")
        return self._groups[key]

    def keys(self, model: str, gpu: str | None = None) -> tuple[tuple[str, str, int], ...]:
        """The profiled (mechanism, partition, processes) of ``model`` on ``gpu`` (empty text: unspecified).

        Examples
        --------
        >>> t = ProfileTable.from_columns(gpu=["a100"] * 3, model=["m"] * 3, batch_size=[8] * 3,
        ...     solo_ms=[4.0, 6.0, 10.0], extra={"mechanism": ["", "mig", "mig"], "partition": ["", "3", "3"],
        ...                                      "processes": ["", "1", "3"]})
        >>> t.keys("m")
        (('', '', 1), ('mig', '3', 1), ('mig', '3', 3))
        >>> t.lookup("m", 8).solo_ms, t.lookup("m", 8, mechanism="mig", partition="3", processes=2).solo_ms
        (4.0, 8.0)
        """
        lo, hi = self._group(model, gpu)
        return tuple(sorted({(str(self._mech[i]), str(self._part[i]), int(self._procs[i])) for i in range(lo, hi)}))

    def _subgroup(self, model: str, gpu: str | None, mechanism: str, partition: str) -> tuple[int, int]:
        lo, hi = self._group(model, gpu)
        key = (str(self._gpu[lo]), model, mechanism, partition)
        if key not in self._keys:
            have = sorted({_key_words(str(self._mech[i]), str(self._part[i]), None) or "unspecified"
                           for i in range(lo, hi)})
            raise InterfpredError(
                f"no profile for model {model!r} on gpu {key[0]!r} with{_key_words(mechanism, partition, None) or ' no mechanism or partition'}; "
                f"profiled: {'; '.join(h.strip() for h in have)}")
        return self._keys[key]

    def _interp(self, model: str, batch: np.ndarray, gpu: str | None, extrapolate: bool,
                share: np.ndarray | None = None, mechanism: str = "", partition: str = "",
                processes: float = DEFAULT_PROCESSES) -> dict[str, np.ndarray]:
        lo, hi = self._subgroup(model, gpu, mechanism, partition)
        b = np.asarray(batch, dtype=np.float64)
        if not np.all(np.isfinite(b)) or np.any(b <= 0):
            bad = b[~np.isfinite(b) | (b <= 0)][0]
            raise InterfpredError(f"batch size {bad:g} of model {model!r} must be a positive number")
        s = np.full(b.shape, DEFAULT_SHARE) if share is None else np.asarray(share, dtype=np.float64)
        if s.shape != b.shape or not np.all(np.isfinite(s)) or np.any((s <= 0) | (s > 100)):
            bad_s = s[~np.isfinite(s) | (s <= 0) | (s > 100)] if s.shape == b.shape else s
            raise InterfpredError(f"share {np.ravel(bad_s)[:1].tolist()} of model {model!r} must be an MPS "
                                  "active thread percentage in (0, 100], one per batch size")
        if not (math.isfinite(processes) and processes >= 1):
            raise InterfpredError(f"processes {processes!r} of model {model!r} must be a number >= 1")
        levels = np.unique(self._procs[lo:hi])
        below, above = levels[levels <= processes], levels[levels >= processes]
        if not below.size or not above.size:
            raise InterfpredError(f"processes {processes:g} of model {model!r} is outside the profiled process "
                                  f"counts {levels[0]}..{levels[-1]}{_key_words(mechanism, partition, None)}")

        def at(level: int) -> dict[str, np.ndarray]:
            rows = np.flatnonzero(self._procs[lo:hi] == level) + lo
            a, z = int(rows[0]), int(rows[-1]) + 1
            return interpolate_group(self._batch[a:z], self._share[a:z], {k: v[a:z] for k, v in self._num.items()},
                                     b, s, extrapolate=extrapolate, model=model, gpu=str(self._gpu[lo]))

        p0, p1 = int(below[-1]), int(above[0])
        if p0 == p1:
            return at(p0)
        w = (processes - p0) / (p1 - p0)
        v0, v1 = at(p0), at(p1)
        return {k: (1 - w) * v0[k] + w * v1[k] for k in v0}

    def lookup(self, model: str, batch_size: float, *, gpu: str | None = None, share: float = DEFAULT_SHARE,
               extrapolate: bool = False, mechanism: str = "", partition: str = "",
               processes: float = DEFAULT_PROCESSES) -> Profile:
        """The profile of ``model`` at ``batch_size`` and MPS ``share``, interpolated between profiled points.

        ``gpu`` may be omitted when the table holds one GPU. Interpolation is linear in batch
        size at each profiled share, then linear in share between the two around it, then
        linear in ``processes`` between the two profiled counts around it; ``mechanism`` and
        ``partition`` select rows exactly (empty: rows that name neither, today's behaviour).
        """
        lo, _ = self._group(model, gpu)
        exact = self._exact_row(model, batch_size, gpu, share, mechanism, partition, processes)
        if exact is not None:
            return self._row(exact)
        vals = self._interp(model, np.array([batch_size]), gpu, extrapolate, np.array([share], dtype=np.float64),
                            mechanism, partition, processes)
        keys = {k: v for k, v in (("mechanism", mechanism), ("partition", partition),
                                  ("processes", "" if processes == DEFAULT_PROCESSES else f"{processes:g}")) if v}
        return Profile(
            gpu=str(self._gpu[lo]), model=model, batch_size=max(1, int(round(float(batch_size)))),
            **{k: _none_if_nan(vals[k][0]) for k in NUMERIC}, share=float(share), extra=keys,
        )

    def _exact_row(self, model: str, batch_size: float, gpu: str | None, share: float = DEFAULT_SHARE,
                   mechanism: str = "", partition: str = "", processes: float = DEFAULT_PROCESSES) -> int | None:
        lo, hi = self._subgroup(model, gpu, mechanism, partition)
        hit = np.flatnonzero((self._batch[lo:hi] == batch_size) & (self._share[lo:hi] == share)
                             & (self._procs[lo:hi] == processes))
        return lo + int(hit[0]) if hit.size else None

    def lookup_arrays(
        self,
        models: Sequence[str] | np.ndarray,
        batch_sizes: Sequence[float] | np.ndarray,
        *,
        gpus: Sequence[str] | np.ndarray | str | None = None,
        shares: Sequence[float] | np.ndarray | None = None,
        extrapolate: bool = False,
        mechanism: str = "",
        partition: str = "",
        processes: float = DEFAULT_PROCESSES,
    ) -> dict[str, np.ndarray]:
        """Vectorised lookup: ``{"solo_ms", "sm", "l2", "dram"}`` arrays aligned with the inputs.

        ``shares`` (MPS percentages, default 100 each) select and interpolate between profiled
        shares. A counter that was not measured comes back as NaN. Work is done once per distinct
        (gpu, model) pair, so it is fast for long traces.

        Examples
        --------
        >>> t = ProfileTable.from_columns(gpu=["l4"] * 2, model=["m"] * 2, batch_size=[1, 3],
        ...                               solo_ms=[1.0, 3.0], sm=[0.1, 0.3], l2=[0.0, 0.2], dram=[0.5, 0.5])
        >>> t.lookup_arrays(["m", "m", "m"], [1, 2, 3])["solo_ms"]
        array([1., 2., 3.])
        """
        models_a = np.asarray(models).astype(str)
        batch_a = np.asarray(batch_sizes, dtype=np.float64)
        if models_a.shape != batch_a.shape or models_a.ndim != 1:
            raise InterfpredError(
                f"models and batch_sizes must be 1-d and of one length, got {models_a.shape} and {batch_a.shape}")
        share_a = None if shares is None else np.asarray(shares, dtype=np.float64)
        if share_a is not None and share_a.shape != batch_a.shape:
            raise InterfpredError(f"shares has shape {share_a.shape}, batch_sizes {batch_a.shape}")
        n = len(models_a)
        if gpus is None or isinstance(gpus, str):
            gpus_a = None
            keys = models_a
        else:
            gpus_a = np.asarray(gpus).astype(str)
            if gpus_a.shape != models_a.shape:
                raise InterfpredError(f"gpus has shape {gpus_a.shape}, models {models_a.shape}")
            keys = np.char.add(np.char.add(gpus_a, "\x1f"), models_a)
        out = {k: np.empty(n, dtype=np.float64) for k in NUMERIC}
        uniq, inverse = np.unique(keys, return_inverse=True)
        for u, key in enumerate(uniq):
            idx = np.flatnonzero(inverse.reshape(-1) == u)
            if gpus_a is None:
                gpu, model = (gpus if isinstance(gpus, str) else None), str(key)
            else:
                gpu, model = str(key).split("\x1f", 1)
            vals = self._interp(model, batch_a[idx], gpu, extrapolate, None if share_a is None else share_a[idx],
                                mechanism, partition, processes)
            for k in NUMERIC:
                out[k][idx] = vals[k]
        return out

def _key_words(mechanism: str, partition: str, processes: int | None, sep: str = " ") -> str:
    """``mechanism 'mig', partition '3'`` style words for the non-empty keys (empty when none is set)."""
    words = [f"{k} {v!r}" for k, v in (("mechanism", mechanism), ("partition", partition)) if v]
    if processes is not None and processes != DEFAULT_PROCESSES:
        words.append(f"processes {processes}")
    return (sep + ", ".join(words)) if words else ""


def _none_if_nan(v: float) -> float | None:
    return None if math.isnan(float(v)) else float(v)
