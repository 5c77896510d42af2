"""Measurements: validation with file:line errors, CSV/Parquet/DataFrame round trips, exact run
features against a brute-force timeline, entities, and the shipped Gavel conversion."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import EWMA, InputError, InterfpredError, Measurements, ProfileTable, Static, TimeWeighted, Trace
from interfpred.data.datasets import gavel_v100
from interfpred.data.datasets.gavel import main as gavel_main
from interfpred.data.datasets.gavel import measurements_from_gavel
from interfpred.features.measurement_features import concat_features, measurement_features

HEADER = "run,gpu,model,batch_size,share,solo_ms,observed_ms\n"


def _write(tmp_path, body, header=HEADER):
    p = tmp_path / "m.csv"
    p.write_text(header + body)
    return p


@pytest.mark.parametrize("body, needle", [
    ("1,g,a,1,100,2.0,3.0\n1,g,b,1,100,2.0,-1\n", "line 3: observed_ms -1.0 must be a positive"),
    ("1,g,a,1,100,2.0,3.0\n1,g,a,1,100,2.0,3.5\n", ("line 3: duplicate member: run '1' already has model 'a' "
                                                    "at batch_size 1 and share 100 at line 2")),
    ("1,g,a,1,100,2.0,3.0\n1,h,b,1,100,2.0,3.0\n", "line 3: run '1' spans two GPUs: 'h' here, 'g' at line 2"),
    ("1,g,a,1,0,2.0,3.0\n", "line 2: share 0.0 must be an MPS active thread percentage in (0, 100]"),
    ("1,g,a,1,101,2.0,3.0\n", "line 2: share 101.0"),
    ("1,g,a,x,100,2.0,3.0\n", "line 2: batch_size 'x' is not a number"),
    ("1,g,a,2.5,100,2.0,3.0\n", "line 2: batch_size 2.5 must be a positive integer"),
    ("1,g,,1,100,2.0,3.0\n", "line 2: model is empty"),
    ("1,g,a,1,100,2.0\n", "line 2: has 6 fields, the header has 7"),
])
def test_bad_rows_name_file_and_line(tmp_path, body, needle):
    p = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        Measurements.from_csv(p)
    assert str(err.value).startswith(str(p))
    assert needle in str(err.value)


def test_missing_columns_and_member_labels(tmp_path):
    with pytest.raises(InputError, match="missing column.*observed_ms"):
        Measurements.from_csv(_write(tmp_path, "1,g,a,1,2.0\n", "run,gpu,model,batch_size,solo_ms\n"))
    # two copies of one model in a run are fine with distinct member labels, refused with equal ones
    ok = Measurements.from_csv(_write(tmp_path, "1,g,a,1,x,2.0,3.0\n1,g,a,1,y,2.0,3.0\n",
                                      "run,gpu,model,batch_size,member,solo_ms,observed_ms\n"))
    assert ok.n_runs == 1 and ok.co_runners(0) == [1]
    with pytest.raises(InputError, match="line 3: duplicate member: run '1' already has member 'x'"):
        Measurements.from_csv(_write(tmp_path, "1,g,a,1,x,2.0,3.0\n1,g,b,1,x,2.0,3.0\n",
                                     "run,gpu,model,batch_size,member,solo_ms,observed_ms\n"))


def test_defaults_throughput_form_and_solo_runs(tmp_path):
    m = Measurements.from_csv(_write(tmp_path, "r,g,a,4,10,5\nr,g,b,4,20,20\ns,g,a,4,10,10\n",
                                     "run,gpu,model,batch_size,solo_throughput,observed_throughput\n"))
    np.testing.assert_allclose(m.solo_ms, [100.0, 50.0, 100.0])
    np.testing.assert_allclose(m.slowdown, [2.0, 1.0, 1.0])
    np.testing.assert_allclose(m.share, 100.0)
    assert m.n_runs == 2 and m.co_runners(2) == []


def test_csv_parquet_and_frame_round_trips(tmp_path):
    pytest.importorskip("pyarrow")
    m = Measurements.from_columns(run=["r1", "r1", "r2"], gpu=["g"] * 3, model=["a", "b", "a"], batch_size=[1, 2, 1],
                                  share=[50, 50, 100], solo_ms=[1.0, 2.0, 1.0], observed_ms=[1.5, 2.25, 1.0],
                                  extra={"note": ["x", "", "z"]})
    for name in ("m.csv", "m.parquet"):
        m.write(tmp_path / name)
        assert Measurements.read(tmp_path / name) == m
    assert Measurements.from_frame(m.to_frame()) == m
    bad = m.to_frame()
    bad.loc[1, "observed_ms"] = -2.0
    bad.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad.parquet line 2: observed_ms -2.0"):
        Measurements.read(tmp_path / "bad.parquet")


def _profiles():
    return ProfileTable.from_columns(gpu=["g"] * 4, model=["a", "b", "c", "a"], batch_size=[1, 1, 1, 1],
                                     share=[100, 100, 100, 50], solo_ms=[2.0, 4.0, 3.0, 3.0],
                                     sm=[0.5, 0.25, 0.4, 0.3], l2=[0.5, 0.5, 0.2, 0.3], dram=[0.25, 0.5, 0.7, 0.2])


@pytest.mark.parametrize("extractor", [Static(), EWMA(alpha=0.3, combine="max"), TimeWeighted(feature_map="rich"),
                                       TimeWeighted(feature_map="gpulets", shares=True), EWMA(alpha=0.7, feature_map="shares")])
def test_run_features_equal_a_brute_force_timeline(extractor):
    """Members looped back to back for a long time: a middle execution's timeline features equal the closed form."""
    m = Measurements.from_columns(run=[1, 1, 1], gpu=["g"] * 3, model=["a", "b", "c"], batch_size=[1, 1, 1],
                                  share=[50, 100, 100], solo_ms=[3.0, 4.0, 3.0], observed_ms=[3.7, 5.3, 4.1])
    fm = measurement_features(extractor, m, _profiles())
    ids, gpu, model, start, end, share, pick = [], [], [], [], [], [], {}
    for k, (name, period, offset) in enumerate(zip(m.model, m.observed_ms, [0.0, 0.9, 1.7])):
        t = -offset
        while t < 200.0:
            if t > 90.0 and k not in pick:
                pick[k] = len(ids)
            ids.append(len(ids))
            gpu.append("g")
            model.append(name)
            start.append(t)
            end.append(t + period)
            share.append(m.share[k])
            t += period
    tr = Trace(id=ids, device=gpu, model=model, batch_size=[1] * len(ids), start_ms=start, end_ms=end, share=share)
    brute = extractor.transform(tr, _profiles())
    for k, row in pick.items():
        np.testing.assert_allclose(fm.X[k], brute.X[row], rtol=1e-12, atol=1e-12)
    assert extractor.target == "rate"                  # the default target: solo / observed
    np.testing.assert_allclose(fm.y, 1.0 / m.slowdown)
    assert fm.entities.row(0) == ("a", {"b": 1.0, "c": 1.0})


def test_missing_counters_are_refused_by_name_never_zero():
    prof = ProfileTable.from_columns(gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1], solo_ms=[1.0, 1.0],
                                     l2=[0.5, 0.2], dram=[0.1, 0.3])
    m = Measurements.from_columns(run=[1, 1], gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1],
                                  solo_ms=[1.0, 1.0], observed_ms=[1.2, 1.1])
    with pytest.raises(InterfpredError, match=r"map 'rich' needs the sm counter.*without sm: gpulets, shares"):
        measurement_features(TimeWeighted(feature_map="rich"), m, prof)
    fm = measurement_features(TimeWeighted(feature_map="gpulets"), m, prof)
    np.testing.assert_allclose(fm.X[0], [0.5, 0.1, 0.2, 0.3])
    with pytest.raises(InterfpredError, match="no profiles were given"):
        measurement_features(TimeWeighted(), m)
    assert np.isnan(prof.column("sm")).all()


def test_concat_mixes_traces_and_measurements():
    m = Measurements.from_columns(run=[1, 1], gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1],
                                  solo_ms=[2.0, 4.0], observed_ms=[3.0, 5.0])
    tr = Trace(id=[1, 2], device=["g"] * 2, model=["a", "b"], batch_size=[1, 1], start_ms=[0.0, 1.0], end_ms=[4.0, 6.0])
    ex = TimeWeighted()
    both = concat_features([ex.transform(tr, _profiles()), measurement_features(ex, m, _profiles())])
    assert both.X.shape == (4, 16) and both.entities is None
    np.testing.assert_allclose(both.y[2:], [2.0 / 3.0, 4.0 / 5.0])     # the rate solo / observed


def test_gavel_conversion_skips_missing_pairs_and_regenerates(tmp_path):
    raw = {"v100": {
        "('A (batch size 8)', 1)": {"null": 10.0, "('A (batch size 8)', 1)": [6.0, 6.0], "('B', 1)": [5.0, 4.0],
                                    "('C', 1)": [0.0, 0.0]},
        "('B', 1)": {"null": 8.0, "('A (batch size 8)', 1)": [4.0, 5.0], "('B', 1)": 0.0},
        "('C', 1)": {"null": 2.0, "('A (batch size 8)', 1)": [0.0, 0.0]},
        "('B', 2)": {"null": 16.0}}}
    m = measurements_from_gavel(raw)
    assert m.n_runs == 2 and "C" not in m.models
    np.testing.assert_allclose(m.slowdown, [10 / 6, 10 / 6, 2.0, 2.0])
    src = tmp_path / "g.json"
    src.write_text(json.dumps(raw))
    assert gavel_main([str(src), "--out", str(tmp_path / "g.csv")]) == 0
    again = Measurements.from_csv(tmp_path / "g.csv")
    np.testing.assert_allclose(again.slowdown, m.slowdown, rtol=1e-15)
    raw["v100"]["('B', 1)"]["('A (batch size 8)', 1)"] = [4.5, 5.0]
    with pytest.raises(InterfpredError, match="disagrees"):
        measurements_from_gavel(raw)


def test_shipped_gavel_dataset():
    m = gavel_v100()
    assert len(m) == 660 and m.n_runs == 330
    assert set(m.extra_columns) == {"job"}
    assert (m.observed_ms > 0).all() and np.isfinite(m.slowdown).all()
    assert 1.6 < float(np.median(m.slowdown)) < 1.75
    resnet = m.model == "ResNet-50"
    assert set(m.batch_size[resnet].tolist()) == {16, 32, 64, 128}
    fm = measurement_features(TimeWeighted(feature_map="shares"), m)
    assert fm.X.shape == (660, 3) and len(fm.entities) == 660


_NAME = st.text(alphabet="abcxyz-_.", min_size=1, max_size=6)
_ROW = st.tuples(st.integers(0, 4), _NAME, st.integers(1, 64), st.floats(1.0, 100.0),
                 st.floats(0.01, 1e4, allow_nan=False), st.floats(0.01, 1e4, allow_nan=False))


@settings(max_examples=40, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=12, unique_by=lambda r: (r[0], r[1], r[2], r[3])))
def test_csv_round_trip_property(tmp_path_factory, rows):
    m = Measurements.from_columns(run=[f"r{r[0]}" for r in rows], gpu=["g"] * len(rows), model=[r[1] for r in rows],
                                  batch_size=[r[2] for r in rows], share=[r[3] for r in rows],
                                  solo_ms=[r[4] for r in rows], observed_ms=[r[5] for r in rows])
    path = tmp_path_factory.mktemp("p") / "m.csv"
    m.to_csv(path)
    again = Measurements.from_csv(path)
    assert again == m and again.n_runs == len({r[0] for r in rows})
    np.testing.assert_array_equal(again.slowdown, m.slowdown)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["1", "g", "a", "", "-3", "x", "100", "2.5", "nan", "1e400", "0"]),
                         min_size=5, max_size=8), min_size=1, max_size=5))
def test_garbage_is_refused_with_a_location_never_a_crash(tmp_path_factory, cells):
    path = tmp_path_factory.mktemp("g") / "m.csv"
    path.write_text(HEADER + "".join(",".join(r) + "\n" for r in cells))
    try:
        Measurements.from_csv(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path} line ")
