"""The one running set of a device: columns, values, hooks, and undo for every object that shares it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import EWMA, RLS, ColocationTracker, Entities, EntityRLS, Static, TimeWeighted
from interfpred.features.entity_features import RunningEntities
from interfpred.features.running_set import RunningSet
from interfpred.serving.projection.remaining import RemainingWork
from interfpred.sim.zoo import zoo_profiles


def test_hooks_run_in_order_on_add_remove_and_clock():
    rs = RunningSet({"x": ()})
    seen = []
    rs.on_add(lambda a: seen.append(("add", a, rs.column("model")[a], float(rs.column("x")[a]))))
    rs.on_remove(lambda a: seen.append(("remove", a, rs.ids[a])))
    rs.on_clock(lambda old, new: seen.append(("clock", old, new, len(rs))))
    rs.move_clock(0.0)
    rs.add("p", "a", 1, (0.1, 0.2, 0.3), 1.0, x=5.0)
    rs.add("q", "b", 2, (0.1, 0.2, 0.3), 1.0)
    rs.move_clock(2.0)
    rs.remove("p")
    assert seen == [("clock", None, 0.0, 0), ("add", 0, "a", 5.0), ("add", 1, "b", 0.0), ("clock", 0.0, 2.0, 2),
                    ("remove", 0, "p")]
    # the swap remove moved q (launch included) into slot 0
    assert rs.ids == ["q"] and rs.column("model")[0] == "b" and rs.column("batch_size")[0] == 2.0


def test_restore_puts_back_columns_values_and_clock_and_stays_reusable():
    rs = RunningSet({"acc": (2,)})
    rs.register_value("seg", frozenset())
    rs.add("p", "a", 1, (0.1, 0.2, 0.3), 1.0, acc=(1.0, 2.0))
    rs.move_clock(1.0)
    saved = rs.snapshot()
    for i in range(20):                       # grows the capacity past the snapshot's
        rs.add(i, "b", 1, (0.0, 0.0, 0.0), 2.0)
    rs.column("acc")[0] = (9.0, 9.0)
    rs.values["seg"] = frozenset({1})
    rs.move_clock(5.0)
    rs.widen("acc", 4)
    for _ in range(2):
        rs.restore(saved)
        assert rs.ids == ["p"] and rs.now == 1.0 and rs.values["seg"] == frozenset()
        assert rs.column("acc")[0].tolist() == [1.0, 2.0] and rs.demand.shape[0] == 8
        rs.column("acc")[0] = (7.0, 7.0)      # changing the restored set leaves the snapshot as it was


def test_widen_keeps_values_and_refuses_nothing_narrower():
    rs = RunningSet({"c": (2,)})
    rs.add("p", "a", 1, (0.1, 0.2, 0.3), 1.0, c=(1.0, 2.0))
    assert rs.widen("c", 1).shape[1] == 2
    assert rs.widen("c", 5)[0].tolist() == [1.0, 2.0, 0.0, 0.0, 0.0]
    rs.add("q", "a", 1, (0.1, 0.2, 0.3), 1.0)   # a new slot starts at zero in the widened column
    assert rs.column("c")[1].tolist() == [0.0] * 5


def test_registering_a_name_twice_is_refused():
    rs = RunningSet({"c": ()})
    with pytest.raises(ValueError, match="column 'c'"):
        rs.register("c", ())
    with pytest.raises(ValueError, match="column 'model'"):
        rs.register("model", ())
    rs.register_value("v", 0)
    with pytest.raises(ValueError, match="value 'v'"):
        rs.register_value("v", 1)


def test_remaining_work_is_integrated_at_the_rates_until_the_set_changes():
    rs = RunningSet()
    calls = []

    def rates():
        calls.append(len(rs))
        return np.full(len(rs), 0.5)

    work = RemainingWork(rs, rates)
    rs.move_clock(0.0)
    rs.add("p", "a", 1, (0.1, 0.2, 0.3), 4.0)
    work.rates()
    rs.move_clock(2.0)
    assert work.current().tolist() == [3.0] and calls == [1]      # rates computed once for this set
    rs.add("q", "a", 1, (0.1, 0.2, 0.3), 1.0)
    assert work.at(10.0).tolist() == [pytest.approx(0.01 * 4.0), 0.01]   # floored at the minimum remaining
    assert calls == [1, 2]


def test_running_entities_on_a_shared_set_are_read_without_change():
    rs = RunningSet()
    ents = RunningEntities("time_weighted", running_set=rs)
    rs.move_clock(0.0)
    rs.add(1, "a", 1, (0.1, 0.2, 0.3), 1.0)
    rs.add(2, "b", 1, (0.1, 0.2, 0.3), 1.0)
    rs.move_clock(4.0)
    assert ents.row(1) == ("a", {"b": 1.0}) == ents.row(1)
    assert ents.running_names() == ["a", "b"] and ents.names([2]) == ["b"]


def _trained_entity_rls():
    """An EntityRLS whose entity terms matter: fitted on rows whose target depends on the entities."""
    rng = np.random.default_rng(0)
    names = [f"{m}@{b}" for m in zoo_profiles("l4").models for b in (1, 4, 8)]
    X = rng.random((300, 16))
    own = [names[i] for i in rng.integers(0, len(names), 300)]
    co = [{names[j]: 1.0} for j in rng.integers(0, len(names), 300)]
    y = 0.9 - 0.1 * X[:, 9] - np.array([0.02 * (names.index(o) % 5) + 0.03 * (names.index(next(iter(c))) % 4)
                                         for o, c in zip(own, co)])
    return EntityRLS().fit(X, y, entities=Entities.from_lists(own, co))


def _events(draw_ops, prof):
    """Tracker events from hypothesis draws: (kind, model index, batch, gap)."""
    t, nid, live, out = 0.0, 0, [], []
    for kind, m, b, gap in draw_ops:
        t += gap
        if kind and live:
            out.append(("finish", live.pop(m % len(live)), t))
        else:
            out.append(("start", nid, prof.models[m % 6], b, t))
            live.append(nid)
            nid += 1
    return out


def _play(tr, events):
    out = []
    for ev in events:
        if ev[0] == "start":
            tr.start(ev[1], ev[2], ev[3], ev[4])
        else:
            r = tr.finish(ev[1], ev[2])
            out.append((r.id, r.x.tolist(), r.y, r.predicted_latency_ms))
        out.append(tr.what_if([("c", "vgg19", 8)], ev[-1]))
    return out


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 11), st.sampled_from([1, 4, 8]),
                          st.floats(0.0, 3.0)), min_size=2, max_size=25),
       st.sampled_from(["time_weighted", "static", "ewma"]))
def test_the_running_set_holds_every_state_an_event_changes(ops, aggregation):
    # Restoring the set's snapshot and replaying the same events gives the same features, predictions and
    # what-ifs: no object sharing the set (features, remaining work, entities) keeps event state of its own.
    prof = zoo_profiles("l4")
    ex = {"time_weighted": TimeWeighted(feature_map="rich", target="rate"),
          "static": Static(feature_map="rich", target="rate"),
          "ewma": EWMA(alpha=0.3, feature_map="rich", target="rate")}[aggregation]
    events = _events(ops, prof)
    half = len(events) // 2
    tr = ColocationTracker(prof, _trained_entity_rls(), ex, learn=False)
    _play(tr, events[:half])
    saved = tr.running_set.snapshot()
    first = _play(tr, events[half:])
    tr.running_set.restore(saved)
    assert _play(tr, events[half:]) == first
    # and the same events on a fresh tracker give the same answers (learn=False: the predictor never changes)
    fresh = ColocationTracker(prof, tr.predictor, ex, learn=False)
    _play(fresh, events[:half])
    assert _play(fresh, events[half:]) == first


def test_a_failed_finish_is_undone_by_the_set_alone():
    class Flaky(RLS):
        fail = False

        def update(self, X, y, **kw):
            if Flaky.fail:
                raise RuntimeError("update failed")
            return super().update(X, y, **kw)

    prof = zoo_profiles("l4")
    tr = ColocationTracker(prof, Flaky())
    tr.start("x", "resnet50", 8, 0.0)
    tr.start("y", "vgg19", 4, 1.0)
    before = (tr.running, tr.remaining_ms(2.0), tr.what_if([("c", "vgg19", 8)], 2.0))
    Flaky.fail = True
    with pytest.raises(RuntimeError, match="update failed"):
        tr.finish("x", 2.0)
    Flaky.fail = False
    assert (tr.running, tr.remaining_ms(2.0), tr.what_if([("c", "vgg19", 8)], 2.0)) == before
