"""ColocationTracker with a predictor that learns per-model terms (EntityRLS)."""

import numpy as np
import pytest

from interfpred import EWMA, ColocationTracker, EntityRLS, TimeWeighted
from interfpred.features.entity_features import trace_entities
from interfpred.predictors import PredictorTags
from interfpred.sim.workload import mix_scenario
from interfpred.sim.zoo import zoo_profiles


class _Opaque:
    """An EntityRLS the tracker cannot see through: the generic path, with entity tables."""

    def __init__(self, inner):
        self.inner = inner
        self.tags = PredictorTags(uses_entities=True, entity_key=inner.tags.entity_key)   # what an entity is
        self.seen = []

    def predict(self, X, entities=None):
        return self.inner.predict(X, entities=entities)

    def update(self, X, y, entities=None):
        self.seen.append(entities.row(0))
        self.inner.update(X, y, entities=entities)


def _trained(log_target, rank, **params):
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=1.2, executions=600, seed=3)
    ex = TimeWeighted(feature_map="rich", target="rate")
    fm = ex.transform(sc.traces["trace"], sc.profiles, entities="model")
    return EntityRLS(log_target=log_target, rank=rank, **params).fit(fm.X, fm.y, entities=fm.entities)


@pytest.mark.parametrize("log_target, rank", [(False, 0), (True, 0), (False, 2), (True, 2)])
def test_compiled_what_if_equals_generic_path(log_target, rank):
    p = _trained(log_target, rank)
    prof = zoo_profiles("l4")
    fast = ColocationTracker(prof, p)
    slow = ColocationTracker(prof, _Opaque(p))
    models = ["resnet50", "vgg19", "vit_b16", "yolov8n"]
    for tr in (fast, slow):
        for i in range(6):
            tr.start(i, models[i % 4], 4, float(i))
    cand = [("c", "vgg19", 8), ("d", "yolov8n", 2)]
    a, b = fast.what_if(cand, 7.0), slow.what_if(cand, 7.0)
    assert list(a) == list(b)
    np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-9)
    np.testing.assert_allclose(list(fast.remaining_ms(7.5).values()), list(slow.remaining_ms(7.5).values()),
                               rtol=1e-9)
    assert p.backoff_terms(["yolov8n", "vgg19"])[0].tolist() == [0.0, 1.0]   # yolov8n: never seen, backs off


def test_compiled_what_if_equals_generic_path_while_every_member_blends_in_the_backoff():
    p = _trained(True, 0, backoff_evidence=1e5)
    A = p.backoff_terms(["resnet50", "vgg19", "vit_b16", "yolov8n"])[0]
    assert ((A > 0) & (A < 1)).sum() == 3 and A[3] == 0.0
    prof = zoo_profiles("l4")
    fast, slow = ColocationTracker(prof, p), ColocationTracker(prof, _Opaque(p))
    models = ["resnet50", "vgg19", "vit_b16", "yolov8n"]
    for tr in (fast, slow):
        for i in range(5):
            tr.start(i, models[i % 4], 4, float(i))
    cand = [("c", "vit_b16", 8)]
    np.testing.assert_allclose(list(fast.what_if(cand, 6.0).values()), list(slow.what_if(cand, 6.0).values()),
                               rtol=1e-9)


def test_learns_on_finish_with_the_trace_entities():
    sc = mix_scenario(["resnet50", "vgg19"], rho=1.0, executions=80, seed=4)
    trace = sc.traces["trace"]
    for ex in (TimeWeighted(feature_map="rich", target="rate"), EWMA(alpha=0.3, feature_map="rich", target="rate")):
        spy = _Opaque(EntityRLS(entity="model"))
        tr = ColocationTracker(sc.profiles, spy, ex)
        events = sorted([(s, 1, i) for i, s in enumerate(trace.start_ms)] + [(e, 0, i) for i, e in enumerate(trace.end_ms)])
        order = []
        for t, kind, i in events:
            if kind:
                tr.start(i, trace.model[i], trace.batch_size[i], t)
            else:
                tr.finish(i, t)
                order.append(i)
        ref = trace_entities(trace, ex.aggregation, alpha=getattr(ex, "alpha", 0.5))
        learned = [r for r in spy.seen]
        for row, i in zip(learned, [i for i in order if trace.end_ms[i] > trace.start_ms[i]]):
            own, co = ref.row(i)
            assert row[0] == own and sorted(row[1]) == sorted(co)
            for k in co:
                assert abs(row[1][k] - co[k]) < 1e-9
        assert len(spy.inner.entities_) == 2


def test_alone_batch_projects_at_solo_speed():
    p = _trained(True, 0)
    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, p)
    solo = prof.lookup_arrays(["vgg19"], [8])["solo_ms"][0]
    assert tr.what_if([("c", "vgg19", 8)], 0.0)["c"] == pytest.approx(solo, rel=1e-12)


class _EntityTerms(_Opaque):
    """Not an EntityRLS, but exposes the entity terms the compiled path reads and says so in its tags
    (``pairwise_terms``): the tracker takes that path."""

    def __init__(self, inner, *, declared=True):
        super().__init__(inner)
        self.tags = PredictorTags(uses_entities=True, entity_key=inner.tags.entity_key, pairwise_terms=declared)
        self.calls = 0
        for name in ("coef_", "intercept_", "n_features_in_", "log_target", "alone_is_solo"):
            setattr(self, name, getattr(inner, name))

    def pairwise_terms(self, names):
        return self.inner.pairwise_terms(names)

    def backoff_terms(self, names):
        return self.inner.backoff_terms(names)

    def predict(self, X, entities=None):
        self.calls += 1
        return super().predict(X, entities=entities)


def test_entity_path_keys_on_the_pairwise_terms_tag():
    p = _trained(True, 2)
    prof = zoo_profiles("l4")
    duck, direct = _EntityTerms(p), ColocationTracker(prof, p)
    tr = ColocationTracker(prof, duck)
    for t in (tr, direct):
        t.start(0, "resnet50", 4, 0.0)
        t.start(1, "vgg19", 8, 1.0)
    got = tr.what_if([("c", "vit_b16", 2)], 2.0)
    assert duck.calls == 0                      # compiled: no predict call per projected segment
    np.testing.assert_allclose(list(got.values()), list(direct.what_if([("c", "vit_b16", 2)], 2.0).values()),
                               rtol=1e-12)
    undeclared = _EntityTerms(p, declared=False)   # the methods alone are not the capability: the tags say it
    tu = ColocationTracker(prof, undeclared)
    tu.start(0, "resnet50", 4, 0.0)
    tu.start(1, "vgg19", 8, 1.0)
    tu.what_if([("c", "vit_b16", 2)], 2.0)
    assert undeclared.calls > 0                 # the generic path: it predicts the projected segments


@pytest.mark.parametrize("combine", ["sum", "max"])
def test_compiled_what_if_equals_generic_path_over_a_large_running_set(combine):
    """The compiled path keeps each member's pair sum as members finish (O(k^2)); the generic path
    predicts every segment from scratch: the same ends over 40 members of many entities."""
    sc = mix_scenario(["resnet50", "vgg19", "vit_b16"], rho=1.2, executions=600, seed=3)
    ex = TimeWeighted(feature_map="rich", combine=combine, target="rate")
    fm = ex.transform(sc.traces["trace"], sc.profiles, entities="model_batch")
    p = EntityRLS(log_target=True, rank=2).fit(fm.X, fm.y, entities=fm.entities)
    prof = zoo_profiles("l4")
    fast = ColocationTracker(prof, p, ex)
    slow = ColocationTracker(prof, _Opaque(p), ex)
    rng = np.random.default_rng(5)
    models = ["resnet50", "vgg19", "vit_b16", "yolov8n"]
    batches = rng.choice([1, 2, 4, 8, 16, 32], 40).tolist()
    for tr in (fast, slow):
        for i in range(40):
            tr.start(i, models[i % 4], batches[i], float(i) * 0.1)
    cand = [("c", "vgg19", 8)]
    a, b = fast.what_if(cand, 5.0), slow.what_if(cand, 5.0)
    assert list(a) == list(b)
    np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-9)
