"""``interfpred ingest``: Nsight Compute output to solo profiles (docs/cli.md, docs/profiling.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import per_file, refuse_existing
from interfpred.errors import InterfpredError

__all__ = ["add_ingest", "run_ingest"]


def add_ingest(sub: Any) -> None:
    """Declare the ``ingest`` subcommand."""
    p = sub.add_parser(
        "ingest",
        help="turn Nsight Compute output into solo profiles",
        description=(
            "Read ncu --csv output (details or raw page) or .ncu-rep reports into solo profiles "
            "(gpu,model,batch_size,solo_ms,sm,l2,dram, then kernel statistics: kernels per batch, kernel "
            "durations, waves, occupancy, truncated) and print them. Give --gpu/--model/"
            "--batch-size once for all files or once per file, in order; or list the reports in a "
            "--manifest CSV (file,gpu,model,batch_size[,iterations]). --out merges into an "
            "existing file (a conflicting duplicate is refused and the file kept intact) unless --force."),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="ncu --csv output or .ncu-rep report")
    p.add_argument("--gpu", action="append", help="GPU name (once, or once per file)")
    p.add_argument("--model", action="append", help="model name (once, or once per file)")
    p.add_argument("--batch-size", action="append", type=int_option(), help="batch size (once, or once per file)")
    p.add_argument("--iterations", action="append", type=int_option(),
                   help="batches the profiled program executed; solo_ms = kernel time / iterations (default 1)")
    p.add_argument("--kernel-filter", action="append", metavar="REGEX",
                   help="keep only kernels whose name matches (searched; RE2 syntax with google-re2, else literals, ., .*, ^, $ and |)")
    p.add_argument("--nvtx-filter", action="append", metavar="REGEX",
                   help="keep only kernels whose NVTX range stack matches (needs ncu --nvtx)")
    p.add_argument("--share", type=float_option(), default=None, metavar="P",
                   help="MPS active thread percentage the profiled programs ran under, in (0, 100] (default 100)")
    p.add_argument("--manifest", help="CSV listing the reports: file,gpu,model,batch_size[,iterations][,share]")
    p.add_argument("--out", help="tidy profiles to write, or merge into if the file exists: CSV, or .parquet / "
                                 ".arrow by suffix")
    p.add_argument("--force", action="store_true", help="replace --out instead of merging into it")
    p.add_argument("--allow-truncated", action="store_true",
                   help="keep a report ncu cut short (its log has ==ERROR== or 'Trying to shutdown' and no "
                        "'Disconnected' line), marked truncated=1 with a warning; refused otherwise")
    p.add_argument("--example", action="store_true",
                   help="ingest the bundled example (B200 cuBLASLt GEMM, details page)")
    p.set_defaults(func=run_ingest)


def run_ingest(args: argparse.Namespace) -> int:
    """Run ``ingest``: the reports' profiles, printed as CSV and written to --out."""
    from interfpred import constants
    from interfpred.data.ingest import (
        ManifestEntry,
        ProfileConflict,
        example_path,
        profiles_from_reports,
        read_manifest,
        unique_profiles,
        write_profiles,
    )
    from interfpred.data.profiles import ProfileTable

    if args.out is not None:
        refuse_existing(args.out, True)  # before any work: a folder, a device, a missing folder (a file merges)
    sources = int(bool(args.files)) + int(args.manifest is not None) + int(args.example)
    if sources != 1:
        raise InterfpredError("give ncu files, or --manifest reports.csv, or --example (exactly one of them)")
    if args.share is not None and not 0.0 < args.share <= 100.0:
        raise InterfpredError(f"--share {args.share:g} must be an MPS active thread percentage in (0, 100]")
    if args.manifest is not None:
        if any(v is not None for v in (args.gpu, args.model, args.batch_size, args.iterations,
                                       args.kernel_filter, args.nvtx_filter)):
            raise InterfpredError("--manifest carries gpu/model/batch_size per report; do not also pass them as flags")
        entries = read_manifest(args.manifest)
    else:
        files = [str(example_path())] if args.example else list(args.files)
        if args.example:
            print(f"example: {files[0]} (Nsight Compute details page, B200 cuBLASLt GEMM)", file=sys.stderr)
        n = len(files)
        ex = args.example
        gpus = per_file(args.gpu, "gpu", n, constants.NCU_EXAMPLE_GPU if ex else None)
        models = per_file(args.model, "model", n, constants.NCU_EXAMPLE_MODEL if ex else None)
        batches = per_file(args.batch_size, "batch-size", n, constants.NCU_EXAMPLE_BATCH_SIZE if ex else None)
        iters = per_file(args.iterations, "iterations", n, 1)
        kfilt = per_file(args.kernel_filter, "kernel-filter", n, "") if args.kernel_filter else [None] * n
        nfilt = per_file(args.nvtx_filter, "nvtx-filter", n, "") if args.nvtx_filter else [None] * n
        entries = [ManifestEntry(file=f, gpu=g, model=m, batch_size=b, iterations=i,
                                 kernel_filter=k, nvtx_filter=v)
                   for f, g, m, b, i, k, v in zip(files, gpus, models, batches, iters, kfilt, nfilt)]
    kept = unique_profiles(profiles_from_reports(entries, share=args.share, manifest=args.manifest,
                                                 allow_truncated=args.allow_truncated))
    table = ProfileTable.from_profiles(prof for prof, _ in kept.values())
    if args.out is not None:
        try:
            written = write_profiles(table, args.out, append=not args.force)
        except ProfileConflict as exc:
            raise InterfpredError(f"{exc} (the new profile comes from {kept[exc.key][1]})") from None
        n = len(written)
        print(f"wrote {n} profile{'' if n == 1 else 's'} to {args.out}", file=sys.stderr)
    sys.stdout.write(table.to_csv_text())
    return 0
