"""Fit an interference model from your own CSVs, save it, and use it: the Python side of
``interfpred fit`` / ``evaluate`` / ``predict``.

Usage::

    python examples/fit_from_csv.py profiles.csv train_trace.csv [test_trace.csv]

Without arguments the inputs are simulated first (synthetic ground truth, see docs/simulator.md)
into a temporary folder: four models for training, two new ones for testing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from interfpred import InterferenceModel, ProfileTable, Trace, load_model


def simulated_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """Write profiles.csv, train.csv and test2.csv of the paper scenario (small) into ``folder``."""
    from interfpred.sim.workload import paper_scenario, write_scenario

    write_scenario(paper_scenario("l4", seed=0, executions=3000), folder / "sim")
    return folder / "sim" / "profiles.csv", folder / "sim" / "train.csv", folder / "sim" / "test2.csv"


def main(argv: list[str]) -> int:
    work = Path(tempfile.mkdtemp(prefix="interfpred-example-"))
    if argv:
        profiles_csv, train_csv = Path(argv[0]), Path(argv[1])
        test_csv = Path(argv[2]) if len(argv) > 2 else train_csv
    else:
        profiles_csv, train_csv, test_csv = simulated_inputs(work)
        print(f"simulated inputs in {profiles_csv.parent}")
    profiles = ProfileTable.from_csv(profiles_csv)
    train, test = Trace.from_csv(train_csv), Trace.from_csv(test_csv)

    # The same choices as `interfpred fit --aggregation time-weighted --map rich --target slowdown
    # --predictor rls --param forgetting=0.995`.
    model = InterferenceModel({"aggregation": "time-weighted", "map": "rich", "target": "slowdown"},
                              {"kind": "rls", "params": {"forgetting": 0.995}})
    model.fit(train, profiles)
    path = work / "model.json"
    model.save(path)                      # extractor spec + predictor state, one JSON file
    print(f"saved {path}")

    model = load_model(path)              # what a scheduler does at start-up
    for online in (False, True):
        s = model.evaluate(test, profiles, online=online).summary
        how = "online (predict, then learn)" if online else "frozen"
        print(f"{how:30s} MAPE {s.mape:.3f}  within 10% {s.within_10:.3f}  MSE of slowdown {s.mse:.4f}")
    latency = model.predict_latency(test, profiles)
    print(f"first predictions (ms): {[round(x, 2) for x in latency[:5].tolist()]}")
    print(f"observed (ms):          {[round(x, 2) for x in test.latency_ms[:5].tolist()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
