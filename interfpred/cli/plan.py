"""``interfpred plan``: pack models onto the fewest MIG GPUs under SLOs, or check a deployment (docs/provisioning.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred._core.numbers import is_int_text
from interfpred.cli.common import refuse_existing
from interfpred.errors import InterfpredError

__all__ = ["add_plan", "run_plan"]

_SLO_DATASET = "dataset:parvagpu_slo"


def add_plan(sub: Any) -> None:
    """Declare the ``plan`` subcommand."""
    p = sub.add_parser("plan", help="pack models onto the fewest MIG GPUs under latency SLOs and rates",
                       description="Choose MIG instances, batch sizes and MPS processes per model so that every "
                                   "model's rate is served within its latency SLO (by the measured table) on the "
                                   "fewest GPUs, and print the LP lower bound beside the plan. With --check, "
                                   "validate a deployment CSV by the same rules instead (exit 1 if it fails).")
    p.add_argument("--profiles", required=True,
                   help="measured configurations: measurements with a partition (GPCs) column, CSV/.parquet, "
                        "or dataset:parvagpu_a100")
    p.add_argument("--slo", required=True,
                   help="SLO CSV model,rate_rps,latency_ms (or dataset:parvagpu_slo1 .. dataset:parvagpu_slo6)")
    p.add_argument("--gpu", required=True, help="GPU kind: a100-40gb, a100-80gb, h100-80gb, h200-141gb")
    p.add_argument("--out", help="deployment CSV to write (gpu,model,partition,placement,batch_size,processes)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--check", metavar="DEPLOYMENT", help="validate this deployment CSV instead of planning")
    p.add_argument("--replace", action="store_true",
                   help="with --check: accept a GPU whose instance sizes fit some valid MIG placement, "
                        "whatever placements the file gives")
    p.set_defaults(func=run_plan)


def _slo(text: str) -> Any:
    if text.startswith(_SLO_DATASET):
        from interfpred.data.datasets.parvagpu import PARVAGPU_SLO_SETS, parvagpu_slo

        k = text.removeprefix(_SLO_DATASET)
        if not (is_int_text(k) and k.isdigit()):
            raise InterfpredError(f"--slo {text}: expected {_SLO_DATASET}1 .. {_SLO_DATASET}{PARVAGPU_SLO_SETS}")
        return parvagpu_slo(int(k))
    from interfpred.provisioning import read_slo

    return read_slo(text)


def _profiles(text: str) -> Any:
    from interfpred.data.measurements import Measurements
    from interfpred.provisioning import ConfigTable

    if text.startswith("dataset:"):
        from interfpred.data.datasets import load_dataset

        return ConfigTable.from_measurements(load_dataset(text.removeprefix("dataset:")))
    return ConfigTable.from_measurements(Measurements.read(text))


def run_plan(args: argparse.Namespace) -> int:
    """Run ``plan``: plan and write the deployment, or check one."""
    from interfpred.evaluation.text_tables import Column, text_table
    from interfpred.provisioning import Deployment, mig_profile, plan, validate_plan

    mig_profile(args.gpu, 1)  # an unknown GPU is refused before any file is read
    if args.check is None and args.out is None:
        raise InterfpredError("give --out DEPLOYMENT.csv to write the plan (or --check DEPLOYMENT.csv)")
    if args.check is not None and args.out is not None:
        raise InterfpredError("--check validates a deployment and writes nothing: drop --out")
    if args.replace and args.check is None:
        raise InterfpredError("--replace only applies with --check")
    if args.out is not None:
        from interfpred.data.columnar import format_of

        refuse_existing(args.out, args.force)
        if format_of(args.out) != "csv":
            raise InterfpredError(f"--out {args.out}: the deployment is written as CSV, not {format_of(args.out)}")
    table, slo = _profiles(args.profiles), _slo(args.slo)
    if args.check is not None:
        deployment = Deployment.read(args.check)
        v = validate_plan(deployment, table, slo, gpu=args.gpu, replace=args.replace)
        for problem in v.problems:
            print(problem)
        print(f"{args.check}: {v.n_gpus} GPUs, {'valid' if v.ok else f'{len(v.problems)} problem(s)'}")
        return 0 if v.ok else 1
    p = plan(table, slo, gpu=args.gpu)
    v = validate_plan(p.deployment, table, slo, gpu=args.gpu)
    if not v.ok:  # the plan is checked by the validator before it is written
        raise InterfpredError(f"internal: the plan fails its own check: {v.problems[0]}")
    p.deployment.to_csv(args.out)
    print(f"{p.deployment.n_gpus} GPUs ({'optimal' if p.optimal else 'best found, not proven optimal'}); "
          f"LP lower bound {p.lower_bound} (relaxation {p.lp_value:.3f}); {len(p.deployment.segments)} instances; "
          f"{p.seconds:.2f} s")
    header: list[str | Column] = ["model", Column("served", unit="requests/s", spec=".1f"), Column("needed", unit="requests/s"),
              Column("latency SLO", unit="ms")]
    rows = [[model, v.served_rps.get(model, 0.0), rate, lat] for model, (rate, lat) in slo.items()]
    print("\n".join("  " + line for line in text_table(header, rows).splitlines()))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
