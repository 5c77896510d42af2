"""Tidy CSV helpers for ingestion: report manifests in, profile tables out.

A manifest lists Nsight Compute reports (``.ncu-rep`` files or their CSV exports), one per
row, with the columns ``file,gpu,model,batch_size[,iterations][,kernel_filter][,nvtx_filter]``;
file paths are relative to the manifest's folder and must stay inside it, and must name regular files.

Examples
--------
>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "reports.csv").write_text("file,gpu,model,batch_size,iterations\\nresnet50_b8.csv,l4,resnet50,8,10\\n")
>>> _ = (folder / "resnet50_b8.csv").write_text("")
>>> [entry] = read_manifest(folder / "reports.csv")
>>> entry.file == str(folder / "resnet50_b8.csv"), entry.model, entry.batch_size, entry.iterations
(True, 'resnet50', 8, 10)
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from interfpred._core.atomic import csv_rows, read_text
from interfpred._core.patterns import compile_pattern
from interfpred.constants import DEFAULT_SHARE, MAX_BATCH_SIZE, NCU_EXAMPLE_FILE, PROFILE_DUPLICATE_RTOL
from interfpred.data.profiles import Profile, ProfileTable
from interfpred.errors import InputError, InterfpredError

__all__ = ["ManifestEntry", "ProfileConflict", "ProfileKey", "profile_key", "read_manifest", "write_profiles", "example_path"]

_REQUIRED = ("file", "gpu", "model", "batch_size")
_OPTIONAL = ("iterations", "kernel_filter", "nvtx_filter", "share")


@dataclass(frozen=True)
class ManifestEntry:
    """One report of a manifest: which file, and what it measured.

    Examples
    --------
    >>> ManifestEntry(file="report.csv", gpu="l4", model="vgg19", batch_size=4).iterations
    1
    """

    file: str
    gpu: str
    model: str
    batch_size: int
    iterations: int = 1
    kernel_filter: str | None = None
    nvtx_filter: str | None = None
    line: int = 0
    #: MPS active thread percentage the profiled program ran under, in (0, 100]; None: not given (100).
    share: float | None = None


def _share(text: str, path: str, line: int) -> float | None:
    """An optional MPS share cell: empty means not given; else a percentage in (0, 100]."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"share {text!r} is not a number", path=path, line=line) from None
    if not 0.0 < value <= 100.0:
        raise InputError(f"share {text!r} must be an MPS active thread percentage in (0, 100]", path=path, line=line)
    return value


def _positive_int(text: str, name: str, path: str, line: int) -> int:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{name} {text!r} is not a number", path=path, line=line) from None
    if not value.is_integer() or value <= 0:
        raise InputError(f"{name} {text!r} must be a positive integer", path=path, line=line)
    if value > MAX_BATCH_SIZE:
        raise InputError(f"{name} {text!r} is larger than MAX_BATCH_SIZE={MAX_BATCH_SIZE}", path=path, line=line)
    return int(value)


def _entry_path(file: str, base: Path, path: str, line: int) -> str:
    """A manifest entry's file, resolved against the manifest's folder and confined to it."""
    if os.path.isabs(file) or file.startswith("~"):
        raise InputError(f"file {file!r} is an absolute path; manifest entries are relative to the manifest's "
                         "folder", path=path, line=line)
    full = os.path.normpath(os.path.join(base, file))
    if os.path.commonpath([full, str(base)]) != str(base):
        raise InputError(f"file {file!r} leaves the manifest's folder {str(base)!r}; entries must lie inside it",
                         path=path, line=line)
    # Through every symbolic link (of the entry or of a folder on its way): the file actually
    # opened must lie inside the manifest's folder too.
    real = os.path.realpath(full)
    if os.path.commonpath([real, str(base)]) != str(base):
        raise InputError(f"file {file!r} is a symbolic link to {real!r}, outside the manifest's folder "
                         f"{str(base)!r}; entries must lie inside it", path=path, line=line)
    try:
        st = os.stat(full)
    except OSError as exc:
        raise InputError(f"file {file!r}: {exc.strerror}", path=path, line=line) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, socket or device)"
        raise InputError(f"file {file!r} is {kind}", path=path, line=line)
    return full


def read_manifest(path: str | os.PathLike[str]) -> list[ManifestEntry]:
    """Read a report manifest (``file,gpu,model,batch_size[,iterations][,share]``), checking every row.

    Each entry's ``file`` is resolved against the manifest's folder and must lie inside it
    (no absolute paths, no ``..`` out of the folder) and be a regular file (a FIFO would block
    the reader for ever); any other entry is refused naming the manifest's line.
    """
    path_s = os.fspath(path)
    base = Path(path_s).resolve().parent
    text = read_text(path_s, "a manifest CSV")
    reader = csv_rows(text, path=path_s)
    header: list[str] = []
    for header in reader:
        if any(h.strip() for h in header):
            break
    header = [h.strip() for h in header]
    if not header:
        raise InputError("empty manifest: expected a header " + ",".join(_REQUIRED), path=path_s)
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputError(f"duplicate column(s) {', '.join(dupes)}", path=path_s, line=reader.line_num)
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise InputError(f"manifest lacks column(s) {', '.join(missing)}; header is {','.join(header)}",
                         path=path_s, line=reader.line_num)
    unknown = [c for c in header if c not in _REQUIRED + _OPTIONAL]
    if unknown:
        raise InputError(f"unknown manifest column(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(_REQUIRED + _OPTIONAL)}", path=path_s, line=reader.line_num)
    entries = []
    for row in reader:
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"has {len(row)} fields, the header has {len(header)}", path=path_s, line=line)
        cells = {h: c.strip() for h, c in zip(header, row)}
        for name in ("file", "gpu", "model"):
            if not cells[name]:
                raise InputError(f"{name} is empty", path=path_s, line=line)
        batch_size = _positive_int(cells["batch_size"], "batch_size", path_s, line)
        iterations = _positive_int(cells.get("iterations") or "1", "iterations", path_s, line)
        file = _entry_path(cells["file"], base, path_s, line)
        for name in ("kernel_filter", "nvtx_filter"):
            if cells.get(name):
                try:
                    compile_pattern(cells[name], name)  # refused here, naming the line, not at match time
                except InterfpredError as exc:
                    raise InputError(str(exc), path=path_s, line=line) from None
        entries.append(ManifestEntry(
            file=file, gpu=cells["gpu"], model=cells["model"], batch_size=batch_size, iterations=iterations,
            kernel_filter=cells.get("kernel_filter") or None,
            nvtx_filter=cells.get("nvtx_filter") or None,
            line=line,
            share=_share(cells.get("share") or "", path_s, line),
        ))
    if not entries:
        raise InputError("manifest lists no reports", path=path_s)
    return entries


#: What identifies a profile in a profile file: (gpu, model, batch_size, share).
ProfileKey = tuple[str, str, int, float]


def profile_key(profile: Profile) -> ProfileKey:
    """The (gpu, model, batch_size, share) key of a profile.

    Examples
    --------
    >>> profile_key(Profile(gpu="l4", model="m", batch_size=2, solo_ms=1.0))
    ('l4', 'm', 2, 100.0)
    """
    return (profile.gpu, profile.model, profile.batch_size, profile.share)


class ProfileConflict(InputError):
    """A new profile disagrees with the one already in a profile file.

    ``key`` is ``(gpu, model, batch_size, share)``.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str], line: int | None,
                 key: ProfileKey) -> None:
        super().__init__(message, path=path, line=line)
        self.key = key


def _same(a: float | None, b: float | None) -> bool:
    """Whether two profile values agree (both missing counters agree; one missing does not)."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=PROFILE_DUPLICATE_RTOL, abs_tol=0.0)


def _check_no_conflict(existing: ProfileTable, new: ProfileTable, path: str | os.PathLike[str]) -> None:
    """Raise :class:`ProfileConflict` naming the file's line when a new profile disagrees with it."""
    old = {profile_key(p): p for p in existing}
    for p in new:
        key = profile_key(p)
        q = old.get(key)
        if q is None:
            continue
        diff = [f"{name} {getattr(q, name)!r} in the file vs {getattr(p, name)!r} new"
                for name in ("solo_ms", "sm", "l2", "dram") if not _same(getattr(q, name), getattr(p, name))]
        if diff:
            line = _line_of(path, key)
            share = "" if p.share == DEFAULT_SHARE else f", share={p.share:g}"
            raise ProfileConflict(f"cannot append: the profile for (gpu={key[0]!r}, model={key[1]!r}, "
                                  f"batch_size={key[2]}{share}) here conflicts with the new one: {'; '.join(diff)}; "
                                  "the file is unchanged (write without append, or pass --force, to replace it)",
                                  path=path, line=line, key=key)


def _line_of(path: str | os.PathLike[str], key: ProfileKey) -> int | None:
    """Line of the profile file holding ``key`` (the header tells the columns)."""
    rows = csv_rows(read_text(path), path=path)
    header: list[str] = []
    for header in rows:
        if any(h.strip() for h in header):
            break
    header = [h.strip() for h in header]
    try:
        ig, im, ib = header.index("gpu"), header.index("model"), header.index("batch_size")
    except ValueError:
        return None
    isx = header.index("share") if "share" in header else None
    for row in rows:
        if len(row) == len(header) and (row[ig].strip(), row[im].strip()) == key[:2]:
            try:
                share = DEFAULT_SHARE if isx is None or not row[isx].strip() else float(row[isx])
                if float(row[ib]) == key[2] and share == key[3]:
                    return rows.line_num
            except ValueError:
                continue
    return None


def write_profiles(table: ProfileTable, path: str | os.PathLike[str], *, append: bool = False) -> ProfileTable:
    """Write ``table`` as tidy profiles, atomically, in the format the suffix names (CSV, Parquet, Arrow);
    with ``append`` merge into the file first.

    Appending reads the existing file, merges (identical rows collapse, rows for the same
    (gpu, model, batch_size) with different numbers are an error) and only then replaces the
    file, so a refused append leaves it exactly as it was.  Returns the table written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from interfpred import Profile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "profiles.csv"
    >>> a = ProfileTable.from_profiles([Profile(gpu="l4", model="m", batch_size=1, solo_ms=1.0, sm=0.1, l2=0.1, dram=0.1)])
    >>> b = ProfileTable.from_profiles([Profile(gpu="l4", model="m", batch_size=2, solo_ms=2.0, sm=0.1, l2=0.1, dram=0.1)])
    >>> _ = write_profiles(a, out)
    >>> len(write_profiles(b, out, append=True))
    2
    """
    from interfpred.data import columnar

    if append and os.path.exists(path):
        existing = columnar.read_profiles(path)
        _check_no_conflict(existing, table, path)
        try:
            table = existing.merge(table)
        except InterfpredError as exc:
            raise InputError(f"cannot append: a new profile conflicts with one already in the file "
                             f"({exc}); the file is unchanged", path=path) from None
    columnar.write_profiles(table, path)
    return table


def example_path() -> Path:
    """The Nsight Compute example bundled with the package (a B200 cuBLASLt GEMM, details page).

    Examples
    --------
    >>> example_path().name
    'superbenchmark_cublaslt_b200_details.log'
    """
    return Path(str(files("interfpred") / "data" / "datasets" / "examples" / NCU_EXAMPLE_FILE))
