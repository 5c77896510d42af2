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

#: Columns of a trace CSV, in order; ``solo_ms`` and ``share`` (MPS active thread percentage) are optional.
TRACE_COLUMNS = ("id", "device", "model", "batch_size", "start_ms", "end_ms")
TRACE_OPTIONAL_COLUMNS = ("solo_ms", "share")

#: Slowdown a predictor reports before it has learned anything (1.0: no interference).
PRIOR_SLOWDOWN = 1.0

#: Relative tolerance under which two profile rows for the same key count as the same row.
PROFILE_DUPLICATE_RTOL = 1e-9
#: An extrapolated solo latency is never below this share of the smallest profiled one (keeps it positive).
PROFILE_EXTRAPOLATE_MIN_SOLO_SHARE = 1e-3

# ---------------------------------------------------------------- Nsight Compute ingestion
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
#: Numeric launch columns a KernelTable keeps per launch (NaN where the file does not have them):
#: blocks in the grid, threads per block, waves per SM, registers per thread, shared memory per block
#: (bytes), the four per-SM block limits of the occupancy calculation, the SM count, and the
#: theoretical occupancy (fraction of the SM's warp slots).
KERNEL_LAUNCH_COLUMNS = (
    "grid_blocks", "block_threads", "waves_per_sm", "registers_per_thread", "shared_mem_per_block",
    "occupancy_limit_blocks", "occupancy_limit_registers", "occupancy_limit_shared_mem",
    "occupancy_limit_warps", "sm_count", "theoretical_occupancy",
)
#: The occupancy block-limit columns; a launch's resident-block limit per SM is their minimum.
KERNEL_OCCUPANCY_LIMIT_COLUMNS = (
    "occupancy_limit_blocks", "occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
)
#: A kernel with at least this many waves per SM fills every SM (counts towards ``fill_fraction``).
KERNEL_FILL_WAVES = 1.0
#: Percentile of the per-launch durations written as ``kernel_p90_ms`` (linear interpolation).
KERNEL_TAIL_PERCENTILE = 90.0
#: Optional profile columns ``ingest`` writes from a report's kernels, after the tidy columns, in order.
KERNEL_PROFILE_COLUMNS = (
    "kernels", "kernel_sum_ms", "kernel_mean_ms", "kernel_p90_ms", "kernel_max_ms", "kernel_residual_ms",
    "fill_fraction", "waves_mean", "occupancy_blocks", "kernel_occupancy", "truncated",
)
#: Value of the ``truncated`` profile column for a report ncu cut short (kept on request) and otherwise.
KERNEL_TRUNCATED = "1"
KERNEL_COMPLETE = "0"
#: ncu's log lines that tell a report was cut short (any of the first two and none of the last).
NCU_LOG_ERROR_PREFIX = "==ERROR=="
NCU_LOG_SHUTDOWN = "==PROF== Trying to shutdown"
NCU_LOG_DISCONNECTED = "==PROF== Disconnected from process"
#: Prefix of every line ncu itself prints (==PROF==, ==WARNING==, ==ERROR==).
NCU_LOG_PREFIX = "=="
#: Characters of an ncu log line quoted in a message.
NCU_LOG_QUOTE_CHARS = 120
# --- predictors -------------------------------------------------------------------------------------------
#: RLS: default forgetting factor (weight of an observation decays as forgetting**age).
RLS_FORGETTING = 0.995
#: RLS: initial covariance scale, P0 = delta * I (the prior's information is I / delta).
RLS_DELTA = 100.0
#: Predictive standard deviation a predictor reports before it has seen data.
PRIOR_STD = 1.0
#: OnlineSGD defaults: normalised LMS (stable for 0 < step < 2 whatever the feature scale) on features
#: standardised online, with step 0.03: on simulated N-way runs of 2-48 batches in any feature units
#: (benchmarks/nway_defaults.py) the step of 0.5 learned the rate target at up to 12x the global mean's
#: latency MAPE (3.9x on average), 0.03 with standardised features at up to 1.4x (0.8x on average).
SGD_LEARNING_RATE = 0.03
SGD_STANDARDIZE = True
SGD_SCHEDULE = "nlms"
#: Exponent of the inverse-scaling schedule, rate = learning_rate / t**power_t.
SGD_POWER_T = 0.25
#: Added to denominators of the NLMS and AdaGrad steps.
SGD_EPS = 1e-8
#: gpulets' published interference coefficients c0..c4 for an RTX 2080 Ti.
GPULETS_RTX2080TI = (0.11290838746224496, 0.7159598718755424, 0.35486591956022895, 0.0882038259888065,
                     0.8953693917277343)
#: gpulets interpolates utilisation between power-of-two batch sizes, the upper neighbour capped at this size.
GPULETS_MAX_BATCH = 32
# ---------------------------------------------------------------- timeline and features
#: EWMA weight of the newest running-set value when none is given.
DEFAULT_EWMA_ALPHA = 0.5
#: Names accepted by ``make_extractor`` for the temporal aggregation, feature map, combine and target.
AGGREGATIONS = ("static", "ewma", "time_weighted")
FEATURE_MAPS = ("default", "gpulets", "rich", "shares", "corunners")
COMBINES = ("sum", "max")
TARGETS = ("slowdown", "rate")
#: Distinct (model, batch size) profile lookups a TimelineState remembers (cleared when full).
PROFILE_CACHE_SIZE = 4096
#: Most executions that may run at once on one GPU for the built-in feature maps (their exact
#: fixed-point sums would overflow far beyond it; real GPUs run a handful).
MAX_RUNNING_SET = 4096
#: GPU kinds with a MIG profile table (the keys of ``interfpred.provisioning.mig.MIG_GPUS``), named here
#: for the CLI's help, which must not import the planner.
MIG_GPU_KINDS = ("a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb")
#: A fleet assesses a device whose running set with the candidate holds more distinct entities than
#: this on its own, not in the stacked pair-term call (whose per-device terms grow as its square).
PLACEMENT_ENTITIES_MAX = 64
#: Candidate entities whose stacked pair terms a fleet keeps between events (the oldest is dropped).
PLACEMENT_CANDIDATES_KEPT = 16
# ---------------------------------------------------------------- simulator (interfpred.sim)
#: Default L2-pollution strength theta: dram'_j = min(1, dram_j (1 + theta l2_j sum_{i != j} l2_i)).
SIM_THETA = 1.0
#: Default concurrency overhead epsilon: rates are divided by 1 + epsilon (|A| - 1).
SIM_EPSILON = 0.03
#: Default log-normal noise on solo work: work = solo_ms exp(sigma N(0, 1)).
SIM_SIGMA = 0.02
#: Default number of executions a simulated GPU runs at once (later arrivals wait, FIFO).
SIM_MAX_CONCURRENCY = 4
#: Lowest offered load the simulator accepts: sparser arrivals put times so far out (1e302 ms at rho 1e-300)
#: that adding a latency to a start time rounds back to the start.
SIM_MIN_RHO = 1e-3
#: Fewest executions per set a simulated scenario takes.
SIM_MIN_EXECUTIONS = 4
#: Steady-state pairs: the span (ms) each measured execution is tiled to ...
STEADY_PAIRS_SPAN_MS = 200.0
#: ... and the co-runner's tiling, in multiples of the longest span, so it outlasts the measured one.
STEADY_PAIRS_CO_RUNNER_SPANS = 3.5
#: Relative tolerance under which two executions' finishing times count as one event.
SIM_FINISH_RTOL = 1e-12
#: Relative tolerance under which a resource counts as saturated in progressive filling.
SIM_SATURATION_RTOL = 1e-12
#: Relative slack of a comparison against a bound (an error against a tolerance, a bound against an
#: observation, a demand against a capacity), so a value exactly at the bound counts as within it
#: whatever the float rounding (9 against 10 is exactly 10 %).
BOUNDARY_RTOL = 1e-12
#: Relative-error thresholds of the accuracy figures: ``within_10`` and ``within_20`` are the shares of
#: predictions whose relative error is at most ACCURACY_WITHIN_10 and ACCURACY_WITHIN_20 (with the slack of
#: BOUNDARY_RTOL), ``beyond_60`` the share whose error exceeds ACCURACY_BEYOND_60 (the coarse-grain failure
#: of a model fed one snapshot at launch).
ACCURACY_WITHIN_10 = 0.1
ACCURACY_WITHIN_20 = 0.2
ACCURACY_BEYOND_60 = 0.6
#: GPU preset used when none is named.
SIM_DEFAULT_GPU = "l4"
#: The GPU Orion's operator tables were measured on; the phase-structured engine and the reproduction
#: default to it.
SIM_PHASED_DEFAULT_GPU = "v100"
#: A CLI command (fit, evaluate, predict) prints progress lines on stderr once it has run this long (s).
PROGRESS_AFTER_S = 2.0
#: ... and then at most once per this many seconds.
PROGRESS_EVERY_S = 1.0
#: A long step with no new message repeats its progress line when none came for this many seconds
#: (the heartbeat wakes four times as often, so a line comes at least every 2 s).
PROGRESS_HEARTBEAT_S = 1.5
#: Slack on a coverage goal's distance from nominal (coverage figures are rounded to 4 digits).
COVERAGE_GOAL_SLACK = 1e-9
#: Executions per set of the paper scenario when no size is given.
SIM_DEFAULT_EXECUTIONS = 20_000
#: Offered utilisation of the paper scenario's loads (sum over models of rate x mean solo latency).
SIM_RHO_LIGHT = 0.3
SIM_RHO_MODERATE = 0.9
SIM_RHO_STRESS = 1.4
# ---------------------------------------------------------------- live tracker and scheduling
#: Every path that turns a prediction into a slowdown or a latency (InterferenceModel.predict_* and
#: evaluate, the folds and experiments, the tracker's finish and what-if projections, the fleet) clamps
#: its rate (fraction of solo speed; 1 / slowdown) to [PREDICTED_RATE_MIN, PREDICTED_RATE_MAX], through
#: interfpred._core.targets.to_rate: a predicted slowdown is never below 1 (no co-runner makes a batch
#: faster than alone) nor above 100, and a predictor's nonsense output (<= 0) gives a slow-but-finite or
#: solo-speed execution instead of a negative or infinite time.
PREDICTED_RATE_MIN = 0.01
PREDICTED_RATE_MAX = 1.0
#: Remaining solo work of a running execution never falls below this fraction of its profile solo
#: latency: when the model over-predicted its past rates, it is projected to finish soon, not in the past.
TRACKER_MIN_REMAINING = 0.01
#: Relative tolerance under which two projected completions count as one event.
TRACKER_FINISH_RTOL = 1e-12
#: Finest time difference (ms) a live tracker must resolve: 1 us.
TIME_RESOLUTION_MS = 1e-3
#: The shortest latency a measurement, a profile or a latency-reporting tool may give (ms): 1 ns, the
#: tick of the finest clock a supported tool records (Nsight and CUPTI timestamps are in ns). A value
#: below it (1e-300, a denormal such as 1e-320) is not a measurement; it is refused with its file and
#: line instead of being written out as a solo or observed latency.
LATENCY_MIN_MS = 1e-6
#: Largest event time (ms, in absolute value) a tracker, a fleet or a timeline state accepts: 2**52 *
#: TIME_RESOLUTION_MS, about 4.5e12 ms (142 years; an epoch-ms clock, about 1.8e12 today, fits).
#: Beyond it two float64 times TIME_RESOLUTION_MS apart are no longer distinct (the spacing of float64
#: numbers near t is t * 2**-52), so segment durations, and the time-weighted feature integrals
#: (duration x feature, at most 2 * TIME_HORIZON_MS * FEATURE_ABS_MAX, far from overflow) built on them,
#: lose all precision; a time such as 3e307 would make them overflow to inf.
TIME_HORIZON_MS = TIME_RESOLUTION_MS * 2.0**52
#: Default of ColocationTracker(late_window_ms=): how far (ms) before the latest event a finish or
#: cancel may be stamped and still be applied as if it had arrived in order (0: events in order only).
TRACKER_LATE_WINDOW_MS = 0.0
#: Most events a tracker remembers to replay a late finish over; a finish stamped before the oldest
#: one remembered is refused even inside the late window.
TRACKER_LATE_MAX_EVENTS = 1024
#: Fleet.choose_device: a projected end e counts as meeting deadline D at time t when
#: t + (e - t) * (1 + margin) <= D; the default margin.
FLEET_MARGIN = 0.0
#: E3 (interfpred.experiments.scheduling.experiment): simulated devices, request SLO = factor x solo latency of the
#: model at batch E3_SLO_BATCH, largest batch formed, safety margin of (b) and (c) on projected times,
#: batch sizes of the pair data gpulets and the warm RLS are fitted on, loads and requests per run.
E3_DEVICES = 2
E3_SLO_FACTOR = 5.0
E3_SLO_BATCH = 8
E3_MAX_BATCH = 32
E3_MARGIN = 0.05
E3_PAIR_BATCHES = (1, 2, 4, 8, 16, 32)
E3_QUICK_LOADS = (1.0, 2.0, 3.0, 3.5)
E3_QUICK_REQUESTS = 1500
E3_FULL_LOADS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
E3_FULL_REQUESTS = 12000
#: E3's goal: at some load, one-at-a-time serving (a) attains below this share of SLOs ...
E3_GOAL_FIFO_BELOW = 0.90
#: ... while the tracker's co-location (c) attains at least this share ...
E3_GOAL_TRACKER_AT_LEAST = 0.99
#: ... with goodput at least this fraction of the oracle's (d).
E3_GOAL_GOODPUT_RATIO = 0.90
#: Policy (e)'s goal where (c) meets E3_GOAL_TRACKER_AT_LEAST: (e) attains at least this share ...
E3_BOUND_GOAL_ATTAINMENT = 0.999
#: ... with goodput at least this fraction of (c)'s.
E3_BOUND_GOAL_GOODPUT_RATIO = 0.95
#: E1's goal: the best configuration predicts at least this share of latencies within 10%.
E1_GOAL_WITHIN_10 = 0.9
#: Fewest executions per simulated set ``reproduce(executions=...)`` takes.
REPRODUCE_MIN_EXECUTIONS = 40
# ---------------------------------------------------------------- models, fit/evaluate and reproduce
#: ``kind`` written into model files (extractor spec + predictor state in one JSON).
MODEL_FILE_KIND = "interfpred.model.interference"
#: Extractor and predictor of ``InterferenceModel()`` and ``interfpred fit`` when none is given: the best
#: configuration of the reproduction (docs/results.md): time-weighted exposure over the rich map, target
#: rate, RLS. ``ColocationTracker`` uses the same extractor, so a model fitted with the defaults serves as is.
MODEL_DEFAULT_EXTRACTOR = (("aggregation", "time_weighted"), ("feature_map", "rich"), ("combine", "sum"),
                           ("target", "rate"))
MODEL_DEFAULT_PREDICTOR = "rls"
#: What ``InterferenceModel.fit`` chooses among when no configuration is named (interfpred.model.selection):
#: predictors, targets, grouped folds by run (or block of a trace) scored prequentially, models held out
#: entirely (cold start, scored frozen), rows per trace block, and the seed of the folds.
SELECTION_PREDICTORS = ("entity_rls", "kernel_blocking", "rls")
#: What the configuration search scores candidates by: "ratio" (the error of the ratio either way,
#: max(p / o, o / p) - 1, which does not reward under-prediction as MAPE does) or "mape".
SELECTION_METRIC = "ratio"
#: A row is under-predicted when its observed latency exceeds this factor times the prediction: every
#: accuracy table prints the share of such rows beside MAPE (a scheduler trusting them misses SLOs).
UNDER_PREDICTION_FACTOR = 1.5
SELECTION_TARGETS = ("slowdown", "rate")
#: The predictor the extractor is searched with before the other predictors are scored on its best.
SELECTION_PROXY = "rls"
SELECTION_FOLDS = 3
SELECTION_COLD_MODELS = 3
SELECTION_TRACE_BLOCK = 64
SELECTION_SEED = 0
#: The one-standard-error rule counts per-fold differences of at most this share of the best score
#: as ties (two candidates equal but for rounding differ by about 1e-16, and their standard error is
#: as small, so without it rounding decided between them).
SELECTION_TIE_RTOL = 1e-9
#: Rows the selection validates on at most (whole runs or trace blocks, seeded); the fit uses every row.
SELECTION_MAX_ROWS = 3000
#: Grouped folds of the cross-fitting behind frozen latency bounds (interfpred.model.crossfit).
CROSS_FIT_FOLDS = 5
#: Labels of learned measurement runs that ``InterferenceModel.update`` remembers, to refuse a member
#: that arrives after its run was learned (interfpred.model.stream); older labels are forgotten.
STREAM_CLOSED_RUNS_KEPT = 100_000
#: Fewest cross-fitted scores a novelty category of frozen bounds needs for its own thresholds
#: (fewer: the category uses the pooled thresholds).
CROSS_FIT_MIN_CATEGORY_SCORES = 50
#: How far (coverage points) E4's frozen cross-fitted bounds may sit from nominal.
FROZEN_COVERAGE_SLACK = 0.03
#: Executions per simulated set of the full reproduction and of ``--quick``.
REPRODUCE_EXECUTIONS = 50_000
REPRODUCE_QUICK_EXECUTIONS = 5_000
#: Share of the E1 trace / E2 train set used for training (in launch order); the rest is held out.
REPRODUCE_TRAIN_SHARE = 0.75
#: EWMA weights of E1 (the paper's).
REPRODUCE_EWMA_ALPHAS = (0.2, 0.5, 0.8)
#: Default output folder of ``interfpred reproduce``.
REPRODUCE_DEFAULT_OUT = "interfpred-report"
# ---------------------------------------------------------------- measurements, MPS share, baselines, real data
#: Columns of a measurements CSV (steady-state co-location runs, one row per member), in order.
MEASUREMENT_COLUMNS = ("run", "gpu", "model", "batch_size", "share", "solo_ms", "observed_ms")
#: Optional columns: ``member`` labels copies of one model inside a run.
MEASUREMENT_OPTIONAL_COLUMNS = ("member",)
#: The throughput form: rates (units per second) alone and co-located, instead of solo_ms/observed_ms.
MEASUREMENT_THROUGHPUT_COLUMNS = ("solo_throughput", "observed_throughput")
#: Milliseconds per second: a throughput r (units/s) is stored as 1000 / r ms per unit.
MS_PER_S = 1000.0
#: MPS active thread percentage of a batch that ran without a partition.
DEFAULT_SHARE = 100.0
#: Registry kinds of the three baselines every accuracy table shows.
BASELINE_KINDS = ("no_interference", "global_mean", "pair_mean")
#: Feature maps by the profile counters they need (a map absent here needs none).
MAP_COUNTERS = (("default", ("sm", "l2", "dram")), ("rich", ("sm", "l2", "dram")), ("gpulets", ("l2", "dram")),
                ("shares", ()), ("corunners", ()))
#: Maps the configuration search offers only to a predictor that names them as its own (``tags.own_map``):
#: ``corunners`` (the co-runner count alone) carries no demand a throughput model could learn from.
OWN_ONLY_MAPS = ("corunners",)
#: E4 (real Gavel V100 pairs): share of runs in the training split, seeded repeats (full and quick).
E4_TRAIN_SHARE = 0.7
E4_REPEATS = 20
E4_QUICK_REPEATS = 5
#: E4's default-fit row in quick runs (and the tests' small sizes): warm folds and held-out models each
#: fold's choice validates on (full runs: SELECTION_FOLDS and SELECTION_COLD_MODELS, as ``fit``).
#: Two held-out models, not one: the frozen score on held-out models chooses among near ties on the folds by
#: run, and one model is too few (Gavel, leave one model out, frozen: 45.9 % with one, 39.4 % with two, 35.7 % with
#: three; the pair mean 40.9 %).
E4_QUICK_SELECTION_FOLDS = 2
E4_QUICK_SELECTION_COLD_MODELS = 2
#: E4 tables, one per learning target: the rate first (bounded; Gavel's slowdowns reach 119), then the slowdown.
E4_TARGETS = ("rate", "slowdown")
# ---------------------------------------------------------------- reliability and security
#: Largest model or predictor JSON file read (bytes); a bigger file is refused before it is parsed.
MODEL_FILE_MAX_BYTES = 64 * 2**20
#: Deepest nesting of JSON arrays and objects accepted in a model or predictor file.
MODEL_FILE_MAX_DEPTH = 32
#: Physical range of a slowdown target (observed / solo latency) an online predictor learns from;
#: a target outside it (a glitched timer, a unit error) is refused and the state left unchanged.
#: For ``target="rate"`` the same range applies to 1 / rate.
SLOWDOWN_MIN = 1e-3
SLOWDOWN_MAX = 1e3
#: Largest absolute target (slowdown or rate) a predictor learns from; larger values are refused.
TARGET_ABS_MAX = SLOWDOWN_MAX
#: Largest absolute feature value a predictor learns from (throughput features are
#: fractions of peak, summed over at most MAX_RUNNING_SET co-runners).
FEATURE_ABS_MAX = 1e6
#: Largest initial covariance scale RLS accepts (delta * |x|^2 squared must stay finite for |x| <= FEATURE_ABS_MAX
#: in practice; larger priors only overflow in the first update).
RLS_MAX_DELTA = 1e15
#: Largest learning rate OnlineSGD accepts (NLMS is stable below 2; larger values only diverge).
SGD_MAX_LEARNING_RATE = 1e3
#: Largest feature width ``interfpred bench --d`` accepts (RLS state grows as d**2).
BENCH_MAX_WIDTH = 1024
#: Largest integer id a trace stores as an integer (int64's maximum); larger ids are kept as strings.
MAX_INT64 = 2**63 - 1
#: Largest batch size accepted anywhere (exact in float64; far beyond any real batch).
MAX_BATCH_SIZE = 2**24
#: Solo latencies a profile may give, ms: from a nanosecond to a day. Outside, the figure is a unit
#: mistake or a damaged file (a 1e-300 ms batch, a 1,000 s one simulated in 2 ms quanta).
SOLO_MS_MIN = 1e-6
SOLO_MS_MAX = 86_400_000.0
#: Most (segment, running execution) pairs a timeline may hold (8 bytes each); a trace needing more
#: (very long with many executions running at once) is refused during the sweep, before allocating.
TIMELINE_MAX_MEMBERS = 2**28
#: Significant digits kept in a profile computed from Nsight Compute output (Nsight prints at most
#: about 7): removes the float noise of converting percent to fractions and ms.
PROFILE_SIGNIFICANT_DIGITS = 10
#: Fleet.choose_device: added projected latencies within this relative tolerance are a tie, broken by the
#: least loaded GPU (an untrained model predicts the same added latency everywhere).
FLEET_TIE_RTOL = 1e-9
# ---------------------------------------------------------------- phase-structured simulator (interfpred.sim)
#: L2 capacity (MB) a GpuSpec has when none is given (an L4's 48 MB); presets set their own.
SIM_L2_MB = 48.0
#: Growth of L2 pollution with the running set's L2 footprint overflow: the pollution term is
#: multiplied by 1 + kappa min(1, max(0, sum of footprints / L2 capacity - 1)); the overflow is capped
#: at 1 because a running set whose footprints exceed twice the L2 has thrashed it already.
SIM_FOOTPRINT_KAPPA = 2.0
#: Which ground truth simulations use when none is named: "phases" (operator phases, hidden
#: per-model factors) or "fluid" (one demand vector per execution, the profile's).
SIM_TRUTHS = ("phases", "fluid")
SIM_DEFAULT_TRUTH = "phases"
#: Model families of the phase-structured simulator.
SIM_ZOOS = ("orion", "synthetic")
#: Most phases per pass after the reduction of consecutive operators (0 keeps every operator).
SIM_MAX_PHASES = 32
#: Hidden per-model factors, drawn once per model from a generator seeded by this number and the
#: model name.  L2 footprint = weights part + activations part x batch size, each log-normal:
#: medians in MB and log-standard deviations.
SIM_HIDDEN_SEED = 20240427
SIM_FOOTPRINT_WEIGHTS_MB = (2.0, 0.6)
SIM_FOOTPRINT_PER_SAMPLE_MB = (0.4, 0.6)
#: Latency-hiding factor h (progress rate = fair share ** h): log-normal with median 1 and this
#: log-standard deviation, clipped to the range below.
SIM_HIDING_SIGMA = 0.25
SIM_HIDING_RANGE = (0.5, 2.0)
#: Orion operator tables: SMs of the V100 they were measured on, and the demand of an operator that
#: fills every SM, per roofline class (1 compute-bound, 0 memory-bound, -1 unknown): (sm, l2, dram).
ORION_SMS = 80
ORION_DEMANDS = {1: (0.85, 0.45, 0.20), 0: (0.30, 0.55, 0.80), -1: (0.50, 0.45, 0.45)}
#: Shortest operator (ms) after batch scaling (a kernel launch).
ORION_MIN_OP_MS = 0.002
# ---------------------------------------------------------------- fleet scale: columnar I/O, chunks, Dask
#: File suffixes (lower case) of the columnar formats; any other suffix is CSV.
COLUMNAR_SUFFIXES = {"parquet": (".parquet", ".pq"), "arrow": (".arrow", ".feather", ".ipc")}
#: Trace.codes factorises a name column with at most this many distinct names by whole-array
#: comparisons (one vectorised pass per name) instead of a Python loop over the rows.
TRACE_FEW_NAMES = 32
#: Launches per time window of the chunked (bounded-memory) timelines and features, per GPU:
#: small enough for a window's arrays to stay in the CPU caches.
CHUNK_ROWS = 1 << 15
#: Rows per batch when chunked features read a Parquet trace (a few tens of MB of arrays per batch).
PARQUET_BATCH_ROWS = 1 << 17
#: Bytes per block of pyarrow's CSV reader (fewer, larger blocks: fewer chunks to convert).
CSV_BLOCK_BYTES = 8 << 20
# ---------------------------------------------------------------- per-entity terms (EntityRLS)
#: EntityRLS: forgetting of each entity term, applied each time the term is touched by an observation
#: (memory of about 1 / (1 - f) observations *of that entity*, so a rarely seen pair is not forgotten by time alone).
ENTITY_FORGETTING = 0.999

#: KernelBlocking (SM blocking per co-runner, log slowdown): the variance of an observation around the
#: model, the prior variances of each model's sensitivity / aggressiveness, of the feature weights and
#: kernel-term coefficients (around the physics' 1) and of the intercept; measured on real H200 runs
#: under spatial sharing (tests/test_blocking.py holds the choice to its accuracy there).
BLOCKING_NOISE_VAR = 0.1
BLOCKING_ENTITY_VAR = 1.0
BLOCKING_COEF_VAR = 1.0
BLOCKING_INTERCEPT_VAR = 100.0
#: KernelBlocking: an under-prediction of log slowdown weighs this many times an over-prediction (an
#: expectile above the median). On the H200 runs with their kernel profiles (20 splits by run / each model
#: out): 1 gives 12.8 % / 22.6 % MAPE with 6.6 % of rows under-predicted by more than 1.5x by run; 3 gives
#: 14.4 % / 24.3 % with 4.7 %.
BLOCKING_UNDER_WEIGHT = 3.0
#: The least variance KernelBlocking gives the terms of a model without rows (the spread of the learned terms,
#: floored here: a handful of models may all fit their physics closely by chance).
BLOCKING_MIN_ENTITY_VAR = 0.01
#: Damped Gauss-Newton iterations of KernelBlocking.fit at most.
BLOCKING_FIT_ITERATIONS = 100
#: Models KernelBlocking gives terms of their own; beyond, a model is served by its kernel terms alone.
BLOCKING_MAX_ENTITIES = 256
#: KernelBlocking: the prior variance of a pair's residual term, and the pairs that get one (beyond, none).
BLOCKING_PAIR_VAR = 0.1
BLOCKING_MAX_PAIRS = 1024
#: EntityRLS: prior variances (zero-mean Gaussian shrinkage) of a model's sensitivity, a co-runner's
#: aggressiveness, a per-pair residual and each latent-factor coordinate, relative to the observation noise
#: variance (1 / variance is the term's ridge penalty: that many pseudo-observations at 0); the centre of the
#: grid ``tune_priors`` searches.
ENTITY_SENSITIVITY_VAR = 0.1
ENTITY_AGGRESSIVENESS_VAR = 0.1
ENTITY_PAIR_VAR = 0.05
ENTITY_FACTOR_VAR = 0.05
#: EntityRLS: observations of a row's own model after which its entity model alone predicts the row; before,
#: the prediction blends in the features-only backoff model with weight 1 - n / ENTITY_BACKOFF_EVIDENCE.
ENTITY_BACKOFF_EVIDENCE = 1.0
#: What EntityRLS backs off to for rows of little evidence: a features-only RLS, the (scaled) global mean, or
#: no interference (solo speed, never scaled).
ENTITY_BACKOFFS = ("rls", "global_mean", "no_interference")
#: EntityRLS: the range of the factor ``fit`` scales its backoff by (``backoff_scale``: the factor of least
#: latency MAPE of the backoff on the fitted rows), and the most rows (evenly spaced) that choose it.
ENTITY_BACKOFF_SCALE_RANGE = (0.25, 4.0)
ENTITY_BACKOFF_SCALE_ROWS = 1 << 20
#: The backoff scale's search: ``ENTITY_BACKOFF_SCALE_STEPS`` geometric steps of this factor either
#: side of the weighted-median start (and 1) ...
ENTITY_BACKOFF_SCALE_STEP = 1.01
ENTITY_BACKOFF_SCALE_STEPS = 10
#: ... and losses within this relative tolerance of the lowest count as tied (the scale nearest 1 wins).
ENTITY_BACKOFF_SCALE_TIE_RTOL = 1e-12
#: Fewest training rows EntityRLS tunes its prior variances on (fewer: the configured ones).
ENTITY_TUNE_MIN_ROWS = 8
#: Share of the training rows (the last ones) the prior-variance tuning validates on.
ENTITY_TUNE_VALIDATION_SHARE = 0.25
#: EntityRLS prior tuning: how many searches are remembered (by a digest of their inputs) and answered
#: again without running (a validated fit tunes the chosen candidate on the same rows twice).
ENTITY_TUNE_MEMO = 32
#: EntityRLS: a new entity's latent factors start at N(0, (ENTITY_FACTOR_INIT * sqrt(factor_var))^2), seeded:
#: non-zero to break the symmetry of the bilinear term, small so that a new entity stays near g(phi).
ENTITY_FACTOR_INIT = 0.1
#: EntityRLS(covariance="auto"): the joint covariance of every parameter (exact RLS, O(N^2) per update) is kept
#: while there are at most this many parameters; beyond, only the global block and each entity term's variance.
ENTITY_FULL_MAX_PARAMS = 512
#: Largest rank of EntityRLS's latent factors.
ENTITY_MAX_RANK = 8
#: Grid of the validation rule that tunes EntityRLS's prior variances (``select_prior_variances``): each
#: value multiplies the given variances of one family (model-level terms; pair-level terms).
ENTITY_VAR_SCALES = (0.1, 1.0, 10.0, 100.0, 1000.0)
# ---------------------------------------------------------------- calibrated latency bounds (interfpred.Calibrated)
#: Quantiles of the target a Calibrated wrapper calibrates by default (each with its complement 1 - q).
CALIBRATED_QUANTILES = (0.5, 0.9, 0.99)
#: Default calibration method: adaptive conformal inference over a rolling window of scores.
CALIBRATED_METHOD = "aci"
CALIBRATED_METHODS = ("aci", "split", "fixed")
#: Scores kept per calibration group (rolling window of the split-conformal quantile).
CALIBRATED_WINDOW = 1000
#: ACI step size gamma (Gibbs & Candes 2021 use 0.005).
CALIBRATED_GAMMA = 0.005
#: Range the ACI level of each quantile is kept in (outside [0, 1] it takes the window's extreme score).
CALIBRATED_TAU_RANGE = (-1.0, 2.0)
#: Score scales: "relative" divides the residual by |prediction| (a latency ratio), "std" by the wrapped
#: predictor's predictive standard deviation, "auto" takes "std" when the predictor offers one (tags.predicts_std).
CALIBRATED_SCALES = ("auto", "relative", "std")
CALIBRATED_GROUPINGS = ("global", "entity")
#: Scores a per-entity (Mondrian) group needs before its own threshold replaces the global one.
CALIBRATED_MIN_GROUP = 100
#: Share of fit's rows (the last ones) scored out of sample to fill the calibration window.
CALIBRATED_CALIBRATION_SHARE = 0.25
#: Smallest score scale, relative to max(|prediction|, 1): keeps scores finite when a std or prediction is 0.
CALIBRATED_MIN_SCALE = 1e-6
#: How far ``(n + 1) q`` may sit from an integer and still count as it, when the conformal rank
#: takes its ceiling (upper levels) or floor (lower ones): absorbs the rounding of levels such as
#: 0.9 that are not binary fractions (``20 * 0.9`` is ``18.000000000000004``).
CONFORMAL_RANK_FUZZ = 1e-9
#: Two quantile levels closer than this are the same level (a requested quantile and a calibrated one).
QUANTILE_LEVEL_ATOL = 1e-9
#: Observations skipped at the start of each stream before coverage is counted in the experiments.
CALIBRATED_WARMUP = 200
#: E3 policy (e): the latency quantile the tracker admits on, and its safety margin (the bound is the margin).
E3_QUANTILE = 0.99
E3_BOUND_MARGIN = 0.0
#: E3 policy (e): score scale and window of its Calibrated RLS (a short window follows the move from the pair
#: data it is fitted on to serving traffic; the relative scale covered better there than RLS's std).
E3_BOUND_SCALE = "relative"
E3_BOUND_WINDOW = 200
# ---------------------------------------------------------------- live tracker and serving (appended)
#: E3 serving loop: a running batch whose time to finish is at most this fraction of the clock (at least
#: 1 ms) counts as finished now (a completion that rounding would otherwise split into two events).
E3_FINISH_TIME_RTOL = 1e-12
#: E3 metrics: a request completed within this relative tolerance of its deadline counts as on time.
E3_DEADLINE_RTOL = 1e-12
# ---------------------------------------------------------------- capture files (Nsight Systems, Kineto, Model Analyzer)
#: Longest range name the batch-name convention and a user's --name-pattern look at; longer names do not parse.
CAPTURE_NAME_MAX = 256
#: Longest --name-pattern, its most alternatives (``a|b``) and its most wildcards per alternative: with these
#: a name is matched in at most O(holes × CAPTURE_NAME_MAX²) steps, whatever the pattern.
CAPTURE_PATTERN_MAX = 200
CAPTURE_PATTERN_ALTERNATIVES = 16
CAPTURE_PATTERN_HOLES = 4
#: NVTX_EVENTS eventType values that are ranges: push/pop and start/end (ENUM_NSYS_EVENT_TYPE), with the
#: NVTXT (text-file) variants.
NSYS_RANGE_EVENT_TYPES = (59, 60, 70, 71)
#: Nsight Systems GPU metrics sampling (``nsys profile --gpu-metrics-devices``) metric names, without their
#: ``[Throughput %]`` suffix and case, and the profile counter each feeds (values are % of peak, divided by
#: 100). The DRAM counter is the read and the write bandwidth of one sample summed; L2 is not sampled.
NSYS_GPU_METRIC_COUNTERS = (("sms active", "sm"), ("sm active", "sm"), ("dram read bandwidth", "dram"),
                            ("dram write bandwidth", "dram"))
#: Mask of a GPU_METRICS ``typeId`` that holds the device ordinal its sample was taken on.
NSYS_GPU_METRIC_DEVICE_MASK = 0xFF
#: First bytes of an Nsight Systems binary report (.nsys-rep, .qdrep), which must be exported to SQLite first.
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"
#: Kineto event categories (lower case) of GPU operations, of the CUDA calls that launch them, and of ranges.
KINETO_GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
KINETO_LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "runtime", "driver")
KINETO_GPU_RANGE_CATEGORY = "gpu_user_annotation"
KINETO_CPU_RANGE_CATEGORIES = ("user_annotation",)
#: Largest CUDA device ordinal a capture may name (``deviceId``, Kineto's ``device``): a machine has a
#: few GPUs (MIG instances included), so a larger one is a damaged field, not a device.
CAPTURE_DEVICE_ID_MAX = 4095
#: How much earlier than the CUDA call that launched it a GPU operation may start (ms): CPU and GPU
#: timestamps come from clocks synchronised to microseconds; a kernel starting before its launch by
#: more is a damaged capture.
CAPTURE_CLOCK_SKEW_MS = 1.0
#: Model Analyzer latency metrics --latency chooses from (client-side, ms); the default one becomes observed_ms.
MODEL_ANALYZER_LATENCIES = {"avg": "perf_latency_avg", "p90": "perf_latency_p90", "p95": "perf_latency_p95",
                            "p99": "perf_latency_p99"}
MODEL_ANALYZER_DEFAULT_LATENCY = "avg"
# ---------------------------------------------------------------- input limits (checked before allocating)
#: Sizes and counts a reader or command accepts, by name.  Each is checked before anything is
#: allocated for it; a refusal names the limit and how to raise it: the environment variable
#: ``INTERFPRED_<NAME>`` (e.g. ``INTERFPRED_INPUT_MAX_BYTES=8589934592``) overrides the default here.
#: INPUT_MAX_BYTES: largest text input file (trace, measurements, profiles, manifest, Nsight export) read.
#: INPUT_MAX_ROWS: most rows of a Parquet or Arrow table (read from its metadata before decoding).
#: WINDOW_MAX: largest ``window`` of a Calibrated predictor (its ring buffer holds that many rows).
#: EXECUTIONS_MAX: most executions ``simulate --executions`` generates.
#: CALLS_MAX: most calls ``bench --calls`` times.
#: REPEATS_MAX: most repeats of ``evaluate --repeats``.
#: JSON_INT_MAX_DIGITS: longest integer literal in a JSON model or predictor file.
#: PATTERN_MAX_CHARS: longest user pattern (--kernel-filter, --nvtx-filter, manifest filter cells).
#: INFLATED_MAX_BYTES: most bytes a gzip capture (``.json.gz``) may inflate to (a small file can inflate to GBs).
#: JSON_MAX_DEPTH: deepest nesting of lists and objects in a capture's JSON (Kineto trace, Model Analyzer
#: checkpoint); real ones nest under ten levels.
#: JSON_MAX_CONTAINERS: most ``{`` and ``[`` in a capture's JSON text, counted before parsing (each
#: becomes a Python object: tens of millions of empty ``{}`` would take gigabytes).
#: NAME_MAX_CHARS: longest name (kernel, NVTX range, model) read from a capture.
#: NAME_CELLS_MAX: most characters of one capture's name column, rows x longest name (a fixed-width array).
#: PLAN_INSTANCES_MAX: most MIG instances ``plan`` (and advise's MIG planner) lays out, estimated from the
#: SLO rates and the fastest configurations before the solver runs.
#: GPUS_MAX: most GPUs ``advise --gpus`` simulates.
#: ADVISE_REQUESTS_MAX: most requests ``advise`` simulates per mechanism (rates x --duration-s, summed).
#: QUANTA_MAX: most time-slicing quanta ``advise`` may simulate, estimated before anything runs as the
#: requests' least solo work over --quantum-ms (the simulation steps through every busy quantum).
#: DASK_WORKERS_MAX: most worker processes ``--workers`` starts for a local Dask cluster.
LIMITS = {
    "INPUT_MAX_BYTES": 2**30,
    "INPUT_MAX_ROWS": 20_000_000,
    "WINDOW_MAX": 10_000_000,
    "EXECUTIONS_MAX": 10_000_000,
    "CALLS_MAX": 100_000_000,
    "REPEATS_MAX": 10_000,
    "JSON_INT_MAX_DIGITS": 40,
    "PATTERN_MAX_CHARS": 256,
    "INFLATED_MAX_BYTES": 2**27,
    "JSON_MAX_DEPTH": 64,
    "JSON_MAX_CONTAINERS": 2**21,
    "NAME_MAX_CHARS": 65_536,
    "NAME_CELLS_MAX": 2**26,
    "PLAN_INSTANCES_MAX": 100_000,
    "GPUS_MAX": 128,
    "ADVISE_REQUESTS_MAX": 500_000,
    "QUANTA_MAX": 20_000,
    "DASK_WORKERS_MAX": 32,
}
#: Seconds ``--dask ADDRESS`` waits for the scheduler to answer before giving up.
DASK_CONNECT_TIMEOUT_S = 5.0
#: Longest ``--dask`` address accepted, in characters (a host name is at most 253).
DASK_ADDRESS_MAX_CHARS = 300
#: Longest integer or number given as text (a CSV cell, an option) that the strict reader accepts, in characters.
NUMBER_MAX_CHARS = 40
#: Longest GPU name taken from a capture (Nsight Systems' TARGET_INFO_GPU, a PyTorch trace's
#: deviceProperties); real ones are under 40 characters.
CAPTURE_GPU_NAME_MAX = 256
#: Largest magnitude of any number in a model file's learned state. RLS's covariance starts at
#: most at RLS_MAX_DELTA (1e15) and sufficient statistics stay far below this; a larger or
#: non-finite value is a corrupted file, refused on load (the latency clamp would hide it).
MODEL_STATE_ABS_MAX = 1e30
#: Prefix of the environment variable that raises a limit of LIMITS.
LIMIT_ENV_PREFIX = "INTERFPRED_"
#: Most alternatives (``a|b``) of a kernel or NVTX filter matched without google-re2.
PATTERN_MAX_ALTERNATIVES = 16

# ---------------------------------------------------------------- provisioning (interfpred plan)
#: Request rates an SLO may ask for, requests/s: below the minimum a model sees no request in any
#: simulated window or plan (a plan "needs 0 GPUs"); above the maximum no deployment is meaningful.
SLO_RATE_MIN_RPS = 1e-3
SLO_RATE_MAX_RPS = 1e9
#: Longest latency SLO accepted, ms (a day): beyond it every configuration meets it and the figures mean nothing.
SLO_LATENCY_MAX_MS = 86_400_000.0
#: Relative shortfall of a model's served rate below its SLO rate that still counts as served
#: (floating-point sums of per-instance throughputs; nothing a request would notice).
PLAN_RATE_RTOL = 1e-9
#: The plan's lower bound is the LP relaxation's value rounded up; within this of an integer it is that integer.
PLAN_LP_BOUND_FUZZ = 1e-9
#: Seconds the integer-program solver may take for one plan before it gives up.
PLAN_TIME_LIMIT_S = 60.0
#: Percentile of request latency the end-to-end rule holds within the SLO (``plan --percentile``).
PLAN_PERCENTILE = 99.0
#: Lognormal spread of one batch's execution time around the table's latency (``plan --exec-sigma``): an
#: assumption (the tables give one latency per configuration); about 5 % at one sigma, ten times the spread of
#: the solo batches measured on an H200 (their p90 within 0.5 % of the median).
PLAN_EXEC_SIGMA = 0.05
#: The share of requests of every model a plan must serve within its SLO in simulation to be called feasible.
PLAN_ATTAINMENT_MIN = 0.99
#: Requests per model the simulation check of a plan draws (``plan --sim-requests``).
PLAN_SIM_REQUESTS = 20_000
#: Seed of the simulation check's arrivals and execution times (``plan --seed``).
PLAN_SEED = 0

# ---------------------------------------------------------------- sharing mechanisms (profile keys)
#: Optional key columns of a profile beside ``share``: how the GPU was shared (``mechanism``), the MIG
#: partition the batch ran in (``partition``: GPCs such as ``3`` or a profile name such as ``3g.40gb``) and
#: how many processes shared it (``processes``). Empty (or absent) means unspecified: today's behaviour.
PROFILE_KEY_COLUMNS = ("mechanism", "partition", "processes")
#: The sharing mechanisms the simulator and ``advise`` model.
MECHANISMS = ("time_slicing", "mps", "mig")
#: The sharing mechanisms a profile or measurement may name: the simulated ones, and ``streams`` (batches on
#: CUDA streams of one process, whose kernels run side by side on the SMs without MPS partitions).
SHARING_MECHANISMS = (*MECHANISMS, "streams")
#: Processes of a profile that does not say (one: the batch's own process alone).
DEFAULT_PROCESSES = 1
#: Most processes a profile, measurement or deployment row may give (far beyond what shares one GPU).
MAX_PROCESSES = 4096

# ---------------------------------------------------------------- simulated sharing mechanisms (interfpred.sim.mechanisms)
#: Time-slicing quantum (ms): under time-slicing one context holds the whole GPU for up to this long while
#: another context has work waiting. Throughput runs show only the ratio of the switch cost to the quantum,
#: not the quantum itself; 2 ms is of the order of the time slices GPU drivers use (an assumption: override it).
SIM_TIMESLICE_QUANTUM_MS = 2.0
#: Share of one workload's solo throughput two workloads kept together when time-sliced between processes on an
#: H200 (0.76-0.79 over the measured pairs; this is the middle). Each member of a pair was slowed a median 2.6x,
#: which is 2 / 0.775: the rest of the GPU's time went to switching.
H200_TIMESLICE_KEPT = 0.775
#: Context-switch cost (ms) under time-slicing: the GPU does no work while it changes contexts. With two
#: contexts always busy a quantum ``q`` of work costs ``q + c``, so the kept throughput is ``q / (q + c)`` and
#: ``c = q (1 / kept - 1)``: 0.581 ms for the H200's 0.775 at a 2 ms quantum
#: (:func:`interfpred.sim.switch_cost_ms`).
SIM_CONTEXT_SWITCH_MS = 0.581

# ---------------------------------------------------------------- interfpred advise (interfpred.provisioning.advise)
#: The GPU advise runs on when neither --gpu nor the profiles say (the simulator's ``a100`` preset, an
#: A100-40GB, whose synthetic zoo it then simulates).
ADVISE_DEFAULT_GPU = "a100-40gb"
#: Simulated seconds of requests per mechanism (Poisson arrivals at each model's rate).
ADVISE_DURATION_S = 10.0
#: The setups advise tries for every mechanism, best kept: under one fraction ``f`` a model's batch
#: size is the largest profiled one whose solo latency (the whole GPU's under MPS and time-slicing,
#: its instance's under MIG) is at most ``f`` times its latency SLO, leaving the rest for queueing and
#: interference (the smallest batch if none is). Smaller fractions: smaller batches, lower latency,
#: less throughput per batch.
ADVISE_SLO_FRACTIONS = (0.5, 0.25, 0.125)
#: MIG instances are planned to serve each model's rate divided by this utilisation (headroom
#: against queueing at Poisson arrivals).
ADVISE_UTILISATION = 0.8
#: Most MPS processes of one model inside one MIG instance that the MIG planner considers.
ADVISE_MAX_PROCESSES = 3
#: Seed of arrivals and noise (every mechanism sees the same request rates).
ADVISE_SEED = 0
#: Fewest requests each model must expect in the simulated window (rate x duration): below it the
#: workload is degenerate (an empty ranking, "needs 0 GPUs", NaN figures) and is refused, not ranked.
ADVISE_MIN_REQUESTS = 1
#: Ranking steps: attainment and the served share of the offered requests are compared in steps of
#: this fraction (differences below it are the Poisson draws' and requests in flight at the window's
#: end, not the mechanism's); within a step the lower p99 response time ranks first.
ADVISE_RANK_STEP = 0.005
#: How advise models batches sharing the SMs: ``fluid`` (the simulator's truth over SM / L2 / DRAM
#: throughputs) or ``kernels`` (kernel blocking fitted on the shipped H200 spatial-sharing runs).
CONTENTION_MODELS = ("fluid", "kernels")

# ---------------------------------------------------------------------------- interfpred serve
#: Address ``interfpred serve`` listens on unless told otherwise: loopback only (any other address
#: needs a bearer token or mutual TLS).
SERVE_DEFAULT_HOST = "127.0.0.1"
SERVE_DEFAULT_PORT = 8484
#: Largest request body, bytes (a kube-scheduler ``ExtenderArgs`` with full Node objects of a few
#: hundred nodes fits; a body over it is refused with 413 before it is parsed).
SERVE_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Deepest nesting of lists and objects in a request body (a Pod or Node object is about 10 deep).
SERVE_MAX_JSON_DEPTH = 64
#: Most nodes one extender request may name (Kubernetes supports clusters of 5,000 nodes).
SERVE_MAX_NODES = 5000
#: Most candidates one what_if request may launch together.
SERVE_MAX_CANDIDATES = 64
#: Longest execution id, device name or model name a request may carry, characters (a Kubernetes
#: object name is at most 253).
SERVE_MAX_NAME_CHARS = 253
#: Journal records between two snapshots (a snapshot also compacts the log).
SERVE_SNAPSHOT_EVERY = 10_000
#: Pod annotations an extender request reads: the model, its batch size and the latency SLO (ms).
SERVE_ANNOTATION_MODEL = "interfpred.io/model"
SERVE_ANNOTATION_BATCH = "interfpred.io/batch-size"
SERVE_ANNOTATION_SLO = "interfpred.io/slo-ms"
#: How long (ms) after a pod's filter call its prioritize call may reuse the filter's assessment, when
#: no start, finish or cancel came in between (kube-scheduler calls one right after the other).
SERVE_REUSE_MS = 1000.0

# ---------------------------------------------------------------------------- interfpred measure
#: Mechanisms ``interfpred measure`` runs: streams of one process, processes time-sliced, MPS clients, MIG instances.
MEASURE_MECHANISMS = ("streams", "time_slicing", "mps", "mig")
#: Data types a measured workload may run in (names on the command line).
MEASURE_DTYPES = ("fp16", "bf16", "fp32")
#: Data type of a workload spec that names none.
MEASURE_DEFAULT_DTYPE = "fp16"
#: Seconds every member of a measured run runs back to back; the counted part leaves MEASURE_MARGIN_S at each end.
MEASURE_WINDOW_S = 0.8
#: Seconds at each end of a measuring window whose batches are not counted (start-up and wind-down).
MEASURE_MARGIN_S = 0.15
#: Batches a measuring worker keeps queued on the GPU ahead of the one it waits for.
MEASURE_QUEUE_DEPTH = 3
#: Warm-up batches of a workload before its graph is captured (allocator, cuDNN/cuBLAS autotuning).
MEASURE_WARMUP_BATCHES = 3
#: Seconds a measuring worker may take to build and capture its workloads before it is given up.
MEASURE_READY_TIMEOUT_S = 300.0
#: Seconds beyond its window a run may take to answer before its workers are given up.
MEASURE_ANSWER_GRACE_S = 60.0
#: Seconds Nsight Compute may take to profile one workload's batch (start-up included) before it is stopped.
MEASURE_NCU_TIMEOUT_S = 120.0
#: Input side (pixels) of a torchvision image model's batch.
MEASURE_IMAGE_SIDE = 224
#: Default folder of the MPS control daemon's pipes (``CUDA_MPS_PIPE_DIRECTORY`` overrides it).
MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"
#: Seconds between a run command and the instant its members start (the command reaches every worker first).
MEASURE_START_LEAD_S = 0.02
#: Seconds a profiler stopped at its time limit gets, after its interrupt, to write what it has before it is killed.
MEASURE_PROFILER_STOP_GRACE_S = 10.0
#: The fake device: seconds its profiler spends on each kernel, and the extra slowdown per additional
#: member under time-slicing (context switches).
MEASURE_FAKE_KERNEL_S = 0.002
MEASURE_FAKE_SWITCH_COST = 0.05
#: Most workloads one campaign measures (every pair of 64 is 2,080 runs, hours of GPU time).
MEASURE_MAX_WORKLOADS = 64
#: Most members of one measured run.
MEASURE_MAX_MEMBERS = 16
