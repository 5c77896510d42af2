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

# ---------------------------------------------------------------- timeline and features (issue 3)
#: EWMA weight of the newest running-set value when none is given.
DEFAULT_EWMA_ALPHA = 0.5
#: Names accepted by ``make_extractor`` for the temporal aggregation, feature map, combine and target.
AGGREGATIONS = ("static", "ewma", "time-weighted")
FEATURE_MAPS = ("default", "gpulets", "rich")
COMBINES = ("sum", "max")
TARGETS = ("slowdown", "rate")
#: Smallest predicted rate (fraction of solo speed) used when turning a rate back into latency,
#: so a predictor's nonsense output (<= 0) gives a long but finite latency.
MIN_PREDICTED_RATE = 1e-3
#: Distinct (model, batch size) profile lookups a TimelineState remembers (cleared when full).
PROFILE_CACHE_SIZE = 4096
#: Most executions that may run at once on one GPU for the built-in feature maps (their exact
#: fixed-point sums would overflow far beyond it; real GPUs run a handful).
MAX_RUNNING_SET = 4096
