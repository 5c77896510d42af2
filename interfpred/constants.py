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

# ---------------------------------------------------------------- simulator (interfpred.sim)
#: Default L2-pollution strength theta: dram'_j = min(1, dram_j (1 + theta l2_j sum_{i != j} l2_i)).
SIM_THETA = 1.0
#: Default concurrency overhead epsilon: rates are divided by 1 + epsilon (|A| - 1).
SIM_EPSILON = 0.03
#: Default log-normal noise on solo work: work = solo_ms exp(sigma N(0, 1)).
SIM_SIGMA = 0.02
#: Default number of executions a simulated GPU runs at once (later arrivals wait, FIFO).
SIM_MAX_CONCURRENCY = 4
#: Relative tolerance under which two executions' finishing times count as one event.
SIM_FINISH_RTOL = 1e-12
#: Relative tolerance under which a resource counts as saturated in progressive filling.
SIM_SATURATION_RTOL = 1e-12
#: GPU preset used when none is named.
SIM_DEFAULT_GPU = "l4"
#: Executions per set of the paper scenario when no size is given.
SIM_DEFAULT_EXECUTIONS = 20_000
#: Offered utilisation of the paper scenario's loads (sum over models of rate x mean solo latency).
SIM_RHO_LIGHT = 0.3
SIM_RHO_MODERATE = 0.9
SIM_RHO_STRESS = 1.4
