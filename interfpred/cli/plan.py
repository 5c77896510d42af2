"""``interfpred plan``: pack models onto the fewest MIG GPUs under SLOs, or check a deployment (docs/provisioning.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import (
    Progress,
    add_json_option,
    load_config_table,
    load_slo_arg,
    print_json,
    refuse_existing,
)
from interfpred.constants import (
    MIG_GPU_KINDS,
    PLAN_ATTAINMENT_MIN,
    PLAN_EXEC_SIGMA,
    PLAN_PERCENTILE,
    PLAN_SEED,
    PLAN_SIM_REQUESTS,
)
from interfpred.errors import InterfpredError

__all__ = ["add_plan", "run_plan"]

def add_plan(sub: Any) -> None:
    """Declare the ``plan`` subcommand."""
    p = sub.add_parser("plan", help="pack models onto the fewest MIG GPUs under latency SLOs and rates",
                       description="Choose MIG instances, batch sizes and MPS processes per model so that every "
                                   "model's rate is served within its latency SLO on the fewest GPUs, and print "
                                   "the LP lower bound beside the plan. By default a configuration is admitted when "
                                   "a request's whole latency (its batch filling at the model's rate, queueing, "
                                   "execution) at --percentile meets the SLO; --max-exec-fraction F admits batch "
                                   "latencies up to F x the SLO instead. Every plan is then simulated request by "
                                   "request; a plan any model of which meets its SLO for fewer than 99 %% of "
                                   "requests is reported NOT feasible (exit 1). With --check, validate and simulate a "
                                   "deployment CSV by the same rules instead (exit 1 if it fails).")
    p.add_argument("--profiles", required=True,
                   help="measured configurations: measurements with a partition (GPCs) column, CSV/.parquet, "
                        "or dataset:parvagpu_a100")
    p.add_argument("--slo", required=True,
                   help="SLO CSV model,rate_rps,latency_ms (or dataset:parvagpu_slo1 .. dataset:parvagpu_slo6)")
    p.add_argument("--gpu", required=True, help=f"GPU kind: {', '.join(MIG_GPU_KINDS)}; must be the GPU the profiles "
                                                "were measured on, unless --scale-latency is given")
    p.add_argument("--scale-latency", dest="scale_latency", type=float_option(lo=0.0, lo_open=True), default=None,
                   metavar="X", help="plan for --gpu from profiles of another GPU, every latency multiplied by X "
                                     "(a scaling you name; without it another GPU's table is refused)")
    p.add_argument("--percentile", type=float_option(lo=0.0, hi=100.0, lo_open=True), default=PLAN_PERCENTILE,
                   help=f"request-latency percentile the SLO holds for (default {PLAN_PERCENTILE:g})")
    p.add_argument("--exec-sigma", dest="exec_sigma", type=float_option(lo=0.0, hi=3.0), default=PLAN_EXEC_SIGMA,
                   help=f"lognormal spread of a batch's execution time around the table's latency (default "
                        f"{PLAN_EXEC_SIGMA:g}); used by the rule and the simulation")
    p.add_argument("--max-exec-fraction", dest="max_exec_fraction", type=float_option(lo=0.0, hi=1.0, lo_open=True),
                   default=None, metavar="F",
                   help="admit a configuration when its batch latency is at most F x the SLO (no fill or queueing "
                        "budgeted; ParvaGPU's rule is 0.45) instead of the end-to-end rule")
    p.add_argument("--sim-requests", dest="sim_requests", type=int_option(lo=1, hi=10_000_000),
                   default=PLAN_SIM_REQUESTS,
                   help=f"requests per model the simulation check draws (default {PLAN_SIM_REQUESTS})")
    p.add_argument("--seed", type=int_option(lo=0), default=PLAN_SEED,
                   help=f"seed of the simulation check (default {PLAN_SEED})")
    p.add_argument("--out", help="deployment CSV to write (gpu,model,partition,placement,batch_size,processes)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--check", metavar="DEPLOYMENT", help="validate and simulate this deployment CSV instead of planning")
    p.add_argument("--replace", action="store_true",
                   help="with --check: accept a GPU whose instance sizes fit some valid MIG placement, "
                        "whatever placements the file gives")
    add_json_option(p, what="print the plan's (or check's) figures as one JSON object on stdout instead of tables")
    p.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    """Run ``plan``: plan, simulate and write the deployment, or check one."""
    from interfpred.provisioning import (
        Deployment,
        LatencyRule,
        feasible,
        mig_profile,
        plan,
        simulate_plan,
        validate_plan,
    )

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
    rule = LatencyRule(percentile=args.percentile, exec_sigma=args.exec_sigma, max_exec_fraction=args.max_exec_fraction)
    progress = Progress("plan")
    progress("reading the profiles and SLOs")
    table, slo = load_config_table(args.profiles), load_slo_arg(args.slo)
    if args.scale_latency is not None:
        table = table.rescaled(args.scale_latency, args.gpu)
    if args.check is not None:
        deployment = Deployment.read(args.check)
        progress(f"checking {len(deployment.segments)} instances")
        v = validate_plan(deployment, table, slo, gpu=args.gpu, replace=args.replace, rule=rule)
        sim = None
        if v.ok:
            progress("simulating the requests through the deployment")
            sim = simulate_plan(deployment, table, slo, v.rates_rps, rule=rule, requests=args.sim_requests,
                                seed=args.seed)
        good = v.ok and sim is not None and feasible(sim)
        verdict = "feasible" if good else ("NOT feasible" if v.ok else f"{len(v.problems)} problem(s)")
        if args.json:
            print_json({"deployment": args.check, "gpus": v.n_gpus, "rule": rule.describe(), "valid": v.ok,
                        "feasible": good, "problems": list(v.problems), "models": _model_rows(slo, v, sim)})
        else:
            for problem in v.problems:
                print(problem)
            print(f"rule: {rule.describe()}")
            if sim is not None:
                _print_models(slo, v, sim)
            print(f"{args.check}: {v.n_gpus} GPUs, {verdict}")
        return 0 if good else 1
    progress("choosing instances (integer program)")
    p = plan(table, slo, gpu=args.gpu, rule=rule)
    v = validate_plan(p.deployment, table, slo, gpu=args.gpu, rule=rule)
    if not v.ok:  # the plan is checked by the validator before it is written
        raise InterfpredError(f"internal: the plan fails its own check: {v.problems[0]}")
    progress("simulating the requests through the plan")
    sim = simulate_plan(p.deployment, table, slo, p.rates_rps, rule=rule, requests=args.sim_requests, seed=args.seed)
    good = feasible(sim)
    p.deployment.to_csv(args.out)
    if args.json:
        print_json({"gpus": p.deployment.n_gpus, "optimal": p.optimal, "lower_bound": p.lower_bound,
                    "lp_value": p.lp_value, "instances": len(p.deployment.segments), "seconds": p.seconds,
                    "rule": rule.describe(), "feasible": good, "out": args.out, "models": _model_rows(slo, v, sim)})
    else:
        print(f"{p.deployment.n_gpus} GPUs ({'optimal' if p.optimal else 'best found, not proven optimal'}); "
              f"LP lower bound {p.lower_bound} (relaxation {p.lp_value:.3f}); {len(p.deployment.segments)} instances; "
              f"{p.seconds:.2f} s")
        print(f"rule: {rule.describe()}")
        _print_models(slo, v, sim)
        print(f"simulated {args.sim_requests} requests per model (seed {args.seed}): "
              + ("feasible, every model within its SLO for at least 99 % of requests" if good else
                 "NOT feasible: " + ", ".join(f"{m} {100 * a:.1f} %" for m, a in sim.attainment.items()
                                              if a < PLAN_ATTAINMENT_MIN) + " within the SLO (needed: 99 %)"))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if good else 1


def _model_rows(slo: Any, v: Any, sim: Any) -> list[dict[str, Any]]:
    return [{"model": m, "capacity_rps": v.served_rps.get(m, 0.0), "rate_rps": rate, "slo_ms": lat,
             "attainment": None if sim is None else sim.attainment[m],
             "p99_ms": None if sim is None else sim.p99_ms[m]} for m, (rate, lat) in slo.items()]


def _print_models(slo: Any, v: Any, sim: Any) -> None:
    from interfpred.evaluation.text_tables import Column, percent, text_table

    header: list[str | Column] = ["model", Column("capacity", unit="requests/s", spec=".1f"),
                                  Column("needed", unit="requests/s"), Column("latency SLO", unit="ms"),
                                  percent("within SLO", spec=".2f"), Column("p99", unit="ms", spec=".1f")]
    rows = [[r["model"], r["capacity_rps"], r["rate_rps"], r["slo_ms"], r["attainment"], r["p99_ms"]]
            for r in _model_rows(slo, v, sim)]
    print("\n".join("  " + line for line in text_table(header, rows).splitlines()))
