"""Tests of interfpred.experiments.paper: E1 and E2 on small simulated traces."""

from __future__ import annotations

import math

import pytest

from interfpred.experiments.paper import E2_SETS, run_e1, run_e2, scenario_for
from interfpred.experiments.report import ReproduceContext


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    return ReproduceContext(out_dir=tmp_path_factory.mktemp("e"), seed=1, executions=1200)


@pytest.fixture(scope="module")
def e1(ctx):
    return run_e1(ctx)


@pytest.fixture(scope="module")
def e2(ctx):
    return run_e2(ctx)


def _row(section, agg, method):
    (r,) = [r for r in section.data["rows"] if r["aggregation"] == agg and r["method"] == method]
    return r


def test_e1_layout(e1, ctx):
    rows = e1.data["rows"]
    assert len(rows) == 16                   # 5 aggregations x 2 methods + best, EntityRLS, ablation + 3 baselines
    assert [r["method"] for r in rows[10:13]] == ["RLS", "EntityRLS", "EntityRLS, no entity terms"]
    assert {r["aggregation"] for r in rows} == {"Static", "EWMA(0.2)", "EWMA(0.5)", "EWMA(0.8)", "TimeWeighted",
                                                 "interfpred best", "baseline: no interference",
                                                 "baseline: global mean", "baseline: pair mean"}
    assert e1.data["test_rows"] == 300 and e1.data["train_rows"] == 900
    for r in rows:
        assert r["n"] == 300
        assert 0 <= r["within_10_%"] <= r["within_20_%"] <= 100      # percent, as every table shows them
        assert r["median_%"] <= r["p90_%"] <= r["p99_%"]
        assert math.isfinite(r["mse"]) and r["mse"] >= 0
    assert "within 10 % (% of rows)" in e1.terminal and "| Static | OfflineLinear |" in e1.markdown
    assert "p90 error (%)" in e1.markdown and "validation MAPE (%)" in e1.markdown
    static = next(r for r in rows if r["aggregation"] == "Static")
    assert f"| Static | OfflineLinear | {static['within_10_%']:.4g} |" in e1.markdown  # percent, not a fraction
    for f in e1.figures:
        assert (ctx.out_dir / f).stat().st_size > 1000


def test_e1_sane_numbers(e1):
    # Robust facts of the ground truth, not tuned thresholds: exposure beats the launch snapshot,
    # and the best configuration (chosen on training rows) beats the paper's features.
    for method in ("OfflineLinear", "RLS"):
        assert _row(e1, "TimeWeighted", method)["mape_%"] < _row(e1, "Static", method)["mape_%"]
    best = _row(e1, "interfpred best", "RLS")
    assert best["mape_%"] < _row(e1, "TimeWeighted", "RLS")["mape_%"]
    assert best["within_20_%"] > 90
    # the baselines sit beside it, on the same rows; the learned models beat them here
    for kind in ("no interference", "global mean", "pair mean"):
        assert best["mape_%"] < _row(e1, f"baseline: {kind}", "-")["mape_%"]
    assert e1.data["best"]["extractor"]["aggregation"] == "time_weighted"
    assert len(e1.data["selection"]) == 4


def test_e2_layout_and_sanity(e2):
    res = e2.data["results"]
    assert list(res) == ["Offline linear", "Online SGD", "RLS", "interfpred best", "EntityRLS",
                         "EntityRLS, no entity terms", "baseline: no interference", "baseline: global mean",
                         "baseline: pair mean"]
    assert e2.data["configs"]["EntityRLS, no entity terms"]["params"]["entity_terms"] is False
    for label, per_set in res.items():
        assert list(per_set) == list(E2_SETS)
        for s, v in per_set.items():
            assert math.isfinite(v["mse"]) and 0 <= v["mape_%"] < 100, (label, s)
    for s in E2_SETS:
        assert res["interfpred best"][s]["mape_%"] < res["baseline: no interference"][s]["mape_%"]
    assert res["Offline linear"]["test1"]["n"] == 1200 and res["Offline linear"]["held-out"]["n"] == 300
    # The time-weighted rich configuration beats gpulets' EWMA features wherever it is measured.
    for s in E2_SETS:
        assert res["interfpred best"][s]["mape_%"] < res["Offline linear"][s]["mape_%"]
    assert set(e2.data["patterns"]) == {"offline_degrades_on_test2", "rls_beats_sgd_on_test2",
                                        "sgd_beats_offline_on_test2"}
    assert e2.data["configs"]["Online SGD"]["params"]["learning_rate"] in (0.5, 0.1, 0.02)
    assert "MSE of slowdown" in e2.terminal and "test 2 (new models)" in e2.markdown
    assert "MAPE of latency (%)" in e2.terminal and "test 2 (new models) (%)" in e2.markdown
    best2 = res["interfpred best"]["test2"]["mape_%"]
    assert 1 < best2 and f"{best2:.4g}" in e2.markdown          # a percent figure, as the table shows it


def test_scenario_is_cached_and_sized(ctx):
    assert scenario_for(ctx) is scenario_for(ctx)
    assert len(scenario_for(ctx).traces["test2"]) == 1200


def test_e2_deterministic_given_seed(tmp_path):
    a = run_e2(ReproduceContext(out_dir=tmp_path, seed=4, executions=400))
    b = run_e2(ReproduceContext(out_dir=tmp_path, seed=4, executions=400))
    assert a.data["results"] == b.data["results"]
