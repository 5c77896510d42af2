"""``interfpred measure``: a GPU's co-location runs and profiles, from workloads to the files ``fit`` reads."""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import threading
from typing import Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import Progress, check_label
from interfpred.constants import (
    MEASURE_MARGIN_S,
    MEASURE_MECHANISMS,
    MEASURE_NCU_TIMEOUT_S,
    MEASURE_WINDOW_S,
)
from interfpred.errors import InterfpredError

__all__ = ["add_measure", "run_measure"]

#: The packages the GPU measurements run on (the ``measure`` extra).
MEASURE_PACKAGES = ("torch", "torchvision")


def add_measure(sub: Any) -> None:
    """Declare the ``measure`` subcommand."""
    p = sub.add_parser(
        "measure", help="measure co-location runs and profiles on a GPU, writing the files 'fit' reads",
        description="Run every workload alone, every pair (and chosen larger sets) together, under each sharing "
                    "mechanism asked for, with persistent workers; solo windows before, between and after the runs. "
                    "Writes OUT/measurements.csv (interfpred's measurement runs: throughput-based observed_ms, "
                    "CUDA-event times beside it, mechanism and GPU), OUT/solo.csv, and OUT/profiles.csv from Nsight "
                    "Compute over one batch per workload. Results are appended as they come; --resume continues an "
                    "interrupted campaign. Needs interfpred[measure] (PyTorch) and a GPU, except with --device fake.")
    p.add_argument("--workload", action="append", required=True, metavar="SPEC",
                   help="NAME:BATCH_SIZE[:DTYPE], repeatable: a torchvision model (resnet50:8) or module:function / "
                        "file.py:function returning a batch function (mymodels:bert:8:bf16); DTYPE fp16 (default), "
                        "bf16 or fp32")
    p.add_argument("--mechanism", action="append", choices=MEASURE_MECHANISMS, default=None,
                   help="sharing mechanism, repeatable (default streams): streams (one process, a CUDA stream per "
                        "workload), time_slicing (a process per workload), mps (a process per workload, MPS daemon "
                        "running), mig (a process per workload in the MIG instances given)")
    p.add_argument("--set", action="append", default=[], metavar="SPEC,SPEC[,...]",
                   help="a run of three or more workloads (specs joined by ','), repeatable; every pair runs anyway")
    p.add_argument("--no-self-pairs", dest="self_pairs", action="store_false",
                   help="leave out each workload beside a copy of itself")
    p.add_argument("--mps-share", action="append", type=float_option(lo=0.0, hi=100.0, lo_open=True), metavar="P",
                   help="CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of each workload's processes under mps: once for all, or "
                        "once per --workload in order (default 100)")
    p.add_argument("--mig-instance", action="append", default=[], metavar="UUID",
                   help="a MIG instance you made (MIG-... from nvidia-smi -L), repeatable: copy i of each workload runs "
                        "in the i-th; the GPU's settings are never changed")
    p.add_argument("--window-s", type=float_option(lo=0.0, lo_open=True), default=MEASURE_WINDOW_S, metavar="S",
                   help=f"seconds every member of a window runs back to back (default {MEASURE_WINDOW_S:g})")
    p.add_argument("--margin-s", type=float_option(lo=0.0), default=MEASURE_MARGIN_S, metavar="S",
                   help=f"seconds at each end of a window not counted (default {MEASURE_MARGIN_S:g})")
    p.add_argument("--seed", type=int_option(lo=0), default=0, metavar="N", help="seed of the runs' order (default 0)")
    p.add_argument("--no-profiles", dest="profiles", action="store_false", help="skip the Nsight Compute profiles")
    p.add_argument("--ncu-timeout-s", type=float_option(lo=0.0, lo_open=True), default=MEASURE_NCU_TIMEOUT_S, metavar="S",
                   help=f"seconds ncu may take for one workload before it is stopped (default {MEASURE_NCU_TIMEOUT_S:g})")
    p.add_argument("--allow-truncated", action="store_true",
                   help="keep a profile ncu did not finish, marked truncated=1 (default: left out and reported)")
    p.add_argument("--gpu", default=None, metavar="NAME", help="GPU name to record (default: the name the device reports)")
    p.add_argument("--device", choices=("cuda", "fake"), default="cuda",
                   help="cuda (default: PyTorch on the first visible GPU) or fake (a simulated device with known "
                        "slowdowns, for trying the command and for tests)")
    p.add_argument("--out", required=True, metavar="DIR", help="campaign folder to write (created if missing)")
    p.add_argument("--resume", action="store_true", help="continue the campaign in --out, skipping what it holds")
    p.add_argument("--force", action="store_true", help="start the campaign in --out over (its own files only)")
    p.set_defaults(func=run_measure)


def _backend(device: str) -> Any:
    if device == "fake":
        from interfpred.measure.fake import FakeBackend

        return FakeBackend()
    missing = [m for m in MEASURE_PACKAGES if importlib.util.find_spec(m) is None]
    if missing:
        raise InterfpredError(f"interfpred measure needs {', '.join(missing)} on a GPU machine: "
                              "pip install \"interfpred[measure]\" (or try it with --device fake)")
    from interfpred.measure.torch_backend import TorchBackend

    return TorchBackend()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_measure(args: argparse.Namespace) -> int:
    """Run ``measure``."""
    from interfpred.measure.campaign import MeasureConfig, measure
    from interfpred.measure.spec import parse_set, parse_workload

    if args.resume and args.force:
        raise InterfpredError("--resume continues a campaign and --force starts it over: give one")
    workloads = tuple(parse_workload(t) for t in args.workload)
    sets = tuple(parse_set(t, workloads) for t in args.set)
    shares: dict[str, float] = {}
    if args.mps_share is not None:
        if len(args.mps_share) not in (1, len(workloads)):
            raise InterfpredError(f"--mps-share given {len(args.mps_share)} times for {len(workloads)} workloads: "
                                  "give it once, or once per --workload")
        values = args.mps_share * len(workloads) if len(args.mps_share) == 1 else args.mps_share
        shares = {w.label: float(v) for w, v in zip(workloads, values)}
    gpu = None if args.gpu is None else check_label(args.gpu, "--gpu")
    config = MeasureConfig(workloads, mechanisms=tuple(args.mechanism or ("streams",)), sets=sets,
                           self_pairs=args.self_pairs, seed=args.seed, window_s=args.window_s, margin_s=args.margin_s,
                           mps_shares=shares, mig_instances=tuple(args.mig_instance), profiles=args.profiles,
                           ncu_timeout_s=args.ncu_timeout_s, allow_truncated=args.allow_truncated, gpu=gpu)
    config.plan()                      # refuse bad options before anything is started or imported
    backend = _backend(args.device)
    progress = Progress("measure", after_s=0.0, every_s=0.0)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None  # a kill stops workers and ncu too
    try:
        summary = measure(config, args.out, backend=backend, resume=args.resume, force=args.force, progress=progress)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        progress.close()
    err = sys.stderr
    print(f"measure: {summary.windows_done} of {summary.windows_total} windows done", file=err)
    if summary.runs:
        print(f"wrote {args.out}/measurements.csv: {summary.measurements} rows of {summary.runs} runs", file=err)
    if summary.max_spread is not None:
        print(f"solo windows agree within {summary.max_spread[0]:.3g} % (widest: {summary.max_spread[1]}); "
              f"per workload in {args.out}/solo.csv", file=err)
    if config.profiles:
        print(f"wrote {args.out}/profiles.csv: {len(summary.profiled)} of {len(workloads)} workloads profiled"
              if summary.profiled else "no profile was written", file=err)
    for note in summary.notes:
        print(f"measure: note: {note}", file=err)
    for problem in summary.problems:
        print(f"measure: warning: {problem}", file=err)
    return 0
