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
