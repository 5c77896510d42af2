"""Entities of trace rows (interfpred.features.entity_features) against a plain-Python reference."""

import numpy as np
import pytest
from naive import naive_trace_entities

from interfpred import EWMA, Static, TimeWeighted, Trace
from interfpred.errors import InterfpredError
from interfpred.features.entity_features import trace_entities
from interfpred.sim.workload import mix_scenario


def _random_trace(n=60, seed=0):
    rng = np.random.default_rng(seed)
    start = np.sort(rng.uniform(0, 50, n))
    end = start + rng.choice([0.0, 1.0, 3.0, 7.5], n)
    return Trace(id=list(range(n)), device=rng.choice(["g0", "g1"], n).tolist(),
                 model=rng.choice(["a", "b", "ç"], n).tolist(), batch_size=rng.choice([1, 4], n).tolist(),
                 start_ms=start, end_ms=end)


@pytest.mark.parametrize("aggregation, alpha", [("static", 0.5), ("ewma", 0.2), ("ewma", 0.8), ("time_weighted", 0.5)])
def test_matches_plain_reference(aggregation, alpha):
    tr = _random_trace()
    ent = trace_entities(tr, aggregation, alpha=alpha)
    ref = naive_trace_entities(tr, aggregation, alpha)
    for i in range(len(tr)):
        own, co = ent.row(i)
        assert own == ref[i][0]
        assert sorted(co) == sorted(ref[i][1])
        for k, v in co.items():
            assert abs(v - ref[i][1][k]) < 1e-12


def test_extractors_fill_entities_like_their_aggregation():
    sc = mix_scenario(["resnet50", "vgg19"], rho=0.9, executions=200, seed=1)
    tr = sc.traces["trace"]
    for ex in (Static(), EWMA(alpha=0.3), TimeWeighted()):
        fm = ex.transform(tr, sc.profiles, entities="model_batch")
        assert len(fm.entities) == len(tr)
        ref = trace_entities(tr, ex.aggregation, alpha=getattr(ex, "alpha", 0.5), key="model_batch")
        assert [fm.entities.row(i) for i in range(20)] == [ref.row(i) for i in range(20)]
        assert ex.transform(tr, sc.profiles).entities is None
    own, _ = TimeWeighted().transform(tr, sc.profiles, entities="model_batch").entities.row(0)
    assert own.startswith(tr.model[0] + "@")


def test_bad_key_and_aggregation_refused():
    tr = _random_trace(5)
    with pytest.raises(InterfpredError, match="entity key 'gpu'"):
        trace_entities(tr, key="gpu")
    with pytest.raises(InterfpredError, match="aggregation 'mean'"):
        trace_entities(tr, "mean")


def test_aggregation_names_are_checked():
    from interfpred.features.entity_features import RunningEntities

    tr = _random_trace(n=20, seed=3)
    with pytest.raises(InterfpredError, match="aggregation 'time-weighted' is not one of"):
        trace_entities(tr, "time-weighted")
    with pytest.raises(InterfpredError, match="aggregation 'time-weighted' is not one of"):
        RunningEntities("time-weighted")
    with pytest.raises(InterfpredError, match="aggregation 'mean'"):
        RunningEntities("mean")
    assert RunningEntities("time_weighted").aggregation == "time_weighted"
