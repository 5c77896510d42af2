"""``interfpred simulate`` and ``interfpred reproduce``: the simulator from the shell (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import Progress, add_json_option, add_truth_options, print_json
from interfpred.errors import InterfpredError

__all__ = ["add_reproduce", "add_simulate", "run_reproduce", "run_simulate"]


def add_simulate(sub: Any) -> None:
    """Declare the ``simulate`` subcommand."""
    p = sub.add_parser(
        "simulate", help="simulate traces on a synthetic GPU (ground truth, no GPU needed)",
        description="Simulate executions on the synthetic model zoo and write profiles.csv, one trace CSV per "
                    "set and scenario.json into a new folder (written beside it, then renamed).")
    p.add_argument("--scenario", choices=("paper", "mix"), default="paper",
                   help="paper: the E2 sets train/test1/test2/test3; mix: one trace of --models at --rho")
    p.add_argument("--gpu", default=None, help="simulated GPU preset: v100, l4 or a100 (default v100; l4 with "
                                               "--truth fluid)")
    add_truth_options(p, operators=True)
    p.add_argument("--seed", type=int_option(), default=0, help="random seed of the simulated arrivals and noise (default 0)")
    p.add_argument("--out", required=True, help="output folder (must not exist or be empty, unless --force)")
    p.add_argument("--executions", type=int_option(), default=None, help="executions per set (default 20000)")
    p.add_argument("--devices", type=int_option(), default=1, help="devices (simulated GPUs) per set (default 1)")
    p.add_argument("--models", default=None, help="mix: comma-separated model names")
    p.add_argument("--rho", type=float_option(), default=None, help="mix: offered utilisation per device")
    p.add_argument("--batch-sizes", default=None, help="mix: comma-separated batch sizes (default all profiled)")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv",
                   help="file format of the profiles and traces (parquet needs pyarrow; default csv)")
    p.set_defaults(func=run_simulate)


def run_simulate(args: argparse.Namespace) -> int:
    """Run ``simulate``: write a scenario's profiles and traces into a new folder."""
    from interfpred.constants import SIM_DEFAULT_EXECUTIONS
    from interfpred.sim.orion import default_gpu
    from interfpred.sim.workload import check_scenario_out, mix_scenario, paper_scenario, write_scenario

    gpu = default_gpu(args.truth, args.zoo) if args.gpu is None else args.gpu
    n = SIM_DEFAULT_EXECUTIONS if args.executions is None else args.executions
    if args.devices < 1:
        raise InterfpredError(f"--devices {args.devices} must be a positive integer (devices per set)")
    check_scenario_out(args.out, force=args.force, format=args.format)    # refused before any work
    progress = Progress("simulate")
    progress(f"simulating the {args.scenario} scenario ({n} executions per set)")
    if args.scenario == "paper":
        extra = [f"--{k.replace('_', '-')}" for k in ("models", "rho", "batch_sizes") if getattr(args, k) is not None]
        if extra:
            raise InterfpredError(f"{', '.join(extra)}: apply only to --scenario mix")
        scenario = paper_scenario(gpu, seed=args.seed, executions=n, n_devices=args.devices, truth=args.truth,
                                  zoo=args.zoo)
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
        scenario = mix_scenario(models, rho=args.rho, spec=gpu, seed=args.seed, executions=n,
                                batch_sizes=batches, n_devices=args.devices, truth=args.truth, zoo=args.zoo)
    progress(f"writing {args.out}")
    names = write_scenario(scenario, args.out, force=args.force, operators=args.operators, format=args.format)
    sizes = ", ".join(f"{k}.{args.format} ({len(t)} executions)" for k, t in scenario.traces.items())
    ops = ", operators.csv" if args.operators else ""
    source = scenario.source
    print(f"wrote {args.out}: {names[0]}, {sizes}{ops}, {names[-1]} ({source}, {scenario.truth} truth, "
          f"gpu {scenario.spec.name}, seed {args.seed})")
    return 0


def add_reproduce(sub: Any) -> None:
    """Declare the ``reproduce`` subcommand."""
    from interfpred.constants import REPRODUCE_DEFAULT_OUT

    p = sub.add_parser(
        "reproduce", help="run the paper's experiments on the simulator and write a report",
        description="Run E1 (co-location dynamics) and E2 (workload change) on simulated traces, with "
                    "interfpred's best configuration beside the paper's methods, and E3 (SLO-aware scheduling "
                    "with the tracker), and E4 (accuracy on real measured V100 pairs, every predictor beside the "
                    "baselines); print the tables and write "
                    "report.md, results.json and the figures into --out (written beside it, then renamed).")
    p.add_argument("--quick", action="store_true", help="smaller traces (about 155 s on two idle cores with the numba code compiled; the first run also compiles it)")
    p.add_argument("--out", default=REPRODUCE_DEFAULT_OUT, help=f"output folder (default ./{REPRODUCE_DEFAULT_OUT})")
    p.add_argument("--seed", type=int_option(), default=0, help="random seed of the simulated arrivals and noise (default 0)")
    p.add_argument("--gpu", default=None, help="simulated GPU preset: v100, l4 or a100 (default v100; l4 with "
                                               "--truth fluid)")
    add_truth_options(p, operators=False)
    p.add_argument("--jobs", type=int_option(), default=None,
                   help="worker processes to spread the experiments over (default: every core this process may "
                        "use; 1 runs everything in this process); the numbers are the same for any value")
    p.add_argument("--force", action="store_true", help="replace an --out that already holds a report")
    add_json_option(p, what="print results.json (every section's numbers) as one JSON object on stdout instead of "
                            "the tables")
    p.set_defaults(func=run_reproduce)


def run_reproduce(args: argparse.Namespace) -> int:
    """Run ``reproduce``: the paper's experiments, printed and written as a report."""
    import shlex
    import time

    from interfpred.experiments.reproduce import available_cores, format_terminal, reproduce

    t0 = time.perf_counter()
    progress = Progress("reproduce", after_s=0.0, every_s=0.0)      # every step, and a heartbeat between

    argv = getattr(args, "argv", None)
    command = shlex.join(["interfpred", *argv]) if argv is not None else None
    sections = reproduce(args.out, quick=args.quick, seed=args.seed, force=args.force, progress=progress,
                         gpu=args.gpu, command=command, truth=args.truth, zoo=args.zoo,
                         jobs=available_cores() if args.jobs is None else args.jobs)
    if args.json:
        import json
        from pathlib import Path

        results = json.loads((Path(args.out) / "results.json").read_text(encoding="utf-8"))
        # results.json's "command" is the command line; here "command" names the command, as for every --json
        print_json({**results, "command": "reproduce", "command_line": results.get("command"), "out": args.out})
    else:
        print(format_terminal(sections))
    print(f"wrote {args.out}/report.md and results.json in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0

