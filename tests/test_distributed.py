"""Partitioned fitting and evaluation: merged statistics equal the one-process fit; Dask on 2 worker processes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from interfpred import InterfpredError
from interfpred.evaluation import call
from interfpred.model.distributed import (
    LinearStatistics,
    TracePartition,
    evaluate_dask,
    evaluate_partitions,
    fit_dask,
    fit_partitions,
    read_partition,
    trace_files,
    trace_partitions,
    write_device_files,
)
from interfpred.model.interference import InterferenceModel
from interfpred.sim.workload import mix_scenario


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    sc = mix_scenario(["vgg19", "resnet50", "yolov8n"], rho=0.8, executions=1500, seed=4, n_devices=3,
                      truth="fluid")  # well-conditioned features: rounding stays far below 1e-9
    folder = tmp_path_factory.mktemp("parts")
    paths = write_device_files(sc.traces["trace"], folder, files=4)
    return sc.traces["trace"], sc.profiles, folder, paths


def _models():
    return [("default", "offline_linear", {}), ("rich", "rls", {"forgetting": 1.0}),
            ("default", "offline_linear", {"ridge": 0.5})]


@pytest.mark.parametrize("feature_map, kind, params", _models())
def test_merged_fit_equals_the_one_process_fit(data, feature_map, kind, params):
    trace, prof, _, paths = data
    parts = trace_partitions(paths)
    assert [p.device for p in parts] == ["gpu0", "gpu1", "gpu2"]
    spec = {"kind": kind, "params": params}
    merged = fit_partitions(parts, prof, InterferenceModel({"feature_map": feature_map}, spec))
    local = InterferenceModel({"feature_map": feature_map}, spec).fit(trace, prof)
    np.testing.assert_allclose(merged.predictor.coef_, local.predictor.coef_, rtol=1e-9, atol=1e-9)
    assert merged.predictor.intercept_ == pytest.approx(local.predictor.intercept_, rel=1e-9, abs=1e-9)
    assert set(merged.baselines) == set(local.baselines)
    X = np.random.default_rng(0).random((5, merged.extractor.n_features))
    for k, b in local.baselines.items():
        np.testing.assert_allclose(merged.baselines[k].predict(X), b.predict(X), rtol=1e-12)
    fm = local.features(trace, prof)   # the pair mean keyed by model, as the one-process fit keys it
    entities = local.baseline_entities(fm)
    for k, b in local.baselines.items():
        np.testing.assert_allclose(call(merged.baselines[k], "predict", fm.X, entities=entities),
                                   call(b, "predict", fm.X, entities=entities), rtol=1e-12)
    assert len(np.unique(call(merged.baselines["pair_mean"], "predict", fm.X, entities=entities))) > 1
    np.testing.assert_allclose(merged.predict_latency(trace, prof), local.predict_latency(trace, prof), rtol=1e-9)


def test_a_baseline_as_the_model_merges_by_its_merge(data):
    trace, prof, _, paths = data
    spec = {"kind": "global_mean", "params": {}}
    merged = fit_partitions(trace_partitions(paths), prof, InterferenceModel({"feature_map": "default"}, spec))
    local = InterferenceModel({"feature_map": "default"}, spec).fit(trace, prof)
    assert merged.predictor.n_seen_ == local.predictor.n_seen_ == len(trace)
    assert merged.predictor.mean_ == pytest.approx(local.predictor.mean_, rel=1e-12)


def test_statistics_merge_in_any_grouping():
    rng = np.random.default_rng(1)
    X, y = rng.random((90, 3)) + 100.0, rng.random(90)          # large means: centred merging keeps digits
    parts = [LinearStatistics.from_rows(X[i:i + 30], y[i:i + 30]) for i in (0, 30, 60)]
    one = LinearStatistics.from_rows(X, y)
    for merged in (parts[0].merge(parts[1]).merge(parts[2]), parts[0].merge(parts[1].merge(parts[2]))):
        np.testing.assert_allclose(merged.m2, one.m2, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(merged.solve()[0], one.solve()[0], rtol=1e-8)


def test_refusals(data, tmp_path):
    _, prof, folder, paths = data
    with pytest.raises(InterfpredError, match="merges what each partition learned.*'online_sgd' cannot.*global_mean"):
        fit_partitions(trace_partitions(paths), prof, InterferenceModel(None, "online_sgd"))
    with pytest.raises(InterfpredError, match="no Parquet trace files"):
        trace_files(tmp_path / "empty")
    assert trace_files(folder) == sorted(paths) == trace_files(str(folder / "*.parquet"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One LocalCluster of 2 worker processes for the module; yields its scheduler address. Its scratch
    space and lock files stay in a temporary folder (by default they go to /tmp/dask-scratch-space)."""
    distributed = pytest.importorskip("distributed")
    import logging

    import dask

    scratch = str(tmp_path_factory.mktemp("dask"))
    with dask.config.set({"temporary-directory": scratch}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=logging.ERROR, local_directory=scratch) as lc:
        yield lc.scheduler_address


def test_dask_two_worker_processes_equal_the_local_results(data, cluster):
    trace, prof, folder, _ = data
    model = InterferenceModel({"feature_map": "rich"}, {"kind": "rls", "params": {"forgetting": 1.0}})
    report: dict = {}
    fitted = fit_dask(folder, prof, model, address=cluster, report=report)
    local = InterferenceModel({"feature_map": "rich"}, {"kind": "rls", "params": {"forgetting": 1.0}}).fit(trace, prof)
    np.testing.assert_allclose(fitted.predictor.coef_, local.predictor.coef_, rtol=1e-9, atol=1e-9)
    assert sorted(report) == ["gpu0", "gpu1", "gpu2"] and sum(r["rows"] for r in report.values()) == len(trace)
    assert os.getpid() not in {r["pid"] for r in report.values()}     # the work ran in the worker processes
    ev = evaluate_dask(folder, prof, local, address=cluster)
    want = local.evaluate(trace, prof)
    assert ev.summary.n == want.summary.n
    assert ev.summary.mse == pytest.approx(want.summary.mse, rel=1e-9)
    assert ev.summary.p90 == pytest.approx(want.summary.p90, rel=1e-9)
    assert ev.baselines["global_mean"].mape == pytest.approx(want.baselines["global_mean"].mape, rel=1e-9)
    online = evaluate_partitions(trace_partitions(trace_files(folder)), prof, local, online=True)
    assert online.online and online.summary.n == len(trace)


def test_cli_fit_and_evaluate_on_dask(data, cluster, tmp_path, capsys):
    from interfpred.cli import main
    from interfpred.data.columnar import write_profiles
    from interfpred.model.interference import load_model

    trace, prof, folder, _ = data
    write_profiles(prof, tmp_path / "p.parquet")
    out = tmp_path / "m.json"
    assert main(["fit", "--trace", str(folder), "--profiles", str(tmp_path / "p.parquet"), "--predictor",
                 "offline_linear", "--feature-map", "default", "--out", str(out), "--dask", cluster]) == 2
    err = capsys.readouterr().err
    assert "--dask fits a named configuration" in err and "name --target" in err and len(err.splitlines()) == 1
    assert main(["fit", "--trace", str(folder), "--profiles", str(tmp_path / "p.parquet"), "--predictor",
                 "offline_linear", "--feature-map", "default", "--target", "rate", "--out", str(out), "--dask",
                 cluster]) == 0
    # the CLI's default target (rate); an extractor spec without a target means the extractor's own default
    local = InterferenceModel({"feature_map": "default", "target": "rate"}, "offline_linear").fit(trace, prof)
    np.testing.assert_allclose(load_model(out).predictor.coef_, local.predictor.coef_, rtol=1e-9, atol=1e-9)
    assert "merged per device" in capsys.readouterr().err
    assert main(["fit", "--trace", str(folder), "--profiles", str(tmp_path / "p.parquet"), "--predictor",
                 "online_sgd", "--feature-map", "default", "--target", "rate", "--out", str(out), "--force",
                 "--dask"]) == 2
    assert "merges what each partition learned" in capsys.readouterr().err
    assert main(["evaluate", "--model-file", str(out), "--trace", str(tmp_path / "nothing"), "--profiles",
                 str(tmp_path / "p.parquet"), "--dask"]) == 2
    assert "no Parquet trace files" in capsys.readouterr().err


def test_a_file_without_a_device_column_is_refused_naming_it(tmp_path, data):
    import pyarrow.parquet as pq

    _, _, _, paths = data
    table = pq.read_table(paths[0])
    table = table.rename_columns(["gpu" if c == "device" else c for c in table.column_names])
    out = tmp_path / "no-device.parquet"
    pq.write_table(table, out)
    with pytest.raises(InterfpredError, match=r"no-device\.parquet.*no device column"):
        trace_partitions([str(out)])
    with pytest.raises(InterfpredError, match=r"no-device\.parquet: no device column"):
        read_partition(TracePartition("gpu0", (str(out),)))
