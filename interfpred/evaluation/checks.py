"""The shared predictor contract, as checks any predictor can be run through.

Each ``check_*`` takes a *fresh* predictor (it clones it before use, so the argument is never
changed) and raises ``AssertionError`` on a breach.  :func:`yield_checks` lists them and
:func:`check_predictor` runs all; tests/test_contract.py runs them over every registered
predictor and each of its test parameter sets.

Examples
--------
>>> from interfpred import RLS
>>> check_predictor(RLS(forgetting=0.99))
"""

from __future__ import annotations

import copy
import pickle
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from interfpred.data.entities import Entities
from interfpred.errors import FrozenPredictorError, InterfpredError
from interfpred.predictors import load_predictor

__all__ = ["yield_checks", "check_predictor"]

# ---------------------------------------------------------------- sizes and tolerances of the contract
# Every check draws its rows from a few small seeded streams (seeds inline: each names one stream).
#: Feature count of the streams for a predictor that takes any width (``tags.fixed_width`` None).
ANY_WIDTH = 3
#: Rows of a stream, and of the training a trained predictor gets, unless a check says otherwise.
STREAM_ROWS = 200
#: The noiseless linear stream: ``y = STREAM_INTERCEPT + X @ w``, ``w`` evenly spaced over STREAM_WEIGHTS.
STREAM_INTERCEPT = 1.0
STREAM_WEIGHTS = (0.5, 1.5)
#: Relative and absolute tolerance where two ways of computing the same predictions must agree (a batch
#: and its rows, a batch update and its loop, a wrapper and the predictor it wraps).
SAME_PREDICTION_TOL = 1e-12
#: Rows of the prior's batch, of the input-aliasing check, of the refusal checks, of the batch-equals-rows
#: check, of a short warm start, of the batch-update stream, of a held-out batch, of the clone and
#: persistence checks.
PRIOR_ROWS = 5
ALIASING_ROWS = 50
REFUSAL_ROWS = 4
ROW_LOOP_ROWS = 20
WARM_START_ROWS = 20
BATCH_UPDATE_ROWS = 60
HELD_OUT_ROWS = 10
ROUND_TRIP_ROWS = 30
#: What the aliasing check writes over X and y once the predictor has used them.
OVERWRITE_X, OVERWRITE_Y = 7.0, -3.0
#: Factors the targets are scaled by when a copy must learn something different (clone, frozen update).
CHANGED_TARGET_SCALES = (2.0, 3.0)
#: The fixed-size state check: updates before the first size, updates in all, where single-row updates
#: start, and the bytes a pickled state may grow by (integer counters widen), not per-sample state.
STATE_FIRST_ROWS = 300
STATE_ROWS = 4300
STATE_ROW_BY_ROW_FROM = 4100
STATE_SLACK_BYTES = 8
#: Rows of a prequential check (an online predictor against the running mean).
PREQUENTIAL_ROWS = 1500
#: Entity streams: rows, the seed offset of their entities, the co-runner weights drawn, the most
#: co-runners per row, and the target's bump per own entity index and per unit of co-runner weight.
ENTITY_ROWS = 120
ENTITY_SEED_OFFSET = 100
ENTITY_WEIGHTS = (0.5, 1.0, 2.0)
ENTITY_MAX_CO_RUNNERS = 2
ENTITY_OWN_BUMP = 0.1
ENTITY_CO_BUMP = 0.05
#: Rows an entity-aware or wrapped predictor is fitted on before it is updated with the rest.
ENTITY_FIT_ROWS = 40
#: Entity rows of the wrong-length refusals (for ENTITY_ROWS rows).
WRONG_UPDATE_ENTITY_ROWS = 10
WRONG_FIT_ENTITY_ROWS = 5
#: The target a saved-and-loaded copy and the original both learn next, to show they learn alike.
REFIT_TARGET = 1.5
#: Unseen entity rows that must still predict finite values.
UNSEEN_ENTITY_ROWS = 3
#: The entity-learning check: each entity's effect on the slowdown, the weight of co-runners' effects, and
#: the share of the running mean's prequential error the predictor must stay below.
ENTITY_EFFECTS = {"a": 0.2, "b": 0.8, "c": 1.5, "d": 0.1}
CO_RUNNER_EFFECT = 0.5
ENTITY_ERROR_SHARE = 0.5
#: The quantile of the Calibrated wrapper whose means must equal the wrapped predictor's.
CALIBRATION_QUANTILE = 0.9


def _width(p: Any) -> int:
    return p.tags.fixed_width or ANY_WIDTH


def _stream(p: Any, n: int = STREAM_ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A noiseless linear stream of throughput-like features."""
    rng = np.random.default_rng(seed)
    d = _width(p)
    X = rng.random((n, d))
    w = np.linspace(*STREAM_WEIGHTS, d)
    return X, STREAM_INTERCEPT + X @ w


def _trained(p: Any, n: int = STREAM_ROWS) -> Any:
    q = p.clone()
    X, y = _stream(q, n)
    q.fit(X, y)
    return q


def _expect_refusal(fn: Callable[[], Any], what: str) -> None:
    try:
        fn()
    except InterfpredError:
        return
    except ValueError as exc:  # still a ValueError, but not ours
        raise AssertionError(f"{what}: raised a plain ValueError, expected InterfpredError: {exc}") from None
    raise AssertionError(f"{what}: no ValueError raised")


def _update(q: Any, X: Any, y: Any) -> None:
    """``q.update(X, y)``; for a frozen predictor, check that it is refused instead.

    The no-interference baseline is a constant by definition, not a learner that silently
    ignores data: its update accepts valid rows and changes nothing.
    """
    if q.tags.learns_online or q.tags.baseline:
        q.update(X, y)
        return
    try:
        q.update(X, y)
    except FrozenPredictorError:
        return
    raise AssertionError(f"{q!r} is frozen (tags.learns_online false) but update() did not raise FrozenPredictorError")


def check_params_and_repr(p: Any) -> None:
    """get_params matches the constructor; repr survives clone."""
    import inspect

    q = p.clone()
    sig = inspect.signature(type(q).__init__)
    # keyword-only hyperparameters, plus a wrapper's leading positional-or-keyword one (the wrapped predictor)
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [n for n, par in sig.parameters.items() if n != "self" and par.kind in kinds]
    assert list(q.get_params()) == names, f"get_params keys {list(q.get_params())} != constructor {names}"
    assert repr(q) == repr(p), f"repr changed by clone: {q!r} vs {p!r}"
    assert repr(_trained(p).clone()) == repr(p)
    assert type(q)(**q.get_params()).get_params().keys() == q.get_params().keys()


def check_prior(p: Any) -> None:
    """A fresh predictor predicts a finite prior for one row and for a batch."""
    q = p.clone()
    X, _ = _stream(q, PRIOR_ROWS)
    one = q.predict(X[0])
    assert isinstance(one, float) and np.isfinite(one), f"prior {one!r} is not a finite float"
    many = q.predict(X)
    assert many.shape == (PRIOR_ROWS,) and np.isfinite(many).all()


def check_input_not_changed_or_kept(p: Any) -> None:
    """The input arrays are neither modified nor kept (changing them later has no effect)."""
    q = p.clone()
    X, y = _stream(q, ALIASING_ROWS)
    X0, y0 = X.copy(), y.copy()
    q.fit(X, y)
    _update(q, X, y)
    q.predict(X)
    assert np.array_equal(X, X0) and np.array_equal(y, y0), "input arrays were modified"
    before = q.predict(X0)
    X[:] = OVERWRITE_X
    y[:] = OVERWRITE_Y
    assert np.array_equal(q.predict(X0), before), "predictor kept a reference to the input"


def check_width_change_refused(p: Any) -> None:
    """A changed feature count raises ValueError, for predict and update, and changes nothing."""
    q = _trained(p)
    d = q.n_features_in_
    state = pickle.dumps(q)
    for bad in (np.zeros(d + 1), np.zeros((2, d + 1)), np.zeros(max(d - 1, 1) if d > 1 else 2)):
        _expect_refusal(lambda: q.predict(bad), f"predict with {bad.shape}")
        _expect_refusal(lambda: q.update(bad, np.zeros(bad.shape[0]) if bad.ndim == 2 else 1.0),
                        f"update with {bad.shape}")
    assert pickle.dumps(q) == state, "state changed on a refused call"


def check_nonfinite_refused(p: Any) -> None:
    """NaN/inf in X or y, non-numeric X and a y of the wrong length raise and leave state unchanged."""
    for fresh in (True, False):
        q = p.clone() if fresh else _trained(p)
        X, y = _stream(q, REFUSAL_ROWS)
        state = pickle.dumps(q)
        for bad_value in (np.nan, np.inf, -np.inf):
            Xb = X.copy()
            Xb[2, 1] = bad_value
            _expect_refusal(lambda: q.update(Xb, y), f"update with X containing {bad_value}")
            _expect_refusal(lambda: q.update(Xb[2], 1.0), f"single-row update with {bad_value}")
            _expect_refusal(lambda: q.predict(Xb), f"predict with {bad_value}")
            _expect_refusal(lambda: q.predict(Xb[2]), f"single-row predict with {bad_value}")
            yb = y.copy()
            yb[3] = bad_value
            _expect_refusal(lambda: q.update(X, yb), f"update with y containing {bad_value}")
            _expect_refusal(lambda: q.update(X[0], float(bad_value)), f"single-row update with y={bad_value}")
        _expect_refusal(lambda: q.update(X, y[:-1]), "y of the wrong length")
        _expect_refusal(lambda: q.update(X.astype(str).astype(object) + "x", y), "non-numeric X")
        _expect_refusal(lambda: q.predict(np.zeros((2, 2, 2))), "3-d X")
        assert pickle.dumps(q) == state, "state changed on a refused call"


def check_batch_predict_equals_rows(p: Any) -> None:
    """``predict`` on a batch equals row-by-row ``predict``."""
    for q in (p.clone(), _trained(p)):
        X, _ = _stream(q, ROW_LOOP_ROWS, seed=1)
        batch = q.predict(X)
        rows = np.array([q.predict(x) for x in X])
        np.testing.assert_allclose(batch, rows, rtol=SAME_PREDICTION_TOL, atol=SAME_PREDICTION_TOL)


def check_batch_update_equals_loop(p: Any) -> None:
    """Batch ``update`` equals a loop of single-row updates."""
    a, b = _trained(p, WARM_START_ROWS), _trained(p, WARM_START_ROWS)
    X, y = _stream(a, BATCH_UPDATE_ROWS, seed=2)
    _update(a, X, y)
    for x, t in zip(X, y):
        _update(b, x, float(t))
    Xt, _ = _stream(a, HELD_OUT_ROWS, seed=3)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=SAME_PREDICTION_TOL, atol=SAME_PREDICTION_TOL)


def check_clone_fresh_and_independent(p: Any) -> None:
    """A clone is untrained and learning in it does not affect the original."""
    q = _trained(p)
    X, y = _stream(q, ROUND_TRIP_ROWS, seed=4)
    before = q.predict(X)
    c = q.clone()
    fresh = p.clone()
    np.testing.assert_array_equal(c.predict(X), fresh.predict(X))
    c.fit(X, y * CHANGED_TARGET_SCALES[0])
    _update(c, X, y * CHANGED_TARGET_SCALES[1])
    np.testing.assert_array_equal(q.predict(X), before)


def check_persistence(p: Any) -> None:
    """save/load, to_state/from_state and pickle round-trips give identical predictions."""
    for q in (p.clone(), _trained(p)):
        X, y = _stream(q, ROUND_TRIP_ROWS, seed=5)
        ref = q.predict(X)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "p.json"
            q.save(path)
            trusted = bool(q.tags.stores_pickle)
            if trusted:  # a pickled state is refused unless the caller vouches for the file
                try:
                    load_predictor(path)
                except InterfpredError:
                    pass
                else:
                    raise AssertionError("a pickled predictor state loaded without trusted=True")
            r = type(q).load(path, trusted=trusted)
            s = load_predictor(path, trusted=trusted)
        t = pickle.loads(pickle.dumps(q))
        u = type(q).from_state(copy.deepcopy(q.to_state()), trusted=trusted)
        for other in (r, s, t, u):
            assert type(other) is type(q) and repr(other) == repr(q)
            np.testing.assert_array_equal(other.predict(X), ref)
        # and they keep learning identically
        if q.tags.learns_online:
            q2 = pickle.loads(pickle.dumps(q))
            q2.update(X, y)
            r.update(X, y)
            np.testing.assert_array_equal(r.predict(X), q2.predict(X))


def check_fixed_size_state(p: Any) -> None:
    """State size does not grow with the stream.

    Sizes are compared after ``STATE_FIRST_ROWS`` (300) and after ``STATE_ROWS`` (4,300) updates, the
    last ones row by row; ``STATE_SLACK_BYTES`` of slack allow for integer counters, whose pickled
    encoding widens (256 -> 65,535), not for per-sample state.
    """
    q = _trained(p, WARM_START_ROWS)
    X, y = _stream(q, STATE_ROWS, seed=6)
    _update(q, X[:STATE_FIRST_ROWS], y[:STATE_FIRST_ROWS])
    size = len(pickle.dumps(q))
    _update(q, X[STATE_FIRST_ROWS:STATE_ROW_BY_ROW_FROM], y[STATE_FIRST_ROWS:STATE_ROW_BY_ROW_FROM])
    for x, t in zip(X[STATE_ROW_BY_ROW_FROM:], y[STATE_ROW_BY_ROW_FROM:]):
        _update(q, x, float(t))
    grown = len(pickle.dumps(q)) - size
    assert grown <= STATE_SLACK_BYTES, f"state grew by {grown} bytes over {STATE_ROWS - STATE_FIRST_ROWS:,} updates"


def check_frozen_update_refused(p: Any) -> None:
    """A frozen predictor's ``update`` raises FrozenPredictorError and changes nothing; an online one learns."""
    q = _trained(p)
    X, y = _stream(q, WARM_START_ROWS, seed=8)
    before = q.predict(X)
    if q.tags.learns_online:
        q.update(X, y * CHANGED_TARGET_SCALES[0])
        assert not np.array_equal(q.predict(X), before), "an online predictor's update changed nothing"
        return
    _update(q, X, y * CHANGED_TARGET_SCALES[0])
    _update(q, X[0], float(y[0]) * CHANGED_TARGET_SCALES[0])
    np.testing.assert_array_equal(q.predict(X), before)


def check_beats_running_mean(p: Any) -> None:
    """On a noiseless linear stream an online predictor beats a running-mean baseline (prequential).

    The baselines themselves (``tags.baseline``) are exempt: they ignore the features by design.
    """
    if not p.tags.learns_online or p.tags.baseline:
        return
    q = p.clone()
    X, y = _stream(q, PREQUENTIAL_ROWS, seed=7)
    err_model = err_mean = 0.0
    mean, n = 0.0, 0
    for x, t in zip(X, y):
        err_model += (q.predict(x) - t) ** 2
        err_mean += (mean - t) ** 2
        q.update(x, float(t))
        n += 1
        mean += (t - mean) / n
    assert err_model < err_mean, f"prequential SSE {err_model:.4g} not below running mean's {err_mean:.4g}"


def _entity_stream(p: Any, n: int = ENTITY_ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Any]:
    """A stream with entities: five models, 0 to ``ENTITY_MAX_CO_RUNNERS`` weighted co-runners per row (some
    rows alone)."""
    X, y = _stream(p, n, seed)
    rng = np.random.default_rng(seed + ENTITY_SEED_OFFSET)
    names = ["m0", "m1", "m2", "m3", "modèle-4"]
    own = [names[i] for i in rng.integers(0, len(names), n)]
    co = [{names[j]: float(rng.choice(ENTITY_WEIGHTS))
           for j in rng.choice(len(names), int(rng.integers(0, ENTITY_MAX_CO_RUNNERS + 1)), replace=False)}
          for _ in range(n)]
    bump = np.array([ENTITY_OWN_BUMP * names.index(o) + sum(ENTITY_CO_BUMP * w for w in c.values())
                     for o, c in zip(own, co)])
    return X, y + bump, Entities.from_lists(own, co)


def check_entities(p: Any) -> None:
    """With entities (predictors that use them): batch equals rows and loops, refusals change nothing,
    persistence keeps predictions and learning, and rows without entities still predict."""
    if not p.tags.uses_entities:
        return
    q = p.clone()
    X, y, ent = _entity_stream(q)
    one = q.predict(X[0], entities=ent.take([0]))
    assert isinstance(one, float) and np.isfinite(one), f"prior {one!r} with entities is not a finite float"
    a, b = p.clone(), p.clone()
    n0 = ENTITY_FIT_ROWS
    a.fit(X[:n0], y[:n0], entities=ent.take(np.arange(n0)))
    b.fit(X[:n0], y[:n0], entities=ent.take(np.arange(n0)))
    a.update(X[n0:], y[n0:], entities=ent.take(np.arange(n0, len(y))))
    for i in range(n0, len(y)):
        b.update(X[i], float(y[i]), entities=ent.take([i]))
    Xt, _, et = _entity_stream(p, ROUND_TRIP_ROWS, seed=9)
    batch = a.predict(Xt, entities=et)
    rows = np.array([a.predict(Xt[i], entities=et.take([i])) for i in range(len(Xt))])
    np.testing.assert_allclose(batch, rows, rtol=SAME_PREDICTION_TOL, atol=SAME_PREDICTION_TOL)
    np.testing.assert_allclose(b.predict(Xt, entities=et), batch, rtol=SAME_PREDICTION_TOL, atol=SAME_PREDICTION_TOL)
    assert np.isfinite(a.predict(Xt)).all()
    state = pickle.dumps(a)
    Xb = Xt.copy()
    Xb[3, 1] = np.nan
    for bad, what in ((lambda: a.update(Xt, np.ones(len(Xt)), entities=et.take([0, 1])), "entities of the wrong length"),
                      (lambda: a.update(Xt[:1], np.ones(1), entities=["m0"]), "entities not an Entities table"),
                      (lambda: a.predict(Xt, entities=et.take([0])), "predict with entities of the wrong length"),
                      (lambda: a.update(Xb, np.ones(len(Xt)), entities=et), "update with NaN and new entities"),
                      (lambda: a.update(Xb[3], 1.0, entities=et.take([3])), "single-row update with NaN")):
        _expect_refusal(bad, what)
    assert pickle.dumps(a) == state, "state changed on a refused call with entities"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.json"
        a.save(path)
        r = type(a).load(path)
    np.testing.assert_array_equal(r.predict(Xt, entities=et), batch)
    if a.tags.learns_online:
        a.update(Xt, np.full(len(Xt), REFIT_TARGET), entities=et)
        r.update(Xt, np.full(len(Xt), REFIT_TARGET), entities=et)
        np.testing.assert_array_equal(r.predict(Xt, entities=et), a.predict(Xt, entities=et))


def _entities(n: int, seed: int = 0) -> Entities:
    """Own and co-runner entities of ``n`` rows over four names (0 to ``ENTITY_MAX_CO_RUNNERS`` co-runners,
    weights drawn from ``ENTITY_WEIGHTS``)."""
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d"]
    own = [names[i] for i in rng.integers(0, len(names), n)]
    co = [{names[j]: float(rng.choice(ENTITY_WEIGHTS))
           for j in rng.choice(len(names), size=rng.integers(0, ENTITY_MAX_CO_RUNNERS + 1), replace=False)}
          for _ in range(n)]
    return Entities.from_lists(own, co)


def check_entities_contract(p: Any) -> None:
    """Entity-aware predictors (``tags.uses_entities``) work with and without ``entities=``.

    With entities: finite prior, batch predict equals row-by-row predict, batch update equals a
    loop of single-row updates, unseen names predict finite values, save/load and pickle keep the
    predictions. A table of the wrong length or type is refused and leaves the state unchanged.
    Without entities every call still works. Other predictors are not checked here.
    """
    if not p.tags.uses_entities:
        return
    q = p.clone()
    X, y = _stream(q, ENTITY_ROWS, seed=8)
    ent = _entities(ENTITY_ROWS, seed=8)
    one = q.predict(X[0], entities=ent.take([0]))
    assert isinstance(one, float) and np.isfinite(one), f"prior with entities {one!r} is not a finite float"
    q.fit(X, y, entities=ent)
    batch = q.predict(X, entities=ent)
    assert batch.shape == (ENTITY_ROWS,) and np.isfinite(batch).all()
    rows = np.array([q.predict(X[i], entities=ent.take([i])) for i in range(ROW_LOOP_ROWS)])
    np.testing.assert_allclose(batch[:ROW_LOOP_ROWS], rows, rtol=SAME_PREDICTION_TOL, atol=SAME_PREDICTION_TOL)
    assert np.isfinite(q.predict(X)).all(), "predict without entities is not finite"
    unseen = Entities.from_lists(["zz"] * UNSEEN_ENTITY_ROWS, [{"yy": 1.0}, {}, {"a": 1.0}])
    assert np.isfinite(q.predict(X[:UNSEEN_ENTITY_ROWS], entities=unseen)).all(), "unseen entities give non-finite predictions"
    state = pickle.dumps(q)
    _expect_refusal(lambda: q.update(X, y, entities=ent.take(np.arange(WRONG_UPDATE_ENTITY_ROWS))),
                    f"update with {WRONG_UPDATE_ENTITY_ROWS} entity rows for {ENTITY_ROWS}")
    _expect_refusal(lambda: q.predict(X, entities=ent.take([0])), f"predict with 1 entity row for {ENTITY_ROWS}")
    _expect_refusal(lambda: q.fit(X, y, entities=ent.take(np.arange(WRONG_FIT_ENTITY_ROWS))),
                    f"fit with {WRONG_FIT_ENTITY_ROWS} entity rows for {ENTITY_ROWS}")
    _expect_refusal(lambda: q.update(X, y, entities="a"), "entities that are not an Entities table")
    assert pickle.dumps(q) == state, "state changed on a refused call"
    a, b = pickle.loads(state), pickle.loads(state)
    X2, y2 = _stream(q, ENTITY_FIT_ROWS, seed=9)
    e2 = _entities(ENTITY_FIT_ROWS, seed=9)
    a.update(X2, y2, entities=e2)
    for i in range(ENTITY_FIT_ROWS):
        b.update(X2[i], float(y2[i]), entities=e2.take([i]))
    np.testing.assert_allclose(a.predict(X2, entities=e2), b.predict(X2, entities=e2), rtol=SAME_PREDICTION_TOL,
                               atol=SAME_PREDICTION_TOL)
    a.update(X2, y2)  # and without entities
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.json"
        a.save(path)
        r = type(a).load(path)
    for other in (r, pickle.loads(pickle.dumps(a))):
        np.testing.assert_array_equal(other.predict(X2, entities=e2), a.predict(X2, entities=e2))


def check_entities_are_learned(p: Any) -> None:
    """With entities, an online entity-aware predictor beats the running mean on a stream whose
    target depends only on the own and co-runner entities (prequential, single rows)."""
    if not p.tags.uses_entities or not p.tags.learns_online or not p.tags.entity_terms:
        return  # (an ablation with its entity terms turned off learns no entity by design)
    q = p.clone()
    n = PREQUENTIAL_ROWS
    X, _ = _stream(q, n, seed=10)
    ent = _entities(n, seed=10)
    effect = ENTITY_EFFECTS
    # a row with no co-runner runs alone: slowdown 1, whatever its model (no interference to learn)
    y = np.array([1.0 + effect[own] + CO_RUNNER_EFFECT * sum(w * effect[c] for c, w in co.items()) if co else 1.0
                  for own, co in (ent.row(i) for i in range(n))])
    err_model = err_mean = 0.0
    mean = 0.0
    for i in range(n):
        e = ent.take([i])
        err_model += (q.predict(X[i], entities=e) - y[i]) ** 2
        err_mean += (mean - y[i]) ** 2
        q.update(X[i], float(y[i]), entities=e)
        mean += (y[i] - mean) / (i + 1)
    assert err_model < ENTITY_ERROR_SHARE * err_mean, (
        f"prequential SSE {err_model:.4g} with entities is not below {ENTITY_ERROR_SHARE:g} of the running mean's "
        f"{err_mean:.4g}")


def check_target_hyperparameter(p: Any) -> None:
    """``target`` is a constructor hyperparameter (in ``get_params``, kept by ``clone`` and state files);
    ``with_target`` declares a copy (learned state kept) and refuses another target than the declared one."""
    assert "target" in p.get_params(), f"{type(p).__name__}: no 'target' hyperparameter in get_params()"
    for target in ("rate", "slowdown"):
        q = p.clone().with_target(target)
        assert q.get_params()["target"] == target and q.clone().target == target
        assert type(q).from_state(q.to_state(), trusted=True).target == target   # our own state
        trained = _trained(p)
        declared = trained.with_target(target)
        assert declared is not trained and trained.target == p.target and declared.target == target
        X, _ = _stream(trained, HELD_OUT_ROWS, seed=11)
        np.testing.assert_allclose(declared.predict(X), trained.predict(X), rtol=SAME_PREDICTION_TOL,
                                   atol=SAME_PREDICTION_TOL)
        assert declared.with_target(target) is declared
        other = "slowdown" if target == "rate" else "rate"
        _expect_refusal(lambda: declared.with_target(other), f"with_target({other!r}) on a predictor for {target!r}")


def check_calibration_keeps_mean(p: Any) -> None:
    """Wrapped in :class:`~interfpred.predictors.Calibrated`, the point predictions are the predictor's own
    (to ``SAME_PREDICTION_TOL``, 1e-12): after ``fit`` and after updates, with entities where the predictor uses them."""
    from interfpred.predictors import Calibrated

    if p.kind == Calibrated.kind:
        return
    X, y, ent = _entity_stream(p)
    n0 = ENTITY_FIT_ROWS
    kw = (lambda idx: {"entities": ent.take(idx)}) if p.tags.uses_entities else (lambda idx: {})
    plain = p.clone().fit(X[:n0], y[:n0], **kw(np.arange(n0)))
    cal = Calibrated(p.clone(), quantiles=(CALIBRATION_QUANTILE,)).fit(X[:n0], y[:n0], **kw(np.arange(n0)))
    Xt, _, et = _entity_stream(p, ROUND_TRIP_ROWS, seed=9)
    kt = {"entities": et} if p.tags.uses_entities else {}
    np.testing.assert_allclose(cal.predict(Xt, **kt), plain.predict(Xt, **kt), rtol=SAME_PREDICTION_TOL,
                               atol=SAME_PREDICTION_TOL,
                               err_msg=f"Calibrated({p!r}) changed the mean after fit")
    if p.tags.learns_online:
        rest = np.arange(n0, len(y))
        plain.update(X[rest], y[rest], **kw(rest))
        cal.update(X[rest], y[rest], **kw(rest))
        np.testing.assert_allclose(cal.predict(Xt, **kt), plain.predict(Xt, **kt), rtol=SAME_PREDICTION_TOL,
                               atol=SAME_PREDICTION_TOL,
                                   err_msg=f"Calibrated({p!r}) changed the mean after updates")


_CHECKS = [
    check_params_and_repr,
    check_prior,
    check_input_not_changed_or_kept,
    check_width_change_refused,
    check_nonfinite_refused,
    check_batch_predict_equals_rows,
    check_batch_update_equals_loop,
    check_clone_fresh_and_independent,
    check_persistence,
    check_fixed_size_state,
    check_frozen_update_refused,
    check_beats_running_mean,
    check_entities,
    check_entities_contract,
    check_entities_are_learned,
    check_calibration_keeps_mean,
    check_target_hyperparameter,
]


def yield_checks(predictor: Any) -> Iterator[Callable[[Any], None]]:
    """The contract checks that apply to ``predictor``."""
    yield from _CHECKS


def check_predictor(predictor: Any) -> None:
    """Run every contract check on (clones of) ``predictor``; raises AssertionError on a breach."""
    for check in yield_checks(predictor):
        check(predictor)
