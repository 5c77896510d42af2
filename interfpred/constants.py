"""Numeric thresholds, defaults and fixed names, in one place.

Modules import from here instead of writing numbers inline, so a default is changed once.
"""

from __future__ import annotations

#: Version of every JSON state/spec file interfpred writes; bumped on incompatible change.
SCHEMA_VERSION = 1

#: Columns of the tidy profile CSV, in order.
PROFILE_COLUMNS = ("gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram")
#: The throughput columns of a profile, fractions of peak in [0, 1].
RESOURCES = ("sm", "l2", "dram")

#: Columns of a trace CSV, in order; ``solo_ms`` is optional.
TRACE_COLUMNS = ("id", "gpu", "model", "batch_size", "start_ms", "end_ms")
TRACE_OPTIONAL_COLUMNS = ("solo_ms",)

#: Slowdown a predictor reports before it has learned anything (1.0: no interference).
PRIOR_SLOWDOWN = 1.0

#: Relative tolerance under which two profile rows for the same key count as the same row.
PROFILE_DUPLICATE_RTOL = 1e-9

# ---------------------------------------------------------------- Nsight Compute ingestion (issue 2)
#: Percent points a throughput may exceed 100 % by (rounding in ncu's output) before it is refused;
#: values in (100, 100 + tolerance] are clipped to 100 %.
NCU_PERCENT_TOLERANCE = 0.5
#: Bytes read from the start of a file to tell an empty or binary file from ncu's CSV output.
NCU_SNIFF_BYTES = 65536
#: The example bundled as package data, and the defaults ``interfpred ingest --example`` uses.
NCU_EXAMPLE_FILE = "superbenchmark_cublaslt_b200_details.log"
NCU_EXAMPLE_GPU = "b200"
NCU_EXAMPLE_MODEL = "cublaslt_gemm"
NCU_EXAMPLE_BATCH_SIZE = 1
