"""One entry point for traces captured by profilers: the file's first bytes choose the reader.

* ``SQLite format 3``: an Nsight Systems SQLite export (:mod:`~interfpred.data.ingest.nsys`);
* ``NVIDIA Tegra Profiler Report`` (``.nsys-rep``, ``.qdrep``): refused with the export command;
* gzip, or text starting with ``{`` or ``[``: a PyTorch profiler trace (:mod:`~interfpred.data.ingest.kineto`).

Examples
--------
>>> import tempfile, pathlib
>>> bad = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
>>> _ = bad.write_text("hello")
>>> read_capture_trace(bad)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
interfpred.data.ingest.gpu_ranges.CaptureFormatError: ...notes.txt: is neither an Nsight Systems SQLite export nor a PyTorch profiler JSON trace
"""

from __future__ import annotations

import os

from interfpred._core.atomic import check_regular_file
from interfpred.constants import NSYS_REPORT_MAGIC
from interfpred.data.ingest.batch_names import NamePattern
from interfpred.data.ingest.gpu_ranges import CaptureFormatError, CaptureReport
from interfpred.data.ingest.kineto import GZIP_MAGIC, read_kineto
from interfpred.data.ingest.nsys import SQLITE_MAGIC, read_nsys, refuse_nsys_report
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError

__all__ = ["capture_kind", "read_capture_trace"]


def capture_kind(path: str | os.PathLike[str]) -> str:
    """``"nsys"`` or ``"kineto"`` by the file's first bytes; raises :class:`CaptureFormatError` otherwise."""
    check_regular_file(path, "a profiler trace")
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(NSYS_REPORT_MAGIC):
        raise refuse_nsys_report(path)
    if head.startswith(SQLITE_MAGIC):
        return "nsys"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(GZIP_MAGIC) or text[:1] in (b"{", b"["):
        return "kineto"
    if str(path).lower().endswith((".nsys-rep", ".qdrep")):
        raise refuse_nsys_report(path)
    if str(path).lower().endswith((".sqlite", ".sqlite3", ".db")):
        raise CaptureFormatError("is not an SQLite database (an Nsight Systems export starts with 'SQLite format 3')",
                                 path=path)
    raise CaptureFormatError("is neither an Nsight Systems SQLite export nor a PyTorch profiler JSON trace",
                             path=path)


def read_capture_trace(path: str | os.PathLike[str], *, kernels: bool = False, name_pattern: str | None = None,
                       batch_size: int | None = None, strict: bool = False,
                       report: CaptureReport | None = None) -> Trace:
    """A :class:`~interfpred.data.trace.Trace` from an Nsight Systems SQLite export or a PyTorch profiler trace.

    Parameters
    ----------
    path
        The file (``nsys export --type sqlite`` output, or Kineto JSON, plain or ``.gz``).
    kernels
        One execution per CUDA kernel (model = its short name) instead of one per batch range:
        for traces without ranges.
    name_pattern
        The user's template for range names (:class:`~interfpred.data.ingest.batch_names.NamePattern`)
        instead of the convention ``MODEL:BATCH`` / ``MODEL bs=BATCH``.
    batch_size
        Batch size of each kernel with ``kernels`` (default 1), or of each match of a
        ``name_pattern`` alternative without ``{batch}``.
    strict
        Raise on the first range whose name does not parse, or that launched no GPU operation,
        instead of skipping and counting it in ``report``.
    report
        Filled in with what was read and skipped (:meth:`CaptureReport.summary`).

    Raises
    ------
    CaptureFormatError
        A file that cannot be read or holds no executions; the one-line message names the file.
    """
    if kernels and name_pattern is not None:
        raise InterfpredError("--kernels makes each kernel an execution; --name-pattern names ranges: give one")
    if batch_size is not None and not kernels and name_pattern is None:
        raise InterfpredError("--batch-size applies with --kernels or with a --name-pattern without {batch}; "
                              "range names carry the batch size otherwise")
    pattern = None if name_pattern is None else NamePattern(name_pattern, batch_size=batch_size)
    kind = capture_kind(path)
    read = read_nsys if kind == "nsys" else read_kineto
    if report is None:
        report = CaptureReport(source="Nsight Systems export" if kind == "nsys" else "PyTorch profiler trace")
    return read(path, kernels=kernels, pattern=pattern, batch_size=1 if batch_size is None else batch_size,
                strict=strict, report=report)
