"""Ingestion: Nsight Compute output to kernel tables and solo profiles, tidy CSV helpers."""

from interfpred.ingest.ncu import (
    KernelTable,
    NcuFormatError,
    nvtx_innermost,
    profile_from_kernels,
    read_kernels,
)
from interfpred.ingest.tables import ManifestEntry, example_path, read_manifest, write_profiles

__all__ = [
    "KernelTable",
    "NcuFormatError",
    "nvtx_innermost",
    "profile_from_kernels",
    "read_kernels",
    "ManifestEntry",
    "read_manifest",
    "write_profiles",
    "example_path",
]
