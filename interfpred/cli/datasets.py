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
                                   "measurements (CSV, or Parquet / Arrow by the suffix). Any command that takes "
                                   "--measurements also accepts dataset:NAME.")
    p.add_argument("name", nargs="?", help="dataset name (gavel_v100)")
    p.add_argument("--out", help="file to write, atomically: CSV, or .parquet / .arrow by suffix (not replaced "
                                 "without --force)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_json_option(p)
    p.set_defaults(func=run_datasets)


def run_datasets(args: argparse.Namespace) -> int:
    """Run ``datasets``: list them, or write the one named."""
    from interfpred.data.datasets import DATASETS, load_dataset

    if args.name is None:
        listed: list[dict[str, Any]] = []
        for name, fn in sorted(DATASETS.items()):
            m = fn()
            listed.append({"name": name, "rows": len(m), "runs": m.n_runs, "models": list(m.models),
                           "description": (fn.__doc__ or "").strip().splitlines()[0]})
        if args.json:
            print_json({"command": "datasets", "datasets": listed})
            return 0
        for d in listed:
            print(f"{d['name']}: {d['rows']} rows, {d['runs']} runs, models {', '.join(d['models'])} "
                  f"({d['description']})")
        return 0
    if args.out is None:
        raise InterfpredError("give --out FILE to write the dataset")
    refuse_existing(args.out, args.force)  # before any work
    m = load_dataset(args.name)
    write_output(m, args.out)
    if args.json:
        print_json({"command": "datasets", "name": args.name, "out": args.out, "rows": len(m), "runs": m.n_runs})
    print(f"wrote {args.out}: {len(m)} rows, {m.n_runs} runs", file=sys.stderr)
    return 0

