"""An interference model: an extractor and a predictor, fitted together and saved as one file.

:class:`InterferenceModel` keeps the extractor (feature map, aggregation, target) and the
predictor's learned state together; :meth:`InterferenceModel.save` writes both into one JSON file
that :func:`load_model` reads back. Predictions are reported as latency (ms) and slowdown whatever
the target learned, through the one clamped conversion of
:mod:`interfpred._core.targets` (slowdown in [1, 100]) that the tracker also uses. The writers of its prediction tables live in :mod:`interfpred.model.prediction_tables`.

Examples
--------
>>> import pathlib, tempfile
>>> from interfpred.sim.workload import mix_scenario
>>> sc = mix_scenario(["resnet50", "vgg19"], rho=0.9, executions=400, seed=1)
>>> trace = sc.traces["trace"]
>>> model = InterferenceModel({"aggregation": "time_weighted", "feature_map": "rich"}, "rls").fit(trace, sc.profiles)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "model.json"
>>> model.save(path)
>>> again = load_model(path)
>>> bool((again.predict_latency(trace, sc.profiles) == model.predict_latency(trace, sc.profiles)).all())
True
>>> model.evaluate(trace, sc.profiles).summary.within_20 > 0.9
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interfpred._core.atomic import atomic_write_text, read_json
from interfpred._core.schema import check_model_file, check_schema_version
from interfpred._version import __version__
from interfpred.constants import (
    CROSS_FIT_FOLDS,
    MODEL_DEFAULT_PREDICTOR,
    MODEL_FILE_KIND,
    SCHEMA_VERSION,
)
from interfpred.data.counters import supported_maps
from interfpred.data.entities import Entities
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.data.trace import Trace
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.evaluation import (
    AccuracySummary,
    accuracy_summary,
    call,
    check_quantile,
    fit_baselines,
    latency_bounds,
    prequential,
    prequential_runs,
    target_level,
)
from interfpred.evaluation.validation import row_groups
from interfpred.features import Extractor, FeatureMatrix, default_extractor, make_extractor
from interfpred.features.entity_features import parent_entities
from interfpred.features.measurement_features import concat_features, missing_counters
from interfpred.model.crossfit import FrozenBounds, cross_fit_bounds, model_entities
from interfpred.model.rows import as_inputs, model_features
from interfpred.model.selection import Selection, select_configuration
from interfpred.model.stream import UpdateStream
from interfpred.predictors import (
    BasePredictor,
    get_tags,
    inner_predictor,
    make_predictor,
    predictor_from_state,
    registered,
)

__all__ = ["Evaluation", "InterferenceModel", "fit_selected", "load_model"]

@dataclass(frozen=True)
class Evaluation:
    """What :meth:`InterferenceModel.evaluate` measured.

    Attributes
    ----------
    summary
        Accuracy figures; ``mse`` is on slowdown, the relative errors on latency.
    predicted_latency_ms, observed_latency_ms
        (n,) per execution, in the trace's row order.
    online
        Whether the predictions were made prequentially.
    baselines
        The three baselines' accuracy on the same rows (kind -> summary), fitted on the model's
        training rows and run the same way (offline or prequentially); empty when the model file
        holds no baselines.
    """

    summary: AccuracySummary
    predicted_latency_ms: np.ndarray
    observed_latency_ms: np.ndarray
    online: bool
    baselines: dict[str, AccuracySummary] = field(default_factory=dict)

    def to_frame(self) -> Any:
        """The accuracy as a pandas DataFrame: one row per predictor (``model`` first, then each
        baseline), one column per figure of :class:`~interfpred.evaluation.metrics.AccuracySummary` in
        the units a person reads: ``n``, ``mse`` (of slowdown), then relative errors and shares of rows in
        percent (``mape_%``, ``within_10_%``, ...), as the CLI's tables and ``--json``. The fractions
        are ``summary.as_dict()``."""
        import pandas as pd

        rows = {"model": self.summary.as_percent_dict(),
                **{k: v.as_percent_dict() for k, v in self.baselines.items()}}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("predictor")

    def predictions_frame(self) -> Any:
        """Per row, in the input's order: ``predicted_latency_ms`` and ``observed_latency_ms`` as a DataFrame."""
        import pandas as pd

        return pd.DataFrame({"predicted_latency_ms": self.predicted_latency_ms,
                             "observed_latency_ms": self.observed_latency_ms})


def _as_extractor(extractor: Extractor | Mapping[str, Any] | None) -> Extractor:
    if extractor is None:
        return default_extractor()
    if isinstance(extractor, Extractor):
        return extractor
    if isinstance(extractor, Mapping):
        return make_extractor(dict(extractor))
    raise InterfpredError(f"extractor must be an Extractor or a spec dict, got {type(extractor).__name__}")


def _as_predictor(predictor: BasePredictor | str | Mapping[str, Any] | None) -> BasePredictor:
    if predictor is None:
        return make_predictor(MODEL_DEFAULT_PREDICTOR)
    if isinstance(predictor, BasePredictor):
        return predictor
    if isinstance(predictor, str | Mapping):
        return make_predictor(predictor if isinstance(predictor, str) else dict(predictor))
    raise InterfpredError(f"predictor must be a predictor, a kind or a spec dict, got {type(predictor).__name__}")


class InterferenceModel:
    """An extractor and a predictor: features from a trace, latency out, one file to save.

    Parameters
    ----------
    extractor
        An :class:`~interfpred.features.Extractor` or its spec dict (see
        :func:`~interfpred.features.make_extractor`); default ``MODEL_DEFAULT_EXTRACTOR``
        (time-weighted, rich map, rate target: the best configuration of the reproduction, and
        the extractor ``ColocationTracker`` uses when given none). A partial spec is completed
        from the same defaults (the extractor classes' own).
    predictor
        A predictor, a registered kind (``"rls"``) or a spec dict ``{"kind": ..., "params": ...}``.
        None (default): :meth:`fit` chooses the predictor, and what the extractor spec leaves
        open (feature map, share features, target), by validation inside the training rows, as
        ``interfpred fit`` does with no flags (:func:`~interfpred.model.selection.select_configuration`;
        the baselines are candidates, and :attr:`selection` keeps what was measured). RLS until then.
        The model holds the predictor declared for the extractor's target: the object given when it
        already is (``RLS(target="rate")``), else a declared copy (``predictor.with_target``), as
        scikit-learn's meta-estimators hold clones; read it back as :attr:`predictor`.

    Examples
    --------
    >>> InterferenceModel()
    InterferenceModel(TimeWeighted(feature_map='rich', combine='sum', target='rate'), RLS(target='rate'))
    >>> from interfpred.data.datasets import gavel_v100
    >>> chosen = InterferenceModel().fit(measurements=gavel_v100())      # chooses by validation
    >>> chosen.selection.chosen.label, chosen.predictor.kind
    ('entity_rls, shares map, target rate', 'entity_rls')
    >>> InterferenceModel({"aggregation": "static", "feature_map": "gpulets"}, {"kind": "online_sgd"}).extractor
    Static(feature_map='gpulets', combine='sum', target='rate')
    """

    def __init__(self, extractor: Extractor | Mapping[str, Any] | None = None,
                 predictor: BasePredictor | str | Mapping[str, Any] | None = None) -> None:
        ex = _as_extractor(extractor)
        if not ex.is_builtin:
            raise InterfpredError("an InterferenceModel needs a built-in feature map (a CustomMap cannot be saved)")
        pred = _as_predictor(predictor)
        width = pred.n_features_in_ or pred.tags.fixed_width
        if width is not None and width != ex.n_features:
            raise InterfpredError(f"predictor {pred.kind!r} takes {width} features but the extractor's map "
                                  f"{ex.feature_map!r} makes {ex.n_features}")
        if pred.target is not None and pred.target != ex.target:
            raise InterfpredError(f"predictor {pred.kind!r} is declared for target {pred.target!r} but the extractor's "
                                  f"target is {ex.target!r}")
        self.extractor = ex
        # declared for the extractor's target (a copy when it was not), so every path that holds it knows
        self.predictor = pred.with_target(ex.target)
        #: The three baselines, fitted on the same rows as the predictor (kind -> predictor).
        self.baselines: dict[str, BasePredictor] = {}
        #: What :meth:`fit` chose on its own, in words: the configuration chosen by validation (its label and
        #: rule; :attr:`selection` holds the scores; kept by :meth:`save`), or a feature map the profiles
        #: support when the configuration was named but the map was not; None when nothing was chosen.
        self.note: str | None = None
        #: Whether :meth:`fit` may switch to a feature map the profiles' counters support (True when
        #: no map was given).
        self.auto_map = extractor is None or (isinstance(extractor, Mapping) and "feature_map" not in extractor)
        #: Thresholds of the frozen latency bounds (a Calibrated predictor's, cross-fitted at :meth:`fit`), or None.
        self.frozen_bounds: FrozenBounds | None = None
        #: Whether :meth:`fit` chooses the configuration by validation (no predictor was given), and the
        #: extractor keys the caller fixed (the rest are searched).
        self.auto_config = predictor is None
        self._fixed: dict[str, Any] = (dict(ex.get_spec()) if isinstance(extractor, Extractor)
                                       else dict(extractor or {}))
        #: What the last validated :meth:`fit` measured and chose (a
        #: :class:`~interfpred.model.selection.Selection`), or None.
        self.selection: Selection | None = None
        self._stream = UpdateStream()
        self._stream_profiles: ProfileTable | None = None

    def __repr__(self) -> str:
        return f"InterferenceModel({self.extractor!r}, {self.predictor!r})"

    # ------------------------------------------------------------------ data
    def features(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
                 measurements: Measurements | None = None) -> FeatureMatrix:
        """Features, target and entities of every execution of ``trace``, then every row of ``measurements``
        (:func:`~interfpred.model.rows.model_features` with this model's extractor and predictor)."""
        return model_features(self.extractor, self.predictor, trace, profiles, measurements=measurements)

    def baseline_entities(self, fm: FeatureMatrix) -> Entities | None:
        """The rows' entities by model (the per-pair baseline's groups), whatever key the predictor asked."""
        if fm.entities is None or self.predictor.tags.entity_key != "model_batch":
            return fm.entities
        return parent_entities(fm.entities)

    def _entities_for(self, p: BasePredictor, fm: FeatureMatrix) -> Entities | None:
        return fm.entities if p is self.predictor else self.baseline_entities(fm)

    def _check_width(self, fm: FeatureMatrix) -> None:
        d = self.predictor.n_features_in_
        if d is not None and d != fm.X.shape[1]:
            raise InterfpredError(f"the predictor was fitted on {d} features, the extractor makes {fm.X.shape[1]}")

    def choose_map(self, profiles: ProfileTable | None, measurements: Measurements | None = None) -> None:
        """With no map given, switch to one the profiles' counters support (for every row of ``measurements``,
        when given), and say so in :attr:`note`."""
        if not self.auto_map:
            return
        missing = missing_counters(profiles, measurements)
        works = supported_maps(missing)
        current = self.extractor.feature_map
        if current in works:
            return
        chosen = "gpulets" if "gpulets" in works else "shares"
        spec = {**self.extractor.get_spec(), "feature_map": chosen}
        if chosen == "shares":
            spec.pop("shares", None)     # the shares map holds them already; any other map keeps them
        self.extractor = make_extractor({k: v for k, v in spec.items() if v is not None})
        self.note = (f"feature map {chosen!r} chosen: the default {current!r} needs {', '.join(missing)}, "
                     f"which {'no profiles were given for' if profiles is None else 'the profiles lack for some rows'}")

    # ------------------------------------------------------------------ learning
    def fit(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
            measurements: Measurements | None = None, weights: Any = None,
            progress: Callable[[str], None] | None = None) -> InterferenceModel:
        """Forget, then learn from every execution of ``trace`` and every row of ``measurements``; returns self.

        Traces need ``profiles``; measurements use them for counters when given. With no feature
        map given, a map the profiles support is chosen (see :attr:`note`). ``weights`` gives each
        row a weight (trace rows first, then measurement rows), for predictors that take row
        weights (``tags.supports_weights``). The three baselines are fitted on the same rows.
        ``progress``, when given, is called with a short message after each step (features, the
        predictor, the baselines).
        """
        trace, profiles, measurements = as_inputs(trace, profiles, measurements)
        self._stream, self._stream_profiles = UpdateStream(), None   # rows waiting in update are forgotten too
        if self.auto_config and weights is None:
            return self._fit_validated(trace, profiles, measurements, progress)
        saved = (self.extractor, self.note)
        try:
            self.choose_map(profiles, measurements)
            fm = self.features(trace, profiles, measurements=measurements)
        except BaseException:
            self.extractor, self.note = saved   # a refused fit leaves the model as it was
            raise
        if len(fm) == 0:
            self.extractor, self.note = saved
            raise InterfpredError("cannot fit on no rows")
        extra = {}
        if weights is not None:
            if not self.predictor.tags.supports_weights:
                raise InterfpredError(f"predictor {self.predictor.kind!r} does not take row weights; these do: "
                                      + ", ".join(k for k, c in sorted(registered().items())
                                                  if c.tags.supports_weights))
            extra["sample_weight"] = weights
        if progress is not None:
            progress(f"features of {len(fm)} rows computed, fitting {self.predictor.kind}")
        call(self.predictor, "fit", fm.X, fm.y, entities=fm.entities, **extra)
        self.selection = None     # a named configuration: nothing was chosen by validation
        if progress is not None:
            progress(f"{self.predictor.kind} fitted on {len(fm)} rows, fitting the baselines")
        self.baselines = fit_baselines(fm.X, fm.y, entities=self.baseline_entities(fm), sample_weight=weights,
                                       target=self.extractor.target)
        self.frozen_bounds = None
        if get_tags(self.predictor).gives_bounds and weights is None and len(fm) >= 2 * CROSS_FIT_FOLDS:
            groups = row_groups(0 if trace is None else len(trace), measurements)
            if len(np.unique(groups)) >= 2:
                levels = self.predictor.levels_   # type: ignore[attr-defined]  # tags.gives_bounds says it has them
                self.frozen_bounds = cross_fit_bounds(inner_predictor(self.predictor), fm, groups, levels)
        return self

    def _fit_validated(self, trace: Trace | None, profiles: ProfileTable | None, measurements: Measurements | None,
                       progress: Callable[[str], None] | None) -> InterferenceModel:
        """Choose the configuration by validation (what ``interfpred fit`` with no flags does), then fit it."""

        if progress is not None:
            progress("choosing the configuration by validation inside the training rows")
        sel = select_configuration(trace, profiles, measurements, fixed=self._fixed)
        chosen = fit_selected(sel, trace, profiles, measurements, progress=progress)
        self.extractor, self.predictor, self.baselines = chosen.extractor, chosen.predictor, chosen.baselines
        self.frozen_bounds, self.note, self.selection = chosen.frozen_bounds, chosen.note, sel
        return self

    def update(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
               measurements: Measurements | None = None) -> None:
        """Learn from more finished executions or runs, each in the context it ran in, without forgetting.

        Rows may come one at a time or in blocks; each is learned once its context is known, so
        one row at a time learns what the same rows in one block teach:

        - a measurement row is learned with the other members of its run, when its run is over:
          a row of another run on the same GPU arrives (the members of a run come in one call or
          one after another), or :meth:`flush` is called;
        - a trace row is learned with the executions that overlapped it on its device, once a row
          there starting at or after its end arrives (rows come in start order per device, as a
          trace is sorted), or at :meth:`flush`.

        Until then a row waits (:attr:`n_pending`). Call :meth:`flush` at the end of a stream, or to
        learn a block given on its own completely. A live GPU's executions are better fed to
        :class:`~interfpred.ColocationTracker` (``start``, then ``finish``), which knows the
        running set. Waiting rows are not saved by :meth:`save`.

        Raises
        ------
        InterfpredError
            A row that cannot be placed in its context (a member of a run already learned, a trace
            row starting before the latest start already seen on its device), a row without a
            profile, or features of another width; nothing is learned then.
        FrozenPredictorError
            The predictor is frozen (``tags.learns_online`` false): refit with :meth:`fit` instead.

        Examples
        --------
        >>> from interfpred.data.datasets import gavel_v100
        >>> runs = gavel_v100()
        >>> first, rest = runs.take(runs.run_code < 100), runs.take(runs.run_code >= 100)
        >>> model = InterferenceModel(None, "entity_rls").fit(measurements=first)
        >>> before = model.evaluate(measurements=rest).summary.mape
        >>> for i in range(len(rest)):                     # one row at a time, as they are measured
        ...     model.update(measurements=rest.take([i]))
        >>> model.n_pending, model.flush(), model.n_pending  # the last run (a pair) waits for its end
        (2, 2, 0)
        >>> model.evaluate(measurements=rest).summary.mape < before
        True
        """
        trace, profiles, measurements = as_inputs(trace, profiles, measurements)
        if trace is None and measurements is None:
            raise InterfpredError("give a trace (with profiles) or measurements")
        if trace is not None and profiles is None:
            raise InterfpredError("a trace needs profiles (solo latency and counters per model)")
        if not get_tags(self.predictor).learns_online:
            raise FrozenPredictorError(f"{type(self.predictor).__name__} cannot learn online (fitted offline, then "
                                       "frozen): refit with fit on all the rows, or choose an online predictor")
        # the new rows alone: refuses a row without a profile or a bad width before anything is kept
        self._check_width(self.features(trace, profiles, measurements=measurements))
        if profiles is not None:
            self._stream_profiles = profiles
        self._learn(*self._stream.add(trace, measurements))

    def flush(self) -> int:
        """Learn every row :meth:`update` holds back, with the context seen so far; returns how many.

        Call it at the end of a stream, or after a block that is complete on its own.
        """
        ready = self._stream.flush()
        return self._learn(*ready)

    @property
    def n_pending(self) -> int:
        """Rows given to :meth:`update` that wait for their context (see there)."""
        return self._stream.n_pending

    def _learn(self, trace_part: tuple[Trace, np.ndarray] | None, runs: list[Measurements]) -> int:
        parts = []
        if trace_part is not None:
            context, rows = trace_part
            fm = self.features(context, self._stream_profiles)
            parts.append(_take_rows(fm, rows))
        if runs:
            parts.append(self.features(measurements=Measurements.concat(runs), profiles=self._stream_profiles))
        if not parts:
            return 0
        fm = parts[0] if len(parts) == 1 else concat_features(parts)
        self._check_width(fm)
        for p in (self.predictor, *self.baselines.values()):
            call(p, "update", fm.X, fm.y, entities=self._entities_for(p, fm))
        return len(fm)

    # ------------------------------------------------------------------ prediction
    def predict_slowdown(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
                         measurements: Measurements | None = None, quantile: float | None = None) -> np.ndarray:
        """Predicted slowdown (latency / solo latency) of every execution or measurement row.

        With ``quantile`` (a predictor wrapped in :class:`~interfpred.Calibrated`), the bound the
        slowdown stays under with that long-run frequency.
        """
        fm = self.features(trace, profiles, measurements=measurements)
        return self._latency(fm, quantile=quantile) / fm.solo_ms

    def predict_latency(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
                        measurements: Measurements | None = None, quantile: float | None = None) -> np.ndarray:
        """Predicted latency (ms) of every execution (then every measurement row), in row order.

        With ``quantile`` (a predictor wrapped in :class:`~interfpred.Calibrated`), the latency
        bound at that quantile (for a ``rate`` target, the rate quantile ``1 - quantile`` turned
        into latency).
        """
        return self._latency(self.features(trace, profiles, measurements=measurements), quantile=quantile)

    def latency_from_features(self, fm: FeatureMatrix, *, quantile: float | None = None) -> np.ndarray:
        """Predicted latency (ms) of the rows of ``fm`` (from :meth:`features`), in row order.

        With ``quantile``, the latency bound at that quantile, as in :meth:`predict_latency`.
        """
        return self._latency(fm, quantile=quantile)

    def _latency(self, fm: FeatureMatrix, pred: np.ndarray | None = None,
                 predictor: BasePredictor | None = None, quantile: float | None = None) -> np.ndarray:
        self._check_width(fm)
        if quantile is not None and pred is None and len(fm):
            return self.bounds_from_features(fm, [quantile])[float(quantile)][1]
        if pred is None:
            p = self.predictor if predictor is None else predictor
            pred = (np.asarray(call(p, "predict", fm.X, entities=self._entities_for(p, fm)), dtype=np.float64) if len(fm)
                    else np.empty(0))
        return np.asarray(self.extractor.latency_from_target(pred, fm.solo_ms), dtype=np.float64).reshape(-1)

    def bounds_from_features(self, fm: FeatureMatrix, quantiles: Any) -> dict[float, tuple[np.ndarray, np.ndarray]]:
        """``{q: (L, U)}`` latency bounds (ms) of the rows of ``fm`` for frozen use (no learning).

        From the cross-fitted thresholds of :attr:`frozen_bounds` when the model has them (a
        Calibrated predictor fitted by :meth:`fit`; a row involving a model the training rows did
        not, as its own or as a co-runner, gets the cold thresholds), else from the predictor's own
        bounds.
        """
        self._check_width(fm)
        if self.frozen_bounds is None:
            return latency_bounds(self.predictor, fm.X, fm.solo_ms, self.extractor.target, quantiles,
                                  entities=fm.entities)
        mean = np.asarray(call(self.predictor, "predict", fm.X, entities=fm.entities), dtype=np.float64)
        cats = self.frozen_bounds.categories(model_entities(fm, self.predictor))
        out = {}
        for q in quantiles:
            q = check_quantile(q)
            ends = []
            for lv in (target_level(q, self.extractor.target), target_level(1.0 - q, self.extractor.target)):
                try:
                    b = self.frozen_bounds.bound(mean, lv, cats)
                except InterfpredError as exc:
                    raise InterfpredError(f"latency quantile {q:g} needs target quantile {lv:g}: {exc}") from None
                ends.append(np.asarray(self.extractor.latency_from_target(b, fm.solo_ms), dtype=np.float64).reshape(-1))
            out[q] = (np.minimum(*ends), np.maximum(*ends))
        return out

    def evaluate(self, trace: Trace | None = None, profiles: ProfileTable | None = None, *,
                 measurements: Measurements | None = None, online: bool = False,
                 progress: Callable[[str], None] | None = None) -> Evaluation:
        """Accuracy on ``trace`` or ``measurements`` beside the baselines; ``online``: prequentially.

        Online, executions are predicted at launch and learned at finish; measurement runs are
        taken in order, each predicted with what the runs before it taught. The model itself is
        not changed: the online pass runs on copies. ``progress``, when given, is called with a
        short message after the features and after each predictor (the model, then each baseline).
        """
        if trace is not None and measurements is not None:
            raise InterfpredError("evaluate one data set at a time: a trace or measurements")
        trace, profiles, measurements = as_inputs(trace, profiles, measurements)
        fm = self.features(trace, profiles, measurements=measurements)
        self._check_width(fm)
        if len(fm) == 0:
            raise InterfpredError("cannot evaluate on no rows")
        observed = fm.latency_ms / fm.solo_ms

        def run(p: BasePredictor) -> np.ndarray:
            if not online:
                return self._latency(fm, predictor=p)
            copy = predictor_from_state(p.to_state(), trusted=True)  # our own state
            if trace is not None:
                pred = prequential(copy, fm.X, fm.y, start_ms=trace.start_ms, end_ms=trace.end_ms,
                                   entities=self._entities_for(p, fm))
            else:
                assert measurements is not None
                pred = prequential_runs(copy, fm.X, fm.y, measurements.run_code,
                                        entities=self._entities_for(p, fm))
            return self._latency(fm, pred)

        total = 1 + len(self.baselines)
        done = 0

        def step(p: BasePredictor) -> np.ndarray:
            nonlocal done
            if progress is not None:
                progress(f"{done}/{total} predictors on {len(fm)} rows, running {p.kind}")
            out = run(p)
            done += 1
            return out

        lat = step(self.predictor)
        baselines = {k: accuracy_summary(step(p) / fm.solo_ms, observed) for k, p in self.baselines.items()}
        return Evaluation(summary=accuracy_summary(lat / fm.solo_ms, observed), predicted_latency_ms=lat,
                          observed_latency_ms=fm.latency_ms, online=online, baselines=baselines)

    # ------------------------------------------------------------------ persistence
    def to_state(self) -> dict[str, Any]:
        """JSON-able dict: kind, schema version, extractor spec, feature names, predictor state."""
        return {"schema_version": SCHEMA_VERSION, "kind": MODEL_FILE_KIND, "interfpred_version": __version__,
                "extractor": self.extractor.get_spec(), "feature_names": list(self.extractor.names),
                "predictor": self.predictor.to_state(),
                "baselines": {k: p.to_state() for k, p in self.baselines.items()},
                **({} if self.frozen_bounds is None else {"frozen_bounds": self.frozen_bounds.to_state()}),
                **({} if self.selection is None else {"selection": self.selection.to_state()})}

    @classmethod
    def from_state(cls, state: Any, *, source: str = "state", trusted: bool = False) -> InterferenceModel:
        """Rebuild a model from :meth:`to_state`'s dict (refuses another format, kind or version).

        ``trusted`` as in :func:`load_model`.
        """
        if not isinstance(state, dict):
            raise InterfpredError(f"{source}: expected a JSON object, got {type(state).__name__}")
        kind = state.get("kind")
        if kind != MODEL_FILE_KIND:
            hint = " (a bare predictor state: fit a model with 'interfpred fit')" if "params" in state else ""
            raise InterfpredError(f"{source}: kind {kind!r} is not an interference model ({MODEL_FILE_KIND!r}){hint}")
        check_model_file(state, source=source)
        check_schema_version(state, source=source)
        spec = state.get("extractor")
        if not isinstance(spec, dict):
            raise InterfpredError(f"{source}: 'extractor' must be an object, got {spec!r}")
        try:
            ex = make_extractor(spec)
        except InterfpredError as exc:
            raise InterfpredError(f"{source}: extractor: {exc}") from None
        pred = predictor_from_state(state["predictor"], source=f"{source}: predictor", trusted=trusted)
        d = pred.n_features_in_
        if d is not None and d != ex.n_features:
            raise InterfpredError(f"{source}: the predictor takes {d} features but the extractor makes {ex.n_features}")
        names = state.get("feature_names")
        if names is not None:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InterfpredError(f"{source}: 'feature_names' must be a list of names")
            if d is not None and len(names) != d:
                raise InterfpredError(f"{source}: 'feature_names' lists {len(names)} features but the predictor "
                                      f"takes {d}")
            if names != list(ex.names):
                diff = next(i for i in range(max(len(names), len(ex.names)))
                            if i >= len(names) or i >= len(ex.names) or names[i] != ex.names[i])
                got = names[diff] if diff < len(names) else None
                want = ex.names[diff] if diff < len(ex.names) else None
                raise InterfpredError(f"{source}: 'feature_names' disagrees with the extractor at feature {diff}: "
                                      f"{got!r} in the file, {want!r} from the extractor")
        model = cls(ex, pred)
        baselines = state.get("baselines", {})
        if not isinstance(baselines, dict):
            raise InterfpredError(f"{source}: 'baselines' must be an object, got {type(baselines).__name__}")
        for kind, st in baselines.items():
            model.baselines[str(kind)] = predictor_from_state(st, source=f"{source}: baselines: {kind}")
        if state.get("frozen_bounds") is not None:
            model.frozen_bounds = FrozenBounds.from_state(state["frozen_bounds"], source=source)
        if state.get("selection") is not None:
            model.selection = Selection.from_state(state["selection"])
            model.note = _selection_note(model.selection)
        return model

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model as one JSON file, atomically."""
        # no indentation: a large model's learned arrays are most of the file, one number per line added a fifth to it
        atomic_write_text(path, json.dumps(self.to_state(), allow_nan=False) + "\n")


def _take_rows(fm: FeatureMatrix, rows: np.ndarray) -> FeatureMatrix:
    return FeatureMatrix(X=fm.X[rows], names=fm.names, y=fm.y[rows], target=fm.target, solo_ms=fm.solo_ms[rows],
                         latency_ms=fm.latency_ms[rows], entities=None if fm.entities is None else fm.entities.take(rows))


def load_model(path: str | os.PathLike[str], *, trusted: bool = False) -> InterferenceModel:
    """Read a model file written by :meth:`InterferenceModel.save` (or ``interfpred fit``).

    The file is checked before anything in it is used: at most ``MODEL_FILE_MAX_BYTES`` bytes
    and ``MODEL_FILE_MAX_DEPTH`` levels of nesting, and the format of
    :class:`~interfpred._core.schema.ModelFile` (unknown keys and wrong types are refused). A model
    whose predictor wraps a river or scikit-learn estimator holds a pickle, and unpickling runs
    code named by the file: it is refused unless ``trusted=True`` (CLI ``--trust-model-file``),
    which you should pass only for files you wrote yourself.

    Parameters
    ----------
    path
        The model file.
    trusted
        Allow a pickled wrapped estimator to be restored.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = path.write_text('{"kind": "rls", "schema_version": 1, "params": {}}')
    >>> load_model(path)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: ...m.json: kind 'rls' is not an interference model ('interfpred.model.interference') (a bare predictor state: fit a model with 'interfpred fit')
    """
    return InterferenceModel.from_state(read_json(path), source=os.fspath(path), trusted=trusted)


def fit_selected(selection: Selection, trace: Trace | None, profiles: ProfileTable | None,
                 measurements: Measurements | None, *, predictor: BasePredictor | None = None,
                 weights: Any = None, progress: Any = None) -> InterferenceModel:
    """The chosen configuration fitted on every row (``predictor``: the object to fit, e.g. a Calibrated wrap;
    ``progress``: as for :meth:`InterferenceModel.fit`)."""
    c = selection.chosen
    model = InterferenceModel(make_extractor(c.extractor_spec(selection.fixed)).get_spec(),
                              predictor if predictor is not None else c.build())
    model.auto_map = False
    model.fit(trace, profiles, measurements=measurements, weights=weights, progress=progress)
    model.selection, model.note = selection, _selection_note(selection)
    return model


def _selection_note(selection: Selection) -> str:
    return f"{selection.chosen.label} chosen by validation inside the training rows: {selection.rule}"
