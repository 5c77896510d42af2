"""GPUs and time per plan for ParvaGPU's six SLO sets: interfpred's plan beside ParvaGPU's own plans.

For each set: the GPUs ParvaGPU's plan uses (counted as (server, GPU) pairs of its file) and
whether it passes the validator as written and with its instances re-placed; the GPUs of
``interfpred.plan`` and the LP lower bound; the ratio; the time per plan (median of ``--repeat``
solves in this process, after the measured table is built once) and the time to build the table.
Prints a Markdown table (the one in docs/provisioning.md).

Run: ``python benchmarks/bench_plan.py [--repeat 5] [--gpu a100-80gb]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interfpred.data.datasets import parvagpu_a100  # noqa: E402
from interfpred.data.datasets.parvagpu import PARVAGPU_SLO_SETS, parvagpu_deployment, parvagpu_slo  # noqa: E402
from interfpred.provisioning import ConfigTable, Deployment, plan, validate_plan  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gpu", default="a100-80gb")
    args = ap.parse_args()
    t0 = time.perf_counter()
    table = ConfigTable.from_measurements(parvagpu_a100())
    built = time.perf_counter() - t0
    print("| SLO set | models | ParvaGPU GPUs | ParvaGPU valid as written / re-placed | interfpred GPUs | "
          "LP lower bound (relaxation) | interfpred / ParvaGPU | time per plan |")
    print("|---|---|---|---|---|---|---|---|")
    for k in range(1, PARVAGPU_SLO_SETS + 1):
        slo = parvagpu_slo(k)
        theirs = Deployment.from_rows(parvagpu_deployment(k))
        written = validate_plan(theirs, table, slo, gpu=args.gpu)
        replaced = validate_plan(theirs, table, slo, gpu=args.gpu, replace=True)
        times, p = [], None
        for _ in range(args.repeat):
            p = plan(table, slo, gpu=args.gpu)
            times.append(p.seconds)
        assert p is not None and validate_plan(p.deployment, table, slo, gpu=args.gpu).ok
        w = "yes" if written.ok else f"no ({len(written.problems)} placement problems)"
        print(f"| {k} | {len(slo)} | {theirs.n_gpus} | {w} / {'yes' if replaced.ok else 'no'} | "
              f"{p.deployment.n_gpus}{'' if p.optimal else ' (not proven)'} | {p.lower_bound} ({p.lp_value:.2f}) | "
              f"{p.deployment.n_gpus / theirs.n_gpus:.2f} | {1000 * statistics.median(times):.0f} ms |")
    print(f"\nmeasured table built once in {1000 * built:.0f} ms; {args.repeat} solves per set")


if __name__ == "__main__":
    main()
