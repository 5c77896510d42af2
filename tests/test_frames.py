"""pandas DataFrames are accepted wherever a Trace, ProfileTable or Measurements is, with the same answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from interfpred import RLS, ColocationTracker, Fleet, InterferenceModel, InterfpredError, Static, TimeWeighted
from interfpred.data.columnar import profiles_to_frame, trace_to_frame
from interfpred.data.datasets import gavel_v100
from interfpred.data.frames import as_measurements, as_profiles, as_trace, is_data_frame
from interfpred.features import transform_many
from interfpred.features.chunked import transform_chunked
from interfpred.features.timeline import build_timeline
from interfpred.sim.workload import mix_scenario
from interfpred.sim.zoo import zoo_profiles


@pytest.fixture(scope="module")
def data():
    scen = mix_scenario(["vgg19", "resnet50"], rho=0.7, executions=300, seed=2, n_devices=1)
    return scen.traces["trace"], scen.profiles


def test_is_data_frame_without_importing_pandas_for_others():
    assert is_data_frame(pd.DataFrame({"a": [1]}))
    assert not is_data_frame({"a": [1]})
    assert not is_data_frame(pd.Series([1]))


def test_model_fit_predict_evaluate_on_frames_equal_the_objects(data):
    trace, profiles = data
    tdf, pdf = trace_to_frame(trace), profiles_to_frame(profiles)
    a = InterferenceModel().fit(trace, profiles)
    b = InterferenceModel().fit(tdf, pdf)
    np.testing.assert_array_equal(a.predict_latency(trace, profiles), b.predict_latency(tdf, pdf))
    np.testing.assert_array_equal(a.predict_slowdown(tdf, pdf), a.predict_slowdown(trace, profiles))
    ev = b.evaluate(tdf, pdf, online=True)
    assert ev.summary == a.evaluate(trace, profiles, online=True).summary
    frame = ev.to_frame()
    assert frame.index.tolist()[0] == "model" and set(ev.baselines) <= set(frame.index)
    # percent, as a person reads it, under names that say so; mse and n as they are
    assert frame.loc["model", "mape_%"] == pytest.approx(100 * ev.summary.mape)
    assert frame.loc["model", "within_10_%"] == pytest.approx(100 * ev.summary.within_10)
    assert frame.loc["model", "mse"] == pytest.approx(ev.summary.mse) and "mape" not in frame.columns
    rows = ev.predictions_frame()
    assert len(rows) == len(trace)
    np.testing.assert_array_equal(rows["predicted_latency_ms"], ev.predicted_latency_ms)


def test_measurements_frame_fits_like_measurements():
    m = gavel_v100()
    a = InterferenceModel(predictor="entity_rls").fit(measurements=m)
    b = InterferenceModel(predictor="entity_rls").fit(measurements=m.to_frame())
    np.testing.assert_array_equal(a.predict_latency(measurements=m), b.predict_latency(measurements=m.to_frame()))


def test_features_and_timeline_take_frames(data):
    trace, profiles = data
    tdf, pdf = trace_to_frame(trace), profiles_to_frame(profiles)
    exs = [Static(), TimeWeighted()]
    for got, want in zip(transform_many(tdf, pdf, exs), transform_many(trace, profiles, exs), strict=True):
        np.testing.assert_array_equal(got.X, want.X)
    for got, want in zip(transform_chunked(tdf, pdf, exs), transform_chunked(trace, profiles, exs), strict=True):
        np.testing.assert_array_equal(got.X, want.X)
    assert build_timeline(tdf).n_segments == build_timeline(trace).n_segments


def test_tracker_and_fleet_take_a_profile_frame():
    pdf = profiles_to_frame(zoo_profiles("l4"))
    tr = ColocationTracker(pdf, RLS())
    assert tr.profiles == zoo_profiles("l4")
    fleet = Fleet.from_profiles(pdf, RLS, devices=["a", "b"])
    assert fleet.devices == ("a", "b")


def test_bad_frames_and_other_types_say_what_is_accepted(data):
    with pytest.raises(InterfpredError, match=r"profiles \(DataFrame\): missing column\(s\) solo_ms"):
        as_profiles(pd.DataFrame({"gpu": ["l4"], "model": ["a"], "batch_size": [1]}))
    with pytest.raises(InterfpredError, match="trace: expected a Trace or a pandas DataFrame with columns id,device"):
        as_trace({"id": [1]})
    with pytest.raises(InterfpredError, match="expected Measurements or a pandas DataFrame"):
        as_measurements("m.csv")
    with pytest.raises(InterfpredError, match="expected a ProfileTable or a pandas DataFrame"):
        InterferenceModel().fit(trace_to_frame(data[0]), [1, 2])
    with pytest.raises(InterfpredError, match=r"trace \(DataFrame\): missing column\(s\) device"):
        InterferenceModel().fit(pd.DataFrame({"id": [1]}), data[1])
