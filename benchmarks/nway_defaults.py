"""MAPE of the online learners' defaults on simulated N-way rows of any feature scale, beside the baselines.

Rows: runs of 2 to 48 batches served together on one GPU; features are the co-runner count, the
batch's own MPS share and the co-runners' summed share, each in a unit drawn from [1, 1000]; the
slowdown grows with the total share and the co-runner count, with log-normal noise. Every method
is fitted on the first half of each draw and predicts the second half prequentially (predict,
then learn the row). Printed: mean and worst MAPE over the draws, and the worst ratio to the
global mean's MAPE on the same draw. "unscaled" rows are the wrappers' defaults before they
standardised their inputs (river's plain ``LinearRegression``; scikit-learn's ``SGDRegressor``
on raw rows).

    python benchmarks/nway_defaults.py [--draws 20]
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import numpy as np

from interfpred.predictors import BasePredictor, FromRiver, make_predictor


def nway_rows(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    shares = np.array([10.0, 20.0, 25.0, 33.0, 50.0, 100.0])
    k = rng.integers(1, int(rng.integers(1, 48)) + 1, n).astype(float)
    me = rng.choice(shares, n)
    others = np.array([rng.choice(shares, int(kk)).sum() for kk in k])
    slowdown = np.maximum(1.0, (me + others) / 100.0) * (1.0 + 0.03 * k) * np.exp(0.2 * rng.standard_normal(n))
    units = rng.uniform(1.0, 1000.0, 3)
    return np.column_stack([k, me / 100.0, others / 100.0]) * units, slowdown


def prequential_mape(p: BasePredictor, X: np.ndarray, y: np.ndarray) -> float:
    half = X.shape[0] // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p.fit(X[:half], y[:half])
        pred = np.empty(X.shape[0] - half)
        for i in range(half, X.shape[0]):
            pred[i - half] = p.predict(X[i])
            if p.tags.learns_online:
                p.update(X[i], float(y[i]))
    return float(np.mean(np.abs(pred - y[half:]) / y[half:]))


def _plain_river() -> BasePredictor:
    from river import linear_model

    return FromRiver(model=linear_model.LinearRegression())


METHODS: list[tuple[str, Callable[[], BasePredictor]]] = [
    ("online_sgd (default)", lambda: make_predictor("online_sgd")),
    ("online_sgd standardize=True", lambda: make_predictor("online_sgd", standardize=True)),
    ("river, unscaled LinearRegression", _plain_river),
    ("river (default)", lambda: make_predictor("river")),
    ("sklearn, unscaled SGDRegressor", lambda: make_predictor("sklearn", standardize=False)),
    ("sklearn (default)", lambda: make_predictor("sklearn")),
    ("rls (default)", lambda: make_predictor("rls")),
    ("baseline: no interference", lambda: make_predictor("no_interference")),
    ("baseline: global mean", lambda: make_predictor("global_mean")),
    ("baseline: pair mean", lambda: make_predictor("pair_mean")),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--rows", type=int, default=400)
    args = ap.parse_args()
    scores = {label: [] for label, _ in METHODS}
    for draw in range(args.draws):
        X, y = nway_rows(np.random.default_rng(draw), args.rows)
        for label, make in METHODS:
            scores[label].append(prequential_mape(make(), X, y))
    ref = np.asarray(scores["baseline: global mean"])
    print(f"{args.draws} draws of {args.rows} N-way rows (units in [1, 1000], up to 47 co-runners); "
          "prequential MAPE of slowdown on the second half")
    print(f"{'method':36s} {'mean %':>14s} {'worst %':>14s} {'worst / global mean':>20s}")
    for label, _ in METHODS:
        a = np.asarray(scores[label])
        print(f"{label:36s} {100 * a.mean():14.4g} {100 * a.max():14.4g} {np.max(a / ref):20.3g}")


if __name__ == "__main__":
    main()
