"""What in the phase-structured truth moves the paper's E1/E2 numbers: an ablation.

The same E1/E2 (seed, sizes, learners, selection on training rows) on three ground truths of the
orion family on a v100:

* ``phases``: the default (at most 32 phases a pass, hidden per-model factors);
* ``full``: every operator of every pass (no phase reduction), hidden factors;
* ``fluid``: each pass's time-averaged demand, no hidden factors (the profiles the predictors read).

Prints, per truth, the E1 rows that carry the paper's claims and the E2 MSEs of slowdown, each
beside the three baselines.

Run: ``python benchmarks/ablate_truth.py [--executions 50000]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interfpred.constants import REPRODUCE_EXECUTIONS  # noqa: E402
from interfpred.experiments.paper import run_e1, run_e2  # noqa: E402
from interfpred.experiments.report import ReproduceContext  # noqa: E402
from interfpred.sim.orion import orion_zoo  # noqa: E402
from interfpred.sim.workload import paper_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executions", type=int, default=REPRODUCE_EXECUTIONS)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = args.executions
    for label, truth, zoo in (("phases", "phases", "orion"), ("full", "phases", "orion"),
                              ("fluid", "fluid", "orion")):
        ctx = ReproduceContext(out_dir=Path(tempfile.mkdtemp()), seed=args.seed, executions=n, truth=truth,
                               zoo=zoo)
        t0 = time.perf_counter()
        if label == "full":  # the same scenario built on the unreduced programs, under the run's cache key
            ctx.cache[("paper_scenario", ctx.gpu, ctx.seed, n, truth, zoo)] = paper_scenario(
                ctx.gpu, seed=args.seed, executions=n, truth="phases", zoo=orion_zoo(max_phases=0))
        e1, e2 = run_e1(ctx), run_e2(ctx)
        print(f"== {label} ({time.perf_counter() - t0:.0f} s)")
        for r in e1.data["rows"]:
            if r["aggregation"] in ("Static", "TimeWeighted", "interfpred best") or r["aggregation"].startswith("baseline"):
                print(f"  E1 {r['aggregation']:<26} {r['method']:<14} within10 {r['within_10_%']:.1f} %  "
                      f"within20 {r['within_20_%']:.1f} %  >60% {r['beyond_60_%']:.2f} %  MSE {r['mse']:.4f}")
        res = e2.data["results"]
        sets = ("held-out", "test1", "test2", "test3")
        print("  E2 MSE of slowdown " + " ".join(f"{s:>9}" for s in sets))
        for name, per in res.items():
            print(f"  {name:<26}" + " ".join(f"{per[s]['mse']:>9.4f}" for s in sets))
        print("  " + f"{'(variance)':<26}" + " ".join(f"{e2.data['slowdown_variance'][s]:>9.4f}" for s in sets))


if __name__ == "__main__":
    main()
