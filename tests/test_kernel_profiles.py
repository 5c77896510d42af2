"""Kernel-level profiles: launch columns of every ncu page, the per-batch kernel statistics, truncated reports.

The statistics are checked against a plain numpy reference computed from the real H200 files read
with the csv module alone (tests/data/h200_ncu, README.md there).
"""

from __future__ import annotations

import csv
import gzip
import math
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interfpred import ProfileTable
from interfpred.cli import main
from interfpred.constants import KERNEL_LAUNCH_COLUMNS, KERNEL_PROFILE_COLUMNS
from interfpred.data.ingest import (
    KernelTable,
    ManifestEntry,
    NcuFormatError,
    example_path,
    kernel_statistics,
    profile_from_kernels,
    profiles_from_reports,
    read_kernels,
    write_profiles,
)
from interfpred.data.ingest.ncu_log import TruncatedReportError, TruncatedReportWarning, scan_ncu_log
from interfpred.errors import InputError, InterfpredError

H200 = pathlib.Path(__file__).parent / "data" / "h200_ncu"
NCU = pathlib.Path(__file__).parent / "data" / "ncu"
COMPLETE = ["triad_1_raw.csv", "gemm_1_raw.csv", "bert_base_8_raw.csv"]
TRUNCATED = "resnet50_8_raw.csv"
# raw-page metric name -> KernelTable launch column
RAW_LAUNCH = {
    "launch__grid_size": "grid_blocks", "launch__block_size": "block_threads",
    "launch__waves_per_multiprocessor": "waves_per_sm", "launch__registers_per_thread": "registers_per_thread",
    "launch__shared_mem_per_block": "shared_mem_per_block",
    "launch__occupancy_limit_blocks": "occupancy_limit_blocks",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps": "occupancy_limit_warps", "launch__sm_count": "sm_count",
}
LIMITS = ["launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
          "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps"]


# ------------------------------------------------------------------------------ plain references
def naive_raw(path: pathlib.Path) -> dict[str, np.ndarray]:
    """The raw page's columns as float arrays (durations in ms), read with the csv module alone."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header, units, *rows = list(csv.reader(lines[start:]))
    rows = [r for r in rows if r and r[0].isdigit()]
    assert units[header.index("gpu__time_duration.sum")] == "ns"
    out = {h: np.array([float(r[header.index(h)].replace(",", "")) for r in rows]) for h in [*RAW_LAUNCH]}
    out["d"] = np.array([float(r[header.index("gpu__time_duration.sum")].replace(",", "")) for r in rows]) / 1e6
    occ = header.index("sm__maximum_warps_per_active_cycle_pct")
    out["occupancy"] = np.array([float(r[occ].replace(",", "")) for r in rows]) / 100.0
    return out


def naive_percentile(x: np.ndarray, q: float) -> float:
    """Linear-interpolation percentile by hand (numpy's default method)."""
    s = sorted(x.tolist())
    pos = q / 100 * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def naive_statistics(d: np.ndarray, waves: np.ndarray | None, limits: np.ndarray | None,
                     iterations: int = 1, occupancy: np.ndarray | None = None) -> dict[str, float]:
    out = {
        "kernels": len(d) / iterations, "kernel_sum_ms": d.sum() / iterations, "kernel_mean_ms": d.mean(),
        "kernel_p90_ms": naive_percentile(d, 90), "kernel_max_ms": d.max(),
        "kernel_residual_ms": (d ** 2).sum() / (2 * d.sum()),
        "fill_fraction": math.nan, "waves_mean": math.nan, "occupancy_blocks": math.nan,
        "kernel_occupancy": math.nan,
    }
    if occupancy is not None:
        out["kernel_occupancy"] = (d * occupancy).sum() / d.sum()
    if waves is not None:
        out["fill_fraction"] = d[waves >= 1].sum() / d.sum()
        out["waves_mean"] = (d * waves).sum() / d.sum()
    if limits is not None:
        out["occupancy_blocks"] = (d * limits.min(axis=1)).sum() / d.sum()
    return out


def assert_extra_matches(extra: dict[str, str], expected: dict[str, float]) -> None:
    for k, v in expected.items():
        if math.isnan(v):
            assert extra[k] == "", k
        else:
            assert float(extra[k]) == pytest.approx(v, rel=1e-12, abs=0.0), k


# ------------------------------------------------------------------------------ real raw pages
@pytest.mark.parametrize("name", [*COMPLETE, TRUNCATED])
def test_raw_launch_columns_match_the_file(name):
    ref = naive_raw(H200 / name)
    t = read_kernels(H200 / name)
    assert len(t) == len(ref["d"])
    assert set(t.launch_columns) == set(KERNEL_LAUNCH_COLUMNS)  # theoretical occupancy too (sm__maximum_warps...)
    for raw, col in RAW_LAUNCH.items():
        assert np.array_equal(t.column(col), ref[raw]), col
    assert np.allclose(t.duration_ms, ref["d"], rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", COMPLETE)
def test_statistics_of_real_complete_files_match_numpy(name):
    ref = naive_raw(H200 / name)
    limits = np.column_stack([ref[c] for c in LIMITS])
    expected = naive_statistics(ref["d"], ref["launch__waves_per_multiprocessor"], limits,
                                occupancy=ref["occupancy"])
    p = profile_from_kernels(read_kernels(H200 / name), gpu="h200", model="m", batch_size=1)
    assert list(p.extra) == list(KERNEL_PROFILE_COLUMNS)
    assert_extra_matches(p.extra, expected)
    assert p.extra["truncated"] == "0"
    assert float(p.extra["kernel_sum_ms"]) == pytest.approx(p.solo_ms, rel=1e-9)


def test_real_statistics_say_what_the_workloads_are():
    """triad is one long kernel filling the GPU 124 times over; bert is 108 short kernels, none filling it."""
    triad = profile_from_kernels(read_kernels(H200 / "triad_1_raw.csv"), gpu="h200", model="triad", batch_size=1)
    bert = profile_from_kernels(read_kernels(H200 / "bert_base_8_raw.csv"), gpu="h200", model="bert", batch_size=8)
    assert triad.extra["kernels"] == "1.0" and float(triad.extra["waves_mean"]) == 124.12
    assert float(triad.extra["fill_fraction"]) == 1.0 and float(triad.extra["occupancy_blocks"]) == 16.0
    assert bert.extra["kernels"] == "108.0" and float(bert.extra["fill_fraction"]) == 0.0
    assert float(bert.extra["kernel_max_ms"]) < 0.02 < float(triad.extra["kernel_residual_ms"])


def test_iterations_divide_the_per_batch_columns_only():
    t = read_kernels(H200 / "bert_base_8_raw.csv")
    one = profile_from_kernels(t, gpu="h200", model="bert", batch_size=8).extra
    two = profile_from_kernels(t, gpu="h200", model="bert", batch_size=8, iterations=2).extra
    assert float(two["kernels"]) == 54.0 and float(two["kernel_sum_ms"]) == pytest.approx(float(one["kernel_sum_ms"]) / 2)
    for k in ("kernel_mean_ms", "kernel_p90_ms", "kernel_max_ms", "kernel_residual_ms", "waves_mean"):
        assert two[k] == one[k]


# ------------------------------------------------------------------------------ truncated reports
def test_truncated_report_detected_with_its_evidence():
    cut = read_kernels(H200 / TRUNCATED).truncation
    assert cut is not None and cut.line == 3
    assert "Trying to shutdown" in cut.evidence and "==ERROR== Failed to profile" in cut.evidence
    assert "(line 4)" in cut.evidence
    for name in COMPLETE:
        assert read_kernels(H200 / name).truncation is None


def test_truncated_report_refused_then_kept_on_request():
    t = read_kernels(H200 / TRUNCATED)
    with pytest.raises(TruncatedReportError, match=r"resnet50_8_raw\.csv line 3: ncu stopped .*84 kernel launches"):
        profile_from_kernels(t, gpu="h200", model="resnet50", batch_size=8)
    with pytest.warns(TruncatedReportWarning, match="resnet50_8_raw.csv line 3"):
        p = profile_from_kernels(t, gpu="h200", model="resnet50", batch_size=8, allow_truncated=True)
    assert p.extra["truncated"] == "1" and p.extra["kernels"] == "84.0"
    ref = naive_raw(H200 / TRUNCATED)
    expected = naive_statistics(ref["d"], ref["launch__waves_per_multiprocessor"],
                                np.column_stack([ref[c] for c in LIMITS]), occupancy=ref["occupancy"])
    assert_extra_matches(p.extra, expected)


def test_truncated_through_the_cli(tmp_path, capsys):
    report = str(H200 / TRUNCATED)
    code = main(["ingest", report, "--gpu", "h200", "--model", "resnet50", "--batch-size", "8"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and report in err and "==ERROR==" in err and "--allow-truncated" in err
    out_csv = tmp_path / "p.csv"
    code = main(["ingest", report, str(H200 / "triad_1_raw.csv"), "--gpu", "h200", "--model", "resnet50",
                 "--model", "triad", "--batch-size", "8", "--batch-size", "1", "--allow-truncated",
                 "--out", str(out_csv)])
    out, err = capsys.readouterr()
    assert code == 0
    warning_lines = [line for line in err.splitlines() if "warning" in line]
    assert len(warning_lines) == 1 and report in warning_lines[0] and "truncated=1" in warning_lines[0]
    table = ProfileTable.from_csv(out_csv)
    assert dict(zip(table.column("model").tolist(), table.column("truncated").tolist())) == {"resnet50": "1",
                                                                                            "triad": "0"}


def test_truncated_in_a_manifest_names_the_manifest_line(tmp_path):
    (tmp_path / "cut.csv").write_bytes((H200 / TRUNCATED).read_bytes())
    (tmp_path / "reports.csv").write_text("file,gpu,model,batch_size\ncut.csv,h200,resnet50,8\n")
    entries = [ManifestEntry(file=str(tmp_path / "cut.csv"), gpu="h200", model="resnet50", batch_size=8, line=2)]
    with pytest.raises(InterfpredError, match=r"reports\.csv line 2: .*cut\.csv line 3: ncu stopped"):
        profiles_from_reports(entries, manifest=tmp_path / "reports.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedReportWarning)
        [(p, _)] = profiles_from_reports(entries, manifest=tmp_path / "reports.csv", allow_truncated=True)
    assert p.extra["truncated"] == "1"


def _without_log(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("==")) + "\n"


def test_log_rules(tmp_path):
    text = (H200 / TRUNCATED).read_text()
    # without ncu's log lines the file cannot be checked: read as before, silently
    bare = tmp_path / "bare.csv"
    bare.write_text(_without_log(text))
    assert scan_ncu_log(bare) is None
    assert profile_from_kernels(read_kernels(bare), gpu="h200", model="r", batch_size=8).extra["truncated"] == "0"
    # an error that ncu recovered from (it still disconnected) is not a cut
    recovered = tmp_path / "recovered.csv"
    recovered.write_text(text.replace("==ERROR== An error occurred while trying to profile.",
                                      "==PROF== Disconnected from process 8667"))
    assert scan_ncu_log(recovered) is None
    # an ==ERROR== line alone (the log after the table) is evidence
    late = tmp_path / "late.csv"
    late.write_text(_without_log(text) + "==ERROR== An error occurred while trying to profile.\n")
    cut = scan_ncu_log(late)
    assert cut is not None and cut.line == late.read_text().count("\n")


# ------------------------------------------------------------------------------ details pages
def test_details_page_without_launch_sections(tmp_path):
    """SpeedOfLight only: grid and block sizes come from the identity columns, waves and limits stay missing."""
    path = tmp_path / "details.csv"
    path.write_bytes(gzip.decompress((H200 / "group0_speedoflight_details.csv.gz").read_bytes()))
    t = read_kernels(path)
    assert t.launch_columns == ("grid_blocks", "block_threads") and t.truncation is None
    grids = t.column("grid_size")
    expected = [math.prod(int(x.replace(",", "")) for x in g.strip("()").split(", ")) for g in grids]
    assert t.column("grid_blocks").tolist() == expected
    assert np.isnan(t.column("waves_per_sm")).all() and np.isnan(t.column("occupancy_limit_warps")).all()
    counts = {}
    for wl, bs in (("triad", 1), ("gemm", 1), ("llm_decode", 8), ("resnet50", 8)):
        p = profile_from_kernels(t, gpu="h200", model=wl, batch_size=bs, nvtx_filter=f"wl_{wl}_b{bs}:")
        for k in ("fill_fraction", "waves_mean", "occupancy_blocks"):
            assert p.extra[k] == ""
        sel = t.filter(nvtx=f"wl_{wl}_b{bs}:")
        assert_extra_matches(p.extra, naive_statistics(np.asarray(sel.duration_ms), None, None))
        counts[wl] = int(float(p.extra["kernels"]))
    assert counts == {"triad": 1, "gemm": 1, "llm_decode": 80, "resnet50": 347}


def test_details_page_with_launch_sections():
    """The bundled B200 report has the Launch Statistics and Occupancy sections."""
    t = read_kernels(example_path())
    got = {k: float(t.column(k)[0]) for k in KERNEL_LAUNCH_COLUMNS}
    assert got == {"grid_blocks": 288.0, "block_threads": 384.0, "waves_per_sm": 1.89, "registers_per_thread": 168.0,
                   "shared_mem_per_block": 1024.0 + 205696.0 + 0.0, "occupancy_limit_blocks": 32.0,
                   "occupancy_limit_registers": 1.0, "occupancy_limit_shared_mem": 1.0,
                   "occupancy_limit_warps": 5.0, "sm_count": 152.0, "theoretical_occupancy": 0.1875}
    p = profile_from_kernels(t, gpu="b200", model="gemm", batch_size=1)
    assert (p.extra["fill_fraction"], p.extra["waves_mean"], p.extra["occupancy_blocks"]) == ("1.0", "1.89", "1.0")


HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def details(rows: list[tuple[str, str, str, str]], kernel_id: str = "0") -> str:
    pre = f'"{kernel_id}","1","p","h","k","1","7","(256, 1, 1)","(4, 2, 1)","0","9.0",'
    base = [("GPU Speed Of Light Throughput", "Duration", "us", "2.00"),
            ("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "10"),
            ("GPU Speed Of Light Throughput", "L2 Cache Throughput", "%", "10"),
            ("GPU Speed Of Light Throughput", "DRAM Throughput", "%", "10")]
    return "\n".join(pre + ",".join(f'"{c}"' for c in r) for r in base + rows)


def test_details_units_parts_and_missing_values(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(HEADER + "\n" + details([
        ("Launch Statistics", "Dynamic Shared Memory Per Block", "Kbyte/block", "16.38"),
        ("Launch Statistics", "Static Shared Memory Per Block", "byte/block", "512"),
        ("Launch Statistics", "Waves Per SM", "", "n/a"),
        ("Launch Statistics", "Grid Size", "", "1,024"),
        ("Occupancy", "Block Limit Registers", "block", "3"),
        ("Occupancy", "Block Limit Warps", "block", "8"),
        ("Occupancy", "Theoretical Occupancy", "%", "37.50"),
    ]) + "\n")
    t = read_kernels(path)
    assert float(t.column("shared_mem_per_block")[0]) == 16380.0 + 512.0  # no driver part listed: the parts given
    assert float(t.column("grid_blocks")[0]) == 1024.0  # the section's value wins over the identity column (8)
    assert float(t.column("block_threads")[0]) == 256.0  # identity column
    assert math.isnan(t.column("waves_per_sm")[0]) and math.isnan(t.column("occupancy_limit_blocks")[0])
    assert float(t.column("theoretical_occupancy")[0]) == 0.375
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    assert p.extra["occupancy_blocks"] == "3.0" and p.extra["waves_mean"] == "" and p.extra["fill_fraction"] == ""


@pytest.mark.parametrize("row,match", [
    (("Launch Statistics", "Waves Per SM", "", "many"), r"d\.csv line 6: Waves Per SM value 'many' is not a number"),
    (("Occupancy", "Block Limit Warps", "block", "-1"), r"d\.csv line 6: Block Limit Warps -1 is negative"),
    (("Launch Statistics", "Static Shared Memory Per Block", "cycle", "4"), r"line 6: .*unit 'cycle'.*bytes"),
    (("Occupancy", "Theoretical Occupancy", "%", "180"), r"line 6: Theoretical Occupancy 180% is outside 0..100"),
])
def test_details_bad_launch_values_name_file_line_and_value(tmp_path, row, match):
    path = tmp_path / "d.csv"
    path.write_text(HEADER + "\n" + details([row]) + "\n")
    with pytest.raises(NcuFormatError, match=match):
        read_kernels(path)


def test_files_without_launch_columns_keep_working():
    """The older fixtures: the four quantities as before, launch values only where the file has them."""
    t = read_kernels(NCU / "details_2019_legacy_names.csv")
    assert t.launch_columns == ()
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    assert (p.extra["fill_fraction"], p.extra["waves_mean"], p.extra["occupancy_blocks"]) == ("", "", "")
    raw = read_kernels(NCU / "raw_2024_names.csv")
    assert raw.launch_columns == ("grid_blocks", "block_threads", "registers_per_thread")
    assert raw.column("registers_per_thread").tolist() == [168.0, 168.0]


# ------------------------------------------------------------------------------ profile CSV
def test_columns_round_trip_through_the_profile_csv(tmp_path):
    sources = [("triad_1_raw.csv", "triad", 1), ("bert_base_8_raw.csv", "bert_base", 8)]
    profiles = [profile_from_kernels(read_kernels(H200 / f), gpu="h200", model=m, batch_size=b) for f, m, b in sources]
    out = tmp_path / "profiles.csv"
    write_profiles(ProfileTable.from_profiles(profiles), out)
    header = out.read_text().splitlines()[0].split(",")
    assert header == ["gpu", "model", "batch_size", "solo_ms", "sm", "l2", "dram", *KERNEL_PROFILE_COLUMNS]
    back = {p.model: p for p in ProfileTable.from_csv(out)}
    for p in profiles:
        assert back[p.model].extra == p.extra
        for k in KERNEL_PROFILE_COLUMNS[:-1]:  # repr round-trips the float exactly
            assert repr(float(back[p.model].extra[k])) == p.extra[k]


def test_launch_columns_are_validated():
    base = dict(name=["a"], duration_ms=[1.0], sm=[0.1], l2=[0.1], dram=[0.1])
    with pytest.raises(InputError, match=r"waves_per_sm -1.0 of kernel 'a' must be finite and >= 0"):
        KernelTable.from_columns(**base, launch={"waves_per_sm": [-1.0]})
    with pytest.raises(InputError, match=r"theoretical_occupancy 1.5 .* fraction in \[0, 1\]"):
        KernelTable.from_columns(**base, launch={"theoretical_occupancy": [1.5]})
    with pytest.raises(InterfpredError, match="unknown launch column"):
        KernelTable.from_columns(**base, launch={"waves": [1.0]})
    with pytest.raises(InterfpredError, match="column grid_blocks has 2 rows"):
        KernelTable.from_columns(**base, launch={"grid_blocks": [1.0, 2.0]})


# ------------------------------------------------------------------------------ properties
_duration = st.floats(1e-4, 10.0, allow_nan=False)
_waves = st.one_of(st.just(math.nan), st.floats(0.0, 200.0))
_limit = st.one_of(st.just(math.nan), st.integers(0, 32).map(float))
_launch_row = st.tuples(_duration, _waves, _limit, _limit, _limit, _limit)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_launch_row, min_size=1, max_size=40), iterations=st.integers(1, 4), data=st.data())
def test_statistics_invariant_to_row_order(rows, iterations, data):
    order = data.draw(st.permutations(range(len(rows))))

    def table(rs):
        a = np.array(rs, dtype=np.float64)
        n = len(rs)
        return KernelTable.from_columns(
            name=[f"k{i}" for i in range(n)], duration_ms=a[:, 0], sm=[0.5] * n, l2=[0.5] * n, dram=[0.5] * n,
            launch={"waves_per_sm": a[:, 1], "occupancy_limit_blocks": a[:, 2], "occupancy_limit_registers": a[:, 3],
                    "occupancy_limit_shared_mem": a[:, 4], "occupancy_limit_warps": a[:, 5]})

    a, b = table(rows), table([rows[i] for i in order])
    sa, sb = kernel_statistics(a, iterations=iterations), kernel_statistics(b, iterations=iterations)
    assert sa.keys() == sb.keys()
    for k in sa:  # exactly equal, NaN in the same places
        assert (math.isnan(sa[k]) and math.isnan(sb[k])) or sa[k] == sb[k], k
    # and equal to the reference over the launches that report each column
    arr = np.array(rows, dtype=np.float64)
    d, w, lim = arr[:, 0], arr[:, 1], arr[:, 2:]
    known_w = ~np.isnan(w)
    ref_w = naive_statistics(d[known_w], w[known_w], None) if known_w.any() else None
    if ref_w is None:
        assert math.isnan(sa["fill_fraction"]) and math.isnan(sa["waves_mean"])
    else:
        assert sa["fill_fraction"] == pytest.approx(ref_w["fill_fraction"], rel=1e-12, abs=1e-15)
        assert sa["waves_mean"] == pytest.approx(ref_w["waves_mean"], rel=1e-12, abs=1e-15)
    known_l = ~np.isnan(lim).all(axis=1)
    if not known_l.any():
        assert math.isnan(sa["occupancy_blocks"])
    else:
        blocks = np.nanmin(lim[known_l], axis=1)
        expected = (d[known_l] * blocks).sum() / d[known_l].sum()
        assert sa["occupancy_blocks"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    ref = naive_statistics(d, None, None, iterations)
    for k in ("kernels", "kernel_sum_ms", "kernel_mean_ms", "kernel_p90_ms", "kernel_max_ms", "kernel_residual_ms"):
        assert sa[k] == pytest.approx(ref[k], rel=1e-12), k


@settings(max_examples=40, deadline=None)
@given(durations=st.lists(_duration, min_size=1, max_size=30))
def test_profile_without_launch_columns_has_them_missing(durations):
    n = len(durations)
    t = KernelTable.from_columns(name=["k"] * n, duration_ms=durations, sm=[0.2] * n, l2=[0.2] * n, dram=[0.2] * n)
    assert t.launch_columns == ()
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    assert (p.extra["fill_fraction"], p.extra["waves_mean"], p.extra["occupancy_blocks"]) == ("", "", "")
    assert p.extra["truncated"] == "0"
    assert all(p.extra[k] != "" for k in KERNEL_PROFILE_COLUMNS[:6])
    # and the profile CSV keeps them missing: empty cells, not zeros
    text = ProfileTable.from_profiles([p]).to_csv_text()
    back = next(iter(ProfileTable.from_csv_text(text)))
    assert (back.extra["fill_fraction"], back.extra["waves_mean"], back.extra["occupancy_blocks"]) == ("", "", "")


# ------------------------------------------------------------------------------ binary reports
class _Metric:
    def __init__(self, value: float, unit: str) -> None:
        self._v, self._u = value, unit

    def as_double(self) -> float:
        return self._v

    def unit(self) -> str:
        return self._u


class _Action:
    def __init__(self, metrics: dict[str, _Metric]) -> None:
        self._m = metrics

    def name(self) -> str:
        return "k"

    def metric_by_name(self, name: str) -> _Metric | None:
        return self._m.get(name)


class _Report:
    """ncu_report's load_report result: one range of the given actions."""

    def __init__(self, actions: list[_Action]) -> None:
        self._a = actions

    def num_ranges(self) -> int:
        return 1

    def range_by_idx(self, i: int) -> _Report:
        return self

    def num_actions(self) -> int:
        return len(self._a)

    def action_by_idx(self, i: int) -> _Action:
        return self._a[i]


def test_ncu_rep_launch_metrics_by_name(tmp_path, monkeypatch):
    import sys
    import types

    base = {"gpu__time_duration.sum": _Metric(4000.0, "nsecond"),
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(50.0, "%"),
            "lts__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(25.0, "%"),
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(10.0, "%")}
    launch = {"launch__waves_per_multiprocessor": _Metric(0.5, ""), "launch__grid_size": _Metric(66.0, ""),
              "launch__shared_mem_per_block_dynamic": _Metric(2.0, "Kbyte/block"),
              "launch__occupancy_limit_warps": _Metric(8.0, "block")}
    mod = types.ModuleType("ncu_report")
    mod.load_report = lambda path: _Report([_Action({**base, **launch}), _Action(base)])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ncu_report", mod)
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(b"\x00")
    t = read_kernels(path)
    assert t.truncation is None  # a report has no ncu log: it cannot be checked
    assert t.column("waves_per_sm")[0] == 0.5 and math.isnan(t.column("waves_per_sm")[1])
    assert t.column("shared_mem_per_block")[0] == 2000.0 and t.column("grid_blocks")[0] == 66.0
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    # over the launch that reports waves / limits only
    assert (p.extra["fill_fraction"], p.extra["waves_mean"], p.extra["occupancy_blocks"]) == ("0.0", "0.5", "8.0")
