"""``interfpred datasets``: list the shipped real datasets, or write one out (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred.cli.common import refuse_existing, write_output
from interfpred.errors import InterfpredError

__all__ = ["add_datasets", "run_datasets"]


def add_datasets(sub: Any) -> None:
    """Declare the ``datasets`` subcommand."""
    p = sub.add_parser("datasets", help="list the shipped real datasets, or write one out",
                       description="Without NAME, list the shipped datasets. With NAME and --out, write it as "
                                   "measurements (CSV, or Parquet / Arrow by the suffix); with --profiles, its "
                                   "shipped solo profiles instead. Any command that takes --measurements also "
                                   "accepts dataset:NAME, and --profiles dataset:NAME takes a dataset's profiles.")
    p.add_argument("name", nargs="?", help="dataset name (gavel_v100, h200_streams, parvagpu_a100)")
    p.add_argument("--profiles", action="store_true", help="write the dataset's shipped solo profiles (h200_streams)")
    p.add_argument("--out", help="file to write, atomically: CSV, or .parquet / .arrow by suffix (not replaced "
                                 "without --force)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=run_datasets)


def run_datasets(args: argparse.Namespace) -> int:
    """Run ``datasets``: list them, or write the one named."""
    from interfpred.data.datasets import DATASETS, PROFILE_DATASETS, load_dataset, load_profile_dataset

    if args.name is None:
        for name, fn in sorted(DATASETS.items()):
            m = fn()
            prof = f"; profiles: {len(PROFILE_DATASETS[name]())} rows" if name in PROFILE_DATASETS else ""
            print(f"{name}: {len(m)} rows, {m.n_runs} runs, models {', '.join(m.models)}{prof} "
                  f"({(fn.__doc__ or '').strip().splitlines()[0]})")
        return 0
    if args.out is None:
        raise InterfpredError("give --out FILE to write the dataset")
    refuse_existing(args.out, args.force)  # before any work
    if args.profiles:
        table = load_profile_dataset(args.name)
        write_output(table, args.out)
        print(f"wrote {args.out}: {len(table)} profiles", file=sys.stderr)
        return 0
    m = load_dataset(args.name)
    write_output(m, args.out)
    print(f"wrote {args.out}: {len(m)} rows, {m.n_runs} runs", file=sys.stderr)
    return 0

