"""The ``interfpred`` command line: argument parsing and wiring only.

Every subcommand calls library functions; any feature here is usable from Python first.
Errors on bad input print one line, ``interfpred: error: ...``, and exit with status 2; warnings
raised while a command runs are held back and printed (one line each) only when it succeeds, so an
error is the only line a failed command prints. An exception that is not an input error is a bug:
it prints one line, ``interfpred: internal error: ...``, and exits with status 1.
Each subcommand lives in a module of this package as ``add_<name>(subparsers)``, which declares
its arguments, and ``run_<name>(args) -> int``; :data:`COMMANDS` lists the ``add_`` functions
in the order ``--help`` shows them. Reference: docs/cli.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from interfpred._version import __version__
from interfpred.cli.advise import add_advise
from interfpred.cli.bench import add_bench
from interfpred.cli.capture import add_ingest_measurements, add_ingest_trace
from interfpred.cli.common import add_quiet_option, progress_scope
from interfpred.cli.datasets import add_datasets
from interfpred.cli.ingest import add_ingest
from interfpred.cli.measure import add_measure
from interfpred.cli.model import add_evaluate, add_fit, add_predict, add_show
from interfpred.cli.plan import add_plan
from interfpred.cli.serve import add_serve
from interfpred.cli.simulate import add_reproduce, add_simulate
from interfpred.errors import InterfpredError

__all__ = ["COMMANDS", "EXIT_USAGE", "build_parser", "main"]

EXIT_USAGE = 2
EXIT_INTERNAL = 1
#: A closed pipe on stdout (the reader stopped early): 128 + SIGPIPE, as shells report it.
EXIT_BROKEN_PIPE = 141

#: The subcommands' ``add_`` functions, in the order ``interfpred --help`` lists them.
COMMANDS: list[Callable[[Any], None]] = [
    add_ingest, add_ingest_trace, add_ingest_measurements, add_bench, add_simulate, add_reproduce, add_fit, add_evaluate, add_predict, add_show, add_datasets,
    add_plan, add_advise, add_serve, add_measure,
]


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # options by their full names only: no prefix stands for one
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own convention)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="interfpred",
        description="Predict GPU co-location interference for ML inference batches.",
    )
    parser.add_argument("--version", action="version", version=f"interfpred {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    for command in sub.choices.values():     # every command: long ones print progress on stderr
        add_quiet_option(command)
    return parser


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout (captured in tests): nothing to flush
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``interfpred`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        with warnings.catch_warnings(record=True) as held:
            warnings.simplefilter("always")
            with progress_scope(quiet=args.quiet):
                status = int(args.func(args) or 0)
        for w in {(w.category.__name__, str(w.message)): w for w in held}.values():
            print(f"interfpred: warning: {w.category.__name__}: {w.message}".replace("\n", " "), file=sys.stderr)
        return status
    except BrokenPipeError:  # the reader went away (``interfpred ... | head``): stop quietly, as cat does
        _silence_stdout()
        return EXIT_BROKEN_PIPE
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
    except (RecursionError, MemoryError) as exc:  # bounded inputs should never get here; still one line
        print(f"interfpred: error: input too large or nested too deeply ({type(exc).__name__})", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug, not bad input: one line, and a status apart from bad input's
        print(f"interfpred: internal error: {type(exc).__name__}: {exc}".replace("\n", " ")[:1000],
              file=sys.stderr)
        return EXIT_INTERNAL


