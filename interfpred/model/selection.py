"""The configuration ``fit`` chooses when none is named: validated inside the training rows only.

:func:`select_configuration` scores every candidate the data support (predictor, feature map,
MPS share features, target; whatever the caller fixed stays fixed) and the three baselines (no
interference, global mean, per-pair mean) on the training rows alone, by use:

- *warm* (rows of models the model has seen, as a deployed model mostly meets them):
  ``SELECTION_FOLDS`` grouped folds (whole measurement runs, or blocks of
  ``SELECTION_TRACE_BLOCK`` consecutive trace rows); each is predicted prequentially (every run
  predicted with what the runs before it taught, then learned) by a clone fitted on the others.
- *cold* (models never seen): up to ``SELECTION_COLD_MODELS`` models held out entirely (as the
  batch measured and as a co-runner), their rows predicted by a clone fitted on the rest, once
  prequentially and once frozen (as ``predict`` serves them).

Every score is the error of the latency's ratio either way, ``max(predicted / observed, observed /
predicted) - 1`` (:func:`~interfpred.evaluation.metrics.ratio_error`; ``SELECTION_METRIC``), not
MAPE: MAPE caps an under-prediction's cost at 100 % and so rewards predicting too little, which
is the error that makes a scheduler miss SLOs. The warm error decides first: the candidates within one standard error of the lowest
(the mean of their paired per-fold differences from it at most its standard error: the
one-standard-error rule) predict models seen equally well, so the frozen error on the held-out
models chooses among them, and chooses what an EntityRLS among them serves models never seen
with (``backoff``: features-only RLS, the scaled global mean, or no interference). A baseline
that wins is the choice, and :attr:`Selection.baseline_chosen` says so. Without warm folds (too
few runs) the frozen error alone chooses.

:func:`~interfpred.model.interference.fit_selected` fits the chosen configuration on every row. EntityRLS tunes its prior
variances once on all the rows (its own validation) and keeps them fixed inside the folds, which
keeps the search to a few seconds on a few hundred runs; with the predictor searched too, the
extractor is searched first with RLS (``SELECTION_PROXY``, fast), and every other predictor is then
scored on RLS's best extractor per target.

Examples
--------
>>> from interfpred.data.datasets import gavel_v100
>>> sel = select_configuration(None, None, gavel_v100(), fixed={"feature_map": "shares"},
...                            predictors=("rls",), targets=("rate",))
>>> sel.chosen.label           # RLS on the share features alone loses to the per-pair mean, so fit returns it
'baseline: pair mean, target rate'
>>> sel.baseline_chosen, sorted(sel.baselines)
(True, ['global mean', 'no interference', 'pair mean'])
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from interfpred.constants import (
    BASELINE_KINDS,
    ENTITY_BACKOFFS,
    MODEL_DEFAULT_EXTRACTOR,
    MODEL_DEFAULT_PREDICTOR,
    OWN_ONLY_MAPS,
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
from interfpred.evaluation import BASELINE_LABELS, Fold
from interfpred.evaluation.folds import FoldFitter, fit_fold, fold_rows
from interfpred.evaluation.text_tables import Column, percent, text_table
from interfpred.evaluation.validation import (
    held_out_model_folds,
    row_groups,
    validation_scores,
    warm_folds,
    within_one_se,
)
from interfpred.features import FeatureMatrix, make_extractor
from interfpred.features.measurement_features import missing_counters, uncovered_rows
from interfpred.model.crossfit import model_entities, take_rows
from interfpred.model.rows import model_features
from interfpred.predictors import BasePredictor, make_predictor

__all__ = ["Candidate", "Selection", "candidates", "select_configuration"]


@dataclass(frozen=True)
class Candidate:
    """One configuration: a predictor kind and the extractor's feature map, share features and target."""

    predictor: str
    feature_map: str
    shares: bool
    target: str
    #: What an EntityRLS candidate backs off to for models never seen (None: its default).
    backoff: str | None = None

    @property
    def is_baseline(self) -> bool:
        """Whether this candidate is one of the three baselines (features unused)."""
        return self.predictor in BASELINE_KINDS

    @property
    def label(self) -> str:
        """``"entity_rls, gpulets map + shares, target rate"``; ``"baseline: pair mean, target rate"``."""
        if self.is_baseline:
            return f"{BASELINE_LABELS[self.predictor]}, target {self.target}"
        kind = self.predictor + ("" if self.backoff is None else f" (backoff {self.backoff})")
        return f"{kind}, {self.feature_map} map{' + shares' if self.shares else ''}, target {self.target}"

    def build(self, predictor: BasePredictor | None = None) -> BasePredictor:
        """A fresh predictor of this candidate (``predictor``: the caller's object of the same kind, cloned)."""
        if predictor is not None and predictor.kind == self.predictor:
            return predictor.clone()
        return make_predictor(self.predictor, **({} if self.backoff is None else {"backoff": self.backoff}))

    def extractor_spec(self, fixed: Mapping[str, Any]) -> dict[str, Any]:
        """The extractor spec: the defaults, what the caller fixed, then this candidate."""
        spec = {**dict(MODEL_DEFAULT_EXTRACTOR), **{k: v for k, v in fixed.items() if v is not None},
                "feature_map": self.feature_map, "target": self.target}
        if self.shares:
            spec["shares"] = True
        else:
            spec.pop("shares", None)
        return spec


#: Columns of :meth:`Selection.report`'s table: validation errors (fractions inside) shown in percent.
REPORT_HEADER: list[str | Column] = ["candidate", percent("warm error", spec=".2f"), percent("cold online error", spec=".2f"),
                 percent("cold frozen error", spec=".2f"), ""]


@dataclass(frozen=True)
class Selection:
    """What :func:`select_configuration` measured and chose.

    Attributes
    ----------
    chosen
        The candidate with the lowest warm validation error (cold frozen without warm folds); an
        EntityRLS choice carries the backoff of the lowest cold frozen error. It may be a baseline.
    scores
        Candidate label -> (warm, cold prequential, cold frozen) ratio errors, fractions; nan
        where a kind of fold could not be made. Baselines are candidates too (their labels start
        with ``"baseline: "``).
    baselines
        Baseline name (``"pair mean"``) -> the same triple, on the chosen target.
    warm_folds, cold_folds
        How many folds of each kind were scored.
    colocated
        Whether any training row ran beside another batch (without, there is no interference to learn).
    """

    chosen: Candidate
    scores: dict[str, tuple[float, ...]]
    baselines: dict[str, tuple[float, ...]]
    warm_folds: int
    cold_folds: int
    fixed: dict[str, Any] = field(default_factory=dict)
    colocated: bool = True
    #: Why the profiles could not give counters for every row (then only maps that need none were
    #: candidates), or None.
    uncovered: str | None = None

    def _use(self, v: tuple[float, ...]) -> float:
        return v[0] if self.warm_folds else v[2]

    @property
    def baseline_chosen(self) -> bool:
        """Whether a baseline won validation (no model predicts these rows better)."""
        return self.chosen.is_baseline

    @property
    def beaten_by(self) -> list[str]:
        """Baselines (on the chosen target) whose validation score, as the choice was made, beats the choice's."""
        mine = self._use(self.scores[self.chosen.label])
        return [k for k, v in self.baselines.items() if self._use(v) < mine]

    @property
    def rule(self) -> str:
        """How the choice was made, in words (the first line of :meth:`report` after ``chose <label>:``)."""
        if not self.warm_folds and not self.cold_folds:
            return ("too few runs (or trace blocks) to validate on, so the default among the candidates, "
                    "unvalidated")
        if self.warm_folds and self.cold_folds:
            return (f"of the candidates within one standard error of the lowest warm error ({self.warm_folds} folds "
                    f"by run, prequential: models seen), the lowest frozen error on {self.cold_folds} held-out "
                    "model(s) (models never seen)")
        if self.warm_folds:
            return f"lowest warm error ({self.warm_folds} folds by run, prequential: models seen)"
        return f"lowest frozen error on {self.cold_folds} held-out model(s) (too few runs for folds by run)"

    def report(self) -> list[str]:
        """Lines for the terminal: what was chosen and why, then a table of the candidates and the baselines
        (validation error in percent, ``-`` where a kind of fold could not be made)."""
        if not self.warm_folds and not self.cold_folds:
            return [f"chose {self.chosen.label}: {self.rule}"]
        rows = sorted(self.scores.items(), key=lambda kv: (self._use(kv[1]), kv[0].startswith("baseline")))
        table = text_table(REPORT_HEADER, [[k, *v[:3], "<- chosen" if k == self.chosen.label else ""]
                                           for k, v in rows])
        return [f"chose {self.chosen.label}: {self.rule}", *("  " + line for line in table.splitlines())]

    def to_state(self) -> dict[str, Any]:
        """JSON-able dict (what a model file keeps): the chosen candidate, the rule in words, every candidate's
        and baseline's (warm, cold online, cold frozen) ratio errors as fractions (null where not measured), the
        folds, and why counter maps were left out (``uncovered``, null when they were not).

        Examples
        --------
        >>> sel = Selection(Candidate("rls", "rich", False, "rate"), {"rls, rich map, target rate": (0.1, 0.2, 0.3)},
        ...                 {}, 5, 0)
        >>> Selection.from_state(sel.to_state()) == sel
        True
        """
        def figures(v: tuple[float, ...]) -> list[float | None]:
            return [None if not np.isfinite(x) else float(x) for x in v]

        return {"chosen": asdict(self.chosen), "rule": self.rule,
                "scores": {k: figures(v) for k, v in self.scores.items()},
                "baselines": {k: figures(v) for k, v in self.baselines.items()},
                "warm_folds": self.warm_folds, "cold_folds": self.cold_folds, "fixed": dict(self.fixed),
                "colocated": self.colocated, "uncovered": self.uncovered}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Selection:
        """Rebuild from :meth:`to_state`'s dict (checked by the model file's format before; ``rule`` is derived)."""
        def figures(v: Any) -> tuple[float, ...]:
            return tuple(np.nan if x is None else float(x) for x in v)

        return cls(Candidate(**state["chosen"]), {str(k): figures(v) for k, v in state["scores"].items()},
                   {str(k): figures(v) for k, v in state["baselines"].items()}, int(state["warm_folds"]),
                   int(state["cold_folds"]), dict(state.get("fixed", {})), bool(state.get("colocated", True)),
                   None if state.get("uncovered") is None else str(state["uncovered"]))

    def warnings(self) -> list[str]:
        """One line per thing the user should know: no co-location in the rows, a baseline chosen, a loss
        to a baseline on models never seen. Empty when none applies."""
        out = []
        if self.uncovered is not None:
            out.append(f"the profiles do not cover every row, so only maps that need no counter were candidates: "
                       f"{self.uncovered}")
        if not self.colocated:
            out.append("no training row ran beside another batch: there is no interference to learn from "
                       "(every candidate predicts solo speed)")
        if not self.warm_folds and not self.cold_folds:
            return out
        col = 0 if self.warm_folds else 2
        models = {k: v for k, v in self.scores.items() if not k.startswith("baseline")}
        if self.baseline_chosen and models:
            best = min(models, key=lambda k: (np.nan_to_num(models[k][col], nan=np.inf), k))
            out.append(f"no model beats the baselines on validation: fit chose the {self.chosen.label} "
                       f"({100 * self.scores[self.chosen.label][col]:.2f} % against {100 * models[best][col]:.2f} % "
                       f"for the best model, {best})")
        elif self.beaten_by:       # a named predictor, scored beside the baselines but not against them
            mine = self.scores[self.chosen.label][col]
            out.append(f"the chosen model LOSES to {', '.join(self.beaten_by)} on validation ({100 * mine:.2f} % "
                       f"against {', '.join(f'{100 * self.baselines[b][col]:.2f} %' for b in self.beaten_by)}): "
                       "a baseline predicts these data better")
        if self.cold_folds and not self.baseline_chosen:
            mine = self.scores[self.chosen.label][2]
            worse = [(k, v[2]) for k, v in self.baselines.items() if v[2] < mine]
            if worse:
                out.append("for models never seen (held out, frozen) the choice loses to "
                           + ", ".join(f"the {k} ({100 * v:.2f} % against {100 * mine:.2f} %)" for k, v in worse))
        return out


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
            else [m for m in supported_maps(missing_counters(profiles, measurements)) if m not in OWN_ONLY_MAPS])
    if fixed.get("shares"):
        share_opts = [True]
    else:
        share_opts = [False, True] if _shares_vary(trace, measurements) else [False]
    tg = [fixed["target"]] if fixed.get("target") is not None else list(targets)
    out = []
    for kind in predictors:
        tags = make_predictor(kind).tags
        own = None if fixed.get("feature_map") is not None else tags.own_map
        for fmap in ([own] if own is not None else maps):
            for sh in ([False] if own is not None else share_opts):
                if sh and fmap == "shares":
                    continue      # the shares map holds them already
                for t in (tg[:1] if tags.target_free else tg):     # the same model on every target
                    out.append(Candidate(kind, fmap, sh, t))
    if not out:
        out = [Candidate(k, m, False, t) for k in predictors for m in maps for t in tg]
    return out


def _frozen_priors(p: BasePredictor, fm: FeatureMatrix, cache: dict[Any, dict[str, float]] | None = None,
                   key: Any = None) -> BasePredictor:
    """EntityRLS with the prior variances it tunes on all rows, fixed (no nested tuning in every fold);
    ``cache[key]`` keeps them for candidates that differ only in what tuning does not see (the backoff)."""
    if not p.tags.tunes_priors:
        return p
    tuned = None if cache is None else cache.get(key)
    if tuned is None:
        tuned = p.tuned_prior_variances(fm.X, fm.y, entities=fm.entities)   # type: ignore[attr-defined]
        if cache is not None:
            cache[key] = tuned
    return make_predictor(p.kind, **{**p.get_params(), "tune_priors": False, **tuned})


def _fold_fitter(c: Candidate, fm: FeatureMatrix, tuned: BasePredictor, key: Any,
                 fitted: dict[Any, BasePredictor]) -> FoldFitter | None:
    """How the folds of an EntityRLS candidate are fitted: the default backoff's fits are kept (a copy,
    before the fold is tested), and another backoff's are those with the backoff refitted
    (:meth:`~interfpred.predictors.EntityRLS.refit_backoff`: the same state as a fresh fit, without
    fitting the entity model again). None (every fold fitted afresh) for other predictors."""
    refit = getattr(tuned, "refit_backoff", None)
    if refit is None or getattr(tuned, "tune_priors", True):
        return None
    default = c.backoff in (None, ENTITY_BACKOFFS[0])

    def fit(fold: Fold) -> BasePredictor:
        slot = (key, id(fold))
        if default:
            p = fit_fold(fm, tuned, fold)
            fitted[slot] = copy.deepcopy(p)
            return p
        base = fitted.get(slot)
        if base is None:
            return fit_fold(fm, tuned, fold)
        train, _ = fold_rows(fold)
        ent = None if fm.entities is None else fm.entities.take(train)
        return base.refit_backoff(c.backoff, fm.X[train], fm.y[train], entities=ent)   # type: ignore[attr-defined]

    return fit


def _folds(fm_model: FeatureMatrix, groups: np.ndarray, seed: int, n_folds: int,
           n_cold: int) -> tuple[list[Fold], list[Fold]]:
    """Warm folds (by run) and cold folds (a model held out entirely), from the one validation module."""
    return warm_folds(groups, n_folds, seed), held_out_model_folds(fm_model.entities, n_cold, seed)


def _colocated(fm: FeatureMatrix) -> bool:
    """Whether any row ran beside another batch (a co-runner weight above zero, or a co-runner count)."""
    ent = fm.entities
    if ent is not None:
        return bool(np.any(np.asarray(ent.weight) > 0.0))
    if "n_others" in fm.names:
        return bool(np.any(fm.X[:, fm.names.index("n_others")] > 0.0))
    return True     # nothing says otherwise


def select_configuration(trace: Trace | None, profiles: ProfileTable | None, measurements: Measurements | None, *,
                         fixed: Mapping[str, Any] | None = None, predictor: BasePredictor | None = None,
                         predictors: Sequence[str] = SELECTION_PREDICTORS,
                         targets: Sequence[str] = SELECTION_TARGETS, seed: int = SELECTION_SEED,
                         n_folds: int = SELECTION_FOLDS, n_cold: int = SELECTION_COLD_MODELS,
                         progress: Callable[[str], None] | None = None) -> Selection:
    """Score every candidate and the baselines on the training rows and choose by use (module docstring).

    Parameters
    ----------
    trace, profiles, measurements
        The training data, as for :meth:`InterferenceModel.fit`.
    fixed
        Extractor keys the caller named (``feature_map``, ``shares``, ``target``, ``aggregation``,
        ``combine``, ``alpha``); None values count as not named.
    predictor
        A predictor the caller named (only the extractor is then chosen, and the baselines are
        scored beside it but not chosen); else ``predictors`` and the baselines compete.
    n_folds, n_cold
        How many warm folds and held-out models validate (``SELECTION_FOLDS``,
        ``SELECTION_COLD_MODELS``); fewer make a cheaper, noisier choice (quick experiment runs).
    progress
        Called with a short message before each candidate is scored (the CLI prints them on stderr).
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
    feats: dict[str, tuple[FeatureMatrix, Any]] = {}
    per_fold: dict[str, np.ndarray] = {}       # warm error of each fold by run, per candidate
    priors: dict[Any, dict[str, float]] = {}     # tuned prior variances per extractor (the backoff aside)
    fitted: dict[Any, BasePredictor] = {}        # EntityRLS fitted per extractor and fold, its backoff aside
    # (kept only when other backoffs may be scored: no predictor named)
    colocated = True

    def run(c: Candidate) -> None:
        nonlocal folds, colocated
        if progress is not None:
            progress(f"validating {c.label} ({len(scores)} configurations scored)")
        # declared for the candidate's target, as the model that ships it is (its prior tuning and its
        # backoff's scale read the target): the folds score the model fit_selected fits
        proto = c.build(predictor)
        if proto.target is None:
            proto = proto.with_target(c.target)
        extractor = make_extractor(c.extractor_spec(fixed))
        fm = model_features(extractor, proto, trace, profiles, measurements=measurements)
        if len(fm) != n_rows:
            raise InterfpredError(f"{len(fm)} feature rows for {n_rows} rows of data")
        if len(keep) < n_rows:
            fm = take_rows(fm, keep)
        by_model = FeatureMatrix(fm.X, fm.names, fm.y, fm.target, fm.solo_ms, fm.latency_ms, model_entities(fm, proto))
        if folds is None:
            folds = _folds(by_model, groups, seed, n_folds, n_cold)
            colocated = _colocated(by_model)
        feats.setdefault(c.target, (by_model, extractor))
        key = (c.predictor, c.feature_map, c.shares, c.target)
        tuned = _frozen_priors(proto, fm, priors, key)
        scores[c.label], per_fold[c.label] = validation_scores(fm, extractor, groups, tuned, *folds,
                                                               fitter=_fold_fitter(c, fm, tuned, key, fitted)
                                                               if predictor is None else None)

    # Two stages when several extractors are open for a predictor other than the proxy: the extractor
    # (map, shares, target) searched with the fast proxy, then the other predictors on the proxy's
    # best extractor per target (the proxy's rows are reported; a named predictor is still the choice).
    # a predictor with a map of its own is scored on it, whatever the proxy's search finds
    has_own_map = {k: fixed.get("feature_map") is None and (predictor if predictor is not None else make_predictor(k)
                                                           ).tags.own_map is not None for k in kinds}
    others = [c for c in cands if c.predictor != SELECTION_PROXY and not has_own_map[c.predictor]]
    staged = bool(others) and all(widths[c.predictor] is None for c in others) and (
        len(others) > len({c.target for c in others}) or SELECTION_PROXY in kinds)
    first = ([Candidate(SELECTION_PROXY, c.feature_map, c.shares, c.target) for c in cands
              if c.predictor == others[0].predictor] if staged else cands)
    for c in first:
        run(c)
    assert folds is not None
    warm, cold = folds

    def use(c: Candidate) -> float:
        v = scores[c.label]
        return float(np.nan_to_num(v[0] if warm else v[2], nan=np.inf))

    def frozen(c: Candidate) -> float:
        return float(np.nan_to_num(scores[c.label][2], nan=np.inf))

    scored = list(first)
    best: dict[str, tuple[str, bool]] = {}
    for c in sorted(first, key=use):
        best.setdefault(c.target, (c.feature_map, c.shares))
    if staged and (warm or cold):
        second = [c for c in cands if c.predictor != SELECTION_PROXY and (
            best.get(c.target) == (c.feature_map, c.shares) or has_own_map[c.predictor])]
        for c in second:
            run(c)
        scored += second
    cands = [c for c in cands if c in scored] or cands
    if not warm and not cold:     # nothing to validate on: the defaults, said so in the report
        nan = (np.nan,) * 3
        d = dict(MODEL_DEFAULT_EXTRACTOR)
        pick = min(cands, key=lambda c: (c.predictor != MODEL_DEFAULT_PREDICTOR, c.feature_map != d["feature_map"],
                                         c.target != d["target"], cands.index(c)))
        return Selection(pick, {c.label: nan for c in cands}, {}, 0, 0, dict(fixed), colocated,
                         None if fixed.get("feature_map") else uncovered_rows(profiles, measurements))
    # the baselines, on every target scored (their features are unused; the best map's rows carry the entities)
    base = [Candidate(k, *best.get(t, (cands[0].feature_map, cands[0].shares)), t)
            for t in dict.fromkeys(c.target for c in cands) for k in BASELINE_KINDS]
    for b in base:
        fm_b, ex_b = feats[b.target]
        scores[b.label], per_fold[b.label] = validation_scores(fm_b, ex_b, groups, make_predictor(b.predictor),
                                                                   warm, cold)
    pool = cands + (base if predictor is None else [])
    chosen = min(pool, key=lambda c: (use(c), pool.index(c)))
    if cold:
        # Candidates within one standard error of the warm choice are as good on models seen (without folds
        # by run, the cold score chose already), so the frozen score on held-out models chooses among them,
        # and what an EntityRLS among them serves models never seen with (its backoff: features-only RLS, the
        # scaled global mean, or none; the other backoffs of the one of least frozen error are scored).
        near = [c for c in pool if within_one_se(per_fold[c.label], per_fold[chosen.label])] if warm else [chosen]
        ent = [c for c in near if c.predictor == "entity_rls" and predictor is None]
        if ent:
            c = min(ent, key=lambda c: (frozen(c), ent.index(c)))
            for bo in ENTITY_BACKOFFS[1:]:     # the first is EntityRLS's default, scored above
                near.append(Candidate(c.predictor, c.feature_map, c.shares, c.target, bo))
                run(near[-1])
        chosen = min(near, key=lambda c: (frozen(c), use(c), near.index(c)))
    baselines = {BASELINE_LABELS[b.predictor].removeprefix("baseline: "): scores[b.label]
                 for b in base if b.target == chosen.target}
    return Selection(chosen, scores, baselines, len(warm), len(cold), dict(fixed), colocated,
                     None if fixed.get("feature_map") else uncovered_rows(profiles, measurements))
