"""E4: accuracy on real co-location measurements (Gavel's V100 pairs), every predictor beside the baselines.

Four columns, each a MAPE of latency with its spread over repeats: split by run (70/30, seeded
repeats), leave one model out (prequential, and frozen: the cold start that ``predict`` serves),
and a stream in which a new model first appears halfway. Each method is fitted on the training
rows and then predicts the test runs in order, prequentially (frozen in the frozen column). The
first row is what ``interfpred fit`` chooses with no flags, chosen inside each fold's training rows.
Gavel's file holds no hardware counter, so the features are the MPS shares and the co-runner
count only. docs/results.md describes the protocol with its table.

Examples
--------
>>> from interfpred.data.datasets import gavel_v100
>>> from interfpred.evaluation import run_folds
>>> m = gavel_v100()
>>> ex = TimeWeighted(feature_map="shares", target="rate")
>>> methods = [("pair mean", make_predictor("pair_mean")), ("no interference", make_predictor("no_interference"))]
>>> scores = score_methods(methods, ex, m, None, run_folds(m, "pair", repeats=2))
>>> len(scores["pair mean"]), bool(max(scores["pair mean"]) < min(scores["no interference"]))
(2, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interfpred.constants import (
    BASELINE_KINDS,
    E4_QUICK_REPEATS,
    E4_QUICK_SELECTION_COLD_MODELS,
    E4_QUICK_SELECTION_FOLDS,
    E4_REPEATS,
    E4_TARGETS,
    E4_TRAIN_SHARE,
    SELECTION_COLD_MODELS,
    SELECTION_FOLDS,
    UNDER_PREDICTION_FACTOR,
)
from interfpred.data.datasets import gavel_v100
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.evaluation import BASELINE_LABELS, Fold, call, held_out_mape, prequential_runs, run_folds
from interfpred.evaluation.folds import fold_error
from interfpred.evaluation.text_tables import Column, markdown_table, text_table
from interfpred.experiments.report import Part, ReproduceContext, Section, SplitSection
from interfpred.features import Extractor, TimeWeighted
from interfpred.features.measurement_features import measurement_features
from interfpred.model.interference import InterferenceModel, fit_selected
from interfpred.model.selection import select_configuration
from interfpred.predictors import BasePredictor, make_predictor, predictor_from_state, registered

__all__ = ["DEFAULT_FIT_LABEL", "default_fit_mape", "e4_methods", "new_model_streams", "run_e4", "score_methods",
           "split_scores", "split_table"]

_COLUMNS = ("split by run", "leave one model out", "leave one model out, frozen", "stream, new model halfway")
#: Columns whose test rows are predicted frozen (fitted on the training runs, never updated: a cold start).
_FROZEN = ("leave one model out, frozen",)
#: The row of what ``interfpred fit`` chooses with no flags, chosen afresh inside each fold's training rows.
DEFAULT_FIT_LABEL = "default fit (chosen by validation inside the training rows)"


def new_model_streams(measurements: Measurements, *, seed: int = 0) -> list[Fold]:
    """One stream per model: runs without it first (shuffled), it first appears halfway.

    The first half of the stream trains; the test rows are the second half, in stream order.

    Examples
    --------
    >>> from interfpred.data.datasets import gavel_v100
    >>> m = gavel_v100()
    >>> f = new_model_streams(m)[0]
    >>> f.label, bool((m.model[f.train] != "A3C").all()), bool((m.model[f.test] == "A3C").any())
    ('A3C', True, True)
    """
    rng = np.random.default_rng(seed)
    codes = measurements.run_code
    n_runs = measurements.n_runs
    folds = []
    for model in measurements.models:
        new = np.zeros(n_runs, dtype=bool)
        new[np.unique(codes[measurements.model == model])] = True
        old_runs = rng.permutation(np.flatnonzero(~new))
        half = min(n_runs // 2, len(old_runs))
        if half == 0:
            continue
        new_runs = rng.permutation(np.flatnonzero(new))
        # The model's first run opens the second half; the rest of the stream is shuffled.
        later = np.concatenate([new_runs[:1], rng.permutation(np.concatenate([old_runs[half:], new_runs[1:]]))])
        train = np.isin(codes, old_runs[:half])
        position = np.empty(n_runs, dtype=np.int64)
        position[later] = np.arange(len(later))
        test_rows = np.flatnonzero(~train)
        test_rows = test_rows[np.argsort(position[codes[test_rows]], kind="stable")]
        folds.append(Fold(model, train, test_rows))
    return folds


def _seeded(kind: str, seed: int) -> dict[str, Any]:
    """Parameters that make a predictor's default deterministic (scikit-learn's SGDRegressor draws its own seed)."""
    if kind == "sklearn":
        from sklearn.linear_model import SGDRegressor

        return {"estimator": SGDRegressor(random_state=seed)}
    return {}


def e4_methods(seed: int = 0) -> list[tuple[str, BasePredictor | str]]:
    """Every registered predictor with its defaults, then the three baselines (a str: why it cannot run).

    The scikit-learn wrapper's default estimator (SGDRegressor) gets ``random_state=seed``.
    """
    out: list[tuple[str, BasePredictor | str]] = []
    for kind in sorted(registered()):
        if kind in BASELINE_KINDS:
            continue
        try:
            out.append((kind, make_predictor(kind, **_seeded(kind, seed))))
        except (TypeError, ValueError) as exc:  # a wrapper that needs arguments: reported, never hidden
            out.append((kind, f"n/a: cannot be built with defaults ({exc})"))
    # EntityRLS twice more: with its default prior variances as given (its default chooses them by
    # validation inside each fold's training rows), and without its entity terms (the ablation: the
    # same feature model, target and alone-is-solo rule)
    out += [("entity_rls (fixed default variances)", make_predictor("entity_rls", tune_priors=False)),
            ("entity_rls (no entity terms)", make_predictor("entity_rls", entity_terms=False))]
    out += [(BASELINE_LABELS[k], make_predictor(k)) for k in BASELINE_KINDS]
    return out


def default_fit_mape(measurements: Measurements, profiles: ProfileTable | None, fold: Fold, *,
                     online: bool = True, cache: dict[bytes, InterferenceModel] | None = None,
                     n_folds: int = SELECTION_FOLDS, n_cold: int = SELECTION_COLD_MODELS,
                     metric: str = "mape") -> float:
    """MAPE of latency on ``fold.test`` of the configuration ``interfpred fit`` chooses on ``fold.train`` alone
    (``metric``: another error, as :func:`~interfpred.evaluation.folds.fold_error` names them).

    The choice (:func:`~interfpred.model.selection.select_configuration`) sees the training runs
    only; the chosen model then predicts the test runs in order, prequentially (``online``) or frozen.
    ``cache`` keeps the fitted model per training set, for folds that share one (with the same
    ``n_folds`` and ``n_cold``: the validation's size, as for ``select_configuration``).
    """
    train, test = (np.flatnonzero(r) if np.asarray(r).dtype == bool else np.asarray(r) for r in fold[1:])
    m_train, m_test = measurements.take(train), measurements.take(test)
    key = np.asarray(train, dtype=np.int64).tobytes()
    model = None if cache is None else cache.get(key)
    if model is None:
        selection = select_configuration(None, profiles, m_train, n_folds=n_folds, n_cold=n_cold)
        model = fit_selected(selection, None, profiles, m_train)
        if cache is not None:
            cache[key] = model
    fm = model.features(measurements=m_test, profiles=profiles)
    if online:
        copy = predictor_from_state(model.predictor.to_state(), trusted=True)   # our own state
        pred = prequential_runs(copy, fm.X, fm.y, m_test.run_code, entities=fm.entities)
    else:
        pred = np.asarray(call(model.predictor, "predict", fm.X, entities=fm.entities), dtype=np.float64)
    lat = np.asarray(model.extractor.latency_from_target(pred, fm.solo_ms), dtype=np.float64)
    return fold_error(lat, fm.latency_ms, metric)


def score_methods(methods: list[tuple[str, BasePredictor | str]], extractor: Extractor, measurements: Measurements,
                  profiles: ProfileTable | None, folds: list[Fold], *, online: bool = True) -> dict[str, Any]:
    """MAPE of every method on every fold (fit on train, prequential on test; frozen without ``online``):
    label -> list, or a reason."""
    by_key: dict[str, Any] = {}

    def features_for(p: BasePredictor) -> Any:
        # entities named as the predictor asks (EntityRLS: model and batch size), else by model
        key = p.tags.entity_key if p.tags.uses_entities else "model"
        if key not in by_key:
            by_key[key] = measurement_features(extractor, measurements, profiles, entity_key=key)
        return by_key[key]

    out: dict[str, Any] = {}
    for label, p in methods:
        if isinstance(p, str):
            out[label] = p
            continue
        fm = features_for(p)
        if p.tags.fixed_width is not None and p.tags.fixed_width != fm.X.shape[1]:
            out[label] = f"n/a: takes {p.tags.fixed_width} counter features, these data have no counters"
        else:
            out[label] = [held_out_mape(fm, extractor, measurements.run_code, p, f, online=online) for f in folds]
    return out


def _cell(v: Any) -> str:
    if isinstance(v, str):
        return v
    a = 100.0 * np.asarray(v)
    return f"{a.mean():.2f} ± {a.std():.2f}"


def _winners(columns: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for col, scores in columns.items():
        ok = {k: float(np.mean(v)) for k, v in scores.items() if not isinstance(v, str)}
        best = min(ok, key=lambda k: ok[k])
        kind = "a baseline" if best.startswith("baseline") else "a predictor"
        lines.append(f"- {col}: **{best}** wins ({100 * ok[best]:.2f} % MAPE; {kind}).")
    return lines


def split_scores(extractor: Extractor, predictor: BasePredictor | None, measurements: Measurements,
                 profiles: ProfileTable | None, *, split: str, repeats: int, seed: int = 0,
                 online: bool = False, cache: dict[bytes, InterferenceModel] | None = None,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """What ``interfpred evaluate --split`` reports: held-out MAPE (%) of the predictor beside the baselines.

    ``predictor`` None scores what ``interfpred fit`` chooses with no flags, chosen afresh inside each
    fold's training rows (:func:`default_fit_mape`, its models kept in ``cache`` when given);
    ``extractor`` then only serves the baselines.
    Returns ``{"rows", "folds", "title", "methods": [{"method", "mape_%": [one per fold], "mean", "std",
    "min", "max"}, ...]}``, the predictor first, every figure in percent. ``progress``, when given, is
    called with a short message before each method's folds (and each default fit's fold).
    """
    folds = run_folds(measurements, split, repeats=repeats, seed=seed, train_share=E4_TRAIN_SHARE)
    fm_model = measurement_features(extractor, measurements, profiles)
    out = []

    def add(label: str, pct: np.ndarray, under: np.ndarray) -> None:
        out.append({"method": label, "mape_%": pct.tolist(), "mean": float(pct.mean()), "std": float(pct.std()),
                    "min": float(pct.min()), "max": float(pct.max()), "under_1.5x_%": float(under.mean())})

    if predictor is None:
        cache = {} if cache is None else cache
        got = []
        for i, f in enumerate(folds):
            if progress is not None:
                progress(f"the default fit, chosen inside fold {i + 1}/{len(folds)} ({f.label})")
            got.append([default_fit_mape(measurements, profiles, f, online=online, cache=cache, metric=m)
                        for m in ("mape", "under")])
        both = 100.0 * np.array(got)
        add(DEFAULT_FIT_LABEL, both[:, 0], both[:, 1])
        methods = [(BASELINE_LABELS[k], make_predictor(k)) for k in BASELINE_KINDS]
    else:
        methods = [(f"model ({predictor.kind})", predictor)] + [(BASELINE_LABELS[k], make_predictor(k))
                                                                 for k in BASELINE_KINDS]
    for label, p in methods:
        if progress is not None:
            progress(f"{label} on {len(folds)} folds")
        key = p.tags.entity_key if p.tags.uses_entities else "model"
        fm = fm_model if key == "model" else measurement_features(extractor, measurements, profiles, entity_key=key)
        both = 100.0 * np.array([[held_out_mape(fm, extractor, measurements.run_code, p, f, online=online, metric=m)
                                  for m in ("mape", "under")] for f in folds])
        add(label, both[:, 0], both[:, 1])
    what = (f"{len(folds)} seeded 70/30 splits by run" if split == "pair"
            else f"leave-one-model-out over {len(folds)} models")
    mode = "fitted on the training runs, then prequential on the test runs" if online else "fitted on the training runs"
    title = f"held-out MAPE of latency (%) on {len(measurements)} rows, {what}; {mode}"
    return {"rows": len(measurements), "folds": len(folds), "title": title, "methods": out}


def split_table(scores: dict[str, Any]) -> str:
    """:func:`split_scores`' result as the table ``interfpred evaluate --split`` prints."""
    rows = [[m["method"], f"{m['mean']:.2f} ± {m['std']:.2f}", f"{m['min']:.2f}", f"{m['max']:.2f}",
             f"{m['under_1.5x_%']:.1f}"] for m in scores["methods"]]
    header: list[str | Column] = ["method", Column("MAPE mean ± std", unit="%"), Column("min", unit="%"), Column("max", unit="%"),
                                  Column(f"under-predicted > {UNDER_PREDICTION_FACTOR:g}x", unit="%")]
    return scores["title"] + "\n" + text_table(header, rows)


def _e4_plan(ctx: ReproduceContext) -> dict[str, Any]:
    """What every piece of E4 works on, rebuilt the same in any process: the data, folds, methods, sizes."""
    m = gavel_v100()
    # The tests' size knob (executions given) runs a few splits, like the other sections' small sizes.
    repeats = 3 if ctx.executions is not None else (E4_QUICK_REPEATS if ctx.quick else E4_REPEATS)
    folds = {_COLUMNS[0]: run_folds(m, "pair", repeats=repeats, seed=ctx.seed),
             _COLUMNS[1]: run_folds(m, "model", repeats=1),
             _COLUMNS[2]: run_folds(m, "model", repeats=1),
             _COLUMNS[3]: new_model_streams(m, seed=ctx.seed)}
    # quick runs and the tests' sizes validate each fold's choice on fewer folds (said in the intro)
    small = ctx.quick or ctx.executions is not None
    n_folds, n_cold = ((E4_QUICK_SELECTION_FOLDS, E4_QUICK_SELECTION_COLD_MODELS) if small
                       else (SELECTION_FOLDS, SELECTION_COLD_MODELS))
    return {"m": m, "repeats": repeats, "folds": folds, "small": small, "n_folds": n_folds, "n_cold": n_cold}


def _e4_fits(ctx: ReproduceContext, cells: tuple[tuple[int, int], ...]) -> list[float]:
    """The default fit's MAPE on folds ``cells`` ((column, fold) pairs of one training set: fitted once)."""
    plan = _e4_plan(ctx)
    cols = list(plan["folds"])
    cache: dict[bytes, InterferenceModel] = {}      # the two leave-one-model-out columns share their fits
    out = []
    for c, k in cells:
        col = cols[c]
        f = plan["folds"][col][k]
        ctx.progress(f"E4: the default fit, chosen inside {col}: {f.label}")
        out.append(default_fit_mape(plan["m"], None, f, online=col not in _FROZEN, cache=cache,
                                    n_folds=plan["n_folds"], n_cold=plan["n_cold"]))
    return out


def _e4_scores(ctx: ReproduceContext, target: str, c: int) -> dict[str, Any]:
    """Every method of :func:`e4_methods` on the folds of column ``c``, target ``target``."""
    plan = _e4_plan(ctx)
    col = list(plan["folds"])[c]
    ctx.progress(f"E4: every method on {col}, target {target!r}")
    extractor = TimeWeighted(feature_map="shares", target=target)
    return score_methods(e4_methods(ctx.seed), extractor, plan["m"], None, plan["folds"][col],
                         online=col not in _FROZEN)


def _e4_layout(plan: dict[str, Any]) -> tuple[list[tuple[tuple[int, int], ...]], list[tuple[str, int]]]:
    """E4's pieces: the (column, fold) cells of each training set (the two leave-one-model-out columns
    share theirs: one default fit), and the (target, column) of each methods piece."""
    folds = plan["folds"]
    by_train: dict[bytes, list[tuple[int, int]]] = {}
    for c, col in enumerate(folds):
        for k, f in enumerate(folds[col]):
            train = np.flatnonzero(f.train) if np.asarray(f.train).dtype == bool else np.asarray(f.train)
            by_train.setdefault(np.asarray(train, dtype=np.int64).tobytes(), []).append((c, k))
    return [tuple(cells) for cells in by_train.values()], [(t, c) for t in E4_TARGETS for c in range(len(folds))]


def _e4_parts(ctx: ReproduceContext) -> list[Part]:
    """E4's pieces (:func:`_e4_layout`): the default fit per training set, every method per (target, column)."""
    plan = _e4_plan(ctx)
    m, folds = plan["m"], plan["folds"]
    held = f"{plan['n_cold']} held-out model{'' if plan['n_cold'] == 1 else 's'}"
    ctx.progress(f"E4: Gavel V100 pairs ({len(m)} rows, {m.n_runs} runs), {plan['repeats']} splits by run; the "
                 f"default fit chosen inside every fold's training runs (validated on {plan['n_folds']} folds by "
                 f"run and {held})")
    fits, scores = _e4_layout(plan)
    cols = list(folds)
    return ([Part(_e4_fits, (cells,), cost=_E4_FIT_COST * len(cells)) for cells in fits]
            + [Part(_e4_scores, (t, c), cost=_E4_SCORE_COST * len(folds[cols[c]])) for t, c in scores])


def _e4_assemble(ctx: ReproduceContext, results: list[Any]) -> Section:
    plan = _e4_plan(ctx)
    m, folds, repeats, n_folds, n_cold = plan["m"], plan["folds"], plan["repeats"], plan["n_folds"], plan["n_cold"]
    held = f"{n_cold} held-out model{'' if n_cold == 1 else 's'}"
    small = plan["small"]
    fits, scores = _e4_layout(plan)
    cols = list(folds)
    default: dict[str, list[float]] = {col: [0.0] * len(folds[col]) for col in cols}
    for cells, got in zip(fits, results[:len(fits)]):
        for (c, k), v in zip(cells, got):
            default[cols[c]][k] = v
    scored = {(t, cols[c]): got for (t, c), got in zip(scores, results[len(fits):])}
    methods = e4_methods(ctx.seed)
    header = ["method", *(f"{c} (MAPE %, mean ± std)" for c in _COLUMNS)]
    md: list[str] = []
    term: list[str] = []
    data: dict[str, Any] = {"rows": len(m), "runs": m.n_runs, "columns": {}, "winners": {}}
    for target in E4_TARGETS:
        extractor = TimeWeighted(feature_map="shares", target=target)
        columns = {col: {**scored[(target, col)], DEFAULT_FIT_LABEL: default[col]} for col in folds}
        labels = [DEFAULT_FIT_LABEL, *(label for label, _ in methods)]
        rows = [[label, *(_cell(columns[c][label]) for c in _COLUMNS)] for label in labels]
        winners = _winners(columns)
        title = f"Target {target!r}" + (" (the rate, solo / observed latency, in (0, 1])" if target == "rate" else
                                         " (observed / solo latency, the paper's target; heavy-tailed here)")
        md += [f"**{title}**", "", markdown_table(header, rows), "", "Winners:", *winners, ""]
        term += [title, text_table(header, rows), *(w.replace("**", "") for w in winners), ""]
        data["features"] = list(extractor.names)
        data["columns"][target] = {c: {k: (v if isinstance(v, str) else [float(x) for x in v])
                                       for k, v in sc.items()} for c, sc in columns.items()}
        data["winners"][target] = winners
    intro = (f"Real measurements: {len(m)} rows of {m.n_runs} pair runs of {len(m.models)} models (Gavel, OSDI'20, "
             "V100, MIT licence; steady-state pairs of training jobs, latency = ms per step; slowdowns from 0.99 "
             "to 119, median 1.68). Features: "
             f"{', '.join(data['features'])} (the file holds no hardware counter). Each method is fitted on the "
             "training runs, then predicts the test runs in order, prequentially (offline methods only predict); "
             "in the frozen column it predicts them without learning (a cold start, as `predict` serves). "
             f"Columns: {repeats} seeded 70/30 splits by run; leave-one-model-out over {len(folds[_COLUMNS[1]])} "
             f"models, prequential and frozen; a stream per model in which it first appears halfway "
             f"({len(folds[_COLUMNS[3]])} streams, "
             "scored on the second half). Spread = standard deviation over the repeats. Every method learns the "
             "target of its table, the baselines included (their mean is a mean of that target). The first row is what "
             "`interfpred fit` chooses with no flags, chosen afresh inside each fold's training runs (predictor, "
             "map, share features, target; the same row in both tables, as it picks its own target), validated "
             f"on {n_folds} folds by run and {held}"
             + (" (a quick run; `fit` and the full run use "
                f"{SELECTION_FOLDS} and {SELECTION_COLD_MODELS})." if small else ", as `fit` does."))
    markdown = "\n".join([intro, "", *md]).rstrip() + "\n"
    return Section(title="E4: real co-location measurements (Gavel V100 pairs)", markdown=markdown,
                   terminal="\n".join(term), data=data)


#: E4 on Gavel's V100 pairs: every registered predictor and the three baselines, four columns, two
#: targets; its pieces (:func:`_e4_parts`) are the default fit per training set and the methods per
#: (target, column).
run_e4 = SplitSection("run_e4", _e4_parts, _e4_assemble)
#: Rough seconds of one default fit (a validated choice) and of every method on one fold (quick run).
_E4_FIT_COST, _E4_SCORE_COST = 1.8, 0.4
