"""``interfpred advise``: rank time-slicing, MPS and MIG for models, rates and latency SLOs (docs/provisioning.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import (
    Progress,
    add_json_option,
    add_model_file_options,
    check_label,
    load_configs_or_profiles,
    load_slo_arg,
    print_json,
    refuse_existing,
    write_output,
)
from interfpred.constants import (
    ADVISE_DEFAULT_GPU,
    ADVISE_DURATION_S,
    ADVISE_SEED,
    CONTENTION_MODELS,
    MECHANISMS,
    MIG_GPU_KINDS,
    SIM_CONTEXT_SWITCH_MS,
    SIM_TIMESLICE_QUANTUM_MS,
)
from interfpred.errors import InterfpredError

if TYPE_CHECKING:
    from interfpred.provisioning.advise import Advice

__all__ = ["add_advise", "advice_table", "run_advise"]


def add_advise(sub: Any) -> None:
    """Declare the ``advise`` subcommand."""
    p = sub.add_parser("advise", help="rank sharing mechanisms (time-slicing, MPS, MIG) for models under SLOs",
                       description="Run each model's requests at its rate on the same simulated GPUs under "
                                   "time-slicing, MPS and MIG (partitions chosen by the planner) and rank the "
                                   "mechanisms by SLO attainment (requests within their latency SLO), then "
                                   "throughput. With --model-file, response times are the fitted model's "
                                   "predictions on the simulated schedule (its upper bound when calibrated).")
    p.add_argument("--slo", required=True, help="SLO CSV model,rate_rps,latency_ms, or dataset:parvagpu_slo1 .. "
                                                "dataset:parvagpu_slo6 (what plan reads)")
    p.add_argument("--profiles", help="solo profiles of the models (CSV/.parquet, or dataset:h200_streams), or MIG x "
                                      "MPS configurations as plan reads them (dataset:parvagpu_a100, or measurements "
                                      "with a partition column); default the simulator's synthetic zoo")
    p.add_argument("--gpu", default=None,
                   help=f"GPU kind ({', '.join(MIG_GPU_KINDS)}, or l4, v100 for the synthetic zoo); default the "
                        f"profiles' own GPU, or {ADVISE_DEFAULT_GPU} for the zoo; refused when the profiles were "
                        "measured on another GPU. MIG needs a kind with MIG")
    p.add_argument("--contention", choices=CONTENTION_MODELS, default="fluid",
                   help="how batches sharing the SMs slow each other under MPS and in MIG instances: fluid (the "
                        "simulator's truth over SM, L2 and DRAM throughputs; default) or kernels (kernel blocking "
                        "fitted on the shipped H200 spatial-sharing runs, for the H200 workloads)")
    p.add_argument("--gpus", type=int_option(), default=1, help="GPUs the workload runs on, under every mechanism (default 1)")
    p.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS),
                   help="mechanisms to rank (default all)")
    p.add_argument("--duration-s", dest="duration_s", type=float_option(), default=ADVISE_DURATION_S,
                   help=f"simulated seconds of requests (default {ADVISE_DURATION_S:g})")
    p.add_argument("--quantum-ms", dest="quantum_ms", type=float_option(), default=SIM_TIMESLICE_QUANTUM_MS,
                   help=f"time-slicing quantum in ms (default {SIM_TIMESLICE_QUANTUM_MS:g}; an assumption: "
                        "throughput runs show only the switch cost's ratio to it)")
    p.add_argument("--switch-ms", dest="switch_ms", type=float_option(), default=SIM_CONTEXT_SWITCH_MS,
                   help=f"time-slicing context-switch cost in ms (default {SIM_CONTEXT_SWITCH_MS:g}: two workloads "
                        "time-sliced on an H200 kept 0.775 of one's throughput, so a 2 ms quantum costs 0.581 ms "
                        "of switching)")
    p.add_argument("--seed", type=int_option(), default=ADVISE_SEED, help=f"seed of arrivals and noise (default {ADVISE_SEED})")
    add_model_file_options(p, help_text="a fitted interference model (interfpred fit) whose predicted latencies "
                                        "replace the simulator's under MPS and inside MIG instances")
    p.add_argument("--out", help="write the ranking: .json as JSON, anything else as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_json_option(p, what="print the advice (ranking, per-model attainment, verdict) as one JSON object on stdout "
                            "instead of tables")
    p.set_defaults(func=run_advise)


def run_advise(args: argparse.Namespace) -> int:
    """Run ``advise``: print the ranking, and write it with --out."""
    from interfpred.data.columnar import format_of
    from interfpred.provisioning import advise

    if args.gpu is not None:
        check_label(args.gpu, "--gpu")
    if args.out is not None:
        refuse_existing(args.out, args.force)
        if not args.out.lower().endswith(".json") and format_of(args.out) != "csv":
            raise InterfpredError(f"--out {args.out}: the ranking is written as CSV or JSON (.json), not "
                                  f"{format_of(args.out)}")
    if args.contention == "kernels" and args.model_file is not None:
        raise InterfpredError("--contention kernels is a fitted model of its own: drop --model-file (or the option)")
    progress = Progress("advise")
    progress("reading the SLOs and profiles")
    slo = load_slo_arg(args.slo)
    profiles = None if args.profiles is None else load_configs_or_profiles(args.profiles)
    model = None
    if args.model_file is not None:
        from interfpred.model.interference import load_model

        model = load_model(args.model_file, trusted=args.trust_model_file)
    if args.contention == "kernels":
        from interfpred.model import kernel_contention_model

        progress("fitting kernel blocking on the H200 spatial-sharing runs")
        model = kernel_contention_model()
    a = advise(slo, profiles=profiles, spec=args.gpu, gpus=args.gpus, model=model, mechanisms=args.mechanisms,
               duration_s=args.duration_s, seed=args.seed, quantum_ms=args.quantum_ms, switch_ms=args.switch_ms,
               progress=progress)
    if args.json:
        print_json(a.to_json())
    else:
        _print_advice(a)
    if args.out is not None:
        write_output(a, args.out)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _print_advice(a: Advice) -> None:
    print(advice_table(a))
    for s in a.ranking:
        print(f"  {s.mechanism}: {s.setup}")
    if a.mig_plan_gpus is not None:
        print(f"MIG plan with headroom needs {a.mig_plan_gpus} GPU{'s' if a.mig_plan_gpus > 1 else ''}; "
              f"ran on {a.gpus}; {a.seconds:.2f} s")
    print(f"verdict: {a.verdict}")


def advice_table(a: Advice) -> str:
    """The ranking as the one text table: attainment in percent, throughput in requests/s, p99 in ms."""
    from interfpred.evaluation.text_tables import Column, percent, text_table

    header: list[str | Column] = ["rank", "mechanism", percent("SLO attainment", spec=".1f"), Column("throughput", unit="req/s", spec=".1f"),
              Column("offered", unit="req/s", spec=".1f"), Column("p99", unit="ms", spec=".2f"), "source"]
    rows = [[r["rank"], r["mechanism"], r["attainment"], r["throughput_rps"], r["offered_rps"], r["p99_ms"], r["source"]]
            for r in a.rows()]
    return text_table(header, rows)
