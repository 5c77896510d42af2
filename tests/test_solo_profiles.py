"""Solo profiles from a capture: executions that ran alone, GPU types from the export, ingest-trace to fit."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import Trace
from interfpred.cli import main
from interfpred.data.ingest.solo import capture_gpu_types, ran_alone, solo_profiles
from interfpred.errors import InterfpredError

CAPTURES = "tests/data/capture"


def _naive_alone(start, end, device):
    n = len(start)
    return [all(device[j] != device[i] or not (start[j] < end[i] and start[i] < end[j])
                for j in range(n) if j != i) for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8), st.sampled_from(["g0", "g1"])), min_size=1,
                max_size=12))
def test_ran_alone_matches_the_pairwise_definition(rows):
    start = np.array([float(s) for s, _, _ in rows])
    end = start + np.array([float(d) for _, d, _ in rows])
    device = [g for _, _, g in rows]
    t = Trace(id=list(range(len(rows))), device=device, model=["m"] * len(rows), batch_size=[1] * len(rows),
              start_ms=start, end_ms=end)
    assert ran_alone(t).tolist() == _naive_alone(start, end, device)


def test_solo_latency_is_the_median_of_lone_runs_per_gpu_type_with_the_count():
    t = Trace(id=[1, 2, 3, 4, 5], device=["gpu0", "gpu0", "gpu1", "gpu1", "gpu1"], model=["a"] * 5,
              batch_size=[2] * 5, start_ms=[0.0, 5.0, 0.0, 10.0, 20.0], end_ms=[2.0, 9.0, 3.0, 11.0, 25.0])
    p = solo_profiles(t, {"gpu0": "A100", "gpu1": "A100"})   # one type: keyed by it, lone runs pooled
    assert p.gpus == ("A100",) and p.lookup("a", 2).solo_ms == 3.0   # median of 2, 4, 3, 1, 5
    assert p.lookup("a", 2).sm is None                                # counters stay missing
    assert list(p.column("n_alone")) == ["5"]


def test_devices_of_several_types_are_keyed_by_device_so_a_trace_finds_its_rows():
    from interfpred.data.profiles import profile_arrays

    t = Trace(id=[1, 2, 3, 4, 5], device=["gpu0", "gpu0", "gpu1", "gpu1", "gpu1"], model=["a"] * 5,
              batch_size=[2] * 5, start_ms=[0.0, 5.0, 0.0, 10.0, 20.0], end_ms=[2.0, 9.0, 3.0, 11.0, 25.0])
    p = solo_profiles(t, {"gpu0": "A100", "gpu1": "H200"})
    assert p.gpus == ("gpu0", "gpu1") and list(p.column("gpu_type")) == ["A100", "H200"]
    assert p.lookup("a", 2, gpu="gpu0").solo_ms == 3.0       # median of 2 and 4
    assert p.lookup("a", 2, gpu="gpu1").solo_ms == 3.0       # median of 3, 1, 5
    assert list(p.column("n_alone")) == ["2", "3"]
    _, solo = profile_arrays(t, p)                            # each row by its device: no refusal
    assert solo.tolist() == [3.0] * 5


def test_a_model_that_never_ran_alone_is_refused_in_one_line():
    t = Trace(id=[1, 2], device=["gpu0"] * 2, model=["a", "b"], batch_size=[1, 4], start_ms=[0.0, 1.0],
              end_ms=[5.0, 6.0])
    with pytest.raises(InterfpredError, match=r"^model a batch size 1 on gpu0 never ran alone in the capture "
                                              r"\(1 execution\(s\), all overlapped by others\)") as err:
        solo_profiles(t, {})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name,types", [
    ("nsys_saxpy_mpi_a100.sqlite", {"gpu0": "NVIDIA A100-SXM4-40GB"}),
    ("nsys_nvfuser_h200.sqlite", {"gpu0": "NVIDIA H200"}),
    ("kineto_nccl_data.json.gz", {f"gpu{i}": "NVIDIA A100-PG509-200" for i in range(8)}),
    ("kineto_sampled_rank0.json.gz", {}),  # an older trace without deviceProperties: none known
])
def test_gpu_types_come_from_the_export(name, types):
    assert capture_gpu_types(f"{CAPTURES}/{name}") == types


def test_ingest_trace_then_fit_needs_no_other_file(tmp_path, capsys):
    trace, prof, model = tmp_path / "trace.parquet", tmp_path / "profiles.csv", tmp_path / "model.json"
    pytest.importorskip("pyarrow")
    assert main(["ingest-trace", f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", "--name-pattern", "{model}",
                 "--batch-size", "1", "--out", str(trace), "--profiles-out", str(prof)]) == 0
    err = capsys.readouterr().err
    assert "wrote 1 solo profile(s) on NVIDIA A100-SXM4-40GB" in err
    lines = prof.read_text().splitlines()
    assert lines[0] == "gpu,model,batch_size,solo_ms,sm,l2,dram,n_alone"
    assert lines[1].startswith("NVIDIA A100-SXM4-40GB,saxpy,1,17.71") and lines[1].endswith(",,,,5")
    assert main(["fit", "--trace", str(trace), "--profiles", str(prof), "--out", str(model)]) == 0
    assert model.exists()


def test_profiles_out_refuses_a_capture_where_a_model_never_ran_alone(tmp_path, capsys):
    # Kineto's NCCL trace: its kernels overlap on every GPU's streams.
    out, prof = tmp_path / "t.csv", tmp_path / "p.csv"
    code = main(["ingest-trace", f"{CAPTURES}/kineto_nccl_data.json.gz", "--kernels", "--out", str(out),
                 "--profiles-out", str(prof)])
    err = capsys.readouterr().err.strip().splitlines()
    if code == 0:  # every kernel ran alone at least once: then the table names the export's GPU type
        assert "NVIDIA A100-PG509-200" in prof.read_text()
    else:
        assert code == 2 and len(err) == 1 and "never ran alone in the capture" in err[0]
        assert not out.exists() and not prof.exists()


def test_the_simulated_colocated_export_needs_no_other_file_and_beats_no_interference(tmp_path, capsys):
    import json
    from pathlib import Path

    trace, prof, model = tmp_path / "t.csv", tmp_path / "p.csv", tmp_path / "m.json"
    assert main(["ingest-trace", f"{CAPTURES}/nsys_sim_colocated_v100.sqlite", "--out", str(trace),
                 "--profiles-out", str(prof)]) == 0
    assert "800 executions from 800 ranges" in capsys.readouterr().err
    t = Trace.from_csv(trace)
    assert not ran_alone(t).all()  # batches ran together
    assert main(["fit", "--trace", str(trace), "--profiles", str(prof), "--out", str(model)]) == 0
    report = capsys.readouterr().out.splitlines()
    assert main(["evaluate", "--model-file", str(model), "--trace", str(trace), "--profiles", str(prof),
                 "--online", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["model"]["mape_%"] < got["baselines"]["no_interference"]["mape_%"]
    # the figures docs/capture.md quotes for this walkthrough
    doc = (Path(__file__).resolve().parents[1] / "docs" / "capture.md").read_text()
    figures = (got["model"]["mape_%"], *(got["baselines"][k]["mape_%"]
                                        for k in ("no_interference", "global_mean", "pair_mean")))
    quoted = "`evaluate --online` on the same 800 executions gives {:.2f} % (no interference {:.2f} %, global mean\n" \
             "{:.2f} %, pair mean {:.2f} %)".format(*figures)
    assert quoted in doc
    # and the selection table it quotes is what fit printed (warm, cold online, cold frozen error in %)
    for label, shown in (("entity_rls, shares map, target rate", "entity_rls, shares map, target rate (chosen)"),
                         *((f"baseline: {k}, target rate", f"baseline: {k}")
                           for k in ("no interference", "global mean", "pair mean"))):
        (line,) = [ln for ln in report if ln.strip().startswith(label + "  ")]
        warm, online, frozen = line.strip()[len(label):].split()[:3]
        assert f"| {shown} | {warm} | {online} | {frozen} |" in doc, line


def test_the_simulated_export_is_what_its_script_writes(tmp_path):
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("sim_nsys_export", root / "tools" / "sim_nsys_export.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "again.sqlite"
    assert mod.write_export(str(out)) == 800

    def rows(path):  # every table's rows (the file's header bytes name the SQLite library that wrote it)
        import sqlite3

        con = sqlite3.connect(path)
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        got = {n: con.execute(f'SELECT * FROM "{n}"').fetchall() for n in names}
        con.close()
        return got

    assert rows(out) == rows(root / CAPTURES / "nsys_sim_colocated_v100.sqlite")


def _two_gpu_types(src, dst):
    """The A100 export plus a copy of its CUDA and NVTX rows as another process on device 1, which
    TARGET_INFO_GPU names an H100: one capture, two GPU types."""
    import shutil
    import sqlite3

    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    con = sqlite3.connect(dst)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME",
                  "NVTX_EVENTS"):
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        expr = ["1" if c == "deviceId" else f'"{c}" + {1 << 24}' if c in ("globalPid", "globalTid", "endGlobalTid")
                else f'"{c}"' for c in cols]
        con.execute(f'INSERT INTO "{table}" ({", ".join(f"{c!r}" for c in cols)}) SELECT {", ".join(expr)} '
                    f'FROM "{table}"')
    cols = [r[1] for r in con.execute('PRAGMA table_info("TARGET_INFO_GPU")')]
    expr = ["'NVIDIA H100 80GB HBM3'" if c == "name" else f'"{c}" + 1' if c in ("id", "cuDevice") else f'"{c}"'
            for c in cols]
    con.execute(f'INSERT INTO TARGET_INFO_GPU ({", ".join(f"{c!r}" for c in cols)}) SELECT {", ".join(expr)} '
                'FROM TARGET_INFO_GPU')
    con.commit()
    con.close()
    return dst


def test_a_capture_with_two_gpu_types_fits_with_no_other_file(tmp_path, capsys):
    cap = _two_gpu_types(f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", tmp_path / "two.sqlite")
    assert capture_gpu_types(cap) == {"gpu0": "NVIDIA A100-SXM4-40GB", "gpu1": "NVIDIA H100 80GB HBM3"}
    trace, prof, model = tmp_path / "t.csv", tmp_path / "p.csv", tmp_path / "m.json"
    assert main(["ingest-trace", str(cap), "--name-pattern", "{model}", "--batch-size", "1", "--out", str(trace),
                 "--profiles-out", str(prof)]) == 0
    assert "by device: the GPUs are of several types" in capsys.readouterr().err
    lines = prof.read_text().splitlines()
    assert lines[0] == "gpu,model,batch_size,solo_ms,sm,l2,dram,n_alone,gpu_type"
    assert [ln.split(",")[0] + "," + ln.split(",")[-1] for ln in lines[1:]] == [
        "gpu0,NVIDIA A100-SXM4-40GB", "gpu1,NVIDIA H100 80GB HBM3"]
    assert main(["fit", "--trace", str(trace), "--profiles", str(prof), "--predictor", "rls",
                 "--out", str(model)]) == 0


# ----------------------------------------------------------------------------- GPU metrics sampling -> counters
_METRICS_SCHEMA = """
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
    metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
CREATE TABLE GPU_METRICS (timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL,
    value INTEGER NOT NULL);
"""
#: GPU_METRICS typeId of device 0 (its low byte is the device) and the metric ids of this test's GPU type.
_TYPE = 0x10000
_NAMES = {0: "GR Active [Throughput %]", 1: "SMs Active [Throughput %]", 2: "DRAM Read Bandwidth [Throughput %]",
          3: "DRAM Write Bandwidth [Throughput %]"}


def with_gpu_metrics(src, dst, samples):
    """A copy of the export ``src`` at ``dst`` with GPU metrics sampling tables holding ``samples``:
    (timestamp ns, metric id of :data:`_NAMES`, value %) rows on device 0, as nsys writes them."""
    import shutil
    import sqlite3

    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    con.executescript(_METRICS_SCHEMA)
    con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, 'GA100 (test)', ?, ?)",
                    [(_TYPE, i, n) for i, n in _NAMES.items()])
    con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)", [(t, _TYPE, m, v) for t, m, v in samples])
    con.commit()
    con.close()
    return dst


def _saxpy_samples():
    """Samples every 0.5 ms over the saxpy capture: SM 40 %, DRAM 20 % read + 10 % write while an execution
    runs, 0 between them, and GR Active (no counter) at 99 % throughout."""
    from interfpred.data.ingest.capture import read_capture_trace

    tr = read_capture_trace(f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", name_pattern="{model}", batch_size=1)
    lo, hi = float(tr.start_ms.min()) - 5.0, float(tr.end_ms.max()) + 5.0
    rows, inside = [], 0
    for k in range(int((hi - lo) / 0.5)):
        t_ms = lo + 0.5 * k
        running = bool(np.any((tr.start_ms <= t_ms) & (t_ms <= tr.end_ms)))
        inside += running
        ns = int(round(t_ms * 1e6))
        rows += [(ns, 0, 99), (ns, 1, 40 if running else 0), (ns, 2, 20 if running else 0),
                 (ns, 3, 10 if running else 0)]
    return rows, inside


def test_profiles_out_takes_counters_from_gpu_metrics_sampling(tmp_path, capsys):
    rows, inside = _saxpy_samples()
    db = with_gpu_metrics(f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", tmp_path / "saxpy_metrics.sqlite", rows)
    trace, prof, model = tmp_path / "t.csv", tmp_path / "p.csv", tmp_path / "m.json"
    assert main(["ingest-trace", str(db), "--name-pattern", "{model}", "--batch-size", "1", "--out", str(trace),
                 "--profiles-out", str(prof)]) == 0
    assert "counters dram, sm from GPU metrics sampling" in capsys.readouterr().err
    from interfpred.data.profiles import ProfileTable

    p = ProfileTable.from_csv(prof)
    row = p.lookup("saxpy", 1)
    assert row.sm == pytest.approx(0.40) and row.dram == pytest.approx(0.30)   # % of peak / 100, read + write
    assert row.l2 is None                                                       # not sampled: missing, not 0
    assert list(p.column("n_samples")) == [str(inside)] and inside > 0
    assert prof.read_text().splitlines()[0] == "gpu,model,batch_size,solo_ms,sm,l2,dram,n_alone,n_samples"
    assert main(["fit", "--trace", str(trace), "--profiles", str(prof), "--out", str(model)]) == 0


def test_a_capture_without_metrics_tables_gives_none_and_the_same_profiles():
    from interfpred.data.ingest.nsys import read_nsys_gpu_metrics

    for name in ("nsys_saxpy_mpi_a100.sqlite", "nsys_nvfuser_h200.sqlite", "nsys_sim_colocated_v100.sqlite"):
        assert read_nsys_gpu_metrics(f"{CAPTURES}/{name}") is None
    t = Trace(id=[1, 2], device=["gpu0"] * 2, model=["a"] * 2, batch_size=[1] * 2, start_ms=[0.0, 5.0],
              end_ms=[2.0, 6.0])
    assert solo_profiles(t, {}, metrics=None) == solo_profiles(t, {})


def test_counters_are_means_over_lone_executions_only_and_missing_stays_missing():
    from interfpred.data.ingest.nsys import GpuMetricSamples

    # a (alone 0-2 on gpu0), b and c overlap 10-14; a again alone 20-22; d alone on gpu1 with no sample at all
    t = Trace(id=[1, 2, 3, 4, 5], device=["gpu0", "gpu0", "gpu0", "gpu0", "gpu1"], model=["a", "b", "c", "a", "d"],
              batch_size=[1] * 5, start_ms=[0.0, 10.0, 12.0, 20.0, 0.0], end_ms=[2.0, 14.0, 16.0, 22.0, 3.0])
    samples = GpuMetricSamples(device=np.array(["gpu0"] * 5), time_ms=np.array([1.0, 13.0, 21.0, 21.5, 30.0]),
                               counter=np.array(["sm"] * 5), value=np.array([0.2, 0.9, 0.4, 0.6, 0.99]))
    p = solo_profiles(t, {}, models=["a", "d"], metrics=samples)
    a, d = p.lookup("a", 1, gpu="gpu0"), p.lookup("d", 1, gpu="gpu1")
    assert a.sm == pytest.approx((0.2 + 0.4 + 0.6) / 3) and a.dram is None   # no DRAM sample: missing
    assert d.sm is None and d.dram is None                                    # its device was not sampled
    assert list(p.column("n_samples")) == ["3", "0"]


@pytest.mark.parametrize("damage,expected", [
    ("UPDATE GPU_METRICS SET value = 'busy' WHERE rowid = 3",
     r"table GPU_METRICS row 3 has value str 'busy', not a number in \[0, 100\] \(% of peak\)"),
    ("UPDATE GPU_METRICS SET value = 250 WHERE rowid = 2", r"table GPU_METRICS row 2 has value 250"),
    ("UPDATE GPU_METRICS SET timestamp = 2.5 WHERE rowid = 2", r"table GPU_METRICS row 2 has timestamp 2.5, not an "
                                                               r"integer time \(ns\)"),
    ("DROP TABLE TARGET_INFO_GPU_METRICS", r"has a GPU_METRICS table but no TARGET_INFO_GPU_METRICS table"),
    ("ALTER TABLE GPU_METRICS DROP COLUMN metricId", r"table GPU_METRICS has no column metricId"),
])
def test_a_malformed_metrics_table_is_one_line_naming_the_file(tmp_path, capsys, damage, expected):
    import re
    import sqlite3

    db = with_gpu_metrics(f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", tmp_path / "bad.sqlite",
                          [(1_000_000 * k, k % 4, 30) for k in range(8)])
    con = sqlite3.connect(db)
    con.execute(damage)
    con.commit()
    con.close()
    out, prof = tmp_path / "t.csv", tmp_path / "p.csv"
    assert main(["ingest-trace", str(db), "--name-pattern", "{model}", "--batch-size", "1", "--out", str(out),
                 "--profiles-out", str(prof)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(db) in line and re.search(expected, line), line
    assert not out.exists() and not prof.exists()


def test_samples_of_a_metric_that_feeds_no_counter_are_not_read(tmp_path):
    import sqlite3

    from interfpred.data.ingest.nsys import read_nsys_gpu_metrics

    # GR Active (metric 0) feeds no counter: its damage does not matter; DRAM read + write of one sample add up
    # (capped at the peak), SM Active is read as is
    db = with_gpu_metrics(f"{CAPTURES}/nsys_saxpy_mpi_a100.sqlite", tmp_path / "gr.sqlite",
                          [(1_000_000 * k, m, v) for k in (1, 2) for m, v in ((0, 30), (1, 40), (2, 20), (3, 10 + 40 * k))])
    con = sqlite3.connect(db)
    con.execute("UPDATE GPU_METRICS SET value = 'n/a' WHERE metricId = 0")
    con.commit()
    con.close()
    got = read_nsys_gpu_metrics(db)
    assert got is not None and got.counters == ("dram", "sm")
    assert list(zip(got.counter.tolist(), got.time_ms.tolist())) == [("dram", 1.0), ("dram", 2.0), ("sm", 1.0),
                                                                      ("sm", 2.0)]
    assert got.value.tolist() == pytest.approx([0.7, 1.0, 0.4, 0.4])   # 20 + 50 %; 20 + 90 % capped; 40 %


_SAMPLE = st.tuples(st.integers(0, 40), st.sampled_from([_TYPE, _TYPE + 1, _TYPE + 2]), st.sampled_from(sorted(_NAMES)),
                    st.integers(0, 100))


@settings(max_examples=40, deadline=None)
@given(st.lists(_SAMPLE, max_size=30, unique_by=lambda r: r[:3]))
def test_the_metrics_reader_matches_a_plain_reading_of_the_tables(tmp_path_factory, samples):
    import sqlite3

    from interfpred.data.ingest.nsys import read_nsys_gpu_metrics

    db = tmp_path_factory.mktemp("metrics") / "m.sqlite"
    con = sqlite3.connect(db)
    con.executescript(_METRICS_SCHEMA)
    con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, 'GA100 (test)', ?, ?)",
                    [(ty, i, n) for ty in (_TYPE, _TYPE + 1, _TYPE + 2) for i, n in _NAMES.items()])
    con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)", [(1000 * t, ty, m, v) for t, ty, m, v in samples])
    con.commit()
    con.close()
    want: dict[tuple[str, float, str], float] = {}
    for t, ty, m, v in samples:
        counter = {1: "sm", 2: "dram", 3: "dram"}.get(m)
        if counter is not None:
            key = (f"gpu{ty & 0xFF}", t / 1000.0, counter)
            want[key] = min(1.0, want.get(key, 0.0) + v / 100.0)
    got = read_nsys_gpu_metrics(db)
    if not want:
        assert got is None
        return
    assert got is not None
    have = {(d, t, c): v for d, t, c, v in zip(got.device.tolist(), got.time_ms.tolist(), got.counter.tolist(),
                                               got.value.tolist())}
    assert have.keys() == want.keys()
    assert all(have[k] == pytest.approx(want[k]) for k in want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6), st.sampled_from(["gpu0", "gpu1"])), min_size=1,
                max_size=8),
       st.lists(st.tuples(st.sampled_from(["gpu0", "gpu1"]), st.integers(0, 40), st.sampled_from(["sm", "dram"]),
                          st.floats(0, 1)), max_size=25, unique_by=lambda r: r[:3]))
def test_counters_are_the_plain_mean_of_the_samples_inside_lone_executions(rows, samples):
    from interfpred.data.ingest.nsys import GpuMetricSamples

    n = len(rows)
    t = Trace(id=list(range(n)), device=[g for _, _, g in rows], model=[f"m{i % 2}" for i in range(n)],
              batch_size=[1] * n, start_ms=[float(s) for s, _, _ in rows],
              end_ms=[float(s + d) for s, d, _ in rows])
    alone = ran_alone(t)
    keep = sorted({str(t.model[i]) for i in range(n) if alone[i]})
    if not keep:
        return
    metrics = GpuMetricSamples(device=np.array([d for d, *_ in samples], dtype=str),
                               time_ms=np.array([float(x) for _, x, _, _ in samples]),
                               counter=np.array([c for _, _, c, _ in samples], dtype=str),
                               value=np.array([v for *_, v in samples]))
    p = solo_profiles(t, {"gpu0": "A", "gpu1": "A"}, models=keep, metrics=metrics)
    for m in keep:
        lone = [i for i in range(n) if alone[i] and t.model[i] == m]
        row = p.lookup(m, 1)
        for c in ("sm", "dram"):
            inside = [v for d, x, cc, v in samples for i in lone
                      if cc == c and d == t.device[i] and t.start_ms[i] <= x <= t.end_ms[i]]
            got = getattr(row, c)
            assert (got is None) if not inside else got == pytest.approx(float(np.mean(inside)))
