"""Tests of Profile and ProfileTable: validation, interpolation, CSV round trips, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import InputError, InterfpredError, Profile, ProfileTable
from interfpred.data.profiles import table as table_module

HEADER = "gpu,model,batch_size,solo_ms,sm,l2,dram\n"


def _table() -> ProfileTable:
    return ProfileTable.from_columns(
        gpu=["l4"] * 4, model=["resnet50", "resnet50", "resnet50", "bert"], batch_size=[4, 8, 16, 1],
        solo_ms=[4.0, 6.0, 10.0, 2.0], sm=[0.4, 0.6, 0.8, 0.3], l2=[0.2, 0.3, 0.3, 0.1],
        dram=[0.3, 0.5, 0.6, 0.4],
    )


def test_profile_validates_ranges():
    with pytest.raises(InterfpredError, match=r"invalid profile: sm 70: .*less than or equal to 1"):
        Profile(gpu="l4", model="m", batch_size=1, solo_ms=1.0, sm=70, l2=0.1, dram=0.1)
    with pytest.raises(InterfpredError, match="solo_ms 0.0"):
        Profile(gpu="l4", model="m", batch_size=1, solo_ms=0.0, sm=0.1, l2=0.1, dram=0.1)
    with pytest.raises(InterfpredError):
        Profile(gpu="l4", model="m", batch_size=1, solo_ms=1.0, sm=1.5, l2=0.1, dram=0.1)
    with pytest.raises(InterfpredError):
        Profile(gpu="l4", model="m", batch_size=0, solo_ms=1.0, sm=0.5, l2=0.1, dram=0.1)
    with pytest.raises(InterfpredError):
        Profile(gpu="l4", model="m", batch_size=1, solo_ms=float("nan"), sm=0.5, l2=0.1, dram=0.1)
    with pytest.raises(InterfpredError):
        Profile(gpu="", model="m", batch_size=1, solo_ms=1.0, sm=0.5, l2=0.1, dram=0.1)


def test_lookup_exact_and_interpolated():
    t = _table()
    assert t.lookup("resnet50", 8) == Profile(gpu="l4", model="resnet50", batch_size=8, solo_ms=6.0,
                                               sm=0.6, l2=0.3, dram=0.5)
    p = t.lookup("resnet50", 12)
    assert p.solo_ms == pytest.approx(8.0)
    assert p.sm == pytest.approx(0.7)
    assert p.dram == pytest.approx(0.55)
    p = t.lookup("resnet50", 5)
    assert p.solo_ms == pytest.approx(4.5)


def test_lookup_outside_range_needs_extrapolate():
    t = _table()
    with pytest.raises(InterfpredError, match="outside the profiled range 4..16"):
        t.lookup("resnet50", 32)
    with pytest.raises(InterfpredError, match="outside the profiled range"):
        t.lookup("resnet50", 2)
    p = t.lookup("resnet50", 32, extrapolate=True)
    assert p.solo_ms == pytest.approx(18.0)  # line through (8, 6) and (16, 10)
    assert p.sm == pytest.approx(1.0)  # 0.8 + 2 * 0.2 clipped to 1
    assert 0.0 <= t.lookup("resnet50", 1, extrapolate=True).l2 <= 1.0


def test_single_profiled_size_is_constant_only_with_extrapolate():
    t = _table()
    assert t.lookup("bert", 1).solo_ms == 2.0
    with pytest.raises(InterfpredError):
        t.lookup("bert", 2)
    assert t.lookup("bert", 4, extrapolate=True).solo_ms == 2.0


def test_unknown_model_and_gpu_list_known_ones():
    t = _table()
    with pytest.raises(InterfpredError, match="known models: bert, resnet50"):
        t.lookup("vgg19", 8)
    with pytest.raises(InterfpredError, match="known gpus: l4"):
        t.lookup("resnet50", 8, gpu="a100")


def test_several_gpus_need_gpu_argument():
    a = _table()
    b = ProfileTable.from_columns(gpu=["a100"], model=["resnet50"], batch_size=[8], solo_ms=[3.0],
                                  sm=[0.3], l2=[0.1], dram=[0.2])
    t = a.merge(b)
    assert t.gpus == ("a100", "l4")
    with pytest.raises(InterfpredError, match="several GPUs"):
        t.lookup("resnet50", 8)
    assert t.lookup("resnet50", 8, gpu="a100").solo_ms == 3.0
    out = t.lookup_arrays(["resnet50", "resnet50"], [8, 12], gpus=["a100", "l4"], extrapolate=False)
    assert out["solo_ms"].tolist() == pytest.approx([3.0, 8.0])


def test_lookup_arrays_matches_scalar_lookup():
    t = _table()
    models = ["resnet50", "bert", "resnet50", "resnet50"]
    batches = [5, 1, 16, 9.5]
    out = t.lookup_arrays(models, batches)
    for i, (m, b) in enumerate(zip(models, batches)):
        p = t.lookup(m, b)
        for k in ("solo_ms", "sm", "l2", "dram"):
            assert out[k][i] == pytest.approx(getattr(p, k))


def test_csv_round_trip_keeps_extra_columns(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(HEADER.strip() + ",source,notes\n"
                    "l4,resnet50,8,6.0,0.6,0.3,0.5,synthetic,a b\n"
                    "l4,resnet50,4,4.0,0.4,0.2,0.3,ncu,\n")
    t = ProfileTable.from_csv(path)
    assert t.extra_columns == ("source", "notes")
    assert t.batch_sizes("resnet50") == (4, 8)  # sorted
    assert t.lookup("resnet50", 8).extra == {"source": "synthetic", "notes": "a b"}
    out = tmp_path / "q.csv"
    t.to_csv(out)
    again = ProfileTable.from_csv(out)
    assert again == t
    assert out.read_text().splitlines()[0] == "gpu,model,batch_size,solo_ms,sm,l2,dram,source,notes"


def test_identical_duplicates_collapse_disagreeing_ones_fail(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "l4,m,8,6.0,0.6,0.3,0.5\nl4,m,8,6.0,0.6,0.3,0.5\n")
    assert len(ProfileTable.from_csv(path)) == 1
    path.write_text(HEADER + "l4,m,8,6.0,0.6,0.3,0.5\nl4,m,8,6.5,0.6,0.3,0.5\n")
    with pytest.raises(InputError, match=r"p.csv line 3: duplicate profile .* disagrees with line 2: solo_ms"):
        ProfileTable.from_csv(path)


@pytest.mark.parametrize("row, message", [
    ("l4,m,8,6.0,60,0.3,0.5", r"line 2: sm 60.0 must be a fraction of peak in \[0, 1\]"),
    ("l4,m,8,abc,0.6,0.3,0.5", r"line 2: solo_ms 'abc' is not a number"),
    ("l4,m,0,6.0,0.6,0.3,0.5", r"line 2: batch_size 0.0 must be a positive integer"),
    ("l4,m,2.5,6.0,0.6,0.3,0.5", r"line 2: batch_size 2.5 must be a positive integer"),
    ("l4,m,8,-1,0.6,0.3,0.5", r"line 2: solo_ms -1.0 must be a positive finite latency"),
    ("l4,m,8,nan,0.6,0.3,0.5", r"line 2: solo_ms nan must be a positive finite latency"),
    (",m,8,6.0,0.6,0.3,0.5", r"line 2: gpu '' must not be empty"),
    ("l4,m,8,6.0,0.6,0.3", r"line 2: has 6 fields, the header has 7"),
])
def test_bad_rows_name_file_line_and_value(tmp_path, row, message):
    path = tmp_path / "p.csv"
    path.write_text(HEADER + row + "\n")
    with pytest.raises(InputError, match=message):
        ProfileTable.from_csv(path)


def test_missing_column_empty_and_binary_files(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("gpu,model,batch_size,sm,l2\nl4,m,1,0.1,0.1\n")
    with pytest.raises(InputError, match="missing column.*solo_ms"):
        ProfileTable.from_csv(path)
    path.write_text("")
    with pytest.raises(InputError, match="empty file"):
        ProfileTable.from_csv(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    with pytest.raises(InputError, match="binary"):
        ProfileTable.from_csv(path)


def test_to_csv_is_atomic_on_failure(tmp_path, monkeypatch):
    t = _table()
    out = tmp_path / "p.csv"
    out.write_text("old contents\n")

    def boom(table, fh):
        fh.write("partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(table_module, "write_profile_csv", boom)
    with pytest.raises(RuntimeError):
        t.to_csv(out)
    assert out.read_text() == "old contents\n"
    assert list(tmp_path.iterdir()) == [out]


def test_columns_are_read_only():
    t = _table()
    with pytest.raises(ValueError):
        t.column("solo_ms")[0] = 1.0


_cells = st.one_of(st.text(max_size=6), st.floats(allow_nan=True, allow_infinity=True).map(str),
                   st.integers(-3, 40).map(str))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(_cells, min_size=5, max_size=8), max_size=6),
       header=st.sampled_from([HEADER.strip(), HEADER.strip() + ",extra", "gpu,model,batch_size"]))
def test_parser_only_raises_its_own_errors(rows, header):
    import csv
    import io
    buf = io.StringIO()
    buf.write(header + "\n")
    csv.writer(buf).writerows(rows)
    try:
        t = ProfileTable.from_csv_text(buf.getvalue(), path="fuzz.csv")
    except InterfpredError:
        return
    # Anything accepted obeys the invariants (a counter left empty stays missing: None, never zero).
    for p in t:
        assert p.solo_ms > 0
        assert all(v is None or 0 <= v <= 1 for v in (p.sm, p.l2, p.dram)), (p.sm, p.l2, p.dram)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 64), st.floats(0.01, 1e4), st.floats(0, 1), st.floats(0, 1),
                          st.floats(0, 1)), min_size=1, max_size=10, unique_by=lambda r: r[0]))
def test_round_trip_and_interpolation_bounds(tmp_path_factory, rows):
    t = ProfileTable.from_columns(gpu=["g"] * len(rows), model=["m"] * len(rows),
                                  batch_size=[r[0] for r in rows], solo_ms=[r[1] for r in rows],
                                  sm=[r[2] for r in rows], l2=[r[3] for r in rows], dram=[r[4] for r in rows])
    path = tmp_path_factory.mktemp("rt") / "p.csv"
    t.to_csv(path)
    assert ProfileTable.from_csv(path) == t
    bs = t.batch_sizes("m")
    grid = np.linspace(bs[0], bs[-1], 7)
    out = t.lookup_arrays(["m"] * 7, grid)
    solo = t.column("solo_ms")
    assert np.all(out["solo_ms"] >= solo.min() - 1e-9) and np.all(out["solo_ms"] <= solo.max() + 1e-9)


def test_lookup_arrays_reproduces_profiled_rows_exactly():
    t = ProfileTable.from_columns(gpu=["g"] * 2, model=["m"] * 2, batch_size=[1, 4], solo_ms=[1.0, 3.0],
                                  sm=[0.1, 0.3], l2=[0.0, 0.2], dram=[0.5, 2.2e-16])
    out = t.lookup_arrays(["m", "m"], [1, 4])
    assert out["dram"].tolist() == [0.5, 2.2e-16]
    assert out["solo_ms"].tolist() == [1.0, 3.0]
