"""`interfpred ingest` and the tidy CSV helpers behind it (manifests, atomic append)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from interfpred import InputError, InterfpredError, ProfileTable
from interfpred.cli import main
from interfpred.data.ingest import (
    ManifestEntry,
    example_path,
    profiles_from_reports,
    read_manifest,
    unique_profiles,
    write_profiles,
)
from interfpred.data.profiles import Profile

REAL = example_path()  # the example Nsight Compute log shipped with the package
NCU = pathlib.Path(__file__).parent / "data" / "ncu"
ROOT = pathlib.Path(__file__).parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rows(out):
    return [line.split(",") for line in out.strip().splitlines()]


def test_example(capsys):
    code, out, err = run(capsys, "ingest", "--example")
    assert code == 0
    # the example is a details page with the Launch Statistics and Occupancy sections: one kernel of
    # 406.24 us, 1.89 waves per SM, block limits SM 32 / registers 1 / shared memory 1 / warps 5
    assert rows(out) == [["gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram", "kernels", "kernel_sum_ms",
                          "kernel_mean_ms", "kernel_p90_ms", "kernel_max_ms", "kernel_residual_ms", "fill_fraction",
                          "waves_mean", "occupancy_blocks", "kernel_occupancy", "truncated"],
                         ["b200", "cublaslt_gemm", "1", "0.40624", "0.2359", "0.1512", "0.0074", "1.0", "0.40624",
                          "0.40624", "0.40624", "0.40624", "0.20312", "1.0", "1.89", "1.0", "0.1875", "0"]]


def test_example_overrides(capsys):
    code, out, _ = run(capsys, "ingest", "--example", "--gpu", "gb200", "--batch-size", "4", "--iterations", "2")
    assert code == 0 and rows(out)[1][:4] == ["gb200", "cublaslt_gemm", "4", "0.20312"]


def test_files_with_per_file_flags_and_out_merge(tmp_path, capsys):
    out_csv = tmp_path / "profiles.csv"
    nvtx = str(NCU / "details_2024_nvtx.csv")
    code, out, err = run(capsys, "ingest", nvtx, nvtx, "--gpu", "h100", "--model", "resnet50",
                         "--batch-size", "1", "--batch-size", "8", "--nvtx-filter", "batch_1",
                         "--nvtx-filter", "batch_8", "--out", str(out_csv))
    assert code == 0, err
    assert [r[2] for r in rows(out)[1:]] == ["1", "8"]
    assert "wrote 2 profiles" in err
    # Append a different key: the old rows stay.
    code, out, err = run(capsys, "ingest", str(REAL), "--gpu", "b200", "--model", "gemm", "--batch-size", "1",
                         "--out", str(out_csv))
    assert code == 0
    table = ProfileTable.from_csv(out_csv)
    assert len(table) == 3 and table.gpus == ("b200", "h100")
    # Same rows again: identical duplicates collapse, nothing lost.
    assert run(capsys, "ingest", str(REAL), "--gpu", "b200", "--model", "gemm", "--batch-size", "1",
               "--out", str(out_csv))[0] == 0
    assert len(ProfileTable.from_csv(out_csv)) == 3


def test_conflicting_append_keeps_file_intact(tmp_path, capsys):
    out_csv = tmp_path / "profiles.csv"
    assert run(capsys, "ingest", str(REAL), "--gpu", "b200", "--model", "gemm", "--batch-size", "1",
               "--out", str(out_csv))[0] == 0
    before = out_csv.read_bytes()
    code, out, err = run(capsys, "ingest", str(REAL), "--gpu", "b200", "--model", "gemm", "--batch-size", "1",
                         "--iterations", "2", "--out", str(out_csv))
    assert code == 2
    assert err.startswith("interfpred: error: ") and err.count("\n") == 1
    assert "conflicts" in err and "unchanged" in err
    assert out_csv.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["profiles.csv"]  # no temporary file left behind
    # --force replaces instead.
    assert run(capsys, "ingest", str(REAL), "--gpu", "b200", "--model", "gemm", "--batch-size", "1",
               "--iterations", "2", "--out", str(out_csv), "--force")[0] == 0
    assert ProfileTable.from_csv(out_csv).lookup("gemm", 1).solo_ms == pytest.approx(0.20312)


def test_manifest_relative_paths(tmp_path, capsys, monkeypatch):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "a.csv").write_bytes((NCU / "details_2022_15col.csv").read_bytes())
    (reports / "raw.csv").write_bytes((NCU / "raw_2024_names.csv").read_bytes())
    (reports / "reports.csv").write_text("file,gpu,model,batch_size,iterations\n"
                                   "a.csv,a10,bert,4,1\nraw.csv,h100,llama,16,2\n\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run(capsys, "ingest", "--manifest", str(reports / "reports.csv"), "--out", "p.csv")
    assert code == 0, err
    t = ProfileTable.from_csv(elsewhere / "p.csv")
    assert t.lookup("llama", 16, gpu="h100").solo_ms == pytest.approx(0.2)
    assert t.lookup("bert", 4, gpu="a10").solo_ms == pytest.approx(0.00272 + 1.25 + 0.00272)


@pytest.mark.parametrize("argv,match", [
    (["ingest"], "exactly one"),
    (["ingest", "--example", "--manifest", "m.csv"], "exactly one"),
    (["ingest", "x.csv", "--model", "m", "--batch-size", "1"], "--gpu is required"),
    (["ingest", "a.csv", "b.csv", "--gpu", "g", "--model", "m", "--batch-size", "1", "--batch-size", "2",
      "--batch-size", "3"], "given 3 times for 2 files"),
    (["ingest", "nothere.csv", "--gpu", "g", "--model", "m", "--batch-size", "1"], "No such file"),
    (["ingest", str(NCU / "details_2022_15col.csv"), "--gpu", "g", "--model", "m", "--batch-size", "1",
      "--kernel-filter", "["], "kernel_filter '['"),
    (["ingest", str(REAL), "--gpu", "g", "--model", "m", "--batch-size", "0"], "batch_size"),
    (["ingest", str(ROOT / "README.md"), "--gpu", "g", "--model", "m", "--batch-size", "1"], "unknown layout"),
    (["ingest", "--manifest", str(REAL)], "manifest lacks column"),
    (["ingest", "--manifest", "m.csv", "--gpu", "g"], "do not also pass"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, match):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("interfpred: error: ") and err.count("\n") == 1
    assert match in err


def test_bad_file_message_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    text = (NCU / "details_2022_15col.csv").read_text().replace('"Duration","usecond","2.72"',
                                                                '"Duration","%","2.72"', 1)
    bad.write_text(text)
    code, _, err = run(capsys, "ingest", str(bad), "--gpu", "g", "--model", "m", "--batch-size", "1")
    assert code == 2 and f"{bad} line 13: Duration has unit '%'" in err


def test_subprocess_no_traceback(tmp_path):
    bad = tmp_path / "bin.csv"
    bad.write_bytes(b"\x00\x01" * 100)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "interfpred", "ingest", str(bad), "--gpu", "g", "--model", "m",
                           "--batch-size", "1"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "binary file" in proc.stderr
    ok = subprocess.run([sys.executable, "-m", "interfpred", "ingest", "--example"], capture_output=True,
                        text=True, env=env, cwd=tmp_path)
    assert ok.returncode == 0 and "b200,cublaslt_gemm,1,0.40624" in ok.stdout


# ------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("text,match", [
    ("", "empty manifest"),
    ("file,gpu,model\n", "lacks column"),
    ("file,gpu,model,batch_size,colour\n", "unknown manifest column"),
    ("file,gpu,model,batch_size\na.csv,g,m,2.5\n", "must be a positive integer"),
    ("file,gpu,model,batch_size\na.csv,g,m,x\n", "not a number"),
    ("file,gpu,model,batch_size\na.csv,,m,1\n", "gpu is empty"),
    ("file,gpu,model,batch_size\na.csv,g,m\n", "has 3 fields"),
    ("file,gpu,model,batch_size\n", "lists no reports"),
])
def test_manifest_errors(tmp_path, text, match):
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=match) as info:
        read_manifest(p)
    assert str(p) in str(info.value)


def test_manifest_binary(tmp_path):
    p = tmp_path / "m.csv"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="binary|UTF-8"):
        read_manifest(p)


def test_manifest_optional_columns(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("file,gpu,model,batch_size,iterations,kernel_filter,nvtx_filter\nsub/r.csv,g,m,2,5,gemm,bs2\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.csv").write_text("")
    [e] = read_manifest(p)
    assert (e.file, e.iterations, e.kernel_filter, e.nvtx_filter, e.line) == (
        str((tmp_path / "sub" / "r.csv").resolve()), 5, "gemm", "bs2", 2)


@pytest.mark.parametrize("entry, match", [
    ("/etc/passwd", "absolute path"),
    ("../outside.csv", "leaves the manifest's folder"),
    ("sub/../../outside.csv", "leaves the manifest's folder"),
    ("fifo.csv", "not a regular file"),
    ("sub", "is a directory"),
    ("missing.csv", "No such file"),
])
def test_manifest_entries_confined_to_regular_files(tmp_path, entry, match):
    import os

    folder = tmp_path / "reports"
    (folder / "sub").mkdir(parents=True)
    (tmp_path / "outside.csv").write_text("")
    os.mkfifo(folder / "fifo.csv")
    p = folder / "m.csv"
    p.write_text(f"file,gpu,model,batch_size\n{entry},g,m,2\n")
    with pytest.raises(InputError, match=match) as info:
        read_manifest(p)  # a FIFO entry must be refused, not opened (that would block)
    assert "m.csv line 2" in str(info.value)


def test_read_kernels_refuses_fifo(tmp_path):
    import os

    from interfpred.data.ingest import read_kernels

    os.mkfifo(tmp_path / "f.csv")
    with pytest.raises(InputError, match="not a regular file"):
        read_kernels(tmp_path / "f.csv")


def test_write_profiles_append_refusal_leaves_state(tmp_path):
    p = tmp_path / "out.csv"
    a = ProfileTable.from_profiles([Profile(gpu="g", model="m", batch_size=1, solo_ms=1.0, sm=0.1, l2=0.1, dram=0.1)])
    b = ProfileTable.from_profiles([Profile(gpu="g", model="m", batch_size=1, solo_ms=2.0, sm=0.1, l2=0.1, dram=0.1)])
    write_profiles(a, p)
    before = p.read_bytes()
    with pytest.raises(InputError, match="unchanged"):
        write_profiles(b, p, append=True)
    assert p.read_bytes() == before
    write_profiles(b, p)  # no append: replaced
    assert ProfileTable.from_csv(p).lookup("m", 1).solo_ms == 2.0


def test_manifest_duplicates(tmp_path, capsys):
    (tmp_path / "r.csv").write_bytes(REAL.read_bytes())
    m = tmp_path / "reports.csv"
    m.write_text("file,gpu,model,batch_size,iterations\nr.csv,b200,g,1,1\nr.csv,b200,g,1,1\n")
    code, out, _ = run(capsys, "ingest", "--manifest", str(m))
    assert code == 0 and len(rows(out)) == 2  # identical reports collapse
    m.write_text("file,gpu,model,batch_size,iterations\nr.csv,b200,g,1,1\nr.csv,b200,g,1,2\n")
    code, _, err = run(capsys, "ingest", "--manifest", str(m))
    assert code == 2 and f"{m} line 3: profile for" in err and f"{m} line 2" in err


def test_unique_profiles_keeps_one_per_key_and_names_both_places_of_a_conflict():
    a = Profile(gpu="g", model="m", batch_size=1, solo_ms=1.0, sm=0.1, l2=0.1, dram=0.1)
    b = Profile(gpu="g", model="m", batch_size=2, solo_ms=1.5, sm=0.1, l2=0.1, dram=0.1)
    kept = unique_profiles([(a, "x.csv"), (b, "y.csv"), (a, "z.csv")])
    assert [key[:3] for key in kept] == [("g", "m", 1), ("g", "m", 2)]
    assert [key[3] for key in kept] == pytest.approx([100.0, 100.0])
    assert [where for _, where in kept.values()] == ["x.csv", "y.csv"]
    other_share = a.model_copy(update={"share": 50.0, "solo_ms": 2.0})  # another key: both kept
    assert len(unique_profiles([(a, "x.csv"), (other_share, "y.csv")])) == 2
    with pytest.raises(InterfpredError, match=r"^z\.csv: profile for .* disagrees with the one from x\.csv"):
        unique_profiles([(a, "x.csv"), (a.model_copy(update={"solo_ms": 1.1}), "z.csv")])


def test_profiles_from_reports_places_and_share(tmp_path):
    (tmp_path / "r.csv").write_bytes(REAL.read_bytes())
    m = tmp_path / "reports.csv"
    m.write_text("file,gpu,model,batch_size,iterations,share\nr.csv,b200,g,1,1,\nr.csv,b200,g,2,2,40\n")
    got = profiles_from_reports(read_manifest(m), share=60.0, manifest=m)
    assert [where for _, where in got] == [f"{m} line 2", f"{m} line 3"]
    assert [p.share for p, _ in got] == pytest.approx([60.0, 40.0])  # an entry's own share wins
    assert got[1][0].solo_ms == pytest.approx(got[0][0].solo_ms / 2)
    [(p, where)] = profiles_from_reports([ManifestEntry(file=str(REAL), gpu="b200", model="g", batch_size=1)])
    assert where == str(REAL) and p.share == pytest.approx(100.0)
    with pytest.raises(InterfpredError, match="share 0 must be"):
        profiles_from_reports([], share=0.0)
    with pytest.raises(InterfpredError, match=f"^{REAL}: no kernel launch"):
        profiles_from_reports([ManifestEntry(file=str(REAL), gpu="b", model="g", batch_size=1, kernel_filter="^nope$")])
