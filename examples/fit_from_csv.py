"""Fit an interference model from your own CSVs, save it, and use it: the Python side of
``interfpred fit`` / ``evaluate`` / ``predict``.

Usage::

    python examples/fit_from_csv.py [PROFILES_CSV TRAIN_TRACE_CSV [TEST_TRACE_CSV]] [--out MODEL_JSON]

Without paths the inputs are simulated first (synthetic ground truth, see docs/simulator.md)
into a temporary folder that is removed at the end: four models for training, two new ones for
testing. The model is saved to ``--out`` when given, else into that temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from interfpred import InterferenceModel, ProfileTable, Trace, load_model
from interfpred.errors import InterfpredError


def simulated_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """Write profiles.csv, train.csv and test2.csv of the paper scenario (small) into ``folder``."""
    from interfpred.sim.workload import paper_scenario, write_scenario

    write_scenario(paper_scenario("l4", seed=0, executions=3000), folder / "sim")
    return folder / "sim" / "profiles.csv", folder / "sim" / "train.csv", folder / "sim" / "test2.csv"


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="fit_from_csv.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", metavar="CSV",
                    help="PROFILES_CSV TRAIN_TRACE_CSV [TEST_TRACE_CSV] (none: simulate them)")
    ap.add_argument("--out", type=Path, default=None, help="where to save the fitted model (JSON)")
    args = ap.parse_args(argv)
    if len(args.paths) not in (0, 2, 3):
        ap.error(f"give no CSV (simulate), or PROFILES_CSV TRAIN_TRACE_CSV [TEST_TRACE_CSV]; got {len(args.paths)}")
    return args


def run(args: argparse.Namespace, work: Path) -> None:
    if args.paths:
        profiles_csv, train_csv = Path(args.paths[0]), Path(args.paths[1])
        test_csv = Path(args.paths[2]) if len(args.paths) > 2 else train_csv
    else:
        profiles_csv, train_csv, test_csv = simulated_inputs(work)
        print(f"simulated inputs in {profiles_csv.parent} (removed at the end)")
    profiles = ProfileTable.from_csv(profiles_csv)
    train, test = Trace.from_csv(train_csv), Trace.from_csv(test_csv)

    # The same choices as `interfpred fit --aggregation time_weighted --feature-map rich --target rate
    # --predictor rls --param forgetting=0.995`.
    model = InterferenceModel({"aggregation": "time_weighted", "feature_map": "rich", "target": "rate"},
                              {"kind": "rls", "params": {"forgetting": 0.995}})
    model.fit(train, profiles)
    path = args.out if args.out is not None else work / "model.json"
    model.save(path)                      # extractor spec + predictor state, one JSON file
    print(f"saved {path}")

    model = load_model(path)              # what a scheduler does at start-up
    for online in (False, True):
        s = model.evaluate(test, profiles, online=online).summary
        how = "online (predict, then learn)" if online else "frozen"
        print(f"{how:30s} MAPE {100 * s.mape:.1f} %  within 10 %: {100 * s.within_10:.1f} % of rows  "
              f"MSE of slowdown {s.mse:.4f}")
    latency = model.predict_latency(test, profiles)
    print(f"first predictions (ms): {[round(x, 2) for x in latency[:5].tolist()]}")
    print(f"observed (ms):          {[round(x, 2) for x in test.latency_ms[:5].tolist()]}")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="interfpred-example-") as tmp:
        try:
            run(args, Path(tmp))
        except (InterfpredError, OSError) as exc:
            print(f"fit_from_csv.py: error: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
