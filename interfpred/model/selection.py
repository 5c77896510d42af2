"""The configuration ``fit`` chooses when none is named: validated inside the training rows only.

:func:`select_configuration` scores every candidate the data support (predictor, feature map,
MPS share features, target; whatever the caller fixed stays fixed) on the training rows alone,
three ways, and keeps the one with the lowest mean of the three MAPEs of latency:

- *warm*: ``SELECTION_FOLDS`` grouped folds (whole measurement runs, or blocks of
  ``SELECTION_TRACE_BLOCK`` consecutive trace rows); each is predicted prequentially (every run
  predicted with what the runs before it taught, then learned) by a clone fitted on the others;
- *cold*: up to ``SELECTION_COLD_MODELS`` models held out entirely (as the batch measured and as a
  co-runner), their rows predicted by a clone fitted on the rest (a model never seen), once
  prequentially (as a learner updated online meets it) and once frozen (as ``predict`` serves it).

The three baselines (no interference, global mean, per-pair mean) are scored on the same folds
and target, so :attr:`Selection.beaten_by` says which of them the choice fails to beat.
:func:`fit_selected` fits the chosen configuration on every row. EntityRLS tunes its prior
variances once on all the rows (its own validation) and keeps them fixed inside the folds, which
keeps the search to a few seconds on a few hundred runs; with the predictor searched too, the
extractor is searched first with RLS (``SELECTION_PROXY``, fast), and every other predictor is then
scored on RLS's best extractor per target.

Examples
--------
>>> from interfpred.data.datasets import gavel_v100
>>> sel = select_configuration(None, None, gavel_v100(), fixed={"feature_map": "shares"},
...                            predictors=("rls",), targets=("rate",))
>>> sel.chosen.label
'rls, shares map, target rate'
>>> sorted(sel.baselines)
['global mean', 'no interference', 'pair mean']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interfpred.constants import (
    BASELINE_KINDS,
    MODEL_DEFAULT_EXTRACTOR,
    MODEL_DEFAULT_PREDICTOR,
    SELECTION_COLD_MODELS,
    SELECTION_FOLDS,
    SELECTION_MAX_ROWS,
    SELECTION_PREDICTORS,
    SELECTION_PROXY,
    SELECTION_SEED,
    SELECTION_TARGETS,
    SELECTION_TRACE_BLOCK,
)
from interfpred.data.counters import supported_maps
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import InterfpredError
from interfpred.evaluation import BASELINE_LABELS, Fold, held_out_mape, held_out_mapes
from interfpred.features import FeatureMatrix, make_extractor
from interfpred.model.crossfit import grouped_fold_ids, involvement, model_entities, row_groups, take_rows
from interfpred.model.interference import InterferenceModel
from interfpred.predictors import BasePredictor, make_predictor

__all__ = ["Candidate", "Selection", "candidates", "fit_selected", "select_configuration"]


@dataclass(frozen=True)
class Candidate:
    """One configuration: a predictor kind and the extractor's feature map, share features and target."""

    predictor: str
    feature_map: str
    shares: bool
    target: str

    @property
    def label(self) -> str:
        """``"entity_rls, gpulets map + shares, target rate"``."""
        return (f"{self.predictor}, {self.feature_map} map{' + shares' if self.shares else ''}, "
                f"target {self.target}")

    def extractor_spec(self, fixed: Mapping[str, Any]) -> dict[str, Any]:
        """The extractor spec: the defaults, what the caller fixed, then this candidate."""
        spec = {**dict(MODEL_DEFAULT_EXTRACTOR), **{k: v for k, v in fixed.items() if v is not None},
                "feature_map": self.feature_map, "target": self.target}
        if self.shares:
            spec["shares"] = True
        else:
            spec.pop("shares", None)
        return spec


@dataclass(frozen=True)
class Selection:
    """What :func:`select_configuration` measured and chose.

    Attributes
    ----------
    chosen
        The candidate with the lowest validation score.
    scores
        Candidate label -> (warm MAPE, cold prequential MAPE, cold frozen MAPE, score), fractions; nan
        where a kind of fold could not be made.
    baselines
        Baseline label -> the same triple, on the chosen target.
    warm_folds, cold_folds
        How many folds of each kind were scored.
    """

    chosen: Candidate
    scores: dict[str, tuple[float, ...]]
    baselines: dict[str, tuple[float, ...]]
    warm_folds: int
    cold_folds: int
    fixed: dict[str, Any] = field(default_factory=dict)

    @property
    def beaten_by(self) -> list[str]:
        """Baselines whose validation score is lower than the chosen configuration's."""
        mine = self.scores[self.chosen.label][-1]
        return [k for k, v in self.baselines.items() if v[-1] < mine]

    def report(self) -> list[str]:
        """Lines for the terminal: what was chosen and why, the candidates and the baselines."""
        if not self.warm_folds and not self.cold_folds:
            return [f"chose {self.chosen.label}: too few runs (or trace blocks) to validate on, so the "
                    "default among the candidates, unvalidated"]
        how = (f"{self.warm_folds} folds by run, prequential"
               + (f"; {self.cold_folds} models held out, prequential and frozen" if self.cold_folds else ""))
        lines = [f"chose {self.chosen.label}: lowest validation MAPE inside the training rows ({how}; "
                 "score = their mean)"]
        rows = sorted(self.scores.items(), key=lambda kv: kv[1][-1])
        width = max(len(k) for k in [*self.scores, *self.baselines])

        def fmt(v: float) -> str:
            return "   n/a" if np.isnan(v) else f"{100 * v:6.2f}"

        lines.append(f"  {'validation MAPE (%)':<{width}}    warm  cold online  cold frozen   score")
        for k, v in [*rows, *((f"baseline: {b}", bv) for b, bv in self.baselines.items())]:
            mark = "  <- chosen" if k == self.chosen.label else ""
            lines.append(f"  {k:<{width}}  {fmt(v[0])}       {fmt(v[1])}       {fmt(v[2])}  {fmt(v[3])}{mark}")
        return lines

    def warning(self) -> str | None:
        """One line when a baseline beats the chosen configuration on validation, else None."""
        beaten = self.beaten_by
        if not beaten:
            return None
        mine = self.scores[self.chosen.label][-1]
        return (f"WARNING: the chosen model LOSES to {', '.join(beaten)} on validation "
                f"({100 * mine:.2f} % against {', '.join(f'{100 * self.baselines[b][-1]:.2f} %' for b in beaten)}): "
                "a baseline predicts these data better")


def _missing_counters(profiles: ProfileTable | None) -> list[str]:
    if profiles is None:
        return ["sm", "l2", "dram"]
    return [r for r in ("sm", "l2", "dram") if np.isnan(profiles.column(r)).any()]


def _shares_vary(trace: Trace | None, measurements: Measurements | None) -> bool:
    vals = []
    if measurements is not None:
        vals.append(np.asarray(measurements.share, dtype=np.float64))
    if trace is not None and trace.share is not None:
        vals.append(np.asarray(trace.share, dtype=np.float64))
    return bool(vals) and bool(np.ptp(np.concatenate(vals)) > 0)


def candidates(trace: Trace | None, profiles: ProfileTable | None, measurements: Measurements | None, *,
               fixed: Mapping[str, Any], predictors: Sequence[str] = SELECTION_PREDICTORS,
               targets: Sequence[str] = SELECTION_TARGETS) -> list[Candidate]:
    """Every configuration the data support, with the caller's choices fixed.

    Maps: those the profiles' counters support (or ``fixed["feature_map"]``); share features
    on a map that lacks them when the data's shares vary (``fixed["shares"]`` True: always); targets
    ``targets`` (or ``fixed["target"]``).
    """
    maps = ([fixed["feature_map"]] if fixed.get("feature_map") is not None
            else list(supported_maps(_missing_counters(profiles))))
    if fixed.get("shares"):
        share_opts = [True]
    else:
        share_opts = [False, True] if _shares_vary(trace, measurements) else [False]
    tg = [fixed["target"]] if fixed.get("target") is not None else list(targets)
    out = []
    for kind in predictors:
        for fmap in maps:
            for sh in share_opts:
                if sh and fmap == "shares":
                    continue      # the shares map holds them already
                for t in tg:
                    out.append(Candidate(kind, fmap, sh, t))
    if not out:
        out = [Candidate(k, m, False, t) for k in predictors for m in maps for t in tg]
    return out


def _frozen_priors(p: BasePredictor, fm: FeatureMatrix) -> BasePredictor:
    """EntityRLS with the prior variances it tunes on all rows, fixed (no nested tuning in every fold)."""
    if not getattr(p, "tune_priors", False):
        return p
    tuned: Any = p.clone().fit(fm.X, fm.y, entities=fm.entities)
    return make_predictor(p.kind, **{**p.get_params(), "tune_priors": False, **tuned.prior_variances_})


def _folds(fm_model: FeatureMatrix, groups: np.ndarray, seed: int, n_folds: int,
           n_cold: int) -> tuple[list[Fold], list[Fold]]:
    """Warm folds (grouped, test rows in group order) and cold folds (a model held out entirely)."""
    n_groups = len(np.unique(groups))
    k = min(n_folds, n_groups)
    warm = []
    if k >= 2:
        ids = grouped_fold_ids(groups, k, seed=seed)
        for f in range(k):
            test = np.flatnonzero(ids == f)
            warm.append(Fold(f"fold {f}", ids != f, test[np.argsort(groups[test], kind="stable")]))
    cold: list[Fold] = []
    ent = fm_model.entities
    if ent is not None and len(ent.names) >= 3:
        involves = involvement(ent)
        rng = np.random.default_rng(seed)
        for j in rng.permutation(len(ent.names))[:n_cold]:
            test = involves[:, j]
            if test.any() and (~test).sum() >= 2:
                cold.append(Fold(ent.names[j], ~test, np.flatnonzero(test)))
    return warm, cold


def _score(fm: FeatureMatrix, ex: Any, groups: np.ndarray, p: BasePredictor, warm: list[Fold],
           cold: list[Fold]) -> tuple[float, float, float, float]:
    w = float(np.mean([held_out_mape(fm, ex, groups, p, f, online=True) for f in warm])) if warm else np.nan
    both = np.array([held_out_mapes(fm, ex, groups, p, f) for f in cold]).reshape(-1, 2)   # one fit per fold
    co, cf = (float(v) for v in both.mean(axis=0)) if cold else (np.nan, np.nan)
    return w, co, cf, float(np.nanmean([w, co, cf]))


def select_configuration(trace: Trace | None, profiles: ProfileTable | None, measurements: Measurements | None, *,
                         fixed: Mapping[str, Any] | None = None, predictor: BasePredictor | None = None,
                         predictors: Sequence[str] = SELECTION_PREDICTORS,
                         targets: Sequence[str] = SELECTION_TARGETS, seed: int = SELECTION_SEED,
                         n_folds: int = SELECTION_FOLDS, n_cold: int = SELECTION_COLD_MODELS) -> Selection:
    """Score every candidate on the training rows and choose the best (module docstring).

    Parameters
    ----------
    trace, profiles, measurements
        The training data, as for :meth:`InterferenceModel.fit`.
    fixed
        Extractor keys the caller named (``feature_map``, ``shares``, ``target``, ``aggregation``,
        ``combine``, ``alpha``); None values count as not named.
    predictor
        A predictor the caller named (only the extractor is then chosen); else ``predictors``.
    n_folds, n_cold
        How many warm folds and held-out models validate (``SELECTION_FOLDS``,
        ``SELECTION_COLD_MODELS``); fewer make a cheaper, noisier choice (quick experiment runs).
    """
    if n_folds < 2 or n_cold < 0:
        raise InterfpredError(f"n_folds {n_folds} and n_cold {n_cold}: expected n_folds >= 2 and n_cold >= 0")
    fixed = {k: v for k, v in (fixed or {}).items() if v is not None}
    kinds = [predictor.kind] if predictor is not None else list(predictors)
    cands = candidates(trace, profiles, measurements, fixed=fixed, predictors=kinds, targets=targets)
    # a predictor of fixed width (gpulets) takes only the maps of that width
    widths = {k: (predictor if predictor is not None else make_predictor(k)).tags.fixed_width for k in kinds}
    cands = [c for c in cands if widths[c.predictor] in (None, make_extractor(c.extractor_spec(fixed)).n_features)]
    if not cands:
        raise InterfpredError(f"no feature map these data support fits predictor {kinds[0]!r} "
                              f"(it takes {widths[kinds[0]]} features); name --feature-map")
    n_trace = 0 if trace is None else len(trace)
    # trace blocks small enough that a short trace still makes a few per fold
    groups = row_groups(n_trace, measurements,
                        block=min(SELECTION_TRACE_BLOCK, n_trace // (4 * n_folds)))
    # at most SELECTION_MAX_ROWS rows validate (whole groups, seeded); features still see every row
    n_rows = len(groups)
    keep = np.arange(n_rows)
    if len(groups) > SELECTION_MAX_ROWS:
        uniq, counts = np.unique(groups, return_counts=True)
        order = np.random.default_rng(seed).permutation(len(uniq))
        chosen_groups = uniq[order[:max(2, int(np.searchsorted(np.cumsum(counts[order]), SELECTION_MAX_ROWS)))]]
        keep = np.flatnonzero(np.isin(groups, chosen_groups))
    groups = groups[keep]
    scores: dict[str, tuple[float, ...]] = {}
    folds: tuple[list[Fold], list[Fold]] | None = None
    feats: dict[tuple[str, str], tuple[FeatureMatrix, Any]] = {}
    def run(c: Candidate) -> None:
        nonlocal folds
        proto = predictor.clone() if predictor is not None and c.predictor == predictor.kind else make_predictor(c.predictor)
        model = InterferenceModel(c.extractor_spec(fixed), proto)
        fm = model.features(trace, profiles, measurements=measurements)
        if len(fm) != n_rows:
            raise InterfpredError(f"{len(fm)} feature rows for {n_rows} rows of data")
        if len(keep) < n_rows:
            fm = take_rows(fm, keep)
        if folds is None:
            fm_model = FeatureMatrix(fm.X, fm.names, fm.y, fm.target, fm.solo_ms, fm.latency_ms,
                                     model_entities(fm, proto))
            folds = _folds(fm_model, groups, seed, n_folds, n_cold)
        feats.setdefault((c.target, "model"), (FeatureMatrix(fm.X, fm.names, fm.y, fm.target, fm.solo_ms,
                                                             fm.latency_ms, model_entities(fm, proto)),
                                               model.extractor))
        scores[c.label] = _score(fm, model.extractor, groups, _frozen_priors(proto, fm), *folds)

    # Two stages when several extractors are open for a predictor other than the proxy: the extractor
    # (map, shares, target) searched with the fast proxy, then the other predictors on the proxy's
    # best extractor per target (the proxy's rows are reported; a named predictor is still the choice).
    others = [c for c in cands if c.predictor != SELECTION_PROXY]
    staged = bool(others) and all(widths[c.predictor] is None for c in others) and (
        len(others) > len({c.target for c in others}) or SELECTION_PROXY in kinds)
    first = ([Candidate(SELECTION_PROXY, c.feature_map, c.shares, c.target) for c in cands
              if c.predictor == others[0].predictor] if staged else cands)
    for c in first:
        run(c)
    assert folds is not None
    scored = list(first)
    if staged and (folds[0] or folds[1]):
        best: dict[str, tuple[str, bool]] = {}
        for c in sorted(first, key=lambda c: scores[c.label][-1]):
            best.setdefault(c.target, (c.feature_map, c.shares))
        second = [c for c in cands if c.predictor != SELECTION_PROXY and best.get(c.target) == (c.feature_map, c.shares)]
        for c in second:
            run(c)
        scored += second
    cands = [c for c in cands if c in scored] or cands
    if not folds[0] and not folds[1]:     # nothing to validate on: the defaults, said so in the report
        nan = (np.nan,) * 4
        d = dict(MODEL_DEFAULT_EXTRACTOR)
        pick = min(cands, key=lambda c: (c.predictor != MODEL_DEFAULT_PREDICTOR, c.feature_map != d["feature_map"],
                                         c.target != d["target"], cands.index(c)))
        return Selection(pick, {c.label: nan for c in cands}, {}, 0, 0, dict(fixed))
    chosen = min(cands, key=lambda c: (scores[c.label][-1], cands.index(c)))
    fm_b, ex_b = feats[(chosen.target, "model")]
    baselines: dict[str, tuple[float, ...]] = {BASELINE_LABELS[k].removeprefix("baseline: "): _score(fm_b, ex_b, groups, make_predictor(k), *folds)
                 for k in BASELINE_KINDS}
    return Selection(chosen, scores, baselines, len(folds[0]), len(folds[1]), dict(fixed))


def fit_selected(selection: Selection, trace: Trace | None, profiles: ProfileTable | None,
                 measurements: Measurements | None, *, predictor: BasePredictor | None = None,
                 weights: Any = None, progress: Any = None) -> InterferenceModel:
    """The chosen configuration fitted on every row (``predictor``: the object to fit, e.g. a Calibrated wrap;
    ``progress``: as for :meth:`InterferenceModel.fit`)."""
    c = selection.chosen
    model = InterferenceModel(make_extractor(c.extractor_spec(selection.fixed)).get_spec(),
                              predictor if predictor is not None else make_predictor(c.predictor))
    model.auto_map = False
    return model.fit(trace, profiles, measurements=measurements, weights=weights, progress=progress)
