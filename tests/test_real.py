"""E4 on the shipped Gavel pairs and the held-out splits behind it and behind ``evaluate --split``."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred import TimeWeighted
from interfpred.data.datasets import gavel_v100
from interfpred.evaluation import held_out_mape, leave_one_model_out, run_folds, split_by_run
from interfpred.experiments import real
from interfpred.features.measurement_features import measurement_features
from interfpred.predictors import make_predictor, registered


@pytest.fixture(scope="module")
def gavel():
    return gavel_v100()


def test_splits_are_by_whole_runs(gavel):
    f = split_by_run(gavel, seed=3)
    train_runs = set(gavel.run[f.train].tolist())
    assert train_runs.isdisjoint(gavel.run[f.test].tolist())
    assert abs(len(train_runs) - 0.7 * gavel.n_runs) <= 1
    folds = leave_one_model_out(gavel)
    assert [x.label for x in folds] == list(gavel.models)
    for fold in folds:
        assert fold.label not in set(gavel.model[fold.train].tolist())
        runs_with = set(gavel.run[gavel.model == fold.label].tolist())
        assert runs_with == set(gavel.run[fold.test].tolist())
    with pytest.raises(ValueError, match="split 'x'"):
        run_folds(gavel, "x", repeats=1)


def test_new_model_streams_put_the_model_after_half(gavel):
    for fold in real.new_model_streams(gavel, seed=1):
        assert fold.label not in set(gavel.model[fold.train].tolist())
        test_runs = gavel.run_code[fold.test]
        first_seen = list(dict.fromkeys(test_runs.tolist()))
        assert len(first_seen) + len(set(gavel.run_code[fold.train].tolist())) == gavel.n_runs
        assert len(set(gavel.run_code[fold.train].tolist())) == gavel.n_runs // 2
        assert fold.label in set(gavel.model[gavel.run_code == test_runs[0]].tolist())   # it opens the second half


def test_held_out_mape_passes_entities_only_to_entity_predictors(gavel):
    ex = TimeWeighted(feature_map="shares", target="rate")
    fm = measurement_features(ex, gavel)
    fold = split_by_run(gavel, seed=0)
    pair = held_out_mape(fm, ex, gavel.run_code, make_predictor("pair_mean"), fold)
    glob = held_out_mape(fm, ex, gavel.run_code, make_predictor("global_mean"), fold)
    no_ent = held_out_mape(fm.__class__(**{**fm.__dict__, "entities": None}), ex, gavel.run_code,
                           make_predictor("pair_mean"), fold)
    assert pair < glob
    assert no_ent == pytest.approx(glob, rel=1e-12)      # without entities the pair mean is the global mean


def test_e4_lists_every_registered_predictor_and_names_the_winners(small_report):
    # the E4 section of the session's small reproduce (tests/conftest.py): the tests' size, 3 splits by run
    section = next(s for s in small_report[1] if s.title.startswith("E4: real"))
    cols = section.data["columns"]
    assert list(cols) == ["rate", "slowdown"]
    for target, by_col in cols.items():
        assert list(by_col) == ["split by run", "leave one model out", "leave one model out, frozen",
                                "stream, new model halfway"]
        for col, scores in by_col.items():
            kinds = set(scores)
            assert {k for k in registered() if not k.endswith(("_mean", "interference"))} <= kinds
            assert {"baseline: no interference", "baseline: global mean", "baseline: pair mean"} <= kinds
            assert isinstance(scores["gpulets"], str) and "no counters" in scores["gpulets"]
            folds = 3 if col == "split by run" else 7     # seeded repeats, or one per model
            assert len(scores["rls"]) == folds and len(scores["baseline: pair mean"]) == folds
            assert all(np.isfinite(scores["rls"]))
            assert len(scores[real.DEFAULT_FIT_LABEL]) == folds
            assert all(np.isfinite(scores[real.DEFAULT_FIT_LABEL]))
        assert len(section.data["winners"][target]) == 4
    assert "wins" in section.terminal and "| baseline: pair mean |" in section.markdown
    assert f"| {real.DEFAULT_FIT_LABEL} |" in section.markdown
    # the default fit, chosen inside every fold's training runs, beats the pair mean wherever it learns online
    for col in ("split by run", "leave one model out", "stream, new model halfway"):
        by_col = cols["rate"][col]
        assert np.mean(by_col[real.DEFAULT_FIT_LABEL]) < np.mean(by_col["baseline: pair mean"]), col
