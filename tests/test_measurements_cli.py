"""fit / evaluate / predict on measurements (with and without share and counters), the baselines in
every printed table, ingest --share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from interfpred import InterferenceModel, Measurements, ProfileTable, TimeWeighted, load_model
from interfpred.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _pairs(tmp_path, share=True):
    """A small measured data set with a clear per-pair structure (a slows b more than c does)."""
    rows = ["run,gpu,model,batch_size" + (",share" if share else "") + ",solo_ms,observed_ms"]
    rng = np.random.default_rng(0)
    effect = {("a", "b"): 1.6, ("b", "a"): 1.2, ("a", "c"): 1.1, ("c", "a"): 1.3, ("b", "c"): 1.4, ("c", "b"): 1.05}
    for r in range(30):
        x, y = [("a", "b"), ("a", "c"), ("b", "c")][r % 3]
        for own, other in ((x, y), (y, x)):
            solo = {"a": 4.0, "b": 8.0, "c": 2.0}[own]
            obs = solo * effect[(own, other)] * (1 + 0.01 * rng.standard_normal())
            rows.append(f"r{r},v100,{own},8" + (",50" if share else "") + f",{solo},{obs!r}")
    p = tmp_path / ("pairs.csv" if share else "pairs_noshare.csv")
    p.write_text("\n".join(rows) + "\n")
    return p


def _profiles(tmp_path, counters=True):
    p = tmp_path / "profiles.csv"
    if counters:
        p.write_text("gpu,model,batch_size,solo_ms,sm,l2,dram,share\n"
                     "v100,a,8,4.0,0.5,0.3,0.2,50\nv100,b,8,8.0,0.7,0.5,0.6,50\nv100,c,8,2.0,0.2,0.1,0.1,50\n")
    else:   # no SM column and one missing DRAM value: never read as zero
        p.write_text("gpu,model,batch_size,solo_ms,l2,dram,share\n"
                     "v100,a,8,4.0,0.3,0.2,50\nv100,b,8,8.0,0.5,,50\nv100,c,8,2.0,0.1,0.1,50\n")
    return p


def test_fit_evaluate_predict_on_measurements_with_baselines(tmp_path, capsys):
    pairs, model = _pairs(tmp_path), tmp_path / "m.json"
    assert main(["fit", "--measurements", str(pairs), "--profiles", str(_profiles(tmp_path)), "--feature-map", "rich",
                 "--out", str(model)]) == 0
    out = capsys.readouterr().out
    assert "fit on 60 measurement rows" in out
    for label in ("baseline: no interference", "baseline: global mean", "baseline: pair mean"):
        assert label in out
    assert main(["evaluate", "--model-file", str(model), "--measurements", str(pairs), "--profiles",
                 str(_profiles(tmp_path)), "--online"]) == 0
    out = capsys.readouterr().out
    assert "online (prequential) evaluation" in out and "baseline: pair mean" in out
    pred = tmp_path / "p.csv"
    assert main(["predict", "--model-file", str(model), "--measurements", str(pairs), "--profiles",
                 str(_profiles(tmp_path)), "--out", str(pred)]) == 0
    lines = pred.read_text().splitlines()
    assert lines[0] == "run,member,model,batch_size,share,predicted_latency_ms,predicted_slowdown,observed_latency_ms"
    assert len(lines) == 61
    state = json.loads(model.read_text())
    assert sorted(state["baselines"]) == ["global_mean", "no_interference", "pair_mean"]


def test_without_share_column_and_with_missing_counters(tmp_path, capsys):
    pairs = _pairs(tmp_path, share=False)
    model = tmp_path / "m.json"
    # no share column: 100 everywhere, so the share-50 profiles do not match: a map they would feed is
    # refused naming the lookup, and without a named map only counter-free maps are candidates, said so
    assert main(["fit", "--measurements", str(pairs), "--profiles", str(_profiles(tmp_path)),
                 "--feature-map", "default", "--out", str(model)]) == 2
    assert "share 100 of model" in capsys.readouterr().err
    assert main(["fit", "--measurements", str(pairs), "--profiles", str(_profiles(tmp_path)),
                 "--out", str(model)]) == 0
    err = capsys.readouterr().err
    assert "do not cover every row" in err and "share 100 of model" in err
    model.unlink()
    # without profiles a counter-free map is chosen, and the CLI says which
    assert main(["fit", "--measurements", str(pairs), "--out", str(model)]) == 0
    assert "shares map" in capsys.readouterr().out     # the candidates (a baseline may win these few rows)
    # profiles lacking sm (and one dram value): a map that needs them is refused by name
    pairs50 = _pairs(tmp_path)
    assert main(["fit", "--measurements", str(pairs50), "--profiles", str(_profiles(tmp_path, counters=False)),
                 "--feature-map", "gpulets", "--out", str(model), "--force"]) == 2
    err = capsys.readouterr().err
    assert "needs the dram counter" in err and "shares" in err and len(err.strip().splitlines()) == 1
    assert main(["fit", "--measurements", str(pairs50), "--profiles", str(_profiles(tmp_path, counters=False)),
                 "--out", str(model), "--force"]) == 0
    assert "shares map" in capsys.readouterr().out     # the candidates (a baseline may win these few rows)   # the map the counters support
    prof = ProfileTable.from_csv(_profiles(tmp_path, counters=False))
    assert np.isnan(prof.column("sm")).all() and np.isnan(prof.lookup_arrays(["b"], [8], shares=[50])["dram"][0])


def test_split_evaluation_and_bad_rows_exit_2(tmp_path, capsys):
    pairs = _pairs(tmp_path)
    assert main(["evaluate", "--measurements", str(pairs), "--split", "pair", "--repeats", "3"]) == 0
    out = capsys.readouterr().out
    assert "3 seeded 70/30 splits by run" in out and "baseline: pair mean" in out
    assert main(["evaluate", "--measurements", str(pairs), "--split", "model", "--online"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-model-out over 3 models" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("run,gpu,model,batch_size,solo_ms,observed_ms\n1,g,a,1,1,2\n1,g2,b,1,1,2\n")
    proc = subprocess.run([sys.executable, "-m", "interfpred", "fit", "--measurements", str(bad), "--out",
                           str(tmp_path / "x.json")], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"interfpred: error: {bad} line 3: run '1' spans two GPUs: 'g2' here, 'g' at line 2")
    assert not (tmp_path / "x.json").exists()


def test_gavel_through_the_cli_and_python(tmp_path, capsys):
    assert main(["datasets"]) == 0
    assert "gavel_v100: 660 rows, 330 runs" in capsys.readouterr().out
    assert main(["datasets", "gavel_v100", "--out", str(tmp_path / "g.csv")]) == 0
    assert Measurements.read(tmp_path / "g.csv").n_runs == 330
    assert main(["fit", "--measurements", "dataset:gavel_v100", "--target", "rate", "--out",
                 str(tmp_path / "g.json")]) == 0
    capsys.readouterr()
    model = load_model(tmp_path / "g.json")
    ev = model.evaluate(measurements=Measurements.read(tmp_path / "g.csv"), online=True)
    assert set(ev.baselines) == {"no_interference", "global_mean", "pair_mean"}
    assert ev.baselines["pair_mean"].mape < ev.baselines["global_mean"].mape


def test_model_mixes_traces_and_measurements(tmp_path):
    from interfpred import Trace

    prof = ProfileTable.from_csv(_profiles(tmp_path))
    tr = Trace(id=[1, 2, 3], device=["v100"] * 3, model=["a", "b", "c"], batch_size=[8] * 3, share=[50] * 3,
               start_ms=[0.0, 1.0, 2.0], end_ms=[6.0, 12.0, 3.0])
    m = Measurements.read(_pairs(tmp_path))
    model = InterferenceModel({"feature_map": "gpulets"}, "offline_linear").fit(tr, prof, measurements=m)
    assert model.predictor.n_features_in_ == 4
    fm = model.features(tr, prof, measurements=m)
    assert len(fm) == 63 and len(fm.entities) == 63      # trace rows carry their entities too
    ev = model.evaluate(profiles=prof, measurements=m)
    assert ev.summary.n == 60 and ev.baselines["pair_mean"].mape <= ev.baselines["global_mean"].mape


def test_ingest_records_the_share(tmp_path, capsys):
    out = tmp_path / "p.csv"
    assert main(["ingest", "--example", "--share", "40", "--out", str(out)]) == 0
    assert main(["ingest", "--example", "--out", str(out)]) == 0      # the share-100 row joins, not clashes
    table = ProfileTable.from_csv(out)
    assert sorted(table.column("share").tolist()) == [40.0, 100.0]
    assert main(["ingest", "--example", "--share", "0", "--out", str(out)]) == 2
    assert "--share 0 must be" in capsys.readouterr().err


def test_refused_fit_leaves_the_model_as_it_was(tmp_path):
    prof = ProfileTable.from_csv(_profiles(tmp_path, counters=False))
    m = Measurements.read(_pairs(tmp_path, share=False))            # share 100: no such profile
    model = InterferenceModel(TimeWeighted(feature_map="default"))     # a map the profiles must feed
    before = (repr(model), model.note)
    with pytest.raises(ValueError, match="share 100 of model"):
        model.fit(profiles=prof, measurements=m)
    assert (repr(model), model.note) == before and not model.baselines


def test_manifest_share_column(tmp_path, capsys):
    import shutil

    from interfpred.data.ingest import example_path

    shutil.copy(example_path(), tmp_path / "run.log")   # manifest entries lie in the manifest's folder
    man = tmp_path / "reports.csv"
    man.write_text("file,gpu,model,batch_size,share\nrun.log,b200,gemm,1,30\nrun.log,b200,gemm,1,\n")
    assert main(["ingest", "--manifest", str(man), "--share", "60", "--out", str(tmp_path / "p.csv")]) == 0
    assert sorted(ProfileTable.from_csv(tmp_path / "p.csv").column("share").tolist()) == [30.0, 60.0]
    man.write_text("file,gpu,model,batch_size,share\nrun.log,b200,gemm,1,120\n")
    assert main(["ingest", "--manifest", str(man)]) == 2
    assert f"{man} line 2: share '120' must be an MPS active thread percentage" in capsys.readouterr().err
