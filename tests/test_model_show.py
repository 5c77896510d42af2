"""Tests of what a model file keeps of fit's choice (model.selection, model.note) and of ``interfpred show``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from interfpred import InterferenceModel, load_model
from interfpred.cli import main
from interfpred.data.datasets import gavel_v100
from interfpred.errors import InterfpredError


@pytest.fixture(scope="module")
def chosen(tmp_path_factory):
    model = InterferenceModel().fit(measurements=gavel_v100())
    path = tmp_path_factory.mktemp("show") / "model.json"
    model.save(path)
    return model, path


def _same_figures(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a[k], b[k], strict=True)), k


def test_selection_and_note_survive_save_and_load(chosen):
    model, path = chosen
    again = load_model(path)
    sel, got = model.selection, again.selection
    assert got is not None and got.chosen == sel.chosen
    assert (got.warm_folds, got.cold_folds, got.fixed, got.colocated) == (
        sel.warm_folds, sel.cold_folds, sel.fixed, sel.colocated)
    _same_figures(got.scores, sel.scores)
    _same_figures(got.baselines, sel.baselines)
    assert got.report() == sel.report() and got.rule == sel.rule
    assert model.note is not None and model.note.startswith(sel.chosen.label + " chosen by validation")
    assert again.note == model.note
    assert json.loads(path.read_text())["selection"]["rule"] == sel.rule


def test_a_named_fit_keeps_no_selection(chosen, tmp_path):
    named = InterferenceModel(None, "rls").fit(measurements=gavel_v100())
    assert named.selection is None
    model = load_model(chosen[1])
    assert model.selection is not None
    model.fit(measurements=gavel_v100())   # a loaded model names its configuration: a refit chooses nothing
    assert model.selection is None


def test_a_selection_of_the_wrong_shape_is_refused(chosen, tmp_path):
    _, path = chosen
    state = json.loads(path.read_text())
    state["selection"]["scores"] = {"x": ["a"]}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match=r"bad.json: selection.scores.x"):
        load_model(bad)


def test_the_covariance_is_stored_once_and_restored_exactly(tmp_path):
    model = InterferenceModel(None, {"kind": "entity_rls", "params": {"covariance": "full"}})
    model.fit(measurements=gavel_v100())
    path = tmp_path / "full.json"
    model.save(path)
    state = json.loads(path.read_text())["predictor"]["state"]
    assert "P" not in state
    n = int(round((np.sqrt(8 * len(state["P_upper"]) + 1) - 1) / 2))
    assert n * (n + 1) // 2 == len(state["P_upper"])
    again = load_model(path)
    runs = gavel_v100()
    np.testing.assert_array_equal(again.predict_latency(measurements=runs), model.predict_latency(measurements=runs))
    assert again.predictor.to_state() == model.predictor.to_state()


def test_show_prints_the_choice_and_the_sizes(chosen, capsys):
    model, path = chosen
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"chose {model.selection.chosen.label}: {model.selection.rule}" in out
    assert "<- chosen" in out and "baseline: pair mean" in out and "bytes by part: predictor" in out
    assert main(["show", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["selection"]["chosen"]["predictor"] == model.selection.chosen.predictor
    assert info["bytes"] == path.stat().st_size and info["bytes_by_part"]["predictor"] > 0


def test_show_of_a_named_model_and_of_a_bad_file(tmp_path, capsys):
    path = tmp_path / "rls.json"
    InterferenceModel(None, "rls").fit(measurements=gavel_v100()).save(path)
    assert main(["show", str(path)]) == 0
    assert "selection: none" in capsys.readouterr().out
    (tmp_path / "junk.json").write_text("{")
    assert main(["show", str(tmp_path / "junk.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interfpred: error:") and "junk.json" in err[0]


def test_fit_json_holds_the_selection(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    gavel_v100().to_csv(runs)
    assert main(["fit", "--measurements", str(runs), "--out", str(tmp_path / "m.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selection"]["chosen"] == json.loads((tmp_path / "m.json").read_text())["selection"]["chosen"]
    assert out["note"].endswith(out["selection"]["rule"])


def test_a_covariance_saved_whole_is_refused_with_what_to_do(tmp_path):
    model = InterferenceModel(None, {"kind": "entity_rls", "params": {"covariance": "full"}})
    model.fit(measurements=gavel_v100())
    state = model.to_state()
    upper = state["predictor"]["state"].pop("P_upper")
    state["predictor"]["state"]["P"] = upper            # the key files held before
    path = tmp_path / "old.json"
    path.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match=r"old.json: predictor: .*covariance as 'P'.*refit the predictor"):
        load_model(path)
