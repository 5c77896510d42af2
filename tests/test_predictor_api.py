"""The learned-state names every predictor shares, saved states of earlier releases, one error wording
per refusal whatever the input's form, the compiled-entry helper, and the registry from a fresh interpreter."""

import json
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

from interfpred import RLS, GpuletsModel, OfflineLinear, OnlineSGD
from interfpred._core.jit import compiled_entry, njit
from interfpred.constants import GPULETS_RTX2080TI, PRIOR_SLOWDOWN
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors import (
    Calibrated,
    EntityRLS,
    GlobalMean,
    NoInterference,
    PairMean,
    load_predictor,
    predictor_from_state,
    registered,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
OLD_STATES = ROOT / "tests" / "data" / "predictor_states_before_n_seen.json"


def _rows(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, 1.0 + X @ np.arange(1.0, d + 1.0) + 0.01 * rng.standard_normal(n)


# ----------------------------------------------------------------------------- tags: every capability declared
def test_tags_declare_what_callers_used_to_probe():
    from interfpred.predictors import get_tags, inner_predictor

    for kind, cls in registered().items():
        assert cls.tags.baseline == (kind in ("no_interference", "global_mean", "pair_mean")), kind
    assert {k for k, c in registered().items() if c.tags.mergeable} == {
        "no_interference", "global_mean", "pair_mean", "rls", "offline_linear"}
    assert all(callable(getattr(c, "merge", None)) for k, c in registered().items()
               if c.tags.mergeable and k != "offline_linear")   # the offline fit merges its rows' statistics
    ent = EntityRLS()
    assert ent.tags.pairwise_terms and ent.tags.entity_terms and ent.tags.tunes_priors
    ablation = EntityRLS(entity_terms=False, tune_priors=False)
    assert ablation.tags.pairwise_terms and not ablation.tags.entity_terms and not ablation.tags.tunes_priors
    assert EntityRLS(entity="model_batch").clone().tags.entity_key == "model_batch"
    cal = Calibrated(EntityRLS(entity_terms=False))
    assert cal.tags.wraps and cal.tags.gives_bounds and not cal.tags.entity_terms
    assert not cal.tags.pairwise_terms          # the projection reads the wrapped one's terms
    assert inner_predictor(cal).kind == "entity_rls" and inner_predictor(ent) is ent
    assert Calibrated(PairMean(), groups="entity").tags.entity_terms
    for p in (RLS(), OnlineSGD(), OfflineLinear(), GpuletsModel(), PairMean()):
        assert not p.tags.wraps and not p.tags.gives_bounds and not p.tags.tunes_priors
    assert get_tags(object()) == get_tags(None) and inner_predictor(None) is None


@pytest.mark.parametrize("make", [NoInterference, GlobalMean, PairMean])
def test_baselines_merge_to_one_fed_both_sets_of_rows(make):
    X, y = _rows(60)
    y = y.copy()
    ent = Entities.from_lists(["a", "b", "a"] * 20, [{"b": 1.0}, {"a": 1.0}, {}] * 20)
    kw = (lambda idx: {"entities": ent.take(idx)}) if make is PairMean else (lambda idx: {})
    first, second, both = make(), make(), make()
    first.update(X[:25], y[:25], **kw(np.arange(25)))
    second.update(X[25:], y[25:], **kw(np.arange(25, 60)))
    both.update(X, y, **kw(np.arange(60)))
    fresh = make().merge(first)                          # a fresh one takes the other's rows and width
    assert fresh.merge(second) is fresh and fresh.n_seen_ == both.n_seen_
    np.testing.assert_allclose(fresh.predict(X, **kw(np.arange(60))), both.predict(X, **kw(np.arange(60))),
                               rtol=1e-12)
    before = fresh.to_state()
    assert fresh.merge(make()).to_state() == before      # nothing learned on the other side: unchanged
    for bad, match in ((RLS(), "merge needs a"), (make(target="rate"), "same hyperparameters")):
        with pytest.raises(InterfpredError, match=match):
            fresh.merge(bad)
    wide = make()
    wide.update(np.zeros((1, 4)), [1.0], **kw(np.arange(1)))
    with pytest.raises(InterfpredError, match="same width: 3 features vs 4"):
        fresh.merge(wide)
    assert fresh.to_state() == before


# ----------------------------------------------------------------------------- coef_, intercept_, n_seen_


@pytest.mark.parametrize("make", [RLS, OnlineSGD, OfflineLinear, GpuletsModel, NoInterference, GlobalMean, EntityRLS,
                                  lambda: Calibrated(RLS())])
def test_coef_and_intercept_raise_before_fit_and_n_seen_is_zero(make):
    p = make()
    for name in ("coef_", "intercept_"):
        with pytest.raises(AttributeError, match="not available before fit"):
            getattr(p, name)
    assert p.n_seen_ == 0


@pytest.mark.parametrize("make", [RLS, OnlineSGD, OfflineLinear, lambda: GpuletsModel(clip=False)])
def test_linear_predictors_coef_and_intercept_are_their_linear_form(make):
    X, y = _rows(d=4)
    p = make().fit(X, y)
    form = p.linear_form()
    np.testing.assert_allclose(p.coef_, form.weights, rtol=1e-9, atol=1e-9)
    assert p.intercept_ == pytest.approx(form.intercept, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(p.predict(X), X @ p.coef_ + p.intercept_, rtol=1e-9, atol=1e-9)
    assert p.n_seen_ == X.shape[0]


def test_gpulets_coef_is_in_feature_order_and_keeps_coefficients():
    g = GpuletsModel(coefficients=GPULETS_RTX2080TI)
    c = np.asarray(GPULETS_RTX2080TI)
    np.testing.assert_allclose(g.coef_, c[[0, 2, 1, 3]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g.coefficients_, c, rtol=1e-12, atol=1e-12)
    assert g.intercept_ == pytest.approx(c[4], rel=1e-12)
    assert g.n_seen_ == 0   # published coefficients: no rows learned


def test_constant_baselines_have_zero_weights_and_their_constant():
    X, y = _rows(d=2)
    assert NoInterference().fit(X, y).intercept_ == pytest.approx(PRIOR_SLOWDOWN, abs=1e-12)
    g = GlobalMean().fit(X, y)
    np.testing.assert_array_equal(g.coef_, np.zeros(2))
    assert g.intercept_ == pytest.approx(float(np.mean(y)), rel=1e-12) and g.n_seen_ == len(y)
    assert NoInterference().fit(X, y).n_seen_ == 0


def test_pair_mean_has_no_weights_and_says_why():
    ent = Entities.from_lists(["a", "b"], [{"b": 1.0}, {"a": 1.0}])
    p = PairMean().fit(np.zeros((2, 1)), [1.5, 2.0], entities=ent)
    assert p.n_seen_ == 2
    for name in ("coef_", "intercept_"):
        with pytest.raises(AttributeError, match="running means per"):
            getattr(p, name)
        assert not hasattr(p, name)
    state = p.to_state()
    state["state"]["global"] = state["state"]["global"][:2]       # [mean, count] without the weight sum
    with pytest.raises(InterfpredError, match=r"state 'global' holds \[1.75, 2\]; expected \[mean, count, weight sum\]"):
        predictor_from_state(state)


def test_calibrated_reads_the_wrapped_predictors_weights():
    X, y = _rows(n=200)
    cal = Calibrated(RLS(), quantiles=(0.9,)).fit(X, y)
    np.testing.assert_allclose(cal.coef_, cal.predictor_.coef_, rtol=1e-12, atol=1e-12)
    assert cal.intercept_ == pytest.approx(cal.predictor_.intercept_, rel=1e-12, abs=1e-12)
    assert 0 < cal.n_seen_ < len(y)       # the out-of-sample calibration rows of fit
    assert not hasattr(Calibrated(PairMean()).fit(X, y), "coef_")


# ----------------------------------------------------------------------------- earlier state files


@pytest.mark.parametrize("kind", ["rls", "online_sgd", "offline_linear", "gpulets", "no_interference", "global_mean",
                                  "pair_mean"])
def test_states_saved_before_n_seen_still_load_and_predict_the_same(kind):
    saved = json.loads(OLD_STATES.read_text())[kind]
    p = predictor_from_state(saved["state"])
    X = np.array([[0.0, 0.5], [0.5, 0.25], [1.0, 0.0], [0.25, 1.0], [0.75, 0.75], [0.5, 0.5]])
    X = np.hstack([X, X]) if kind == "gpulets" else X
    kw = {}
    if p.tags.uses_entities:
        kw["entities"] = Entities.from_lists(["a", "b", "a", "b", "a", "b"], [{"b": 1.0}, {"a": 1.0}] * 3)
    np.testing.assert_allclose(p.predict(X, **kw), saved["predict"], rtol=1e-12, atol=1e-12)
    q = predictor_from_state(p.to_state())   # and round-trips in today's format
    np.testing.assert_allclose(q.predict(X, **kw), saved["predict"], rtol=1e-12, atol=1e-12)


def test_entity_rls_states_saved_before_the_backoff_are_refused():
    saved = json.loads(OLD_STATES.read_text())["entity_rls"]
    with pytest.raises(InterfpredError, match="no backoff model"):
        predictor_from_state(saved["state"])


def test_base_class_load_dispatches_on_the_kind(tmp_path):
    X, y = _rows()
    RLS(forgetting=0.9).fit(X, y).save(tmp_path / "p.json")
    from interfpred.predictors.base import BasePredictor

    assert repr(BasePredictor.load(tmp_path / "p.json")) == "RLS(forgetting=0.9)"
    with pytest.raises(InterfpredError, match="kind 'rls', not 'online_sgd'"):
        OnlineSGD.load(tmp_path / "p.json")
    assert repr(load_predictor(tmp_path / "p.json")) == "RLS(forgetting=0.9)"


# ----------------------------------------------------------------------------- one wording per refusal


def _bad_rows(d):
    nan, inf, wide = np.full(d, 0.5), np.full(d, 0.5), np.full(d + 1, 0.5)
    nan[1], inf[1] = np.nan, np.inf
    return [
        ("nan", nan, 1.0, "X contains nan at row 0, column 1; features must be finite"),
        ("inf", inf, 1.0, "X contains inf at row 0, column 1; features must be finite"),
        ("width", wide, 1.0, f"X has {d + 1} features, but the predictor was fitted with {d}"),
        ("y inf", np.full(d, 0.5), np.inf, "y contains inf at position 0; targets must be finite"),
    ]


@pytest.mark.parametrize("kind", sorted(registered()))
def test_one_message_per_refusal_whatever_the_form(kind):
    """The same bad row reads the same as a float64 row, a list and a (1, d) array, in predict and
    update, for every registered predictor; a refused update changes nothing."""
    cls = registered()[kind]
    p = cls(**cls.contract_params()[0])
    d = p.tags.fixed_width or 3
    X, y = _rows(d=d)
    p.fit(X, y)
    for what, x, t, match in _bad_rows(d):
        forms = {"1-D": (x, t), "list": (x.tolist(), t), "2-D": (x.reshape(1, -1), np.array([t]))}
        methods = [("update", lambda v, w: p.update(v, w))]
        if what != "y inf":
            methods.append(("predict", lambda v, w: p.predict(v)))
        for name, call in methods:
            messages = {}
            for form, (v, w) in forms.items():
                before = pickle.dumps(p)
                with pytest.raises(InterfpredError) as info:
                    call(v, w)
                messages[form] = str(info.value)
                assert pickle.dumps(p) == before, f"{kind}.{name} with {what} ({form}) changed the state"
            assert len(set(messages.values())) == 1, f"{kind}.{name} with {what}: {messages}"
            assert match in messages["1-D"], f"{kind}.{name} with {what}: {messages['1-D']}"


def test_batch_refusals_name_the_row():
    X, Y = _rows()
    bad = X.copy()
    bad[7, 1] = 2e6
    for p in (RLS(), OnlineSGD()):
        p.update(X, Y)
        with pytest.raises(InterfpredError, match=r"beyond \+-1e\+06"):
            p.update(bad, Y)
        assert p.n_seen_ == len(Y)


# ----------------------------------------------------------------------------- compiled entry points


def test_compiled_entry_calls_the_compiled_function_and_falls_back_to_the_dispatcher():
    from numba import types

    @njit
    def _twice(x):
        return 2.0 * x

    fast = compiled_entry(_twice, (types.float64,))
    assert fast(1.5) == pytest.approx(3.0, rel=1e-12)

    class _NoOverloads:        # a numba without the internal table: the dispatcher itself is used
        def compile(self, sig):
            pass

        def __call__(self, x):
            return _twice(x)

    fallback = _NoOverloads()
    assert compiled_entry(fallback, (types.float64,)) is fallback


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize("code", [
    "from interfpred.predictors.registry import make_predictor; print(make_predictor('rls'))",
    "from interfpred.predictors.base import BasePredictor; from interfpred.predictors.registry import make_predictor; "
    "print(make_predictor('online_sgd'))",
    "from interfpred.predictors.entity_rls.tuning import select_prior_variances; "
    "from interfpred import make_predictor; print(make_predictor('entity_rls', rank=1))",
    "from interfpred.predictors.as_peers import AsRiver; print(AsRiver().predict_one({'a': 1.0}))",
    "from interfpred.predictors.from_peers import FromRiver; from interfpred.predictors import registered; "
    "print(sorted(registered())[0])",
    "import interfpred; print(interfpred.make_predictor('calibrated', predictor='pair_mean'))",
])
def test_registry_works_from_a_fresh_interpreter_in_any_import_order(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in {"RLS()", "OnlineSGD()", "EntityRLS(rank=1)", "1.0", "calibrated",
                                  "Calibrated(predictor='pair_mean')"}


def test_every_kind_is_registered_once_by_the_package():
    kinds = registered()
    assert sorted(kinds) == ["calibrated", "entity_rls", "global_mean", "gpulets", "kernel_blocking",
                             "no_interference", "offline_linear", "online_sgd", "pair_mean", "river", "rls", "sklearn"]
    assert all(cls.kind == kind for kind, cls in kinds.items())
