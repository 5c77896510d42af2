"""The MPS share in profiles (key, interpolation, CSV), traces and features; missing counters; the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred import (
    EWMA,
    InputError,
    InterfpredError,
    ProfileTable,
    Static,
    TimelineState,
    TimeWeighted,
    Trace,
    make_extractor,
)
from interfpred.data.entities import Entities
from interfpred.predictors import GlobalMean, NoInterference, PairMean


def _table():
    return ProfileTable.from_columns(gpu=["g"] * 5, model=["m"] * 4 + ["n"], batch_size=[1, 4, 1, 4, 2],
                                     share=[50, 50, 100, 100, 100], solo_ms=[4.0, 10.0, 2.0, 6.0, 3.0],
                                     sm=[0.2, 0.5, 0.4, 0.9, 0.3], l2=[0.1, 0.2, 0.2, 0.4, 0.1],
                                     dram=[0.1, 0.3, 0.2, 0.5, 0.2])


def test_lookup_interpolates_in_batch_then_share():
    t = _table()
    assert t.lookup("m", 1).solo_ms == pytest.approx(2.0)            # default share 100
    assert t.lookup("m", 1, share=50).solo_ms == pytest.approx(4.0)
    p = t.lookup("m", 2, share=75)
    # batch 2 at share 50: 4 + (10-4)/3 = 6; at share 100: 2 + 4/3; halfway between them
    assert p.solo_ms == pytest.approx(0.5 * 6.0 + 0.5 * (2.0 + 4.0 / 3.0))
    assert p.share == 75
    v = t.lookup_arrays(["m", "m", "n"], [2, 4, 2], shares=[75, 50, 100])
    np.testing.assert_allclose(v["solo_ms"], [p.solo_ms, 10.0, 3.0])
    with pytest.raises(InterfpredError, match=r"share 40 of model 'm' on gpu 'g' is outside the profiled shares 50, "
                                              r"100; profile it, or pass extrapolate=True"):
        t.lookup("m", 2, share=40)
    assert t.lookup("m", 2, share=40, extrapolate=True).solo_ms == pytest.approx(6.0)   # nearest share
    with pytest.raises(InterfpredError, match="share 50 of model 'n'"):
        t.lookup("n", 2, share=50)
    assert t.shares("m") == (50.0, 100.0) and t.batch_sizes("m") == (1, 4)


def test_share_column_round_trips_and_old_files_still_read(tmp_path):
    t = _table()
    t.to_csv(tmp_path / "p.csv")
    assert ProfileTable.from_csv(tmp_path / "p.csv") == t
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "gpu,model,batch_size,solo_ms,sm,l2,dram,share"
    old = ProfileTable.from_columns(gpu=["g"], model=["m"], batch_size=[1], solo_ms=[1.0], sm=[0.1], l2=[0.1],
                                    dram=[0.1])
    assert "share" not in old.to_csv_text().splitlines()[0]                 # unchanged output for share-100 tables
    (tmp_path / "bad.csv").write_text("gpu,model,batch_size,solo_ms,sm,l2,dram,share\ng,m,1,1,0.1,0.1,0.1,0\n")
    with pytest.raises(InputError, match=r"bad.csv line 2: share 0.0 must be an MPS active thread percentage"):
        ProfileTable.from_csv(tmp_path / "bad.csv")
    (tmp_path / "dup.csv").write_text("gpu,model,batch_size,solo_ms,share\ng,m,1,1,50\ng,m,1,2,50\ng,m,1,3,100\n")
    with pytest.raises(InputError, match=r"line 3: duplicate profile for .*share=50.* disagrees with line 2"):
        ProfileTable.from_csv(tmp_path / "dup.csv")


def test_missing_counters_stay_nan_through_interpolation(tmp_path):
    (tmp_path / "p.csv").write_text("gpu,model,batch_size,solo_ms,sm,l2,dram\ng,m,1,1,,0.2,0.1\ng,m,4,4,0.4,0.4,0.2\n")
    t = ProfileTable.from_csv(tmp_path / "p.csv")
    assert t.lookup("m", 1).sm is None and t.lookup("m", 4).sm == pytest.approx(0.4)
    assert np.isnan(t.lookup_arrays(["m"], [2])["sm"][0])              # half of a missing value is missing
    assert t.lookup_arrays(["m"], [2])["l2"][0] == pytest.approx(0.2 + 0.2 / 3)
    assert "g,m,1,1.0,,0.2,0.1" in t.to_csv_text()                     # written back as empty, never 0


def test_trace_share_selects_profiles_and_feeds_share_features(tmp_path):
    tr = Trace(id=[1, 2], device=["g"] * 2, model=["m", "m"], batch_size=[1, 1], share=[50, 100],
               start_ms=[0.0, 1.0], end_ms=[8.0, 3.0])
    tr.to_csv(tmp_path / "t.csv")
    again = Trace.from_csv(tmp_path / "t.csv")
    assert again == tr and again.share.tolist() == [50.0, 100.0]
    fm = TimeWeighted(feature_map="shares").transform(tr, _table())
    assert fm.names == ("share_me", "share_other", "n_others")
    # row 0 (share 50) ran 8 ms, beside row 1 (share 100) for 2 of them
    np.testing.assert_allclose(fm.X[0], [0.5, 0.25, 0.25])
    np.testing.assert_allclose(fm.X[1], [1.0, 0.5, 1.0])
    np.testing.assert_allclose(fm.solo_ms, [4.0, 2.0])              # the share-50 profile for row 0
    both = EWMA(alpha=0.5, feature_map="gpulets", shares=True).transform(tr, _table())
    assert both.names[-2:] == ("share_me", "share_other") and both.X.shape == (2, 6)
    np.testing.assert_allclose(both.X[:, :4], EWMA(alpha=0.5, feature_map="gpulets").transform(tr, _table()).X)
    with pytest.raises(InterfpredError, match="share 0.0 is not an MPS active thread percentage"):
        Trace(id=[1], device=["g"], model=["m"], batch_size=[1], share=[0], start_ms=[0.0], end_ms=[1.0])


def test_share_extractors_round_trip_and_are_refused_live():
    ex = Static(feature_map="rich", shares=True)
    assert make_extractor(ex.get_spec()) == ex and ex.n_features == 18
    with pytest.raises(InterfpredError, match="the 'shares' map already holds them"):
        TimeWeighted(feature_map="shares", shares=True)
    with pytest.raises(InterfpredError, match="uses MPS share features"):
        TimelineState(TimeWeighted(feature_map="shares"), _table())
    with pytest.raises(InterfpredError, match="takes counter demands only"):
        ex.map_running_set([[0.1, 0.1, 0.1]])


def test_live_timeline_refuses_a_missing_counter():
    t = ProfileTable.from_columns(gpu=["g"], model=["m"], batch_size=[1], solo_ms=[1.0], l2=[0.2], dram=[0.1])
    with pytest.raises(InterfpredError, match="needs the sm counter"):
        TimelineState(TimeWeighted(), t).start(1, "m", 1, 0.0)
    st = TimelineState(TimeWeighted(feature_map="gpulets"), t)
    st.start(1, "m", 1, 0.0)
    np.testing.assert_allclose(st.finish(1, 2.0).x, [0.2, 0.1, 0.0, 0.0])


def test_baselines_compute_what_they_say():
    rng = np.random.default_rng(0)
    X = rng.random((9, 2))
    y = np.array([1.0, 2.0, 3.0, 1.5, 2.5, 3.5, 4.0, 1.0, 1.0])
    own = ["a", "a", "b", "a", "b", "c", "c", "a", "a"]
    co = [{"b": 1.0}, {"b": 1.0}, {"a": 1.0}, {"c": 1.0}, {"a": 1.0}, {}, {}, {"b": 1.0, "c": 1.0}, {"c": 1.0}]
    ent = Entities.from_lists(own, co)
    np.testing.assert_allclose(NoInterference().fit(X, y).predict(X), 1.0)
    assert GlobalMean().fit(X, y).predict(X[0]) == pytest.approx(y.mean())
    pm = PairMean().fit(X, y, entities=ent)
    query = Entities.from_lists(["a", "a", "b", "z"], [{"b": 1.0}, {"z": 1.0}, {"a": 1.0, "c": 1.0}, {"a": 1.0}])
    np.testing.assert_allclose(pm.predict(X[:4], entities=query),
                               [1.5, np.mean([1.0, 2.0, 1.5, 1.0, 1.0]), np.mean([3.0, 2.5]), y.mean()])
    assert pm.n_pairs_ == 5 and pm.n_models_ == 3      # (a,b) (b,a) (a,c) (c,) (a,bc)
    # weights do not make two entries of one co-runner a different key from one
    heavy = Entities.from_lists(["a"], [{"b": 2.0}])
    assert pm.predict(X[0], entities=heavy) == pytest.approx(1.5)
    assert PairMean().fit(X, y).predict(X[0], entities=query.take([0])) == pytest.approx(y.mean())


def test_row_weights_for_mixed_fitting(tmp_path):
    from interfpred import InterferenceModel, Measurements
    from interfpred.predictors import OfflineLinear

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([1.0, 2.0, 3.0, 10.0])
    w = np.array([1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(OfflineLinear().fit(X, y, sample_weight=w).predict([[4.0]]), [5.0])
    assert GlobalMean().fit(X, y, sample_weight=[1, 1, 2, 0]).predict(X[0]) == pytest.approx(9.0 / 4)
    with pytest.raises(InterfpredError, match="not all zero"):
        GlobalMean().fit(X, y, sample_weight=[0, 0, 0, 0])
    m = Measurements.from_columns(run=[1, 1, 2, 2], gpu=["g"] * 4, model=["m", "n", "m", "n"], batch_size=[1] * 4,
                                  solo_ms=[1.0] * 4, observed_ms=[1.2, 1.4, 1.6, 2.0])
    model = InterferenceModel({"feature_map": "shares", "target": "slowdown"}, "offline_linear").fit(
        measurements=m, weights=[1, 1, 0, 0])
    assert model.baselines["global_mean"].predict(np.zeros(3)) == pytest.approx(1.3)   # mean slowdown of run 1
    with pytest.raises(InterfpredError, match="predictor 'rls' does not take row weights; these do: .*offline_linear"):
        InterferenceModel({"feature_map": "shares"}, "rls").fit(measurements=m, weights=[1, 1, 1, 1])


def test_tracker_and_live_timeline_carry_the_share():
    from interfpred import RLS, ColocationTracker

    t = _table()
    tr = ColocationTracker(t, RLS(), TimeWeighted())
    tr.start("x", "m", 1, 0.0, share=50)
    tr.start("y", "m", 1, 0.0)
    ends = tr.predict_finish(0.0)
    assert ends["x"] == pytest.approx(4.0) and ends["y"] == pytest.approx(2.0)   # fresh RLS: solo at each share
    got = tr.what_if([("c", "m", 4, 50), ("d", "m", 4)], 0.0)
    assert got["c"] == pytest.approx(10.0) and got["d"] == pytest.approx(6.0)
    with pytest.raises(InterfpredError, match=r"or \(id, model, batch_size, share\)"):
        tr.what_if([("c", "m", 4, 50, 1)], 0.0)
    with pytest.raises(InterfpredError, match="share 40 of model 'm'"):
        tr.start("z", "m", 1, 0.0, share=40)
    st = TimelineState(Static(), t)
    st.start(1, "m", 1, 0.0, share=50)
    assert st.finish(1, 8.0).y == pytest.approx(0.5)                          # the share-50 solo 4 ms over 8 ms
