"""Nsight Compute ingestion: every page layout and header generation, and every refusal."""

from __future__ import annotations

import math
import pathlib
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import naive_details_page, naive_profile_numbers

from interfpred import InputError, InterfpredError
from interfpred.data.ingest import (
    KernelTable,
    NcuFormatError,
    example_path,
    nvtx_innermost,
    profile_from_kernels,
    read_kernels,
)

REAL = example_path()  # the example Nsight Compute log shipped with the package
NCU = pathlib.Path(__file__).parent / "data" / "ncu"


# ------------------------------------------------------------------------- the real file
def test_real_b200_details_page_numbers_match_the_file():
    t = read_kernels(REAL)
    assert len(t) == 1
    assert t.duration_ms[0] == pytest.approx(406240e-6, rel=1e-12)  # "Duration","ns","406240"
    assert t.dram[0] == pytest.approx(0.0074, rel=1e-12)            # "DRAM Throughput","%","0.74"
    assert t.l2[0] == pytest.approx(0.1512, rel=1e-12)              # "L2 Cache Throughput","%","15.12"
    assert t.sm[0] == pytest.approx(0.2359, rel=1e-12)              # "Compute (SM) Throughput","%","23.59"
    assert t.name[0].startswith("cutlass3x_sm100_tensorop")
    assert t.column("stream")[0] == "7" and t.column("cc")[0] == "10.0" and t.column("device")[0] == "0"
    assert t.column("process_id")[0] == "371693"
    assert t.lines[0] == 5  # three lines of profiler/app output, then the header on line 4


def test_real_file_agrees_with_naive_pivot():
    [k] = naive_details_page(str(REAL))
    t = read_kernels(REAL)
    assert float(k["metrics"]["Duration"][1]) * 1e-6 == pytest.approx(t.duration_ms[0])
    assert float(k["metrics"]["Compute (SM) Throughput"][1]) / 100 == pytest.approx(t.sm[0])


def test_bundled_example_ships_with_its_licence():
    assert REAL.name == "superbenchmark_cublaslt_b200_details.log" and REAL.is_file()
    licence = (REAL.parent / "LICENSE.superbenchmark").read_text(encoding="utf-8")
    assert "MIT License" in licence and "Microsoft Corporation" in licence, licence[:200]


def test_profile_of_real_file():
    p = profile_from_kernels(read_kernels(REAL), gpu="b200", model="cublaslt_gemm", batch_size=1)
    assert (p.solo_ms, p.sm, p.l2, p.dram) == pytest.approx((0.40624, 0.2359, 0.1512, 0.0074))


# ------------------------------------------------------------------------- format variants
EXPECTED = {
    # file: (durations ms, sm, l2, dram, identity columns that must be present)
    "details_2019_legacy_names.csv": ([1.01184], [0.8713], [0.354], [0.0986], ["kernel_time"]),
    "details_2020_kernel_time.csv": ([0.00272, 2.5], [0.2104, 0.55], [0.125, 0.30], [0.396, 0.7125],
                                     ["kernel_time", "context", "stream"]),
    "details_2021_rules.csv": ([0.10877], [0.8011], [0.2745], [0.182], ["kernel_time"]),
    "details_2022_15col.csv": ([0.00272, 1.25, 0.00272], [0.4176, 0.10, 0.40], [0.2281, 0.45, 0.22],
                               [0.0612, 0.884, 0.06], ["block_size", "grid_size", "device", "cc"]),
    "details_2023_names.csv": ([0.09427], [0.5893], [0.2455], [0.1461], ["device"]),
    "details_2024_nvtx.csv": ([0.01232, 0.00416, 0.0896, 0.0256], [0.40, 0.10, 0.721, 0.123],
                              [0.30, 0.50, 0.4125, 0.60], [0.20, 0.80, 0.355, 0.901], ["nvtx", "nvtx_range"]),
    "raw_2021_kernel_time.csv": ([0.00618, 1.024], [0.1402, 0.20], [0.2275, 0.335], [0.512, 0.75],
                                 ["kernel_time"]),
    "raw_2024_names.csv": ([0.21, 0.19], [0.613, 0.601], [0.25, 0.24], [0.125, 0.12], ["grid_size"]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_variants(name):
    d, sm, l2, dram, ident = EXPECTED[name]
    t = read_kernels(NCU / name)
    assert len(t) == len(d)
    np.testing.assert_allclose(t.duration_ms, d, rtol=1e-12)
    np.testing.assert_allclose(t.sm, sm, rtol=1e-12)
    np.testing.assert_allclose(t.l2, l2, rtol=1e-12)
    np.testing.assert_allclose(t.dram, dram, rtol=1e-12)
    for col in ident:
        assert col in t.identity_columns
    assert t.path == str(NCU / name)
    assert (t.lines > 0).all()


def test_lts_throughput_preferred_over_t_sectors():
    t = read_kernels(NCU / "details_2023_names.csv")  # has both; lts__throughput is 24.55
    assert t.l2[0] == pytest.approx(0.2455)


def test_nvtx_ranges_split_batch_sizes():
    t = read_kernels(NCU / "details_2024_nvtx.csv")
    assert t.column("nvtx_range").tolist() == ["batch_1", "batch_1", "batch_8", "batch_8"]
    p1 = profile_from_kernels(t, gpu="h100", model="resnet50", batch_size=1, nvtx_filter="batch_1")
    p8 = profile_from_kernels(t, gpu="h100", model="resnet50", batch_size=8, nvtx_filter="batch_8")
    ref = naive_profile_numbers([0.0896, 0.0256], [0.721, 0.123], [0.4125, 0.6], [0.355, 0.901])
    assert (p8.solo_ms, p8.sm, p8.l2, p8.dram) == pytest.approx(ref)
    assert p1.solo_ms == pytest.approx(0.01232 + 0.00416)


def test_nvtx_innermost_cases():
    assert nvtx_innermost('1  "<default domain>:a:b:none:none:none:none:none:none" ') == "a:b"
    assert nvtx_innermost("no ranges") == ""


def test_kernel_filter_and_iterations():
    t = read_kernels(NCU / "details_2022_15col.csv")
    p = profile_from_kernels(t, gpu="a10", model="bert", batch_size=4, iterations=2, kernel_filter="sgemm")
    ref = naive_profile_numbers([0.00272, 0.00272], [0.4176, 0.40], [0.2281, 0.22], [0.0612, 0.06], 2)
    assert (p.solo_ms, p.sm, p.l2, p.dram) == pytest.approx(ref)
    with pytest.raises(InterfpredError, match="matches kernel_filter"):
        profile_from_kernels(t, gpu="a10", model="bert", batch_size=4, kernel_filter="^nothing$")
    with pytest.raises(InterfpredError, match="not a valid regular expression|outside the pattern subset"):
        profile_from_kernels(t, gpu="a10", model="bert", batch_size=4, kernel_filter="(")
    with pytest.raises(InterfpredError, match="iterations"):
        profile_from_kernels(t, gpu="a10", model="bert", batch_size=4, iterations=0)
    with pytest.raises(InterfpredError, match="no NVTX column"):
        profile_from_kernels(t, gpu="a10", model="bert", batch_size=4, nvtx_filter="x")
    with pytest.raises(InterfpredError, match="invalid profile"):
        profile_from_kernels(t, gpu="", model="bert", batch_size=4)


def test_kernel_table_from_columns_validates():
    with pytest.raises(InputError, match="duration_ms"):
        KernelTable.from_columns(name=["a"], duration_ms=[0.0], sm=[0.1], l2=[0.1], dram=[0.1])
    with pytest.raises(InputError, match="sm 1.5"):
        KernelTable.from_columns(name=["a"], duration_ms=[1.0], sm=[1.5], l2=[0.1], dram=[0.1])
    with pytest.raises(InterfpredError, match="rows"):
        KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0], sm=[0.1], l2=[0.1], dram=[0.1])
    t = KernelTable.from_columns(name=["a", "b"], duration_ms=[1.0, 2.0], sm=[0.1] * 2, l2=[0.1] * 2,
                                 dram=[0.1] * 2)
    assert len(t.take([True, False])) == 1
    with pytest.raises(ValueError):
        t.duration_ms[0] = 5.0  # read-only
    with pytest.raises(KeyError):
        t.column("nope")


# ------------------------------------------------------------------------- bad input
HEADER15 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
PRE = '"0","1","app","127.0.0.1","k","1","7","(1, 1, 1)","(1, 1, 1)","0","8.9","SOL",'
GOOD = {"Duration": ("ns", "1000"), "DRAM Throughput": ("%", "10"), "L2 Cache Throughput": ("%", "20"),
        "Compute (SM) Throughput": ("%", "30")}


def page(metrics=GOOD, pre_lines=("==PROF== Connected to process 1",), header=HEADER15, prefix=PRE):
    rows = [f'{prefix}"{m}","{u}","{v}"' for m, (u, v) in metrics.items()]
    return "\n".join([*pre_lines, header, *rows]) + "\n"


def write(tmp_path, text, name="report.csv", mode="w"):
    p = tmp_path / name
    if mode == "wb":
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def refused(path, match):
    with pytest.raises(NcuFormatError, match=match) as info:
        read_kernels(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, InputError) and isinstance(info.value, ValueError)
    return info.value


def test_good_minimal_page(tmp_path):
    t = read_kernels(write(tmp_path, page()))
    assert (t.duration_ms[0], t.dram[0], t.l2[0], t.sm[0]) == pytest.approx((0.001, 0.1, 0.2, 0.3))


def test_unknown_layout_summary_page(tmp_path):
    text = ('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"\n'
            '"0","k","SOL","Duration","ns","1","2","1.5"\n')
    e = refused(write(tmp_path, text), "unknown layout.*Metric Value")
    assert e.line == 1


def test_unknown_layout_no_header(tmp_path):
    refused(write(tmp_path, "a,b,c\n1,2,3\n"), "unknown layout: none of the 2 lines")


def test_unknown_layout_header_without_metrics(tmp_path):
    refused(write(tmp_path, '"ID","Process ID","Kernel Name"\n"0","1","k"\n'), "unknown layout")


def test_missing_metric_lists_found(tmp_path):
    m = {k: v for k, v in GOOD.items() if k != "DRAM Throughput"}
    e = refused(write(tmp_path, page(m)), "no usable DRAM Throughput metric")
    assert "metrics found: Duration, L2 Cache Throughput, Compute (SM) Throughput" in str(e)
    assert "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" in str(e)  # what it accepts
    assert e.line == 3


def test_required_metric_na_is_missing(tmp_path):
    m = dict(GOOD, **{"Compute (SM) Throughput": ("%", "n/a")})
    refused(write(tmp_path, page(m)), "no usable Compute \\(SM\\) Throughput")


@pytest.mark.parametrize("value", ["0", "-5", "0.00"])
def test_zero_or_negative_duration(tmp_path, value):
    e = refused(write(tmp_path, page(dict(GOOD, Duration=("ns", value)))), "not positive")
    assert e.line == 3


def test_duration_na(tmp_path):
    refused(write(tmp_path, page(dict(GOOD, Duration=("ns", "n/a")))), "needs a duration")


@pytest.mark.parametrize("value", ["abc", "1.2.3", "12 %", "inf", "nan"])
def test_non_numeric(tmp_path, value):
    e = refused(write(tmp_path, page(dict(GOOD, **{"L2 Cache Throughput": ("%", value)}))), "not a number")
    assert e.line == 5


@pytest.mark.parametrize("metric,unit", [("Duration", "%"), ("Duration", "cycle"),
                                         ("DRAM Throughput", "byte/second"), ("DRAM Throughput", "ns"),
                                         ("Compute (SM) Throughput", "")])
def test_unit_not_belonging_to_metric(tmp_path, metric, unit):
    m = dict(GOOD, **{metric: (unit, GOOD[metric][1])})
    refused(write(tmp_path, page(m)), f"unit '{unit}'")


def test_percent_out_of_range(tmp_path):
    refused(write(tmp_path, page(dict(GOOD, **{"DRAM Throughput": ("%", "130")}))), "outside 0..100")
    t = read_kernels(write(tmp_path, page(dict(GOOD, **{"DRAM Throughput": ("%", "100.2")})), "ok.csv"))
    assert t.dram[0] == 1.0  # rounding overshoot clipped


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file(tmp_path, text):
    refused(write(tmp_path, text), "empty file")


def test_only_profiler_lines(tmp_path):
    refused(write(tmp_path, "==PROF== Connected\n==ERROR== The application returned an error code (1).\n"),
            "unknown layout")


def test_header_without_rows(tmp_path):
    refused(write(tmp_path, HEADER15 + "\n==PROF== Disconnected\n"), "no kernel rows")


def test_binary_file(tmp_path):
    refused(write(tmp_path, b"NVRP\x00\x01\x02\x03" * 50, "report.bin", "wb"), "binary file")


def test_nul_later_in_file(tmp_path):
    text = page().encode() + b'"1","1",\x00\n'
    p = tmp_path / "nul.csv"
    p.write_bytes(b"x" * 70000 + b"\n" + text)  # past the sniffed head: caught as a broken row
    assert refused(p, "fields").line == 8


def test_truncated_row(tmp_path):
    text = page() + PRE[:40] + "\n"
    e = refused(write(tmp_path, text), "fields")
    assert e.line == 7


def test_row_too_long(tmp_path):
    text = page() + PRE + '"Duration","ns","1","x","y","z","w","v","u","t"\n'
    refused(write(tmp_path, text), "fields; the header has 15")


def test_raw_page_without_units_row(tmp_path):
    text = ('"ID","Process ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"\n'
            '"0","1","k","100","20"\n')
    e = refused(write(tmp_path, text), "units row")
    assert e.line == 2


def test_raw_page_missing_metric_lists_columns(tmp_path):
    text = ('"ID","Process ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"\n'
            '"","","","nsecond","%"\n"0","1","k","100","20"\n')
    e = refused(write(tmp_path, text), "no usable L2 Cache Throughput")
    assert "gpu__time_duration.sum, sm__throughput" in str(e)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(NcuFormatError, match="directory"):
        read_kernels(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_kernels(tmp_path / "absent.csv")


def test_app_output_between_and_after(tmp_path):
    text = page(pre_lines=("==PROF== Connected", "epoch 1, 2, 3", "42", "==WARNING== clocks"))
    text += "==PROF== Disconnected from process 1\nresult: 7,8,9\n12\n"
    t = read_kernels(write(tmp_path, text))
    assert len(t) == 1


def test_two_processes_same_id_kept_apart(tmp_path):
    rows = page().splitlines()[2:]
    other = [r.replace('"0","1","app"', '"0","2","app"') for r in rows]
    text = page() + "\n".join(other) + "\n"
    t = read_kernels(write(tmp_path, text))
    assert t.column("process_id").tolist() == ["1", "2"]


# ------------------------------------------------------------------------- .ncu-rep
def test_ncu_rep_without_package(tmp_path, monkeypatch):
    p = write(tmp_path, b"\x00binary", "report.ncu-rep", "wb")
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import fails
    e = refused(p, "ncu-report package")
    assert 'pip install "interfpred[ncu]"' in str(e)


class _Metric:
    def __init__(self, v, unit):
        self._v, self._u = v, unit

    def as_double(self):
        return self._v

    def unit(self):
        return self._u


class _Action:
    def __init__(self, name, metrics):
        self._n, self._m = name, metrics

    def name(self):
        return self._n

    def metric_by_name(self, name):
        return self._m.get(name)


class _Range:
    def __init__(self, actions):
        self._a = actions

    def num_actions(self):
        return len(self._a)

    def action_by_idx(self, i):
        return self._a[i]


class _Context:
    def __init__(self, ranges):
        self._r = ranges

    def num_ranges(self):
        return len(self._r)

    def range_by_idx(self, i):
        return self._r[i]


def _fake_module(ranges):
    mod = types.ModuleType("ncu_report")
    mod.load_report = lambda path: _Context(ranges)
    return mod


def test_ncu_rep_through_fake_binding(tmp_path, monkeypatch):
    metrics = {"gpu__time_duration.sum": _Metric(2000.0, "nsecond"),
               "sm__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(50.0, "%"),
               "lts__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(25.0, "%"),
               "dram__throughput.avg.pct_of_peak_sustained_elapsed": _Metric(10.0, "%")}
    monkeypatch.setitem(sys.modules, "ncu_report", _fake_module([_Range([_Action("k", metrics)] * 2)]))
    t = read_kernels(write(tmp_path, b"\x00", "report.ncu-rep", "wb"))
    assert len(t) == 2 and t.duration_ms.tolist() == [0.002, 0.002] and t.sm[0] == 0.5


def test_ncu_rep_zero_ranges_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", _fake_module([]))
    refused(write(tmp_path, b"\x00", "report.ncu-rep", "wb"), "zero ranges")
    monkeypatch.setitem(sys.modules, "ncu_report", _fake_module([_Range([])]))
    refused(write(tmp_path, b"\x00", "report.ncu-rep", "wb"), "no kernel launches")


def test_ncu_rep_missing_metric(tmp_path, monkeypatch):
    metrics = {"gpu__time_duration.sum": _Metric(2000.0, "nsecond")}
    monkeypatch.setitem(sys.modules, "ncu_report", _fake_module([_Range([_Action("k", metrics)])]))
    refused(write(tmp_path, b"\x00", "report.ncu-rep", "wb"), "no Compute")


# ------------------------------------------------------------------------- properties
_GENERATIONS = {
    "2020": ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Kernel Time"',
             '"Context"', '"Stream"', '"Section Name"', '"Metric Name"', '"Metric Unit"', '"Metric Value"'],
    "2022": ['"ID"', '"Process ID"', '"Process Name"', '"Host Name"', '"Kernel Name"', '"Context"', '"Stream"',
             '"Block Size"', '"Grid Size"', '"Device"', '"CC"', '"Section Name"', '"Metric Name"',
             '"Metric Unit"', '"Metric Value"'],
}
_GENERATIONS["2024"] = _GENERATIONS["2022"] + ['"Rule Name"', '"Rule Type"', '"Rule Description"',
                                              '"Estimated Speedup Type"', '"Estimated Speedup"']
_TIME = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
_LABELS = {0: ["Duration", "gpu__time_duration.sum"],
           1: ["Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"],
           2: ["L2 Cache Throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"],
           3: ["DRAM Throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "SOL FB"]}

kernel_st = st.tuples(
    st.floats(1e-4, 50.0), st.floats(0, 100), st.floats(0, 100), st.floats(0, 100),
    st.sampled_from(sorted(_TIME)), st.booleans(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gen=st.sampled_from(sorted(_GENERATIONS)), nvtx=st.booleans(), kernels=st.lists(kernel_st, min_size=1, max_size=5),
       names=st.integers(0, 1), data=st.data())
def test_generated_details_pages_round_trip(tmp_path, gen, nvtx, kernels, names, data):
    header = list(_GENERATIONS[gen])
    if nvtx:
        header.insert(4, '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"')
    n_ident = header.index('"Section Name"')
    trailing = "," if gen == "2024" else ""
    lines = ["==PROF== Connected to process 9", "app says: 1,2,3", ",".join(header)]
    expected = []
    for kid, (d, sm, l2, dram, unit, thousands) in enumerate(kernels):
        ident = [str(kid), "9", "app", "127.0.0.1", f"kern_{kid}", "2021-Jan-01 00:00:00", "1", "7",
                 "(1, 1, 1)", "(2, 1, 1)", "0", "8.0"]
        if gen != "2020":
            ident.remove("2021-Jan-01 00:00:00")
        if nvtx:
            ident.insert(4, f'9  "<default domain>:bs_{kid}:none:none:none:none:none:none"')
        ident = ident[:n_ident]
        pre = ",".join('"' + c.replace('"', '""') + '"' for c in ident)
        dval = d / _TIME[unit]
        dtext = f"{dval:,.3f}" if thousands else f"{dval:.3f}"
        vals = [dtext, f"{sm:.2f}", f"{l2:.2f}", f"{dram:.2f}"]
        exp = [float(dtext.replace(",", "")) * _TIME[unit]] + [float(v) / 100 for v in vals[1:]]
        if exp[0] <= 0:
            dtext, exp[0] = "1", _TIME[unit]
            vals[0] = dtext
        expected.append(exp)
        order = data.draw(st.permutations(range(4)))
        lines.append(pre + f',"SOL","Elapsed Cycles","cycle","1,234"{trailing}')
        for q in order:
            label = _LABELS[q][names] if q != 3 or names < 2 else "SOL FB"
            u = unit if q == 0 else "%"
            lines.append(pre + f',"SOL","{label}","{u}","{vals[q]}"{trailing}')
        if gen == "2024":
            lines.append(pre + ',"SpeedOfLight","","","","SOLBottleneck","OPT","Low, low throughput.","",""')
    lines.append("==PROF== Disconnected from process 9")
    p = tmp_path / "gen.csv"
    p.write_text("\n".join(lines) + "\n")
    t = read_kernels(p)
    got = np.column_stack([t.duration_ms, t.sm, t.l2, t.dram])
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-12, atol=0)
    if nvtx:
        assert t.column("nvtx_range").tolist() == [f"bs_{i}" for i in range(len(kernels))]
    prof = profile_from_kernels(t, gpu="g", model="m", batch_size=1)
    ref = naive_profile_numbers(*np.array(expected).T)
    assert (prof.solo_ms, prof.sm, prof.l2, prof.dram) == pytest.approx(ref, rel=1e-9)


def _only_library_errors(path):
    try:
        t = read_kernels(path)
    except NcuFormatError:
        return
    assert len(t) > 0
    assert np.all(np.isfinite(t.duration_ms)) and np.all(t.duration_ms > 0)
    for r in ("sm", "l2", "dram"):
        v = t.column(r)
        assert np.all((v >= 0) & (v <= 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(list('"ID,0123456789.%nsu\n\r ,abc/=') + [
    '"ID","Kernel Name"', '"Metric Name","Metric Unit","Metric Value"', '"Duration"', '"L2 Cache Throughput"',
    "\x00", "é", "n/a"]), max_size=200).map("".join))
def test_random_text_raises_only_library_errors(tmp_path, text):
    p = tmp_path / "rand.csv"
    p.write_bytes(text.encode("utf-8"))
    _only_library_errors(p)


_REAL_BYTES = REAL.read_bytes()
_FIXTURES = [p.read_bytes() for p in sorted(NCU.glob("*.csv"))] + [_REAL_BYTES]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(_FIXTURES) - 1),
       edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), st.binary(min_size=0, max_size=8)),
                      min_size=1, max_size=6))
def test_mutated_real_files_raise_only_library_errors(tmp_path, which, edits):
    data = bytearray(_FIXTURES[which])
    for where, kind, blob in edits:
        i = int(where * len(data))
        if kind == 0:                       # delete a span
            del data[i:i + 1 + len(blob) * 20]
        elif kind == 1:                     # insert bytes
            data[i:i] = blob
        elif kind == 2:                     # overwrite
            data[i:i + len(blob)] = blob
        else:                               # truncate
            del data[i:]
    p = tmp_path / "mut.csv"
    p.write_bytes(bytes(data))
    _only_library_errors(p)


def test_weighted_mean_matches_naive_reference():
    rng = np.random.default_rng(0)
    d, a, b, c = rng.uniform(0.01, 1, 50), rng.uniform(0, 1, 50), rng.uniform(0, 1, 50), rng.uniform(0, 1, 50)
    t = KernelTable.from_columns(name=[f"k{i}" for i in range(50)], duration_ms=d, sm=a, l2=b, dram=c)
    p = profile_from_kernels(t, gpu="g", model="m", batch_size=2, iterations=3)
    # profiles keep PROFILE_SIGNIFICANT_DIGITS (10) significant digits
    assert (p.solo_ms, p.sm, p.l2, p.dram) == pytest.approx(naive_profile_numbers(d, a, b, c, 3), rel=1e-9)
    assert math.isclose(p.solo_ms, d.sum() / 3, rel_tol=1e-9)


def test_windows_line_endings_and_bom(tmp_path):
    text = "\ufeff" + page().replace("\n", "\r\n")
    p = tmp_path / "win.csv"
    p.write_bytes(text.encode("utf-8"))
    t = read_kernels(p)
    assert (t.duration_ms[0], t.sm[0]) == pytest.approx((0.001, 0.3))


def test_both_nvtx_columns_2021_layout(tmp_path):
    header = ('"ID","Process ID","Process Name","Host Name",'
              '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
              '"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name",'
              '"Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value",'
              '"Rule Name","Rule Type","Rule Description"')
    prefix = ('"0","1","app","127.0.0.1","1  ""<default domain>:bs_4:none:none:none:none:none:none"" ","",'
              '"k","2021-Mar-04 10:00:00","1","7","GPU Speed Of Light Throughput",')
    t = read_kernels(write(tmp_path, page(header=header, prefix=prefix)))
    assert t.column("nvtx_range").tolist() == ["bs_4"]
    assert "nvtx_start_stop" in t.identity_columns and t.column("kernel_time")[0] == "2021-Mar-04 10:00:00"
