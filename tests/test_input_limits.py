"""Regression tests of the fault campaign's findings: limits, reader agreement, file safety, bounded patterns."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from interfpred.errors import InputError, InterfpredError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TRACE = "id,device,model,batch_size,start_ms,end_ms\n1,g,a,1,0.0,1.0\n2,g,b,2,0.5,2.0\n"
MEAS = "run,gpu,model,batch_size,solo_ms,observed_ms\n1,g,a,1,1.0,1.5\n1,g,b,1,2.0,2.5\n"


# ---------------------------------------------------------------------------- security
def test_manifest_symlink_out_of_its_folder_is_refused(tmp_path):
    from interfpred.data.ingest import read_manifest

    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.csv").write_text("root:x:0:0\n")
    mf = tmp_path / "mf"
    mf.mkdir()
    os.symlink("../outside/secret.csv", mf / "link.csv")
    (mf / "runs.csv").write_text("file,gpu,model,batch_size\nlink.csv,l4,m,8\n")
    with pytest.raises(InputError, match=r"runs.csv line 2: file 'link.csv' is a symbolic link to .*outside"):
        read_manifest(mf / "runs.csv")
    (mf / "real.csv").write_text("")
    os.symlink("real.csv", mf / "inside.csv")  # a link that stays inside is fine
    (mf / "runs.csv").write_text("file,gpu,model,batch_size\ninside.csv,l4,m,8\n")
    assert read_manifest(mf / "runs.csv")[0].model == "m"


def test_text_inputs_are_bounded_before_reading(tmp_path, monkeypatch):
    from interfpred import Trace

    path = tmp_path / "t.csv"
    path.write_text(TRACE)
    monkeypatch.setenv("INTERFPRED_INPUT_MAX_BYTES", "10")
    with pytest.raises(InputError, match="larger than INPUT_MAX_BYTES=10 .*INTERFPRED_INPUT_MAX_BYTES"):
        Trace.from_csv(path)


def test_a_sparse_file_of_nuls_is_refused_at_its_first_block(tmp_path):
    from interfpred._core.atomic import read_text

    path = tmp_path / "sparse.csv"
    with open(path, "wb") as fh:
        fh.truncate(3 * 2**30)  # 3 GiB of NULs, no disk used
    t = time.perf_counter()
    with pytest.raises(InputError, match="larger than INPUT_MAX_BYTES|NUL"):
        read_text(path)
    with open(path, "wb") as fh:
        fh.truncate(200 * 2**20)  # under the limit: refused at the first block
    with pytest.raises(InputError, match="NUL"):
        read_text(path)
    assert time.perf_counter() - t < 60  # generous: only a block is read, not the whole file


def test_parquet_rows_are_bounded_from_the_metadata(tmp_path, monkeypatch):
    from interfpred.data.columnar import read_trace

    path = tmp_path / "t.parquet"
    n = 1000
    pq.write_table(pa.table({"id": np.arange(n), "device": ["g"] * n, "model": ["m"] * n, "batch_size": [1] * n,
                             "start_ms": np.zeros(n), "end_ms": np.ones(n)}), path)
    monkeypatch.setenv("INTERFPRED_INPUT_MAX_ROWS", "999")
    with pytest.raises(InputError, match="rows 1000 is larger than INPUT_MAX_ROWS=999"):
        read_trace(path)


def test_declared_sizes_are_bounded_before_allocation():
    from interfpred import Calibrated
    from interfpred.experiments.benchmarking import run_bench
    from interfpred.sim.workload import mix_scenario

    with pytest.raises(InterfpredError, match="WINDOW_MAX"):
        Calibrated("rls", window=10**12).fit(np.zeros((4, 2)), np.ones(4))
    with pytest.raises(InterfpredError, match="EXECUTIONS_MAX"):
        mix_scenario(["vgg19"], rho=0.5, executions=10**12)
    with pytest.raises(InterfpredError, match="CALLS_MAX"):
        run_bench(ds=[3], n=10**12, peers=False)


def test_repeats_and_seed_of_the_pair_split_are_checked():
    from interfpred.data.datasets import gavel_v100
    from interfpred.evaluation.folds import run_folds

    m = gavel_v100()
    with pytest.raises(InterfpredError, match="REPEATS_MAX"):
        run_folds(m, "pair", repeats=10**9)
    with pytest.raises(InterfpredError, match="seed -1 must be a non-negative integer"):
        run_folds(m, "pair", repeats=2, seed=-1)


def test_json_integers_are_bounded(tmp_path):
    from interfpred._core.atomic import read_json

    path = tmp_path / "m.json"
    path.write_text('{"a": ' + "9" * 5000 + "}")
    with pytest.raises(InputError, match="5000 digits is larger than JSON_INT_MAX_DIGITS"):
        read_json(path)


@pytest.mark.parametrize("engine", ["subset", "re2"])
def test_user_patterns_run_at_bounded_cost(engine):
    from interfpred._core.patterns import compile_pattern, have_re2

    if engine == "re2" and not have_re2():
        pytest.skip("google-re2 not installed")
    if engine == "subset":
        with pytest.raises(InterfpredError, match="outside the pattern subset"):
            compile_pattern("(x+x+)+y", "kernel_filter", engine=engine)
        rx = compile_pattern(".*x.*x.*x.*x.*x.*x.*x.*y", "kernel_filter", engine=engine)
    else:
        rx = compile_pattern("(x+x+)+y", "kernel_filter", engine=engine)
    t = time.perf_counter()
    assert not rx.search("x" * 40) and not rx.search("x" * 5000)
    assert time.perf_counter() - t < 30  # a backtracking engine takes hours on the 40 x's


@pytest.mark.parametrize("pattern,name", [("gemm.*relu|^conv", "sm90_gemm_relu"), ("a.b$", "xaxb"),
                                          ("^a.+b$", "ab"), ("\\(x\\)", "f(x)"), ("", "k"), ("^$", ""),
                                          ("conv", "my_conv2d"), ("^conv", "my_conv2d")])
def test_the_subset_agrees_with_re(pattern, name):
    import re

    from interfpred._core.patterns import compile_pattern

    assert compile_pattern(pattern, "p", engine="subset").search(name) == (re.search(pattern, name) is not None)


def test_manifest_filter_cells_are_checked_at_read_time(tmp_path, monkeypatch):
    from interfpred._core import patterns
    from interfpred.data.ingest import read_manifest

    monkeypatch.setattr(patterns, "have_re2", lambda: False)
    (tmp_path / "r.csv").write_text("")
    (tmp_path / "m.csv").write_text("file,gpu,model,batch_size,kernel_filter\nr.csv,l4,m,8,(x+x+)+y\n")
    with pytest.raises(InputError, match="m.csv line 2: kernel_filter"):
        read_manifest(tmp_path / "m.csv")


def test_cleanup_leaves_user_files_that_look_like_temporaries(tmp_path):
    from interfpred._core.atomic import atomic_write_text

    user = tmp_path / ".out.json.999999.old"
    user.mkdir()
    (user / "keep.txt").write_text("mine")
    tmp_like = tmp_path / ".out.json.999999.tmp-abc"
    tmp_like.write_text("mine too")
    atomic_write_text(tmp_path / "out.json", "{}")
    assert (user / "keep.txt").read_text() == "mine" and tmp_like.read_text() == "mine too"
    assert (tmp_path / "out.json").read_text() == "{}"


def test_force_never_replaces_the_current_folder_or_a_device(tmp_path, monkeypatch):
    from interfpred._core.atomic import atomic_write_text, check_replaceable
    from interfpred.sim.workload import mix_scenario, write_scenario

    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("x")
    sc = mix_scenario(["vgg19"], rho=0.5, executions=10)
    for out in (".", "", "..", "/"):
        with pytest.raises(InterfpredError, match="current folder or one above it"):
            write_scenario(sc, out, force=True)
    assert (tmp_path / "keep.txt").read_text() == "x"
    if os.path.exists("/dev/null"):
        with pytest.raises(InterfpredError, match="device, FIFO or socket"):
            atomic_write_text("/dev/null", "x")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InterfpredError, match="device, FIFO or socket"):
        check_replaceable(tmp_path / "fifo")


# ---------------------------------------------------------------------------- tracebacks
@pytest.mark.parametrize("data", [MEAS.replace("\n", "\r"), MEAS.replace("\n", "\r", 1)])
def test_measurements_with_cr_or_mixed_line_endings_read(tmp_path, data):
    from interfpred import Measurements

    path = tmp_path / "m.csv"
    path.write_bytes(data.encode())
    assert len(Measurements.from_csv(path)) == 2


def test_measurements_long_field_is_one_error(tmp_path):
    from interfpred import Measurements

    path = tmp_path / "m.csv"
    path.write_text(MEAS + "1,g," + "x" * 200_000 + ",1,1,1\n")
    with pytest.raises(InputError, match="line 4: not a readable CSV: field larger than field limit"):
        Measurements.from_csv(path)


def _trace_table(**override):
    cols = {"id": [1, 2], "device": ["g", "g"], "model": ["a", "b"], "batch_size": [1, 2],
            "start_ms": [0.0, 0.5], "end_ms": [1.0, 2.0]}
    cols.update(override)
    return pa.table(cols)


@pytest.mark.parametrize("column,values,message", [
    ("device", [[1], [2]], "column device has type list"),
    ("model", [{"a": 1}, {"a": 2}], "column model has type struct"),
    ("id", pa.array([[("k", 1)], [("k", 2)]], pa.map_(pa.string(), pa.int64())), "column id has type map"),
    ("device", pa.nulls(2, pa.string()), "column device is null in every row"),
    ("model", ["a\x00", "b"], "column model holds a NUL byte"),
    ("batch_size", ["1", "2"], "column batch_size has type string, expected numbers"),
])
def test_parquet_trace_columns_are_type_checked(tmp_path, column, values, message):
    from interfpred.data.columnar import read_trace

    path = tmp_path / "t.parquet"
    pq.write_table(_trace_table(**{column: values}), path)
    with pytest.raises(InputError, match=f"t.parquet: {message}"):
        read_trace(path)


@pytest.mark.parametrize("column,values,message", [
    ("solo_ms", ["1.0"], "column solo_ms has type string"),
    ("sm", [[0.1]], "column sm has type list"),
    ("gpu", pa.nulls(1), "column gpu is null in every row"),
])
def test_parquet_profile_columns_are_type_checked(tmp_path, column, values, message):
    from interfpred.data.columnar import read_profiles

    cols = {"gpu": ["l4"], "model": ["m"], "batch_size": [1], "solo_ms": [1.0], "sm": [0.1], "l2": [0.1],
            "dram": [0.1]}
    cols[column] = values
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table(cols), path)
    with pytest.raises(InputError, match=message):
        read_profiles(path)


def test_corrupt_baseline_state_is_one_error(tmp_path):
    from interfpred import InterferenceModel, load_model
    from interfpred.sim.workload import mix_scenario

    sc = mix_scenario(["vgg19", "resnet50"], rho=0.9, executions=40, seed=0)
    path = tmp_path / "m.json"
    InterferenceModel({"aggregation": "time_weighted", "feature_map": "default"}, "pair_mean").fit(
        sc.traces["trace"], sc.profiles).save(path)
    state = json.loads(path.read_text())
    state["predictor"]["state"]["pairs"] = "garbage"
    path.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match="state does not match"):
        load_model(path)


# ---------------------------------------------------------------------------- silent wrong results
def test_measurement_batch_size_is_range_checked(tmp_path):
    from interfpred import Measurements

    path = tmp_path / "m.csv"
    for bs in ("1e19", str(2**24 + 1)):
        path.write_text(MEAS.replace("1,g,a,1,", f"1,g,a,{bs},"))
        with pytest.raises(InputError, match="line 2: batch_size .* at most MAX_BATCH_SIZE"):
            Measurements.from_csv(path)


def test_tiny_throughput_giving_infinite_latency_is_refused(tmp_path):
    from interfpred import Measurements

    path = tmp_path / "m.csv"
    path.write_text("run,gpu,model,batch_size,solo_throughput,observed_throughput\n1,g,a,1,1e-320,1e-320\n"
                    "1,g,b,1,1,2\n")
    with pytest.raises(InputError, match="line 2: solo_throughput 1e-320 gives latency inf ms"):
        Measurements.from_csv(path)


def test_non_finite_predictions_are_not_written(tmp_path):
    from interfpred.data.columnar import check_finite_columns

    with pytest.raises(InterfpredError, match="predicted_latency_ms is nan in row 1"):
        check_finite_columns({"predicted_latency_ms": np.array([np.nan])}, tmp_path / "p.csv")
    assert not (tmp_path / "p.csv").exists()


def test_nul_in_a_name_is_refused_not_dropped():
    from interfpred import Measurements, Trace

    with pytest.raises(InterfpredError, match="NUL"):
        Measurements.from_columns(run=[1], gpu=["g"], model=["m\x00"], batch_size=[1], solo_ms=[1.0],
                                  observed_ms=[1.0])
    with pytest.raises(InterfpredError, match="NUL"):
        Trace(id=[1], device=["g"], model=["m\x00"], batch_size=[1], start_ms=[0.0], end_ms=[1.0])


def test_simulate_refuses_a_load_so_low_that_latencies_round_away():
    from interfpred.sim.workload import mix_scenario

    with pytest.raises(InterfpredError, match="SIM_MIN_RHO"):
        mix_scenario(["vgg19"], rho=1e-300, executions=10)


# ---------------------------------------------------------------------------- exit 0 on garbage
@pytest.mark.parametrize("data", [TRACE.replace("g,a", "g\x00,a"), "id,id,device,model,batch_size,start_ms,end_ms\n"
                                  "1,1,g,a,1,0.0,1.0\n"])
def test_both_trace_readers_refuse_nul_and_duplicate_headers(tmp_path, data):
    from interfpred import Trace
    from interfpred.data.columnar import read_trace

    path = tmp_path / "t.csv"
    path.write_bytes(data.encode())
    with pytest.raises(InputError):
        read_trace(path)
    with pytest.raises(InputError):
        Trace.from_csv(path)


def test_duplicate_manifest_columns_are_refused(tmp_path):
    from interfpred.data.ingest import read_manifest

    (tmp_path / "r.csv").write_text("")
    (tmp_path / "m.csv").write_text("file,gpu,model,batch_size,model\nr.csv,l4,a,8,b\n")
    with pytest.raises(InputError, match="duplicate column"):
        read_manifest(tmp_path / "m.csv")


def test_nan_profile_counter_is_not_not_measured(tmp_path):
    from interfpred import ProfileTable

    path = tmp_path / "p.csv"
    path.write_text("gpu,model,batch_size,solo_ms,sm,l2,dram\nl4,m,1,1.0,nan,0.1,0.1\n")
    with pytest.raises(InputError, match="sm 'nan' is not a finite number"):
        ProfileTable.from_csv(path)


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    from interfpred import Calibrated, InterferenceModel
    from interfpred.sim.workload import mix_scenario

    folder = tmp_path_factory.mktemp("models")
    sc = mix_scenario(["vgg19", "resnet50"], rho=0.9, executions=40, seed=0)
    spec = {"aggregation": "time_weighted", "feature_map": "default"}
    InterferenceModel(spec, "rls").fit(sc.traces["trace"], sc.profiles).save(folder / "rls.json")
    InterferenceModel(spec, Calibrated("rls")).fit(sc.traces["trace"], sc.profiles).save(folder / "cal.json")
    InterferenceModel(spec, "entity_rls").fit(sc.traces["trace"], sc.profiles).save(folder / "ent.json")
    return folder


@pytest.mark.parametrize("file,edit,message", [
    ("rls.json", lambda s: s["feature_names"].pop(), r"lists \d+ features but the predictor takes \d+"),
    ("rls.json", lambda s: s["feature_names"].__setitem__(0, "zz"), "disagrees with the extractor at feature 0"),
    ("cal.json", lambda s: s["predictor"]["state"]["train_quantiles"].__setitem__(0, None), "finite numbers"),
    ("cal.json", lambda s: s["predictor"]["params"].__setitem__("predictor", {"spec": "online_sgd"}),
     "disagrees with the wrapped predictor"),
    ("ent.json", lambda s: s["predictor"]["params"].__setitem__("rank", 2), "rank 2 disagrees with the state"),
])
def test_model_files_are_cross_checked(saved_models, tmp_path, file, edit, message):
    from interfpred import load_model

    state = json.loads((saved_models / file).read_text())
    edit(state)
    path = tmp_path / file
    path.write_text(json.dumps(state))
    with pytest.raises(InterfpredError, match=message):
        load_model(path)


def test_ragged_ncu_raw_row_is_refused(tmp_path):
    from interfpred.data.ingest import read_kernels

    header = '"ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","x"'
    units = '"","","nsecond","%",""'
    path = tmp_path / "raw.csv"
    path.write_text("\n".join([header, units, '"0","k","1000","50"']) + "\n")
    with pytest.raises(InterfpredError, match="line 3: row has 4 fields"):
        read_kernels(path)


def test_model_analyzer_csv_long_field_is_one_error(tmp_path):
    from interfpred.data.ingest.model_analyzer import read_model_analyzer_file

    path = tmp_path / "metrics.csv"
    path.write_text("Model,Batch\n" + "x" * 200_000 + ",1\n")
    with pytest.raises(InputError, match="field larger than field limit"):
        read_model_analyzer_file(path)
