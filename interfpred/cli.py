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


def _add_simulate(sub) -> None:
    p = sub.add_parser(
        "simulate", help="simulate traces on a synthetic GPU (ground truth, no GPU needed)",
        description="Simulate executions on the synthetic model zoo and write profiles.csv, one trace CSV per "
                    "set and scenario.json into a new folder (written beside it, then renamed).")
    p.add_argument("--scenario", choices=("paper", "mix"), default="paper",
                   help="paper: the E2 sets train/test1/test2/test3; mix: one trace of --models at --rho")
    p.add_argument("--gpu", default="l4", help="GPU preset (l4, a100); default l4")
    p.add_argument("--seed", type=int, default=0, help="seed of arrivals and noise (default 0)")
    p.add_argument("--out", required=True, help="output folder (must not exist or be empty, unless --force)")
    p.add_argument("--executions", type=int, default=None, help="executions per set (default 20000)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs per set (default 1)")
    p.add_argument("--models", default=None, help="mix: comma-separated model names")
    p.add_argument("--rho", type=float, default=None, help="mix: offered utilisation per GPU")
    p.add_argument("--batch-sizes", default=None, help="mix: comma-separated batch sizes (default all profiled)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.set_defaults(func=_run_simulate)


def _run_simulate(args) -> int:
    from interfpred.constants import SIM_DEFAULT_EXECUTIONS
    from interfpred.sim.workload import mix_scenario, paper_scenario, write_scenario

    n = SIM_DEFAULT_EXECUTIONS if args.executions is None else args.executions
    if args.scenario == "paper":
        extra = [f"--{k.replace('_', '-')}" for k in ("models", "rho", "batch_sizes") if getattr(args, k) is not None]
        if extra:
            raise InterfpredError(f"{', '.join(extra)}: apply only to --scenario mix")
        scenario = paper_scenario(args.gpu, seed=args.seed, executions=n, gpus=args.gpus)
    else:
        if args.models is None or args.rho is None:
            raise InterfpredError("--scenario mix needs --models and --rho")
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        batches = None
        if args.batch_sizes is not None:
            try:
                batches = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
            except ValueError:
                raise InterfpredError(f"--batch-sizes {args.batch_sizes!r} must be comma-separated integers") from None
        scenario = mix_scenario(models, rho=args.rho, gpu=args.gpu, seed=args.seed, executions=n,
                                batch_sizes=batches, gpus=args.gpus)
    names = write_scenario(scenario, args.out, force=args.force)
    sizes = ", ".join(f"{k}.csv ({len(t)} executions)" for k, t in scenario.traces.items())
    print(f"wrote {args.out}: {names[0]}, {sizes}, {names[-1]} (synthetic, gpu {scenario.spec.name}, seed {args.seed})")
    return 0


_COMMANDS.append(_add_simulate)


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
