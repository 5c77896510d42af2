"""EntityRLS inside InterferenceModel, prequential and the CLI (fit / evaluate / predict)."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred import EntityRLS, InterferenceModel, InterfpredError, load_model
from interfpred.cli import main
from interfpred.evaluation import prequential
from interfpred.sim.workload import mix_scenario, write_scenario


@pytest.fixture(scope="module")
def scenario():
    return mix_scenario(["resnet50", "vgg19", "yolov8n"], rho=1.0, executions=500, seed=5)


def test_prequential_with_entities_matches_a_plain_loop(scenario):
    tr = scenario.traces["trace"]
    model = InterferenceModel({"aggregation": "time_weighted", "feature_map": "rich"}, "entity_rls")
    fm = model.features(tr, scenario.profiles)
    assert fm.entities is not None and len(fm.entities) == len(tr)
    got = prequential(EntityRLS(), fm.X, fm.y, start_ms=tr.start_ms, end_ms=tr.end_ms, entities=fm.entities)
    p = EntityRLS()
    order = np.argsort(tr.end_ms, kind="stable")
    learned, out = 0, []
    for i in range(len(tr)):
        while learned < len(tr) and tr.end_ms[order[learned]] <= tr.start_ms[i]:
            k = order[learned]
            p.update(fm.X[k], float(fm.y[k]), entities=fm.entities.take([k]))
            learned += 1
        out.append(p.predict(fm.X[i], entities=fm.entities.take([i])))
    np.testing.assert_allclose(got, out, rtol=1e-12)


def test_model_fit_evaluate_save_load_with_entity_key(scenario, tmp_path):
    tr, prof = scenario.traces["trace"], scenario.profiles
    m = InterferenceModel({"aggregation": "ewma", "alpha": 0.5, "feature_map": "rich"},
                          {"kind": "entity_rls", "params": {"entity": "model_batch", "log_target": True}}).fit(tr, prof)
    names = m.predictor.entities_
    leaves = [s for s in names if "@" in s]
    assert leaves and {s.split("@")[0] for s in leaves} <= set(names)     # each batch size under its model
    ev = m.evaluate(tr, prof, online=True)
    assert np.isfinite(ev.summary.mse)
    m.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(again.predict_latency(tr, prof), m.predict_latency(tr, prof))


def test_cli_fit_evaluate_predict_with_entity_rls(scenario, tmp_path, capsys):
    write_scenario(scenario, tmp_path / "data")
    prof, trace = str(tmp_path / "data" / "profiles.csv"), str(tmp_path / "data" / "trace.csv")
    model = tmp_path / "model.json"
    assert main(["fit", "--profiles", prof, "--trace", trace, "--predictor", "entity_rls", "--param",
                 "log_target=true", "--out", str(model)]) == 0
    assert load_model(model).predictor.log_target is True
    assert main(["evaluate", "--model-file", str(model), "--profiles", prof, "--trace", trace, "--online"]) == 0
    assert main(["predict", "--model-file", str(model), "--profiles", prof, "--trace", trace,
                 "--out", str(tmp_path / "p.csv")]) == 0
    capsys.readouterr()
    assert main(["fit", "--profiles", prof, "--trace", trace, "--predictor", "entity_rls", "--param",
                 "entity=gpu", "--out", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entity must be 'model' or 'model_batch'" in err


def test_a_model_declares_its_target_so_entity_rls_scales_its_backoff_and_a_calibrated_wrap_agrees():
    from interfpred import Calibrated
    from interfpred.data.datasets import gavel_v100

    m = gavel_v100()
    spec = {"feature_map": "shares", "target": "rate"}
    model = InterferenceModel(spec, EntityRLS()).fit(measurements=m)
    assert model.predictor.target == "rate" and model.predictor.backoff_scale_ != 1.0
    wrapped = InterferenceModel(spec, Calibrated(EntityRLS())).fit(measurements=m)
    assert wrapped.predictor.predictor_.backoff_scale_ == model.predictor.backoff_scale_
    # the model holds a copy declared for its target; a predictor declared for another is refused, fitted or not
    p = EntityRLS()
    held = InterferenceModel(spec, p).predictor
    assert held.target == "rate" and p.target is None and held.get_params() == {**p.get_params(), "target": "rate"}
    for other in (EntityRLS(target="slowdown"), model.predictor):
        with pytest.raises(InterfpredError, match="declared for target '(slowdown|rate)'"):
            InterferenceModel({**spec, "target": "rate" if other.target == "slowdown" else "slowdown"}, other)
