"""GPUs and time per plan for ParvaGPU's six SLO sets, under each admission rule, beside ParvaGPU's own plans.

For each set: the GPUs ParvaGPU's plan uses (counted as (server, GPU) pairs of its file) and
whether it passes the validator under ParvaGPU's own rule (batch latency within 0.45 x the SLO)
as written and with its instances re-placed; then ``interfpred.plan``'s GPUs under that same rule
(``--max-exec-fraction 0.45``), under the whole SLO for the batch (1.0) and under the default
end-to-end rule (a request's fill + queueing + execution at p99), with the LP lower bound and the
lowest simulated SLO attainment of any model (every plan's requests simulated, seed 0), and the
time per end-to-end plan (median of ``--repeat`` solves in this process, after the measured table
is built once). Prints a Markdown table (the one in docs/provisioning.md).

Run: ``python benchmarks/bench_plan.py [--repeat 3] [--gpu a100-80gb]``
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
from interfpred.provisioning import (  # noqa: E402
    ConfigTable,
    Deployment,
    LatencyRule,
    plan,
    simulate_plan,
    validate_plan,
)

RULES = {"0.45": LatencyRule(max_exec_fraction=0.45), "1.0": LatencyRule(max_exec_fraction=1.0),
         "e2e": LatencyRule()}


def _cell(table: ConfigTable, slo, gpu: str, rule: LatencyRule) -> tuple[str, float]:
    p = plan(table, slo, gpu=gpu, rule=rule)
    assert validate_plan(p.deployment, table, slo, gpu=gpu, rule=rule).ok
    sim = simulate_plan(p.deployment, table, slo, p.rates_rps, rule=rule)
    least = min(sim.attainment.values())
    return f"{p.deployment.n_gpus}{'' if p.optimal else ' (not proven)'} ({100 * least:.1f} %)", p.seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu", default="a100-80gb")
    args = ap.parse_args()
    t0 = time.perf_counter()
    table = ConfigTable.from_measurements(parvagpu_a100())
    built = time.perf_counter() - t0
    parva = RULES["0.45"]
    print("| SLO set | ParvaGPU GPUs | ParvaGPU valid as written / re-placed (its rule) | interfpred, its rule "
          "(0.45 x SLO) | batch within the SLO (1.0) | end to end, p99 (default) | LP bound, end to end | "
          "time per end-to-end plan |")
    print("|---|---|---|---|---|---|---|---|")
    for k in range(1, PARVAGPU_SLO_SETS + 1):
        slo = parvagpu_slo(k)
        theirs = Deployment.from_rows(parvagpu_deployment(k))
        written = validate_plan(theirs, table, slo, gpu=args.gpu, rule=parva)
        replaced = validate_plan(theirs, table, slo, gpu=args.gpu, replace=True, rule=parva)
        cells = {name: _cell(table, slo, args.gpu, rule)[0] for name, rule in RULES.items()}
        times = []
        for _ in range(args.repeat):
            p = plan(table, slo, gpu=args.gpu)
            times.append(p.seconds)
        w = "yes" if written.ok else f"no ({len(written.problems)} placement problems)"
        print(f"| {k} | {theirs.n_gpus} | {w} / {'yes' if replaced.ok else 'no'} | {cells['0.45']} | {cells['1.0']} | "
              f"{cells['e2e']} | {p.lower_bound} ({p.lp_value:.2f}) | {statistics.median(times):.2f} s |")
    print(f"\nmeasured table built once in {1000 * built:.0f} ms; {args.repeat} end-to-end solves per set; in "
          "brackets the lowest simulated SLO attainment of any model (20,000 requests per model, seed 0)")


if __name__ == "__main__":
    main()
