"""``interfpred datasets``: list the shipped real datasets, or write one out (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred.cli.common import add_json_option, print_json, refuse_existing, write_output
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
    add_json_option(p)
    p.set_defaults(func=run_datasets)


def run_datasets(args: argparse.Namespace) -> int:
    """Run ``datasets``: list them, or write the one named."""
    from interfpred.data.datasets import DATASETS, PROFILE_DATASETS, load_dataset, load_profile_dataset

    if args.name is None:
        listed: list[dict[str, Any]] = []
        for name, fn in sorted(DATASETS.items()):
            m = fn()
            listed.append({"name": name, "rows": len(m), "runs": m.n_runs, "models": list(m.models),
                           "profiles": len(PROFILE_DATASETS[name]()) if name in PROFILE_DATASETS else None,
                           "description": (fn.__doc__ or "").strip().splitlines()[0]})
        if args.json:
            print_json({"command": "datasets", "datasets": listed})
            return 0
        for d in listed:
            prof = f"; profiles: {d['profiles']} rows" if d["profiles"] is not None else ""
            print(f"{d['name']}: {d['rows']} rows, {d['runs']} runs, models {', '.join(d['models'])}{prof} "
                  f"({d['description']})")
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
    if args.json:
        print_json({"command": "datasets", "name": args.name, "out": args.out, "rows": len(m), "runs": m.n_runs})
    print(f"wrote {args.out}: {len(m)} rows, {m.n_runs} runs", file=sys.stderr)
    return 0

