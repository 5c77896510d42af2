"""Ingestion: Nsight Compute output to kernel tables and solo profiles, tidy CSV helpers."""

from interfpred.data.ingest.kernel_table import KernelTable, kernel_statistics, profile_from_kernels
from interfpred.data.ingest.ncu import NcuFormatError, nvtx_innermost, read_kernels
from interfpred.data.ingest.ncu_log import TruncatedReportError, TruncatedReportWarning
from interfpred.data.ingest.ncu_sources import profiles_from_reports, unique_profiles
from interfpred.data.ingest.profile_files import (
    ManifestEntry,
    ProfileConflict,
    example_path,
    read_manifest,
    write_profiles,
)

__all__ = [
    "KernelTable",
    "NcuFormatError",
    "nvtx_innermost",
    "profile_from_kernels",
    "kernel_statistics",
    "TruncatedReportError",
    "TruncatedReportWarning",
    "read_kernels",
    "profiles_from_reports",
    "unique_profiles",
    "ManifestEntry",
    "ProfileConflict",
    "read_manifest",
    "write_profiles",
    "example_path",
]
