"""Tests of interfpred.model.interference: prequential evaluation, InterferenceModel, model files, fit/evaluate/predict CLI."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_prequential

from interfpred import RLS, InterferenceModel, OfflineLinear, OnlineSGD, load_model
from interfpred.cli import main
from interfpred.errors import InterfpredError
from interfpred.evaluation import prequential
from interfpred.model.prediction_tables import write_predictions
from interfpred.sim.workload import mix_scenario, write_scenario


@pytest.fixture(scope="module")
def scenario():
    return mix_scenario(["resnet50", "vgg19", "yolov8n"], rho=1.0, executions=600, seed=3)


@pytest.fixture(scope="module")
def default_fit(scenario):
    """The model ``InterferenceModel().fit`` chooses on the scenario's trace (read, never changed)."""
    return InterferenceModel().fit(scenario.traces["trace"], scenario.profiles)


@pytest.fixture(scope="module")
def files(tmp_path_factory, scenario):
    out = tmp_path_factory.mktemp("sim") / "data"
    write_scenario(scenario, out)
    return out


# ---------------------------------------------------------------- prequential
@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**31 - 1), st.booleans(), st.sampled_from(["rls", "sgd"]))
def test_prequential_matches_naive(n, seed, timed, kind):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = 1.0 + X @ np.array([0.5, -0.2, 0.3]) + 0.01 * rng.standard_normal(n)
    start = np.sort(rng.integers(0, 20, n).astype(float))          # ties on purpose
    end = start + rng.integers(1, 10, n)
    make = (lambda: RLS(forgetting=0.98)) if kind == "rls" else (lambda: OnlineSGD(learning_rate=0.3))
    kw = {"start_ms": start, "end_ms": end} if timed else {}
    got = prequential(make(), X, y, **kw)
    want = naive_prequential(make(), X, y, *((start, end) if timed else ()))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_prequential_offline_only_predicts():
    X = np.random.default_rng(0).random((20, 2))
    y = X.sum(axis=1)
    p = OfflineLinear().fit(X, y)
    before = p.to_state()
    np.testing.assert_allclose(prequential(p, X, 2 * y), p.predict(X))
    assert p.to_state() == before


def test_prequential_never_uses_the_row_it_predicts():
    X = np.ones((3, 1))
    y = np.array([5.0, 5.0, 5.0])
    # All three overlap: nothing has finished at any launch, so every prediction is the prior.
    out = prequential(RLS(), X, y, start_ms=np.array([0.0, 1.0, 2.0]), end_ms=np.array([10.0, 11.0, 12.0]))
    np.testing.assert_array_equal(out, [1.0, 1.0, 1.0])


def test_prequential_rejects_bad_shapes():
    with pytest.raises(InterfpredError, match="both start_ms and end_ms"):
        prequential(RLS(), np.ones((2, 1)), np.ones(2), start_ms=np.zeros(2))
    with pytest.raises(InterfpredError, match="expected"):
        prequential(RLS(), np.ones((2, 1)), np.ones(3))


# ---------------------------------------------------------------- InterferenceModel
def test_fit_predict_and_round_trip(tmp_path, scenario):
    tr, prof = scenario.traces["trace"], scenario.profiles
    for spec in ({"aggregation": "time_weighted", "feature_map": "rich", "target": "rate"},
                 {"aggregation": "ewma", "alpha": 0.3, "feature_map": "gpulets"}):
        model = InterferenceModel(spec, {"kind": "rls", "params": {"forgetting": 0.99}}).fit(tr, prof)
        path = tmp_path / "m.json"
        model.save(path)
        again = load_model(path)
        assert again.extractor == model.extractor
        assert again.predictor.get_params() == model.predictor.get_params()
        np.testing.assert_array_equal(again.predict_latency(tr, prof), model.predict_latency(tr, prof))
        state = json.loads(path.read_text())
        assert state["kind"] == "interfpred.model.interference" and state["schema_version"] == 1


def test_predictions_are_latency_for_either_target(scenario):
    tr, prof = scenario.traces["trace"], scenario.profiles
    for target in ("slowdown", "rate"):     # EntityRLS: what fit chooses on such traces (without the choosing)
        m = InterferenceModel({"feature_map": "rich", "target": target}, "entity_rls").fit(tr, prof)
        lat = m.predict_latency(tr, prof)
        rel = np.abs(lat - tr.latency_ms) / tr.latency_ms
        assert np.median(rel) < 0.1, target      # on the training data itself: a loose sanity bound
        np.testing.assert_allclose(m.predict_slowdown(tr, prof) * m.features(tr, prof).solo_ms, lat)


def test_latency_from_features_is_predict_latency_on_the_same_rows(scenario):
    tr, prof = scenario.traces["trace"], scenario.profiles
    m = InterferenceModel({"feature_map": "rich", "target": "rate"}, "rls").fit(tr, prof)
    fm = m.features(tr, prof)
    np.testing.assert_allclose(m.latency_from_features(fm), m.predict_latency(tr, prof), rtol=1e-12)
    with pytest.raises(InterfpredError, match="gives no quantiles"):
        m.latency_from_features(fm, quantile=0.9)      # an RLS has no quantiles: the bound path is taken


def test_evaluate_online_leaves_model_unchanged(scenario):
    tr, prof = scenario.traces["trace"], scenario.profiles
    half = tr.take(np.arange(300))
    m = InterferenceModel().fit(half, prof)
    before = m.predictor.to_state()
    ev = m.evaluate(tr, prof, online=True)
    assert m.predictor.to_state() == before
    assert ev.online and ev.summary.n == len(tr)
    offline = m.evaluate(tr, prof)
    assert offline.summary.mape != ev.summary.mape


def test_update_learns_and_offline_is_frozen(scenario):
    tr, prof = scenario.traces["trace"], scenario.profiles
    a, b = tr.take(np.arange(200)), tr.take(np.arange(200, 600))
    m = InterferenceModel(None, "rls").fit(a, prof)
    n0 = m.predictor.n_seen_
    m.update(b, prof)
    assert m.predictor.n_seen_ + m.n_pending == n0 + len(b)   # the last rows wait for their context
    m.flush()
    assert m.predictor.n_seen_ == n0 + len(b)
    off = InterferenceModel(None, "offline_linear").fit(a, prof)
    coef = off.predictor.coef_.copy()
    from interfpred.errors import FrozenPredictorError

    with pytest.raises(FrozenPredictorError, match="frozen"):
        off.update(b, prof)
    np.testing.assert_array_equal(off.predictor.coef_, coef)


def test_model_file_errors(tmp_path, default_fit):
    bare = tmp_path / "rls.json"
    RLS().fit(np.ones((3, 2)), np.ones(3)).save(bare)
    with pytest.raises(InterfpredError, match="not an interference model"):
        load_model(bare)
    good = tmp_path / "m.json"
    default_fit.save(good)
    state = json.loads(good.read_text())
    for mutate, match in [(lambda s: s.update(schema_version=99), "schema_version 99"),
                          (lambda s: s["extractor"].update(feature_map="nope"), "extractor"),
                          (lambda s: s["extractor"].update(feature_map="gpulets"), "takes 16 features"),
                          (lambda s: s.update(predictor={"kind": "zzz", "schema_version": 1, "params": {}}),
                           "unknown predictor"),
                          (lambda s: s.update(schema_version=True), "schema_version: Input should be a valid integer"),
                          (lambda s: s["predictor"].update(kind=["rls"]), "predictor.kind: Input should be a valid str"),
                          (lambda s: s.update(extra_key=1), "extra_key: unknown key"),
                          (lambda s: s["predictor"].update(n_features_in="16"), "predictor.n_features_in"),
                          (lambda s: s.pop("feature_names"), "feature_names: Field required")]:
        bad = json.loads(json.dumps(state))
        mutate(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(InterfpredError, match=match):
            load_model(path)
    (tmp_path / "broken.json").write_text("{\n  nope")
    with pytest.raises(InterfpredError, match="broken.json line 2"):
        load_model(tmp_path / "broken.json")


def test_constructor_errors():
    with pytest.raises(InterfpredError, match="unknown predictor kind"):
        InterferenceModel(None, "nope")
    with pytest.raises(InterfpredError, match="unknown parameter"):
        InterferenceModel(None, {"kind": "rls", "params": {"nope": 1}})
    with pytest.raises(InterfpredError, match="extractor must be"):
        InterferenceModel(3)
    with pytest.raises(InterfpredError, match="predictor 'gpulets' takes 4 features but the extractor's map 'rich'"):
        InterferenceModel({"feature_map": "rich"}, "gpulets")
    assert InterferenceModel({"feature_map": "gpulets"}, "gpulets").predictor.kind == "gpulets"


def test_write_predictions(tmp_path, scenario, default_fit):
    tr, prof = scenario.traces["trace"], scenario.profiles
    m = default_fit
    path = tmp_path / "p.csv"
    assert write_predictions(m, tr, prof, path) == len(tr)
    rows = list(csv.DictReader(path.open()))
    assert [int(r["id"]) for r in rows] == tr.id.tolist()
    np.testing.assert_array_equal([float(r["predicted_latency_ms"]) for r in rows], m.predict_latency(tr, prof))
    np.testing.assert_array_equal([float(r["observed_latency_ms"]) for r in rows], tr.latency_ms)


# ---------------------------------------------------------------- CLI
def test_cli_fit_evaluate_predict_round_trip(tmp_path, files, capsys):
    prof, trace = str(files / "profiles.csv"), str(files / "trace.csv")
    model = tmp_path / "model.json"
    rc = main(["fit", "--profiles", prof, "--trace", trace, "--predictor", "rls", "--param", "forgetting=0.99",
               "--aggregation", "time_weighted", "--feature-map", "rich", "--target", "rate", "--combine", "sum",
               "--out", str(model)])
    assert rc == 0
    m = load_model(model)
    assert m.extractor.get_spec()["target"] == "rate" and m.predictor.forgetting == 0.99
    assert "within_10" in capsys.readouterr().out
    assert main(["evaluate", "--model-file", str(model), "--profiles", prof, "--trace", trace]) == 0
    off = capsys.readouterr().out
    assert main(["evaluate", "--model-file", str(model), "--profiles", prof, "--trace", trace, "--online"]) == 0
    on = capsys.readouterr().out
    assert "offline evaluation" in off and "online (prequential)" in on
    pred = tmp_path / "pred.csv"
    assert main(["predict", "--model-file", str(model), "--profiles", prof, "--trace", trace, "--out", str(pred)]) == 0
    from interfpred import ProfileTable, Trace
    rows = list(csv.DictReader(pred.open()))
    expect = m.predict_latency(Trace.from_csv(trace), ProfileTable.from_csv(prof))
    np.testing.assert_array_equal([float(r["predicted_latency_ms"]) for r in rows], expect)


@pytest.mark.parametrize("extra, match", [
    (["--predictor", "nope"], "unknown predictor kind 'nope'"),
    (["--param", "nope=1"], "unknown parameter(s) nope"),
    (["--param", "forgetting"], "must look like name=value"),
    (["--param", "forgetting=2"], "forgetting must be in"),
    (["--aggregation", "static", "--alpha", "0.5"], "only meaningful for aggregation 'ewma'"),
])
def test_cli_fit_bad_input_is_one_line_exit_2(tmp_path, files, capsys, extra, match):
    rc = main(["fit", "--profiles", str(files / "profiles.csv"), "--trace", str(files / "trace.csv"),
               "--out", str(tmp_path / "m.json"), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


def test_cli_evaluate_wrong_model_file(tmp_path, files, capsys):
    bare = tmp_path / "rls.json"
    RLS().save(bare)
    rc = main(["evaluate", "--model-file", str(bare), "--profiles", str(files / "profiles.csv"),
               "--trace", str(files / "trace.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "not an interference model" in err and len(err.strip().splitlines()) == 1


def test_cli_fit_unwritable_out(tmp_path, files, capsys):
    rc = main(["fit", "--profiles", str(files / "profiles.csv"), "--trace", str(files / "trace.csv"),
               "--out", str(tmp_path / "no" / "such" / "m.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("interfpred: error:") and len(err.strip().splitlines()) == 1


def test_example_script_runs_on_given_csvs(files):
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "examples" / "fit_from_csv.py"), str(files / "profiles.csv"),
                           str(files / "trace.csv")], capture_output=True, text=True, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert "online (predict, then learn)" in proc.stdout and "saved" in proc.stdout


def test_model_file_size_depth_and_fifo_limits(tmp_path):
    import os

    from interfpred.constants import MODEL_FILE_MAX_BYTES

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:  # sparse: no disk used, but larger than the cap
        fh.truncate(MODEL_FILE_MAX_BYTES + 1)
    with pytest.raises(InterfpredError, match="huge.json: .* bytes is larger than"):
        load_model(huge)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InterfpredError, match="deep.json: JSON nested"):
        load_model(deep)
    nested = tmp_path / "nested.json"
    nested.write_text('{"a": ' * 50 + "1" + "}" * 50)
    with pytest.raises(InterfpredError, match="nested 50 levels deep"):
        load_model(nested)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(InterfpredError, match="not a regular file"):
        load_model(fifo)  # would block for ever if opened


def test_published_json_schema_is_current():
    import pathlib

    from interfpred._core.schema import model_file_json_schema

    path = pathlib.Path(__file__).parent.parent / "docs" / "model-file.schema.json"
    assert json.loads(path.read_text()) == model_file_json_schema(), (
        "regenerate docs/model-file.schema.json with: python -m interfpred._core.schema > docs/model-file.schema.json")
