"""``interfpred bench``: predict/update speed of the predictors on this machine (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from interfpred._core.numbers import int_option
from interfpred.cli.common import PREDICTOR_HELP, Progress, add_json_option, add_param_option, print_json

__all__ = ["add_bench", "run_bench"]


def add_bench(sub: Any) -> None:
    """Declare the ``bench`` subcommand."""
    p = sub.add_parser("bench", help="time predict/update of the predictors on this machine",
                       description="Microseconds per sample for predict and update, single rows and "
                                   "batches of 1,000, with ratios against RLS and peer libraries.")
    p.add_argument("--widths", type=int_option(), nargs="+", default=[6, 12, 24], metavar="D",
                   help="feature widths (default 6 12 24)")
    p.add_argument("--predictor", action="append", default=None,
                   help=f"{PREDICTOR_HELP}; repeatable (default: rls, online_sgd, offline_linear and, at width 4, "
                        "gpulets)")
    add_param_option(p, help_text="hyperparameter of the chosen predictor(s), e.g. forgetting=0.99; repeatable")
    p.add_argument("--calls", type=int_option(), default=20_000, metavar="N",
                   help="single-row calls per measurement (default 20000)")
    p.add_argument("--no-peers", action="store_true", help="skip river, scikit-learn and padasip")
    add_json_option(p)
    p.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    """Run ``bench``: print the first-call time and the speed table."""
    from interfpred._core.params import parse_params
    from interfpred.experiments.benchmarking import first_call_seconds, format_bench, missing_peers, run_bench
    from interfpred.predictors import make_predictor

    params = parse_params(args.param)
    first = first_call_seconds()
    predictors = None
    if args.predictor or params:
        kinds = args.predictor or ["rls"]
        predictors = [make_predictor(k, **params) for k in kinds]
        if "rls" not in kinds:
            predictors.insert(0, make_predictor("rls"))
    rows = run_bench(args.widths, predictors, n=args.calls, peers=not args.no_peers, progress=Progress("bench"))
    if not args.no_peers:
        for name in missing_peers():
            print(f"note: {name} is not installed, so its row is skipped (pip install {name})", file=sys.stderr)
    if args.json:
        print_json({"command": "bench", "first_call_ms": first * 1e3, "unit": "us per sample",
                    "rows": [asdict(r) for r in rows]})
        return 0
    print(f"first RLS update+predict in this process (compile or numba cache load): {first * 1e3:.1f} ms")
    print(format_bench(rows))
    return 0
