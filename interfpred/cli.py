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

from interfpred._version import __version__
from interfpred.errors import InterfpredError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's own convention)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


_COMMANDS: list = []


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
    from interfpred.benchmarking import first_call_seconds, format_bench, parse_param, run_bench
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
    print(f"first RLS update+predict in this process (compile or numba cache load): {first * 1e3:.1f} ms")
    print(format_bench(rows))
    return 0


_COMMANDS.append(_add_bench)


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
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except (InterfpredError, OSError) as exc:
        msg = str(exc).replace("\n", " ")
        print(f"interfpred: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interfpred: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
