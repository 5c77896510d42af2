"""Coverage of a model's latency bounds on a trace, beside the trivial quantile baseline.

:func:`evaluate_coverage` scores the bounds of an :class:`~interfpred.InterferenceModel` whose
predictor is :class:`~interfpred.Calibrated`: for each quantile, the observed coverage, the mean
width and the interval score (see :mod:`interfpred.evaluation.coverage`), overall and per model,
for the model and for the *quantile baseline* (the empirical quantiles of the training targets,
stored by ``Calibrated.fit``) on the same rows. Online (``online=True``) the bounds are made
prequentially on a copy of the model (predict at launch, learn at finish), as a scheduler would
see them; offline, the frozen bounds the model was calibrated for at fit (cross-fitted residuals,
:mod:`interfpred.model.crossfit`).

Examples
--------
>>> from interfpred import Calibrated, InterferenceModel
>>> from interfpred.sim.workload import mix_scenario
>>> sc = mix_scenario(["resnet50", "vgg19"], rho=0.9, executions=600, seed=1)
>>> tr = sc.traces["trace"]
>>> model = InterferenceModel(None, Calibrated("rls", quantiles=(0.9,))).fit(tr, sc.profiles)
>>> ev = evaluate_coverage(model, tr, sc.profiles, [0.9], online=True)
>>> [r["method"] for r in ev.rows if r["group"] == "all"]
['model', 'quantile baseline']
>>> print(format_coverage(ev).splitlines()[0])
quantile  group  method  n  coverage  width  interval score
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.evaluation import (
    Fold,
    baseline_bounds,
    coverage_rows,
    prequential_bounds,
    run_stamps,
    text_table,
)
from interfpred.model.interference import InterferenceModel
from interfpred.predictors import get_tags, predictor_from_state

__all__ = ["CoverageEvaluation", "evaluate_coverage", "format_coverage", "split_coverage", "split_coverage_table"]


@dataclass(frozen=True)
class CoverageEvaluation:
    """What :func:`evaluate_coverage` measured.

    Attributes
    ----------
    rows
        Dicts with ``quantile, group, method, n, coverage, lower_coverage, width,
        interval_score``; ``group`` is ``"all"`` or a model name, ``method`` ``"model"`` or
        ``"quantile baseline"``.
    online
        Whether the bounds were made prequentially.
    skip
        Rows skipped at the start (warm-up) before scoring.
    """

    rows: list[dict[str, Any]]
    online: bool
    skip: int


def evaluate_coverage(model: InterferenceModel, trace: Trace | None, profiles: ProfileTable | None,
                      quantiles: Sequence[float], *, measurements: Measurements | None = None, online: bool = False,
                      skip: int = 0) -> CoverageEvaluation:
    """Coverage, width and interval score of ``model``'s latency bounds, beside the quantile baseline.

    Parameters
    ----------
    model
        A model whose predictor is :class:`~interfpred.Calibrated` (``interfpred fit --calibrate``).
    trace, profiles
        Executions to score (or None with ``measurements``).
    measurements
        Measurement rows to score instead (online: each run bounded with what the runs before it
        taught, then learned).
    quantiles
        Latency quantiles to score; each must be calibrated (or the complement of one).
    online
        Prequential bounds on a copy of the model (the model is never changed).
    skip
        Leading rows (launch order) to leave out of the scores (a warm-up).
    """
    if (trace is None) == (measurements is None):
        raise InterfpredError("give a trace or measurements, one of them")
    fm = model.features(trace, profiles, measurements=measurements)
    if len(fm) == 0:
        raise InterfpredError("cannot evaluate on an empty trace")
    if not isinstance(skip, int) or not 0 <= skip < len(fm):
        raise InterfpredError(f"skip {skip!r} must be an integer in [0, {len(fm)})")
    target = model.extractor.target
    pred = model.predictor
    if trace is not None:
        stamps, models = (trace.start_ms, trace.end_ms), trace.model
    elif measurements is not None:
        stamps, models = run_stamps(measurements.run_code), measurements.model
    if online:
        copy = predictor_from_state(pred.to_state())
        start, end = stamps
        _, bounds = prequential_bounds(copy, fm.X, fm.y, fm.solo_ms, target, quantiles, start_ms=start, end_ms=end,
                                       entities=fm.entities)
    else:
        bounds = model.bounds_from_features(fm, quantiles)   # frozen: the cross-fitted thresholds
    groups = np.asarray(models).astype(str)
    rows = [{**r, "method": "model"} for r in coverage_rows(fm.latency_ms, fm.solo_ms, bounds, groups=groups,
                                                             skip=skip)]
    tq = getattr(pred, "train_quantiles_", None)
    if tq is not None:
        base = baseline_bounds(tq, fm.solo_ms, target, quantiles)
        rows += [{**r, "method": "quantile baseline"}
                 for r in coverage_rows(fm.latency_ms, fm.solo_ms, base, groups=groups, skip=skip)]
    rows.sort(key=lambda r: (r["quantile"], r["group"] != "all", r["group"], r["method"]))
    return CoverageEvaluation(rows=rows, online=online, skip=skip)


def format_coverage(ev: CoverageEvaluation) -> str:
    """The rows as a plain-text table (quantile, group, method, n, coverage, width, interval score)."""
    header = ["quantile", "group", "method", "n", "coverage", "width", "interval score"]
    body = [[f"{r['quantile']:g}", r["group"], r["method"], r["n"], r["coverage"], r["width"], r["interval_score"]]
            for r in ev.rows]
    return text_table(header, body)


def _fold_model(measurements: Measurements, profiles: ProfileTable | None, quantiles: Sequence[float],
                model: InterferenceModel | None, chosen: InterferenceModel | None) -> InterferenceModel:
    """A calibrated model fitted on ``measurements``: ``model``'s configuration, or what ``fit`` chooses
    (``chosen``: a model ``fit`` already chose on these rows, whose configuration is reused)."""
    from interfpred.model.interference import fit_selected
    from interfpred.model.selection import select_configuration
    from interfpred.predictors import Calibrated, make_predictor

    if model is None and chosen is None:
        sel = select_configuration(None, profiles, measurements)
        wrap = Calibrated(make_predictor(sel.chosen.predictor), quantiles=tuple(float(q) for q in quantiles))
        return fit_selected(sel, None, profiles, measurements, predictor=wrap)
    if model is not None:
        spec, inner = model.extractor.get_spec(), model.predictor.clone()
    else:
        assert chosen is not None
        spec = chosen.extractor.get_spec()
        inner = Calibrated(chosen.predictor.clone(), quantiles=tuple(float(q) for q in quantiles))
    fresh = InterferenceModel(spec, inner)
    fresh.auto_map = False
    return fresh.fit(None, profiles, measurements=measurements)


def split_coverage(measurements: Measurements, profiles: ProfileTable | None, folds: Sequence[Fold],
                   quantiles: Sequence[float], *, online: bool = False,
                   model: InterferenceModel | None = None,
                   chosen: Mapping[bytes, InterferenceModel] | None = None) -> list[dict[str, Any]]:
    """Coverage of latency bounds on held-out runs: each fold's model fitted on its training runs only.

    ``model`` (a calibrated one, e.g. loaded from a file) gives the configuration refitted in every
    fold; None: what ``interfpred fit`` chooses with no flags, chosen inside each fold's training
    runs and wrapped in a :class:`~interfpred.Calibrated` of ``quantiles``. The test runs are bounded
    frozen (the cross-fitted thresholds ``predict`` serves), or prequentially with ``online``.
    Returns one dict per quantile and method (``"model"``, ``"quantile baseline"``): the pooled
    coverage (covered test rows / all test rows), the per-fold mean, min and max, and the rows.
    ``chosen`` (the ``cache`` of :func:`~interfpred.experiments.real.default_fit_mape`: training rows'
    int64 bytes -> the model ``fit`` chose on them) spares choosing again on a fold it holds.

    Examples
    --------
    >>> from interfpred import Calibrated
    >>> from interfpred.data.datasets import gavel_v100
    >>> from interfpred.evaluation import run_folds
    >>> m = gavel_v100()
    >>> model = InterferenceModel({"feature_map": "shares"}, Calibrated("pair_mean", quantiles=(0.9,)))
    >>> rows = split_coverage(m, None, run_folds(m, "pair", repeats=2), [0.9], model=model)
    >>> [(r["quantile"], r["method"], r["rows"]) for r in rows]
    [(0.9, 'model', 396), (0.9, 'quantile baseline', 396)]
    >>> print(split_coverage_table(rows).splitlines()[0])
    quantile  method             rows  coverage (pooled)  per fold: mean [min, max]
    """
    if model is not None and not get_tags(model.predictor).gives_bounds:
        raise InterfpredError("bounds need a calibrated model (fit it with --calibrate) or no --model-file")
    covered: dict[tuple[float, str], list[tuple[float, int]]] = {}
    for fold in folds:
        train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
        m_test = measurements.take(test)
        known = None if chosen is None else chosen.get(np.asarray(train, dtype=np.int64).tobytes())
        fitted = _fold_model(measurements.take(train), profiles, quantiles, model, known)
        ev = evaluate_coverage(fitted, None, profiles, quantiles, measurements=m_test, online=online)
        for r in ev.rows:
            if r["group"] == "all":
                covered.setdefault((float(r["quantile"]), r["method"]), []).append((float(r["coverage"]), r["n"]))
    out = []
    for (q, method), parts in sorted(covered.items()):
        cov = np.array([c for c, _ in parts])
        n = np.array([k for _, k in parts])
        out.append({"quantile": q, "method": method, "rows": int(n.sum()),
                    "coverage": float(np.round((cov * n).sum() / n.sum(), 4)), "fold_mean": float(cov.mean()),
                    "fold_min": float(cov.min()), "fold_max": float(cov.max())})
    return out


def split_coverage_table(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`split_coverage`'s rows as the table ``interfpred evaluate --split --quantiles`` prints."""
    body = [[f"{r['quantile']:g}", r["method"], r["rows"], f"{r['coverage']:.4f}",
             f"{r['fold_mean']:.4f} [{r['fold_min']:.4f}, {r['fold_max']:.4f}]"] for r in rows]
    return text_table(["quantile", "method", "rows", "coverage (pooled)", "per fold: mean [min, max]"], body)
