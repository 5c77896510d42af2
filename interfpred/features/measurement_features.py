"""Exact features of measurement runs, with the entities of every row.

In a steady-state measurement run every member co-runs with every other member for its whole
duration, so its running set never changes and every aggregation (Static, EWMA, TimeWeighted)
is the map of the member against the rest of its run. This module computes that closed form
directly; it equals what a timeline of the members running back to back gives.

Rows also get an :class:`~interfpred.data.entities.Entities` table: the own entity is the model, the
co-runners are the other members of the run with weight 1 each (two copies of one model: 2).

Examples
--------
>>> from interfpred import Measurements, ProfileTable, TimeWeighted
>>> m = Measurements.from_columns(run=[1, 1], gpu=["v100"] * 2, model=["a", "b"], batch_size=[1, 1],
...     solo_ms=[2.0, 4.0], observed_ms=[3.0, 5.0])
>>> prof = ProfileTable.from_columns(gpu=["v100"] * 2, model=["a", "b"], batch_size=[1, 1],
...     solo_ms=[2.0, 4.0], sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
>>> fm = measurement_features(TimeWeighted(feature_map="gpulets"), m, prof)
>>> fm.X[0], fm.y          # y: the rate solo / observed (the default target)
(array([0.5 , 0.25, 0.5 , 0.5 ]), array([0.66666667, 0.8       ]))
>>> fm.entities.row(0)
('a', {'b': 1.0})
>>> measurement_features(TimeWeighted(feature_map="shares"), m).X[1]   # no profiles needed
array([1., 1., 1.])
"""

from __future__ import annotations

import numpy as np

from interfpred.data.counters import checked_demands
from interfpred.data.entities import Entities
from interfpred.data.frames import as_measurements, as_profiles
from interfpred.data.measurements import Measurements
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.features.entity_features import entity_names
from interfpred.features.extractors import Extractor
from interfpred.features.kernel_terms import with_kernel_covariates
from interfpred.features.matrix import FeatureMatrix

__all__ = ["concat_entities", "concat_features", "measurement_demands", "measurement_entities",
           "measurement_features", "missing_counters", "uncovered_rows"]


def measurement_demands(measurements: Measurements, profiles: ProfileTable | None, *,
                        extrapolate: bool = False) -> np.ndarray:
    """(n, 3) ``[sm, l2, dram]`` of every row from ``profiles`` (by gpu, model, batch size and share).

    Without profiles every counter is NaN (not measured). Profiles are looked up per GPU when
    the table holds every GPU of the measurements, else from its only GPU.
    """
    n = len(measurements)
    if profiles is None or n == 0:
        return np.full((n, 3), np.nan)
    profiles = as_profiles(profiles)
    gpus = {str(g) for g in np.unique(measurements.gpu)}
    if gpus <= set(profiles.gpus):
        by_gpu = measurements.gpu
    elif len(profiles.gpus) == 1:
        by_gpu = None
    else:
        raise InterfpredError(f"the profile table holds gpus {', '.join(profiles.gpus)} but the measurements "
                              f"run on {', '.join(sorted(gpus - set(profiles.gpus)))}")
    try:
        vals = profiles.lookup_arrays(measurements.model, measurements.batch_size, gpus=by_gpu,
                                      shares=measurements.share, extrapolate=extrapolate)
    except InterfpredError as exc:
        raise InterfpredError(f"measurements: {exc}") from None
    return np.column_stack([vals["sm"], vals["l2"], vals["dram"]])


def missing_counters(profiles: ProfileTable | None, measurements: Measurements | None = None) -> list[str]:
    """The counters (``sm``, ``l2``, ``dram``) some row would lack: not measured in ``profiles``, or, with
    ``measurements``, for a (model, batch size, share) the profiles do not cover (a table that profiles only
    some of the models run, or only some batch sizes, leaves every counter map without rows to stand on).

    Examples
    --------
    >>> from interfpred import ProfileTable
    >>> prof = ProfileTable.from_columns(gpu=["g"], model=["a"], batch_size=[1], solo_ms=[1.0], sm=[0.5],
    ...                                  l2=[None], dram=[0.2])
    >>> missing_counters(prof)
    ['l2']
    >>> m = Measurements.from_columns(run=[1, 1], gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1],
    ...     solo_ms=[1.0, 2.0], observed_ms=[2.0, 3.0])
    >>> missing_counters(prof, m)
    ['sm', 'l2', 'dram']
    """
    every = ["sm", "l2", "dram"]
    if profiles is None:
        return every
    profiles = as_profiles(profiles)
    missing = [r for r in every if np.isnan(profiles.column(r)).any()]
    if measurements is not None and len(missing) < len(every):
        if uncovered_rows(profiles, measurements) is not None:
            return every
        dem = measurement_demands(as_measurements(measurements), profiles)
        missing = [r for k, r in enumerate(every) if r in missing or np.isnan(dem[:, k]).any()]
    return missing


def uncovered_rows(profiles: ProfileTable | None, measurements: Measurements | None) -> str | None:
    """Why ``profiles`` cannot give a counter for every row of ``measurements`` (the lookup's refusal,
    naming the first row's model, batch size and share), or None when they cover them all."""
    if profiles is None or measurements is None:
        return None
    try:
        measurement_demands(as_measurements(measurements), as_profiles(profiles))
    except InterfpredError as exc:
        return str(exc)
    return None


def measurement_entities(measurements: Measurements, key: str = "model") -> Entities:
    """Own model and co-runner models (weight 1 per member) of every row.

    ``key="model_batch"`` names each entity ``"model@batch"`` (model and batch size) instead.

    Examples
    --------
    >>> m = Measurements.from_columns(run=[1, 1, 1], gpu=["g"] * 3, model=["a", "a", "b"],
    ...     batch_size=[1, 1, 1], member=["x", "y", "z"], solo_ms=[1.0] * 3, observed_ms=[2.0] * 3)
    >>> measurement_entities(m).row(0)
    ('a', {'a': 1.0, 'b': 1.0})
    """
    model = entity_names(measurements.model, measurements.batch_size, key).tolist()
    co: list[dict[str, float]] = []
    for i in range(len(model)):
        row: dict[str, float] = {}
        for j in measurements.co_runners(i):
            row[model[j]] = row.get(model[j], 0.0) + 1.0
        co.append(row)
    return Entities.from_lists(model, co)


def measurement_features(extractor: Extractor, measurements: Measurements, profiles: ProfileTable | None = None,
                         *, extrapolate: bool = False, entity_key: str = "model") -> FeatureMatrix:
    """Exact features, target and entities of every measurement row, in row order.

    Parameters
    ----------
    extractor
        Any extractor; its aggregation does not change the result (the running set of a member
        is its whole run, all the time), its map, combine and target do.
    measurements
        The runs.
    profiles
        Counter profiles by (gpu, model, batch size, share); may be None for maps that need no
        counter (``"shares"``). The solo latency is the measurement's own ``solo_ms``.
    extrapolate
        Passed to the profile lookup.
    entity_key
        How the rows' entities are named: ``"model"`` or ``"model_batch"`` (``"model@batch"``).

    Raises
    ------
    InterfpredError
        A map that needs a counter the profiles lack (naming it and the maps that work).
    """
    if not isinstance(extractor, Extractor):
        raise InterfpredError(f"expected an Extractor, got {type(extractor).__name__}")
    measurements = as_measurements(measurements)
    n = len(measurements)
    # a map that reads no counter (shares, corunners) needs no profile row (a profile table given for
    # other columns, such as kernel terms, may cover only some of the rows)
    dem = (np.full((n, 3), np.nan) if not extractor.counters
           else measurement_demands(measurements, profiles, extrapolate=extrapolate))
    if extractor.counters and np.isnan(dem).all() and n and profiles is None:
        raise InterfpredError(f"feature map {extractor.feature_map!r} needs counters and no profiles were given; "
                              "give profiles, or use map 'shares' or 'corunners' (no counters needed)")
    dem = checked_demands([extractor], dem, measurements.model)
    order, ptr = measurements.run_slices()
    frac = measurements.share / 100.0
    share_other = np.empty(n)
    n_others = np.empty(n)
    counter_map = extractor.feature_map != "shares"
    d_map = extractor.n_features - (2 if extractor.shares else 0)
    X_map = np.empty((n, d_map if counter_map else 0))
    for r in range(len(ptr) - 1):
        idx = order[ptr[r]:ptr[r + 1]]
        share_other[idx] = frac[idx].sum() - frac[idx]
        n_others[idx] = len(idx) - 1
        if counter_map:
            X_map[idx] = extractor.map_counters(dem[idx])
    if not counter_map:
        X = np.column_stack([frac, share_other, n_others]) if n else np.empty((0, 3))
    elif extractor.shares:
        X = np.column_stack([X_map, frac, share_other])
    else:
        X = X_map
    solo = np.array(measurements.solo_ms, dtype=np.float64)
    lat = np.array(measurements.observed_ms, dtype=np.float64)
    y = extractor.target_from_latency(lat, solo)
    return FeatureMatrix(X=np.ascontiguousarray(X, dtype=np.float64), names=extractor.names, y=y,
                         target=extractor.target, solo_ms=solo, latency_ms=lat,
                         entities=with_kernel_covariates(measurement_entities(measurements, entity_key), solo,
                                                         profiles))


def concat_entities(tables: list[Entities]) -> Entities:
    """Rows of several entity tables one after another, over the union of their vocabularies.

    Examples
    --------
    >>> a = Entities.from_lists(["x"], [{"y": 1.0}])
    >>> b = Entities.from_lists(["y", "z"], [{}, {"x": 2.0}])
    >>> [concat_entities([a, b]).row(i) for i in range(3)]
    [('x', {'y': 1.0}), ('y', {}), ('z', {'x': 2.0})]
    """
    if not tables:
        raise InterfpredError("concat_entities needs at least one table")
    vocab: dict[str, int] = {}
    own, co, weight, counts = [], [], [], []
    for t in tables:
        remap = np.array([vocab.setdefault(name, len(vocab)) for name in t.names], dtype=np.int64)
        own.append(remap[t.own])
        co.append(remap[t.co])
        weight.append(t.weight)
        counts.append(np.diff(t.indptr))
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int64)
    cov = None
    with_cov = [t for t in tables if t.covariates is not None]
    if with_cov:       # per name, the first table that knows it (NaN where none does)
        cov = np.full((len(vocab), max(t.covariates.shape[1] for t in with_cov)), np.nan)  # type: ignore[union-attr]
        for t in reversed(with_cov):
            c = t.covariates
            assert c is not None
            rows = np.array([vocab[n] for n in t.names], dtype=np.int64)
            known = ~np.isnan(c).all(axis=1)
            cov[rows[known], :c.shape[1]] = c[known]
    return Entities(tuple(vocab), np.concatenate(own), indptr, np.concatenate(co), np.concatenate(weight), cov)


def concat_features(parts: list[FeatureMatrix]) -> FeatureMatrix:
    """Rows of several feature matrices (traces and measurements) of one extractor, stacked.

    The entities are kept only when every part has them (a predictor needs them for all rows
    or for none).

    Examples
    --------
    >>> from interfpred import TimeWeighted, Measurements
    >>> m = Measurements.from_columns(run=[1, 1], gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1],
    ...     solo_ms=[2.0, 4.0], observed_ms=[3.0, 5.0])
    >>> fm = measurement_features(TimeWeighted(feature_map="shares"), m)
    >>> both = concat_features([fm, fm])
    >>> both.X.shape, len(both.entities)
    ((4, 3), 4)
    """
    if not parts:
        raise InterfpredError("concat_features needs at least one feature matrix")
    first = parts[0]
    for p in parts[1:]:
        if p.names != first.names or p.target != first.target:
            raise InterfpredError(f"cannot stack features {p.names} ({p.target}) onto {first.names} ({first.target})")
    ents = [p.entities for p in parts if p.entities is not None]
    return FeatureMatrix(
        X=np.concatenate([p.X for p in parts]), names=first.names, y=np.concatenate([p.y for p in parts]),
        target=first.target, solo_ms=np.concatenate([p.solo_ms for p in parts]),
        latency_ms=np.concatenate([p.latency_ms for p in parts]),
        entities=concat_entities(ents) if len(ents) == len(parts) else None)
