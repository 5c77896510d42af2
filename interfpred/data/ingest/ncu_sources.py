"""Nsight Compute reports to solo profiles: one profile per report, duplicates across reports resolved.

A *report* is one Nsight Compute output file (a ``.ncu-rep`` or its CSV export) named by a
manifest entry. :func:`profiles_from_reports` reads each entry's report and sums its kernels into a
profile, remembering where it came from; :func:`unique_profiles` keeps one profile per
(gpu, model, batch_size, share) key: the same numbers from two reports collapse to one, different
numbers are refused naming both places. ``interfpred ingest`` is these two calls; see
docs/profiling.md.

Examples
--------
>>> from interfpred import Profile
>>> a = Profile(gpu="l4", model="m", batch_size=1, solo_ms=1.0, sm=0.1, l2=0.1, dram=0.1)
>>> kept = unique_profiles([(a, "report1.csv"), (a, "report2.csv")])
>>> [where for _, where in kept.values()]
['report1.csv']
>>> unique_profiles([(a, "report1.csv"), (a.model_copy(update={"solo_ms": 2.0}), "report2.csv")])
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: report2.csv: profile for (gpu='l4', model='m', batch_size=1) disagrees with the one from report1.csv: solo_ms 2 vs 1
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from interfpred.data.ingest.kernel_table import profile_from_kernels
from interfpred.data.ingest.ncu import read_kernels
from interfpred.data.ingest.ncu_log import TruncatedReportError
from interfpred.data.ingest.profile_files import ManifestEntry, ProfileKey, profile_key
from interfpred.data.profiles import Profile
from interfpred.errors import InterfpredError

__all__ = ["profiles_from_reports", "unique_profiles"]


def profiles_from_reports(entries: Iterable[ManifestEntry], *, share: float | None = None,
                       manifest: str | os.PathLike[str] | None = None,
                       allow_truncated: bool = False) -> list[tuple[Profile, str]]:
    """One profile per entry's Nsight Compute report, each with where it came from.

    ``where`` is ``"<manifest> line N"`` when ``manifest`` (the file the entries were read from)
    is given, else the report's file; an error about a report starts with it. ``share`` (MPS active
    thread percentage in (0, 100]) applies to every entry that does not give its own. A report
    ncu cut short is refused unless ``allow_truncated`` (see
    :func:`~interfpred.data.ingest.profile_from_kernels`).
    """
    if share is not None and not 0.0 < share <= 100.0:
        raise InterfpredError(f"share {share:g} must be an MPS active thread percentage in (0, 100]")
    out: list[tuple[Profile, str]] = []
    for e in entries:
        kernels = read_kernels(e.file)
        where = f"{os.fspath(manifest)} line {e.line}" if manifest is not None else e.file
        try:
            prof = profile_from_kernels(
                kernels, gpu=e.gpu, model=e.model, batch_size=e.batch_size, iterations=e.iterations,
                kernel_filter=e.kernel_filter, nvtx_filter=e.nvtx_filter, allow_truncated=allow_truncated)
        except InterfpredError as exc:
            if isinstance(exc, TruncatedReportError) and manifest is None:
                raise  # its message starts with the report's file and line already
            raise InterfpredError(f"{where}: {exc}") from None
        entry_share = share if e.share is None else e.share
        if entry_share is not None:
            prof = prof.model_copy(update={"share": float(entry_share)})
        out.append((prof, where))
    return out


def unique_profiles(sourced: Iterable[tuple[Profile, str]]) -> dict[ProfileKey, tuple[Profile, str]]:
    """One profile per key, in first-seen order, each with where it came from.

    A key seen again with an equal profile keeps the first; with a different one it is an
    :class:`~interfpred.InterfpredError` naming both places.
    """
    seen: dict[ProfileKey, tuple[Profile, str]] = {}
    for prof, where in sourced:
        key = profile_key(prof)
        if key in seen:
            other, other_where = seen[key]
            if other != prof:
                raise InterfpredError(
                    f"{where}: profile for (gpu={prof.gpu!r}, model={prof.model!r}, batch_size="
                    f"{prof.batch_size}) disagrees with the one from {other_where}: solo_ms "
                    f"{prof.solo_ms:.6g} vs {other.solo_ms:.6g}")
            continue
        seen[key] = (prof, where)
    return seen
