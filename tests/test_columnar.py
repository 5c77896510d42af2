"""Columnar I/O: Parquet, Arrow, DataFrame and pyarrow-CSV round trips of every table; errors as before."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import InputError, InterfpredError, Trace
from interfpred.data.columnar import (
    format_of,
    profiles_from_frame,
    profiles_to_frame,
    read_measurements,
    read_profiles,
    read_trace,
    trace_from_frame,
    trace_to_frame,
    write_measurements,
    write_predictions_table,
    write_profiles,
    write_trace,
)
from interfpred.sim.workload import mix_scenario
from interfpred.sim.zoo import zoo_profiles


@pytest.fixture(scope="module")
def trace():
    return mix_scenario(["vgg19", "resnet50"], rho=0.7, executions=300, seed=2, n_devices=2).traces["trace"]


@pytest.mark.parametrize("name", ["t.csv", "t.parquet", "t.pq", "t.arrow", "t.feather"])
def test_trace_round_trips_to_the_bit(tmp_path, trace, name):
    write_trace(trace, tmp_path / name)
    back = read_trace(tmp_path / name)
    assert back == trace
    for c, arr in trace.columns().items():   # bit-identity of every column is the documented property
        assert np.array_equal(back.columns()[c], arr)


def test_both_csv_engines_read_back_the_same(tmp_path, trace):
    trace.to_csv(tmp_path / "py.csv", engine="python")
    trace.to_csv(tmp_path / "pa.csv", engine="pyarrow")
    assert Trace.from_csv(tmp_path / "pa.csv") == Trace.from_csv(tmp_path / "py.csv") == trace
    assert read_trace(tmp_path / "py.csv") == trace
    assert (tmp_path / "pa.csv").read_text().splitlines()[0] == "id,device,model,batch_size,start_ms,end_ms,solo_ms"
    with pytest.raises(InterfpredError, match="engine"):
        trace.to_csv(tmp_path / "x.csv", engine="fast")


def test_string_ids_and_awkward_cells_fall_back_to_the_standard_reader(tmp_path):
    tr = Trace(id=["a", "b,c"], device=["g 0", "g1"], model=["m", "m"], batch_size=[1, 2], start_ms=[0.0, 1.0],
               end_ms=[1.0, 2.0])
    write_trace(tr, tmp_path / "s.csv")
    assert read_trace(tmp_path / "s.csv") == tr
    (tmp_path / "w.csv").write_text("id,device,model,batch_size,start_ms,end_ms\n1, l4 ,m,1,0.0,1.0\n")
    assert read_trace(tmp_path / "w.csv").device.tolist() == ["l4"]


@pytest.mark.parametrize("body, match", [
    ("1,l4,m,1,2.0,1.0\n", r"bad.csv line 3: end_ms 1.0 is before start_ms 2.0"),
    ("1,l4,m,1,x,1.0\n", r"bad.csv line 3: start_ms 'x' is not a number"),
    ("0,l4,m,1,0.0,1.0\n", r"bad.csv line 3: duplicate id 0"),
    ("1,l4,m,1,0.0\n", r"bad.csv line 3: has 5 fields"),
])
def test_csv_errors_name_the_line(tmp_path, body, match):
    (tmp_path / "bad.csv").write_text("id,device,model,batch_size,start_ms,end_ms\n0,l4,m,1,0.0,1.0\n" + body)
    with pytest.raises(InputError, match=match):
        read_trace(tmp_path / "bad.csv")


def test_parquet_errors_name_the_file_and_row(tmp_path, trace):
    df = trace_to_frame(trace)
    df.loc[5, "end_ms"] = -1.0
    df.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InterfpredError, match=r"bad.parquet: row 5 \(id .*\): end_ms -1.0 is before"):
        read_trace(tmp_path / "bad.parquet")
    df.drop(columns=["device"]).to_parquet(tmp_path / "nodevice.parquet")
    with pytest.raises(InterfpredError, match=r"nodevice.parquet: missing column\(s\) device"):
        read_trace(tmp_path / "nodevice.parquet")
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(InterfpredError, match=r"junk.parquet: cannot read it as parquet"):
        read_trace(tmp_path / "junk.parquet")


def test_frames(trace):
    df = trace_to_frame(trace)
    assert len(df) == len(trace) and list(df.columns)[:6] == ["id", "device", "model", "batch_size", "start_ms",
                                                              "end_ms"]
    assert trace_from_frame(df) == trace
    assert trace_from_frame(df.assign(extra=1)) == trace     # extra columns are ignored


@pytest.mark.parametrize("name", ["p.csv", "p.parquet", "p.arrow"])
def test_profiles_round_trip(tmp_path, name):
    prof = zoo_profiles("l4")
    write_profiles(prof, tmp_path / name)
    assert read_profiles(tmp_path / name) == prof
    assert profiles_from_frame(profiles_to_frame(prof)) == prof


def test_profiles_with_missing_counters_shares_and_extras():
    from interfpred import ProfileTable

    prof = ProfileTable.from_columns(gpu=["v100"] * 2, model=["m", "n"], batch_size=[8, 4], solo_ms=[10.0, 6.0],
                                     sm=[None, 0.5], share=[50, 100], extra={"source": ["a", "b"]})
    back = profiles_from_frame(profiles_to_frame(prof))
    assert back == prof and back.extra_columns == ("source",)
    assert back.lookup("m", 8, share=50).sm is None


@pytest.mark.parametrize("name", ["m.csv", "m.parquet", "m.arrow"])
def test_measurements_round_trip(tmp_path, name):
    from interfpred.data.datasets import load_dataset

    meas = load_dataset("gavel_v100")
    write_measurements(meas, tmp_path / name)
    back = read_measurements(tmp_path / name)
    assert back.n_runs == meas.n_runs
    pd.testing.assert_frame_equal(back.to_frame(), meas.to_frame())


@pytest.mark.parametrize("name", ["p.csv", "p.parquet", "p.arrow"])
def test_predictions_table(tmp_path, name):
    n = write_predictions_table({"id": np.arange(3), "predicted_latency_ms": [1.5, 2.0, 1.0 / 3.0]}, tmp_path / name)
    assert n == 3
    back = (pd.read_csv if name.endswith("csv") else pd.read_parquet if name.endswith("parquet")
            else pd.read_feather)(tmp_path / name)
    assert back["predicted_latency_ms"].tolist() == [1.5, 2.0, 1.0 / 3.0]   # shortest round-trip text: exact


def test_format_of():
    assert [format_of(p) for p in ("a.csv", "a.PQ", "a.ipc", "a")] == ["csv", "parquet", "arrow", "csv"]


def test_without_pyarrow_the_error_names_the_extra(tmp_path, trace):
    trace.to_csv(tmp_path / "t.csv")
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "from interfpred.data.columnar import read_trace, write_trace\n"
        "from interfpred import Trace, InterfpredError\n"
        f"t = read_trace({str(tmp_path / 't.csv')!r})\n"           # CSV still works, standard library
        f"t.to_csv({str(tmp_path / 'u.csv')!r})\n"
        f"assert Trace.from_csv({str(tmp_path / 'u.csv')!r}) == t\n"
        "try:\n"
        f"    write_trace(t, {str(tmp_path / 't.parquet')!r})\n"
        "except InterfpredError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "needs pyarrow: pip install 'interfpred[parquet]'" in out


def test_cli_simulate_parquet_then_fit_and_evaluate(tmp_path, capsys):
    from interfpred.cli import main

    out = tmp_path / "sim"
    assert main(["simulate", "--scenario", "mix", "--gpu", "l4", "--models", "vgg19,yolov8n", "--rho", "0.6", "--executions",
                 "400", "--format", "parquet", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["profiles.parquet", "scenario.json", "trace.parquet"]
    csv_out = tmp_path / "csv"
    assert main(["simulate", "--scenario", "mix", "--gpu", "l4", "--models", "vgg19,yolov8n", "--rho", "0.6", "--executions",
                 "400", "--out", str(csv_out)]) == 0
    assert read_trace(out / "trace.parquet") == read_trace(csv_out / "trace.csv")   # same seed, same trace
    model = tmp_path / "m.json"
    assert main(["fit", "--trace", str(out / "trace.parquet"), "--profiles", str(out / "profiles.parquet"),
                 "--out", str(model)]) == 0
    assert main(["evaluate", "--model-file", str(model), "--trace", str(out / "trace.parquet"), "--profiles",
                 str(out / "profiles.parquet")]) == 0
    assert "mape" in capsys.readouterr().out


_names = st.text(alphabet=st.sampled_from(list("ab ,\"xyz-_0")), min_size=1, max_size=6).filter(
    lambda s: s.strip() == s)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), seed=st.integers(0, 1000), names=st.lists(_names, min_size=1, max_size=4),
       string_ids=st.booleans(), engine=st.sampled_from(["python", "pyarrow"]))
def test_fast_csv_reader_agrees_with_the_standard_one(tmp_path_factory, n, seed, names, string_ids, engine):
    rng = np.random.default_rng(seed)
    start = rng.uniform(-1e3, 1e3, n) * 10.0 ** rng.integers(-3, 4, n)
    ids = [f"r{i}" for i in range(n)] if string_ids else rng.permutation(n) - n // 2
    tr = Trace(id=ids, device=rng.choice(names, n), model=rng.choice(names, n), batch_size=rng.integers(1, 64, n),
               start_ms=start, end_ms=start + rng.exponential(5.0, n))
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    tr.to_csv(path, engine=engine)
    assert read_trace(path) == Trace.from_csv(path) == tr


def test_cli_predict_writes_parquet(tmp_path, trace):
    from interfpred.cli import main

    prof = zoo_profiles("l4")
    write_trace(trace, tmp_path / "t.parquet")
    write_profiles(prof, tmp_path / "p.parquet")
    model = tmp_path / "m.json"
    assert main(["fit", "--trace", str(tmp_path / "t.parquet"), "--profiles", str(tmp_path / "p.parquet"),
                 "--out", str(model)]) == 0
    for name in ("pred.parquet", "pred.csv"):
        assert main(["predict", "--model-file", str(model), "--trace", str(tmp_path / "t.parquet"), "--profiles",
                     str(tmp_path / "p.parquet"), "--out", str(tmp_path / name)]) == 0
    pq, csv = pd.read_parquet(tmp_path / "pred.parquet"), pd.read_csv(tmp_path / "pred.csv")
    assert list(pq.columns) == list(csv.columns) == ["id", "predicted_latency_ms", "predicted_slowdown",
                                                      "observed_latency_ms"]
    np.testing.assert_array_equal(pq.to_numpy(), csv.to_numpy())   # both exact (shortest round-trip text)


@pytest.mark.parametrize("name", ["gpu.csv", "gpu.parquet", "gpu.arrow"])
def test_files_without_a_device_column_are_refused_naming_it(tmp_path, trace, name):
    df = trace_to_frame(trace).rename(columns={"device": "gpu"})
    path = tmp_path / name
    if name.endswith(".csv"):
        df.to_csv(path, index=False)
    elif name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_feather(path)
    with pytest.raises(InterfpredError, match=rf"{name}.*missing column\(s\) device"):
        read_trace(path)
    with pytest.raises(InterfpredError, match=r"missing column\(s\) device"):
        trace_from_frame(df)


@pytest.mark.parametrize("name", ["new.csv", "new.parquet"])
def test_written_trace_files_name_the_device_column(tmp_path, trace, name):
    write_trace(trace, tmp_path / name)
    columns = pd.read_csv(tmp_path / name).columns if name.endswith(".csv") else pd.read_parquet(tmp_path / name).columns
    assert "device" in columns and "gpu" not in columns
