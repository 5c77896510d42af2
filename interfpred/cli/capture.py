"""``interfpred ingest-trace`` and ``ingest-measurements``: profiler captures to a trace or runs (docs/capture.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from interfpred._core.atomic import staged_files
from interfpred._core.numbers import int_option
from interfpred.cli.common import Progress, check_label, refuse_existing, write_output
from interfpred.errors import InterfpredError

__all__ = ["add_ingest_measurements", "add_ingest_trace", "run_ingest_measurements", "run_ingest_trace"]


def add_ingest_trace(sub: Any) -> None:
    """Declare the ``ingest-trace`` subcommand."""
    p = sub.add_parser(
        "ingest-trace", help="turn an Nsight Systems export or a PyTorch profiler trace into a trace",
        description=(
            "Read an Nsight Systems SQLite export (nsys export --type sqlite) or a PyTorch profiler JSON trace "
            "(plain or .gz) and write one execution per batch: an NVTX range (or a PyTorch user annotation) "
            "whose name gives the model and batch size (resnet50:8, 'resnet50 bs=8', or --name-pattern), "
            "projected onto the GPU from its first to its last GPU operation. Ranges whose names do not "
            "parse, or that launched no GPU work, are skipped and counted (--strict: an error). --kernels "
            "makes each CUDA kernel an execution instead."))
    p.add_argument("file", metavar="FILE", help="Nsight Systems .sqlite export or PyTorch profiler .json/.json.gz")
    p.add_argument("--out", required=True, help="trace to write, atomically: CSV, or .parquet / .arrow by suffix")
    p.add_argument("--profiles-out", dest="profiles_out", metavar="FILE",
                   help="also write solo profiles (gpu,model,batch_size,solo_ms,...,n_alone): the median latency of "
                        "the executions that ran alone in the capture, per GPU type (as the export names it), "
                        "model and batch size; sm and dram from the GPU metrics an Nsight Systems export holds "
                        "(nsys profile --gpu-metrics-devices), empty without. CSV, or .parquet / .arrow by suffix")
    p.add_argument("--force", action="store_true", help="replace --out and --profiles-out if they exist")
    p.add_argument("--kernels", action="store_true",
                   help="one execution per CUDA kernel (model = kernel name), for traces without batch ranges")
    p.add_argument("--name-pattern", metavar="PATTERN",
                   help="template of range names: literals, {model}, {batch}, * (any text), | between "
                        "alternatives, e.g. 'infer/{model}/bs{batch}'")
    p.add_argument("--batch-size", type=int_option(), default=None,
                   help="batch size of each kernel (--kernels, default 1) or of each match of a --name-pattern "
                        "without {batch}")
    p.add_argument("--strict", action="store_true",
                   help="fail on a range whose name does not parse or that launched no GPU operation")
    p.set_defaults(func=run_ingest_trace)


def run_ingest_trace(args: argparse.Namespace) -> int:
    """Run ``ingest-trace``: read the capture, write the trace, print what was read and skipped."""
    from interfpred.data.ingest.capture import capture_kind, read_capture_trace
    from interfpred.data.ingest.gpu_ranges import CaptureReport
    from interfpred.data.ingest.nsys import read_nsys_gpu_metrics
    from interfpred.data.ingest.solo import GPU_TYPE_COLUMN, capture_gpu_types, solo_profiles

    outs = [args.out] if args.profiles_out is None else [args.out, args.profiles_out]
    options = ["--out", "--profiles-out"][:len(outs)]
    if len(outs) == 2 and os.path.abspath(outs[0]) == os.path.abspath(outs[1]):
        raise InterfpredError(f"--out and --profiles-out both name {args.out}: give two files")
    for out, option in zip(outs, options):
        refuse_existing(out, args.force, option=option)  # before reading: a refused output costs no time
    progress = Progress("ingest-trace")
    progress(f"reading {args.file}")
    kind = capture_kind(args.file)
    report = CaptureReport(source="Nsight Systems export" if kind == "nsys" else "PyTorch profiler trace")
    trace = read_capture_trace(args.file, kernels=args.kernels, name_pattern=args.name_pattern,
                               batch_size=args.batch_size, strict=args.strict, report=report)
    profiles, metrics = None, None
    if args.profiles_out is not None:
        progress(f"{len(trace)} executions read, solo profiles of the executions that ran alone")
        types = capture_gpu_types(args.file)
        metrics = read_nsys_gpu_metrics(args.file) if kind == "nsys" else None
        profiles = solo_profiles(trace, types, metrics=metrics)
    # both files are made before either replaces what is there: a failure leaves both as they were
    with staged_files(outs, options) as staged:
        write_output(trace, staged[0])
        if profiles is not None:
            write_output(profiles, staged[1])
    print(f"{args.file}: {report.summary()}", file=sys.stderr)
    print(f"wrote {len(trace)} executions on {len(trace.devices)} device(s) to {args.out}", file=sys.stderr)
    if profiles is not None:
        named = ", ".join(profiles.gpus)
        if GPU_TYPE_COLUMN in profiles.extra_columns:  # several GPU types: keyed by device
            named += " (by device: the GPUs are of several types, see its gpu_type column)"
        counters = "no counters" if metrics is None else \
            f"counters {', '.join(metrics.counters)} from GPU metrics sampling, the others empty"
        print(f"wrote {len(profiles)} solo profile(s) on {named} to {args.profiles_out} (median of the executions "
              f"that ran alone; {counters})", file=sys.stderr)
    return 0


def add_ingest_measurements(sub: Any) -> None:
    """Declare the ``ingest-measurements`` subcommand."""
    from interfpred.constants import MODEL_ANALYZER_DEFAULT_LATENCY, MODEL_ANALYZER_LATENCIES

    p = sub.add_parser(
        "ingest-measurements", help="turn Triton Model Analyzer results into measurement runs",
        description=(
            "Read Triton Model Analyzer checkpoints (.ckpt) and inference metrics CSVs, all FILEs pooled, and "
            "write one measurement run per concurrent measurement: each model's latency beside the others "
            "(observed_ms) and alone (solo_ms, from a solo measurement of the same model, batch size, client "
            "concurrency, instance count and max batch size on a GPU of the same name, in any FILE)."))
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="Model Analyzer checkpoint or metrics-model-inference.csv (concurrent and solo ones)")
    p.add_argument("--out", required=True, help="measurements to write, atomically: CSV, or .parquet / .arrow by suffix")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--latency", choices=tuple(MODEL_ANALYZER_LATENCIES), default=MODEL_ANALYZER_DEFAULT_LATENCY,
                   help=f"perf_analyzer latency that becomes solo_ms and observed_ms (default "
                        f"{MODEL_ANALYZER_DEFAULT_LATENCY}; the metrics CSVs hold p99)")
    p.add_argument("--gpu", default=None, help="GPU name of every measurement (needed for CSVs, which name none)")
    p.set_defaults(func=run_ingest_measurements)


def run_ingest_measurements(args: argparse.Namespace) -> int:
    """Run ``ingest-measurements``: pool the files, match members with their solo runs, write the table."""
    from interfpred.data.ingest.model_analyzer import read_model_analyzer

    refuse_existing(args.out, args.force)  # before reading
    if args.gpu is not None:
        check_label(args.gpu, "--gpu")
    meas = read_model_analyzer(args.files, latency=args.latency, gpu=args.gpu)
    write_output(meas, args.out)
    print(f"wrote {meas.n_runs} runs ({len(meas)} members, {len(meas.models)} models, latency {args.latency}) to "
          f"{args.out}", file=sys.stderr)
    return 0
