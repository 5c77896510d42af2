"""Nsight Compute output to kernel tables and solo profiles.

:func:`read_kernels` sniffs what ``ncu`` printed or saved and hands it to the reader of its page
(``--csv`` details or raw page, or a binary ``.ncu-rep`` report); :func:`profile_from_kernels`
sums the launches into one :class:`~interfpred.Profile`. Every refusal is an
:class:`NcuFormatError` naming the file and the line. Formats and flags: docs/profiling.md.

Examples
--------
>>> import pathlib, tempfile
>>> text = '''==PROF== Connected to process 42 (/usr/bin/python3)
... "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","DRAM Throughput","%","40.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","Duration","usecond","2.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","L2 Cache Throughput","%","20.00"
... "0","42","python3","127.0.0.1","gemm","1","7","(256, 1, 1)","(80, 1, 1)","0","8.9","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","60.00"
... ==PROF== Disconnected from process 42
... '''
>>> path = pathlib.Path(tempfile.mkdtemp()) / "report.csv"
>>> _ = path.write_text(text)
>>> kernels = read_kernels(path)
>>> len(kernels), str(kernels.name[0]), float(kernels.duration_ms[0]), float(kernels.dram[0])
(1, 'gemm', 0.002, 0.4)
>>> profile_from_kernels(kernels, gpu="l4", model="toy", batch_size=1).sm
0.6
"""

from __future__ import annotations

import csv
import os
import stat

from interfpred.constants import NCU_SNIFF_BYTES
from interfpred.data.ingest.kernel_table import KernelTable, profile_from_kernels
from interfpred.data.ingest.ncu_details import read_details_page
from interfpred.data.ingest.ncu_metrics import DETAILS_ONLY, NcuFormatError, identity_name, nvtx_innermost
from interfpred.data.ingest.ncu_raw import read_raw_page
from interfpred.data.ingest.ncu_rep import read_report

__all__ = ["NcuFormatError", "KernelTable", "read_kernels", "profile_from_kernels", "nvtx_innermost"]


def read_kernels(path: str | os.PathLike[str]) -> KernelTable:
    """Read the kernel launches of an Nsight Compute file.

    Accepts ``ncu --csv`` output of the ``details`` page (every header generation, with or
    without ``--nvtx``, rule columns, metric labels or names) and the ``raw`` page, with any
    non-CSV lines before and after the table, or a binary ``.ncu-rep`` report (needs the
    ``ncu-report`` package: ``pip install "interfpred[ncu]"``).

    Raises
    ------
    NcuFormatError
        With the file and line, for anything that is not a readable Nsight Compute table.

    Examples
    --------
    >>> from importlib.resources import files
    >>> t = read_kernels(files("interfpred") / "data" / "datasets" / "examples" / "superbenchmark_cublaslt_b200_details.log")
    >>> round(float(t.duration_ms[0]) * 1e6), float(t.l2[0])
    (406240, 0.1512)
    """
    path_s = os.fspath(path)
    if os.path.exists(path_s):  # a FIFO or device would block or never end
        mode = os.stat(path_s).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise NcuFormatError("is not a regular file (a FIFO, socket or device)", path=path_s)
    if path_s.lower().endswith(".ncu-rep"):
        return read_report(path_s)
    try:
        with open(path_s, "rb") as fh:
            head = fh.read(NCU_SNIFF_BYTES)
    except IsADirectoryError:
        raise NcuFormatError("is a directory, not an Nsight Compute file", path=path_s) from None
    if not head.strip():
        raise NcuFormatError("empty file: expected ncu --csv output", path=path_s)
    if b"\x00" in head:
        raise NcuFormatError(
            "binary file given as CSV (NUL bytes); for an .ncu-rep report name it *.ncu-rep, "
            "or export CSV with: ncu --import report.ncu-rep --csv --page details > report.csv",
            path=path_s)
    try:
        with open(path_s, encoding="utf-8", errors="replace", newline="") as fh:
            return _read_csv(fh, path_s)
    except csv.Error as exc:  # the header line; the page readers locate their own
        raise NcuFormatError(f"not valid CSV: {exc}", path=path_s) from None


def _looks_like_header(line: str) -> bool:
    s = line.lstrip("\ufeff \t")
    return s.startswith('"ID",') or s.startswith("ID,")


def _read_csv(fh, path: str) -> KernelTable:
    """Find the header line, then read the table with the reader of its page."""
    lineno = 0
    header_line = None
    for text in fh:
        lineno += 1
        if _looks_like_header(text):
            header_line = text
            break
    if header_line is None:
        if lineno == 0:
            raise NcuFormatError("empty file: expected ncu --csv output", path=path)
        raise NcuFormatError(
            f"unknown layout: none of the {lineno} lines is an Nsight Compute CSV header "
            '(a line starting "ID","Process ID",...); was ncu run with --csv?', path=path)
    header = next(csv.reader([header_line.lstrip("\ufeff \t")]))
    header = [h.strip() for h in header]
    reader = csv.reader(fh)
    if "Metric Name" in header and "Metric Value" in header:
        return read_details_page(reader, header, lineno, path)
    if "Metric Name" in header:
        raise NcuFormatError(
            "unknown layout: a metric table without a 'Metric Value' column (a --print-summary "
            f"page?); export the details page (ncu --csv --page details). Header: {','.join(header)}",
            path=path, line=lineno)
    metrics = [h for h in header if identity_name(h) is None and h not in DETAILS_ONLY]
    if "Kernel Name" in header and metrics:
        return read_raw_page(reader, header, lineno, path)
    raise NcuFormatError(
        "unknown layout: expected the details page (Metric Name/Metric Unit/Metric Value columns) "
        f"or the raw page (one column per metric); header is {','.join(header)}",
        path=path, line=lineno)
