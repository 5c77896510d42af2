"""Inputs that parse but cannot be measurements are refused with one line and exit 2, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from interfpred.cli import main
from interfpred.constants import LATENCY_MIN_MS

CAPTURE = "tests/data/capture"
SAXPY = f"{CAPTURE}/nsys_saxpy_mpi_a100.sqlite"
MA_CONC = f"{CAPTURE}/model_analyzer_concurrent_resnet50_vgg19.ckpt"
MA_SOLO = f"{CAPTURE}/model_analyzer_solo_resnet50_trimmed.ckpt"


def _refused(capsys, argv, out, *words):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interfpred: error:"), err
    for w in words:
        assert w in err[0], err[0]
    assert not os.path.exists(out)
    return err[0]


def test_an_nsys_kernel_starting_before_its_launch_is_refused_with_kernels(tmp_path, capsys):
    db = tmp_path / "early.sqlite"
    shutil.copyfile(SAXPY, db)
    os.chmod(db, 0o644)
    con = sqlite3.connect(db)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -5000000000 WHERE rowid = "
                "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    con.commit()
    con.close()
    out = tmp_path / "t.csv"
    _refused(capsys, ["ingest-trace", db, "--kernels", "--out", out], out, "early.sqlite",
             "before the CUDA call that launched it")
    assert main(["ingest-trace", SAXPY, "--kernels", "--out", str(out)]) == 0     # the untouched capture reads


def test_a_kineto_kernel_whose_pid_is_not_a_device_is_refused(tmp_path, capsys):
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 110.0,
               "dur": 5.0, "args": {"correlation": 3}},
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": {}, "tid": 9, "ts": 120.5, "dur": 30.0,
               "args": {"stream": 9, "correlation": 3}}]
    trace = tmp_path / "k.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "t.csv"
    _refused(capsys, ["ingest-trace", trace, "--kernels", "--out", out], out, "k.json", "pid", "{}")
    events[1]["pid"] = 0                                  # Kineto's GPU rows: pid is the device
    trace.write_text(json.dumps({"traceEvents": events}))
    assert main(["ingest-trace", str(trace), "--kernels", "--out", str(out)]) == 0
    assert "gpu0" in out.read_text()


def _set_latency(node, value):
    if isinstance(node, dict):
        for v in node.values():
            _set_latency(v, value)
    elif isinstance(node, list):
        if len(node) == 2 and node[0] == "perf_latency_avg" and isinstance(node[1], dict):
            node[1]["_value"] = value
        for v in node:
            _set_latency(v, value)


def test_a_model_analyzer_latency_below_the_minimum_is_refused(tmp_path, capsys):
    doc = json.loads(open(MA_SOLO).read())
    _set_latency(doc, 1e-320)
    solo = tmp_path / "solo.ckpt"
    solo.write_text(json.dumps(doc))
    out = tmp_path / "m.csv"
    _refused(capsys, ["ingest-measurements", MA_CONC, solo, "--out", out], out, "solo.ckpt", "1e-320",
             f"LATENCY_MIN_MS={LATENCY_MIN_MS:g}")


@pytest.mark.parametrize("column,value", [("solo_ms", 1e-300), ("observed_ms", 5e-324), ("solo_ms", 0.0)])
def test_predict_refuses_a_measurement_latency_below_the_minimum(tmp_path, capsys, column, value):
    model = tmp_path / "model.json"
    assert main(["fit", "--measurements", "dataset:gavel_v100", "--predictor", "rls", "--out", str(model),
                 "--quiet"]) == 0
    rows = {"run": ["r1", "r1"], "gpu": ["v100"] * 2, "model": ["A3C", "ResNet-18"], "batch_size": [1, 16],
            "solo_ms": [10.0, 20.0], "observed_ms": [12.0, 25.0]}
    rows[column][1] = value
    runs = tmp_path / "runs.csv"
    runs.write_text("run,gpu,model,batch_size,solo_ms,observed_ms\n"
                    + "".join(",".join(str(rows[k][i]) for k in rows) + "\n" for i in range(2)))
    capsys.readouterr()
    out = tmp_path / "p.csv"
    _refused(capsys, ["predict", "--model-file", model, "--measurements", runs, "--out", out], out,
             "runs.csv line 3", column, "LATENCY_MIN_MS")
