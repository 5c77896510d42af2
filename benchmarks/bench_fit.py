"""Cost of ``interfpred fit`` with no flags (the configuration chosen by validation) beside a plain RLS fit.

Peers in one process, on the same rows: ``InterferenceModel().fit`` (chooses predictor, feature map,
share features and target by validation inside the training rows, then fits the choice) against
``InterferenceModel(predictor="rls").fit`` (the default extractor, RLS, no validation) and the chosen
configuration fitted alone (what the choice costs on top). Data: Gavel's 660 real V100 pair rows, and
a simulated trace of three models (``--executions``). Goal: the validated fit <= 2 s on each. Best of
``--repeats`` after one warm-up fit (numba compiled or loaded from its cache).

Run from the repository root: ``python benchmarks/bench_fit.py [--executions 1200] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred.data.datasets import gavel_v100  # noqa: E402
from interfpred.model.interference import InterferenceModel, fit_selected  # noqa: E402
from interfpred.sim.workload import mix_scenario  # noqa: E402

GOAL_S = 2.0


def best_of(f, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executions", type=int, default=1200, help="executions of the simulated trace")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=0.9, executions=a.executions, seed=3)
    data = {"Gavel V100 pairs (660 rows)": {"measurements": gavel_v100()},
            f"simulated trace ({a.executions} executions)": {"trace": sc.traces["trace"], "profiles": sc.profiles}}
    print(f"{'data':36s} {'fit, no flags':>14s} {'plain RLS':>10s} {'choice alone':>13s} {'ratio':>7s}  goal")
    for name, kw in data.items():
        chosen = InterferenceModel().fit(**kw)                 # warm-up: kernels compiled or loaded
        sel = chosen.selection
        assert sel is not None
        auto = best_of(lambda: InterferenceModel().fit(**kw), a.repeats)
        rls = best_of(lambda: InterferenceModel(predictor="rls").fit(**kw), a.repeats)
        alone = best_of(lambda: fit_selected(sel, kw.get("trace"), kw.get("profiles"), kw.get("measurements")),
                        a.repeats)
        verdict = f"<= {GOAL_S:g} s: {'met' if auto <= GOAL_S else 'NOT met'}"
        print(f"{name:36s} {auto:12.2f} s {rls:8.3f} s {alone:11.2f} s {auto / rls:6.0f}x  {verdict}")
        print(f"  chose {sel.chosen.label}")


if __name__ == "__main__":
    main()
