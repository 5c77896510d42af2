"""The ``interfpred`` command line: argument parsing and wiring only.

Every subcommand calls library functions; any feature here is usable from Python first.
Errors on bad input print one line, ``interfpred: error: ...``, and exit with status 2.

Each subcommand is a pair of functions, ``_add_<name>(subparsers)`` which declares its
arguments and ``_run_<name>(args) -> int``; :data:`_COMMANDS` lists the ``_add_`` functions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from interfpred._version import __version__
from interfpred.errors import InterfpredError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own convention)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


_COMMANDS: list = []


# ---------------------------------------------------------------------------- ingest
def _add_ingest(sub) -> None:
    p = sub.add_parser(
        "ingest",
        help="turn Nsight Compute output into solo profiles",
        description=(
            "Read ncu --csv output (details or raw page) or .ncu-rep reports into solo profiles "
            "(gpu,model,batch_size,solo_ms,sm,l2,dram) and print them. Give --gpu/--model/"
            "--batch-size once for all files or once per file, in order; or list runs in a "
            "--manifest CSV (file,gpu,model,batch_size[,iterations]). --out merges into an "
            "existing file (a conflicting duplicate is refused and the file kept intact)."),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="ncu --csv output or .ncu-rep report")
    p.add_argument("--gpu", action="append", help="GPU name (once, or once per file)")
    p.add_argument("--model", action="append", help="model name (once, or once per file)")
    p.add_argument("--batch-size", action="append", type=int, help="batch size (once, or once per file)")
    p.add_argument("--iterations", action="append", type=int,
                   help="batches the profiled run executed; solo_ms = kernel time / iterations (default 1)")
    p.add_argument("--kernel-filter", action="append", metavar="REGEX",
                   help="keep only kernels whose name matches (re.search)")
    p.add_argument("--nvtx-filter", action="append", metavar="REGEX",
                   help="keep only kernels whose NVTX range stack matches (needs ncu --nvtx)")
    p.add_argument("--share", type=float, default=None, metavar="P",
                   help="MPS active thread percentage the profiled runs used, in (0, 100] (default 100)")
    p.add_argument("--manifest", help="CSV of runs: file,gpu,model,batch_size[,iterations][,share]")
    p.add_argument("--out", help="tidy profile CSV to write, or merge into if it exists")
    p.add_argument("--overwrite", action="store_true", help="replace --out instead of merging into it")
    p.add_argument("--example", action="store_true",
                   help="ingest the bundled example (B200 cuBLASLt GEMM, details page)")
    p.set_defaults(func=_run_ingest)


def _per_file(values, name: str, n: int, default=None) -> list:
    if values is None:
        if default is None:
            raise InterfpredError(f"--{name} is required (once, or once per file)")
        return [default] * n
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise InterfpredError(f"--{name} given {len(values)} times for {n} files: give it once or once per file")
    return list(values)


def _run_ingest(args) -> int:
    from interfpred import constants
    from interfpred.ingest import (
        ManifestEntry,
        example_path,
        profile_from_kernels,
        read_kernels,
        read_manifest,
        write_profiles,
    )
    from interfpred.ingest.tables import ProfileConflict
    from interfpred.profiles import ProfileTable

    sources = int(bool(args.files)) + int(args.manifest is not None) + int(args.example)
    if sources != 1:
        raise InterfpredError("give ncu files, or --manifest runs.csv, or --example (exactly one of them)")
    if args.manifest is not None:
        if any(v is not None for v in (args.gpu, args.model, args.batch_size, args.iterations,
                                       args.kernel_filter, args.nvtx_filter)):
            raise InterfpredError("--manifest carries gpu/model/batch_size per run; do not also pass them as flags")
        entries = read_manifest(args.manifest)
    else:
        files = [str(example_path())] if args.example else list(args.files)
        if args.example:
            print(f"example: {files[0]} (Nsight Compute details page, B200 cuBLASLt GEMM)", file=sys.stderr)
        n = len(files)
        ex = args.example
        gpus = _per_file(args.gpu, "gpu", n, constants.NCU_EXAMPLE_GPU if ex else None)
        models = _per_file(args.model, "model", n, constants.NCU_EXAMPLE_MODEL if ex else None)
        batches = _per_file(args.batch_size, "batch-size", n, constants.NCU_EXAMPLE_BATCH_SIZE if ex else None)
        iters = _per_file(args.iterations, "iterations", n, 1)
        kfilt = _per_file(args.kernel_filter, "kernel-filter", n, "") if args.kernel_filter else [None] * n
        nfilt = _per_file(args.nvtx_filter, "nvtx-filter", n, "") if args.nvtx_filter else [None] * n
        entries = [ManifestEntry(file=f, gpu=g, model=m, batch_size=b, iterations=i,
                                 kernel_filter=k, nvtx_filter=v)
                   for f, g, m, b, i, k, v in zip(files, gpus, models, batches, iters, kfilt, nfilt)]
    profiles = []
    seen: dict = {}
    for e in entries:
        kernels = read_kernels(e.file)
        where = f"{args.manifest} line {e.line}" if args.manifest is not None else e.file
        try:
            prof = profile_from_kernels(
                kernels, gpu=e.gpu, model=e.model, batch_size=e.batch_size, iterations=e.iterations,
                kernel_filter=e.kernel_filter, nvtx_filter=e.nvtx_filter)
        except InterfpredError as exc:
            raise InterfpredError(f"{where}: {exc}") from None
        share = args.share if e.share is None else e.share
        if share is not None:
            if not 0.0 < share <= 100.0:
                raise InterfpredError(f"--share {share:g} must be an MPS active thread percentage in (0, 100]")
            prof = prof.model_copy(update={"share": float(share)})
        key = (prof.gpu, prof.model, prof.batch_size, prof.share)
        if key in seen:
            other, other_where = seen[key]
            if other != prof:
                raise InterfpredError(
                    f"{where}: profile for (gpu={prof.gpu!r}, model={prof.model!r}, batch_size="
                    f"{prof.batch_size}) disagrees with the one from {other_where}: solo_ms "
                    f"{prof.solo_ms:.6g} vs {other.solo_ms:.6g}")
            continue
        seen[key] = (prof, where)
        profiles.append(prof)
    table = ProfileTable.from_profiles(profiles)
    if args.out is not None:
        try:
            written = write_profiles(table, args.out, append=not args.overwrite)
        except ProfileConflict as exc:
            raise InterfpredError(f"{exc} (the new profile comes from {seen[exc.key][1]})") from None
        n = len(written)
        print(f"wrote {n} profile{'' if n == 1 else 's'} to {args.out}", file=sys.stderr)
    sys.stdout.write(table.to_csv_text())
    return 0


_COMMANDS.append(_add_ingest)
def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="time predict/update of the predictors on this machine",
                       description="Microseconds per sample for predict and update, single rows and "
                                   "batches of 1,000, with ratios against RLS and peer libraries.")
    p.add_argument("--d", type=int, nargs="+", default=[6, 12, 24], help="feature widths (default 6 12 24)")
    p.add_argument("--predictor", action="append", default=None,
                   help="predictor kind (rls, online_sgd, offline_linear, gpulets); repeatable; default all")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="hyperparameter for the chosen predictor(s), e.g. forgetting=0.99; repeatable")
    p.add_argument("--n", type=int, default=20_000, help="single-row calls per measurement (default 20000)")
    p.add_argument("--no-peers", action="store_true", help="skip river, scikit-learn and padasip")
    p.set_defaults(func=_run_bench)


def _run_bench(args) -> int:
    from interfpred.benchmarking import first_call_seconds, format_bench, missing_peers, parse_param, run_bench
    from interfpred.predictors import make_predictor

    params = dict(parse_param(t) for t in args.param)
    first = first_call_seconds()
    predictors = None
    if args.predictor or params:
        kinds = args.predictor or ["rls"]
        predictors = [make_predictor(k, **params) for k in kinds]
        if "rls" not in kinds:
            predictors.insert(0, make_predictor("rls"))
    rows = run_bench(args.d, predictors, n=args.n, peers=not args.no_peers)
    if not args.no_peers:
        for name in missing_peers():
            print(f"note: {name} is not installed, so its row is skipped (pip install {name})", file=sys.stderr)
    print(f"first RLS update+predict in this process (compile or numba cache load): {first * 1e3:.1f} ms")
    print(format_bench(rows))
    return 0


_COMMANDS.append(_add_bench)
def _add_truth_options(p, *, operators: bool) -> None:
    """--truth / --zoo (and --operators) of simulate and reproduce."""
    from interfpred.constants import SIM_DEFAULT_TRUTH, SIM_TRUTHS, SIM_ZOOS

    p.add_argument("--truth", choices=SIM_TRUTHS, default=SIM_DEFAULT_TRUTH,
                   help="ground truth: phases (operator phases, hidden per-model factors; default) or fluid "
                        "(one demand vector per execution, the earlier simulator)")
    p.add_argument("--zoo", choices=SIM_ZOOS, default=None,
                   help="model family: orion (real V100 operator tables, derived demands; default on v100 with "
                        "--truth phases) or synthetic (default elsewhere); with --truth fluid, orion runs the "
                        "passes' time-averaged profiles")
    if operators:
        p.add_argument("--operators", action="store_true",
                       help="also write operators.csv, the operator-level profile (--truth phases)")


def _add_simulate(sub) -> None:
    p = sub.add_parser(
        "simulate", help="simulate traces on a synthetic GPU (ground truth, no GPU needed)",
        description="Simulate executions on the synthetic model zoo and write profiles.csv, one trace CSV per "
                    "set and scenario.json into a new folder (written beside it, then renamed).")
    p.add_argument("--scenario", choices=("paper", "mix"), default="paper",
                   help="paper: the E2 sets train/test1/test2/test3; mix: one trace of --models at --rho")
    p.add_argument("--gpu", default="l4", help="GPU preset (l4, a100, v100); default l4")
    _add_truth_options(p, operators=True)
    p.add_argument("--seed", type=int, default=0, help="seed of arrivals and noise (default 0)")
    p.add_argument("--out", required=True, help="output folder (must not exist or be empty, unless --force)")
    p.add_argument("--executions", type=int, default=None, help="executions per set (default 20000)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs per set (default 1)")
    p.add_argument("--models", default=None, help="mix: comma-separated model names")
    p.add_argument("--rho", type=float, default=None, help="mix: offered utilisation per GPU")
    p.add_argument("--batch-sizes", default=None, help="mix: comma-separated batch sizes (default all profiled)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv",
                   help="file format of the profiles and traces (parquet needs pyarrow; default csv)")
    p.set_defaults(func=_run_simulate)


def _run_simulate(args) -> int:
    from interfpred.constants import SIM_DEFAULT_EXECUTIONS
    from interfpred.sim.workload import mix_scenario, paper_scenario, write_scenario

    n = SIM_DEFAULT_EXECUTIONS if args.executions is None else args.executions
    if args.scenario == "paper":
        extra = [f"--{k.replace('_', '-')}" for k in ("models", "rho", "batch_sizes") if getattr(args, k) is not None]
        if extra:
            raise InterfpredError(f"{', '.join(extra)}: apply only to --scenario mix")
        scenario = paper_scenario(args.gpu, seed=args.seed, executions=n, n_devices=args.gpus, truth=args.truth,
                                  zoo=args.zoo)
    else:
        if args.models is None or args.rho is None:
            raise InterfpredError("--scenario mix needs --models and --rho")
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        batches = None
        if args.batch_sizes is not None:
            try:
                batches = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
            except ValueError:
                raise InterfpredError(f"--batch-sizes {args.batch_sizes!r} must be comma-separated integers") from None
        scenario = mix_scenario(models, rho=args.rho, spec=args.gpu, seed=args.seed, executions=n,
                                batch_sizes=batches, n_devices=args.gpus, truth=args.truth, zoo=args.zoo)
    names = write_scenario(scenario, args.out, force=args.force, operators=args.operators, format=args.format)
    sizes = ", ".join(f"{k}.{args.format} ({len(t)} executions)" for k, t in scenario.traces.items())
    ops = ", operators.csv" if args.operators else ""
    source = scenario.source
    print(f"wrote {args.out}: {names[0]}, {sizes}{ops}, {names[-1]} ({source}, {scenario.truth} truth, "
          f"gpu {scenario.spec.name}, seed {args.seed})")
    return 0


_COMMANDS.append(_add_simulate)



# ---------------------------------------------------------------------------- reproduce
def _add_reproduce(sub) -> None:
    from interfpred.constants import REPRODUCE_DEFAULT_OUT

    p = sub.add_parser(
        "reproduce", help="run the paper's experiments on the simulator and write a report",
        description="Run E1 (co-location dynamics) and E2 (workload change) on simulated traces, with "
                    "interfpred's best configuration beside the paper's methods, and E3 (SLO-aware scheduling "
                    "with the tracker), and E4 (accuracy on real measured V100 pairs, every predictor beside the "
                    "baselines); print the tables and write "
                    "report.md, results.json and the figures into --out (written beside it, then renamed).")
    p.add_argument("--quick", action="store_true", help="smaller traces (about a minute on two cores)")
    p.add_argument("--out", default=REPRODUCE_DEFAULT_OUT, help=f"output folder (default ./{REPRODUCE_DEFAULT_OUT})")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated workloads (default 0)")
    p.add_argument("--gpu", default=None, help="simulated GPU preset: v100, l4 or a100 (default v100; l4 with "
                                               "--truth fluid)")
    _add_truth_options(p, operators=False)
    p.add_argument("--force", action="store_true", help="replace an --out that already holds a report")
    p.set_defaults(func=_run_reproduce)


def _run_reproduce(args) -> int:
    import shlex
    import time

    from interfpred.experiments.reproduce import format_terminal, reproduce

    t0 = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f} s] {message}", file=sys.stderr, flush=True)

    argv = getattr(args, "_argv", None)
    command = shlex.join(["interfpred", *argv]) if argv is not None else None
    sections = reproduce(args.out, quick=args.quick, seed=args.seed, force=args.force, progress=progress,
                         gpu=args.gpu, command=command, truth=args.truth, zoo=args.zoo)
    print(format_terminal(sections))
    print(f"wrote {args.out}/report.md and results.json in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


_COMMANDS.append(_add_reproduce)


# ---------------------------------------------------------------------------- fit / evaluate / predict
def _add_fit(sub) -> None:
    from interfpred.constants import (
        AGGREGATIONS,
        COMBINES,
        FEATURE_MAPS,
        MODEL_DEFAULT_EXTRACTOR,
        TARGETS,
    )

    d = dict(MODEL_DEFAULT_EXTRACTOR)
    p = sub.add_parser(
        "fit", help="fit an interference model on a trace and/or measurement runs",
        description="Compute features of every execution of --trace (profiles from --profiles) and of every "
                    "row of --measurements, fit the predictor and the three baselines on them, and save the "
                    "extractor's spec and the predictors' states in one JSON file. Without --map, a map the "
                    "profiles' counters support is chosen and named.")
    p.add_argument("--profiles", help="tidy profile CSV (gpu,model,batch_size,solo_ms[,sm,l2,dram,share]); "
                                      "needed with --trace, optional with --measurements")
    p.add_argument("--trace", help="trace CSV (id,gpu,model,batch_size,start_ms,end_ms[,share])")
    p.add_argument("--measurements", help="measurement runs, CSV or Parquet "
                                          "(run,gpu,model,batch_size[,share],solo_ms,observed_ms), or "
                                          "dataset:gavel_v100 for the shipped real data")
    p.add_argument("--predictor", default="rls", help="predictor kind: rls, online_sgd, offline_linear, ... "
                                                     "(default rls)")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="predictor hyperparameter, e.g. forgetting=0.99; repeatable")
    p.add_argument("--aggregation", choices=AGGREGATIONS, default=d["aggregation"],
                   help=f"temporal aggregation (default {d['aggregation']})")
    p.add_argument("--alpha", type=float, default=None, help="EWMA weight of the newest value (ewma only)")
    p.add_argument("--map", choices=FEATURE_MAPS, default=None,
                   help=f"feature map (default {d['map']}, or one the profiles' counters support)")
    p.add_argument("--shares", action="store_true", help="append the MPS share features to the map")
    p.add_argument("--measurement-weight", type=float, default=None, metavar="W",
                   help="weight of every measurement row against trace rows (weight 1) when both are given; "
                        "for predictors that take row weights (offline_linear and the baselines)")
    p.add_argument("--combine", choices=COMBINES, default=d["combine"],
                   help=f"how co-runners combine (default {d['combine']})")
    p.add_argument("--target", choices=TARGETS, default=d["target"], help=f"learning target (default {d['target']})")
    p.add_argument("--out", required=True, help="model file to write (JSON, atomically)")
    p.add_argument("--dask", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Dask, one task per GPU of the Parquet trace files --trace names (a folder, a glob "
                        "or a file): a new local cluster, or the scheduler at ADDRESS (needs interfpred[fleet])")
    p.add_argument("--workers", type=int, default=None, help="worker processes of the local Dask cluster "
                                                             "(default: one per CPU core)")
    p.add_argument("--calibrate", choices=("aci", "split", "fixed"), default=None,
                   help="wrap the predictor in Calibrated (conformal latency bounds) with this method")
    p.add_argument("--quantiles", type=float, nargs="+", default=None, metavar="Q",
                   help="quantiles --calibrate calibrates (default 0.5 0.9 0.99)")
    p.set_defaults(func=_run_fit)


def _load_inputs(args):
    """(profiles, trace, measurements) from --profiles, --trace and --measurements (None when absent)."""
    from interfpred.measurements import Measurements

    trace_path = getattr(args, "trace", None)
    meas_path = getattr(args, "measurements", None)
    if trace_path is None and meas_path is None:
        raise InterfpredError("give --trace (with --profiles) or --measurements")
    if trace_path is not None and args.profiles is None:
        raise InterfpredError("--trace needs --profiles (solo latency and counters of each model)")
    from interfpred.columnar import (  # CSV, Parquet or Arrow by suffix
        read_profiles,
        read_trace,
    )

    profiles = None if args.profiles is None else read_profiles(args.profiles)
    trace = None if trace_path is None else read_trace(trace_path)
    if meas_path is not None and meas_path.startswith("dataset:"):
        from interfpred.datasets import load_dataset

        meas = load_dataset(meas_path.removeprefix("dataset:"))
    else:
        meas = None if meas_path is None else Measurements.read(meas_path)
    return profiles, trace, meas


def _print_summary(summary, title: str, baselines=None) -> None:
    from interfpred.evaluation import BASELINE_LABELS
    from interfpred.experiments.report import text_table

    baselines = baselines or {}
    header = ["metric", "model", *(BASELINE_LABELS.get(k, k) for k in baselines)]
    rows = [[k, v, *(b.as_dict()[k] for b in baselines.values())] for k, v in summary.as_dict().items()]
    print(title)
    print(text_table(header, rows))
    if not baselines:
        print("(this model file holds no baselines: refit it with 'interfpred fit' to see them beside the model)")


def _run_fit(args) -> int:
    from interfpred.benchmarking import parse_param
    from interfpred.constants import MODEL_DEFAULT_EXTRACTOR
    from interfpred.features import make_extractor
    from interfpred.model import InterferenceModel
    from interfpred.predictors import make_predictor

    spec = {"aggregation": args.aggregation, "combine": args.combine, "target": args.target,
            "map": dict(MODEL_DEFAULT_EXTRACTOR)["map"] if args.map is None else args.map}
    if args.shares:
        spec["shares"] = True
    if args.alpha is not None:
        spec["alpha"] = args.alpha
    make_extractor(spec)  # a bad combination fails before any file is read
    predictor = make_predictor(args.predictor, **dict(parse_param(t) for t in args.param))
    if args.quantiles is not None and args.calibrate is None:
        raise InterfpredError("--quantiles applies only with --calibrate")
    if args.calibrate is not None:
        from interfpred.predictors import Calibrated

        if args.quantiles is None:
            predictor = Calibrated(predictor, method=args.calibrate)
        else:
            predictor = Calibrated(predictor, method=args.calibrate, quantiles=tuple(args.quantiles))
    if args.dask is not None:
        return _run_fit_dask(args, spec, predictor)
    profiles, trace, meas = _load_inputs(args)
    model = InterferenceModel(spec, predictor)
    model.auto_map = args.map is None
    weights = None
    if args.measurement_weight is not None:
        if trace is None or meas is None:
            raise InterfpredError("--measurement-weight weighs measurement rows against trace rows: give both")
        weights = [1.0] * len(trace) + [args.measurement_weight] * len(meas)
    model.fit(trace, profiles, measurements=meas, weights=weights)
    if model.note:
        print(f"interfpred: {model.note}", file=sys.stderr)
    model.save(args.out)
    for name, data in (("executions", trace), ("measurement rows", meas)):
        if data is not None:
            kw = {"measurements": data} if name != "executions" else {"trace": data}
            ev = model.evaluate(profiles=profiles, **kw)
            _print_summary(ev.summary, f"fit on {len(data)} {name} (training accuracy)", ev.baselines)
    print(f"wrote {args.out}: {model!r}", file=sys.stderr)
    return 0


_COMMANDS.append(_add_fit)


def _dask_inputs(args):
    """(profiles, partitions' files) for --dask: a Parquet trace in files, profiles in any format."""
    from interfpred.columnar import read_profiles
    from interfpred.distributed import trace_files

    if args.trace is None or args.profiles is None:
        raise InterfpredError("--dask needs --trace (Parquet files: a folder, a glob or a file) and --profiles")
    if getattr(args, "measurements", None) is not None:
        raise InterfpredError("--dask partitions traces by GPU; fit or evaluate --measurements without it")
    if args.workers is not None and (args.workers < 1 or args.dask):
        raise InterfpredError("--workers sizes a new local cluster: a positive number, and --dask without an address")
    return read_profiles(args.profiles), trace_files(args.trace)


def _run_fit_dask(args, spec, predictor) -> int:
    from interfpred.distributed import fit_dask
    from interfpred.model import InterferenceModel

    if args.measurement_weight is not None:
        raise InterfpredError("--measurement-weight does not apply with --dask (traces only)")
    profiles, files = _dask_inputs(args)
    model = InterferenceModel(spec, predictor)
    model.auto_map = args.map is None
    report: dict = {}
    fit_dask(files, profiles, model, address=args.dask or None, n_workers=args.workers, report=report)
    if model.note:
        print(f"interfpred: {model.note}", file=sys.stderr)
    model.save(args.out)
    rows = sum(r["rows"] for r in report.values())
    print(f"wrote {args.out}: {model!r}, fitted on {rows} executions of {len(report)} GPUs in {len(files)} files "
          "(Dask, merged per GPU)", file=sys.stderr)
    return 0


def _run_evaluate_dask(args, model) -> int:
    from interfpred.distributed import evaluate_dask

    profiles, files = _dask_inputs(args)
    ev = evaluate_dask(files, profiles, model, online=args.online, address=args.dask or None,
                       n_workers=args.workers)
    how = "online (prequential per GPU)" if args.online else "offline"
    _print_summary(ev.summary, f"{how} evaluation of {args.model} on {ev.summary.n} executions (Dask)",
                   ev.baselines)
    return 0


def _add_evaluate(sub) -> None:
    p = sub.add_parser(
        "evaluate", help="accuracy of a saved model on a trace or measurements, beside the baselines",
        description="Predict every execution of --trace (or row of --measurements) with --model and print the "
                    "accuracy (MSE of slowdown, relative errors of latency) beside the three baselines fitted on "
                    "the model's training rows. With --online, prequentially: predict each execution at its launch "
                    "(each run with what earlier runs taught), learn from it once finished (the model file is not "
                    "changed). With --split, hold out part of --measurements instead: fit the model's "
                    "configuration afresh on the rest, --repeats times (pair: by run; model: leave-one-model-out).")
    p.add_argument("--model", help="model file written by 'interfpred fit' (with --split: only its configuration "
                                   "is used; default configuration when omitted)")
    p.add_argument("--trust-model-file", action="store_true",
                   help="allow a model wrapping a river/scikit-learn estimator, stored as a pickle: loading it "
                        "runs code from the file, so pass this only for files you wrote yourself")
    p.add_argument("--profiles", help="tidy profile CSV (needed with --trace)")
    p.add_argument("--trace", help="trace CSV")
    p.add_argument("--measurements", help="measurement runs, CSV or Parquet, or dataset:gavel_v100")
    p.add_argument("--online", action="store_true", help="prequential evaluation (predict, then learn)")
    p.add_argument("--quantile", type=float, nargs="+", default=None, metavar="Q",
                   help="also print coverage, width and interval score of the latency bounds at these quantiles, "
                        "overall and per model, beside the quantile baseline (a model fitted with --calibrate)")
    p.add_argument("--warmup", type=int, default=0, help="leading executions left out of the coverage (default 0)")
    p.add_argument("--split", choices=("pair", "model"), default=None,
                   help="held-out evaluation inside --measurements: pair = 70/30 by run, model = leave-one-model-out")
    p.add_argument("--repeats", type=int, default=None, help="seeded repeats of --split pair (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of --split pair (default 0)")
    p.add_argument("--dask", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Dask, one task per GPU of the Parquet trace files --trace names (a folder, a glob "
                        "or a file): a new local cluster, or the scheduler at ADDRESS (needs interfpred[fleet])")
    p.add_argument("--workers", type=int, default=None, help="worker processes of the local Dask cluster "
                                                             "(default: one per CPU core)")
    p.set_defaults(func=_run_evaluate)


def _run_evaluate(args) -> int:
    from interfpred.model import load_model

    if args.split is not None:
        return _run_split(args)
    if args.repeats is not None:
        raise InterfpredError("--repeats applies to --split only")
    if args.model is None:
        raise InterfpredError("--model is required (a model file written by 'interfpred fit'), or use --split")
    if args.trace is not None and args.measurements is not None:
        raise InterfpredError("evaluate one data set at a time: --trace or --measurements")
    model = load_model(args.model, trusted=args.trust_model_file)
    if args.dask is not None:
        return _run_evaluate_dask(args, model)
    profiles, trace, meas = _load_inputs(args)
    ev = model.evaluate(trace, profiles, measurements=meas, online=args.online)
    n, what = (len(trace), "executions") if trace is not None else (len(meas), "measurement rows")
    _print_summary(ev.summary, f"{'online (prequential)' if args.online else 'offline'} evaluation of "
                               f"{args.model} on {n} {what}", ev.baselines)
    if args.quantile:
        from interfpred.calibration import evaluate_coverage, format_coverage

        cov = evaluate_coverage(model, trace, profiles, args.quantile, measurements=meas, online=args.online,
                                skip=args.warmup)
        print(f"latency bounds (coverage: share of {what} at or below the bound; width and interval score "
              f"in slowdown units; first {args.warmup} skipped)")
        print(format_coverage(cov))
    return 0


def _run_split(args) -> int:
    from interfpred.constants import E4_REPEATS
    from interfpred.experiments.real import split_table
    from interfpred.model import InterferenceModel, load_model

    if args.measurements is None or args.trace is not None:
        raise InterfpredError("--split evaluates inside one --measurements file (not a trace)")
    if args.split == "model" and args.repeats is not None:
        raise InterfpredError("--repeats applies to --split pair (leave-one-model-out holds each model out once)")
    profiles, _, meas = _load_inputs(args)
    model = load_model(args.model, trusted=args.trust_model_file) if args.model is not None else InterferenceModel()
    model.choose_map(profiles)
    if model.note:
        print(f"interfpred: {model.note}", file=sys.stderr)
    repeats = E4_REPEATS if args.repeats is None else args.repeats
    print(split_table(model.extractor, model.predictor, meas, profiles, split=args.split, repeats=repeats,
                      seed=args.seed, online=args.online))
    return 0


_COMMANDS.append(_add_evaluate)


def _add_predict(sub) -> None:
    p = sub.add_parser(
        "predict", help="predicted latencies of a trace's executions or of measurement rows",
        description="Write id, predicted_latency_ms, predicted_slowdown and observed_latency_ms for every "
                    "execution of --trace (or run, model, batch_size, share and the same three for every row of "
                    "--measurements) to a CSV (atomically).")
    p.add_argument("--model", required=True, help="model file written by 'interfpred fit'")
    p.add_argument("--trust-model-file", action="store_true",
                   help="allow a model wrapping a river/scikit-learn estimator, stored as a pickle: loading it "
                        "runs code from the file, so pass this only for files you wrote yourself")
    p.add_argument("--profiles", help="tidy profile CSV (needed with --trace)")
    p.add_argument("--trace", help="trace CSV")
    p.add_argument("--measurements", help="measurement runs, CSV or Parquet, or dataset:gavel_v100")
    p.add_argument("--out", required=True, help="predictions file to write: CSV, or .parquet / .arrow")
    p.add_argument("--quantile", type=float, nargs="+", default=None, metavar="Q",
                   help="one more column per quantile, latency_q<Q>_ms: the latency bound at Q "
                        "(a model fitted with --calibrate)")
    p.set_defaults(func=_run_predict)


def _run_predict(args) -> int:
    from interfpred.model import (
        load_model,
        write_measurement_predictions,
        write_predictions,
    )

    if args.trace is not None and args.measurements is not None:
        raise InterfpredError("predict one data set at a time: --trace or --measurements")
    model = load_model(args.model, trusted=args.trust_model_file)
    profiles, trace, meas = _load_inputs(args)
    quantiles = tuple(args.quantile or ())
    if trace is not None:
        n = write_predictions(model, trace, profiles, args.out, quantiles=quantiles)
    else:
        n = write_measurement_predictions(model, meas, profiles, args.out, quantiles=quantiles)
    print(f"wrote {n} predictions to {args.out}", file=sys.stderr)
    return 0


_COMMANDS.append(_add_predict)


def _add_datasets(sub) -> None:
    p = sub.add_parser("datasets", help="list the shipped real datasets, or write one out",
                       description="Without NAME, list the shipped datasets. With NAME and --out, write it as "
                                   "measurements (CSV, or Parquet for a .parquet path). Any command that takes "
                                   "--measurements also accepts dataset:NAME.")
    p.add_argument("name", nargs="?", help="dataset name (gavel_v100)")
    p.add_argument("--out", help="file to write (CSV or .parquet)")
    p.set_defaults(func=_run_datasets)


def _run_datasets(args) -> int:
    from interfpred.datasets import DATASETS, load_dataset

    if args.name is None:
        for name, fn in sorted(DATASETS.items()):
            m = fn()
            print(f"{name}: {len(m)} rows, {m.n_runs} runs, models {', '.join(m.models)} "
                  f"({(fn.__doc__ or '').strip().splitlines()[0]})")
        return 0
    m = load_dataset(args.name)
    if args.out is None:
        raise InterfpredError("give --out FILE to write the dataset")
    m.write(args.out)
    print(f"wrote {args.out}: {len(m)} rows, {m.n_runs} runs", file=sys.stderr)
    return 0


_COMMANDS.append(_add_datasets)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="interfpred",
        description="Predict GPU co-location interference for ML inference batches.",
    )
    parser.add_argument("--version", action="version", version=f"interfpred {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``interfpred`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = list(sys.argv[1:] if argv is None else argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except (InterfpredError, OSError) as exc:
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            msg = f"{exc.filename}: {exc.strerror}"  # not "[Errno 2] ..."
        else:
            msg = str(exc).replace(" (force=True)", "")  # library messages name both spellings
        print(f"interfpred: error: {msg}".replace("\n", " "), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interfpred: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
