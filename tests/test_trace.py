"""Tests of Trace: validation, CSV round trips, selection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred import InputError, InterfpredError, Trace

HEADER = "id,device,model,batch_size,start_ms,end_ms\n"


def _trace(**over) -> Trace:
    cols = dict(id=[1, 2, 3], device=["g0", "g0", "g1"], model=["a", "b", "a"], batch_size=[1, 2, 4],
                start_ms=[0.0, 1.0, 0.5], end_ms=[2.0, 1.0, 3.0])
    cols.update(over)
    return Trace(**cols)


def test_columns_and_derived_values():
    t = _trace()
    assert len(t) == 3
    assert t.devices == ("g0", "g1")
    assert t.latency_ms.tolist() == [2.0, 0.0, 2.5]
    assert t.batch_size.dtype == np.int64
    assert t.solo_ms is None
    with pytest.raises(ValueError):
        t.start_ms[0] = 5.0


@pytest.mark.parametrize("over, message", [
    (dict(id=[1, 2, 1]), r"row 2 \(id 1\): duplicate id 1 \(first seen at row 0\)"),
    (dict(end_ms=[2.0, 0.5, 3.0]), r"row 1 \(id 2\): end_ms 0.5 is before start_ms 1.0"),
    (dict(start_ms=[0.0, float("nan"), 0.5]), r"row 1 \(id 2\): start_ms nan is not a finite time"),
    (dict(end_ms=[2.0, 1.0, float("inf")]), r"row 2 \(id 3\): end_ms inf is not a finite time"),
    (dict(batch_size=[1, 0, 4]), r"row 1 \(id 2\): batch_size 0 is not a positive integer"),
    (dict(model=["a", "", "a"]), r"row 1 \(id 2\): model is empty"),
    (dict(device=["g0", "g0"]), r"trace column device has shape \(2,\), expected \(3,\)"),
    (dict(solo_ms=[1.0, -1.0, 1.0]), r"row 1 \(id 2\): solo_ms -1.0 is not a positive finite latency"),
])
def test_validation_names_row_and_value(over, message):
    with pytest.raises(InterfpredError, match=message):
        _trace(**over)


def test_csv_round_trip_with_solo_and_string_ids(tmp_path):
    t = _trace(solo_ms=[1.5, 0.25, 2.0])
    path = tmp_path / "t.csv"
    t.to_csv(path)
    assert Trace.from_csv(path) == t
    path.write_text("id,device,model,batch_size,start_ms,end_ms,comment\n"
                    "req-a,g0,resnet50,8,0.0,5.5,x\nreq-b,g0,vgg19,4,1,7.25,y\n")
    s = Trace.from_csv(path)
    assert s.id.tolist() == ["req-a", "req-b"]
    assert s.end_ms.tolist() == [5.5, 7.25]


@pytest.mark.parametrize("body, message", [
    ("1,g,m,1,0,1\n1,g,m,1,0,1\n", r"t.csv line 3: duplicate id 1 \(first seen at line 2\)"),
    ("1,g,m,1,5,1\n", r"t.csv line 2: end_ms 1.0 is before start_ms 5.0"),
    ("1,g,m,1,x,1\n", r"t.csv line 2: start_ms 'x' is not a number"),
    ("1,g,m,1,0\n", r"t.csv line 2: has 5 fields, the header has 6"),
    ("\n1,g,m,1,0,1\n\n2,g,m,1,nan,1\n", r"t.csv line 5: start_ms nan is not a finite time"),
])
def test_csv_errors_name_file_and_line(tmp_path, body, message):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + body)
    with pytest.raises(InputError, match=message):
        Trace.from_csv(path)


def test_csv_missing_columns_and_empty(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,device,model,start_ms,end_ms\n")
    with pytest.raises(InputError, match="missing column.*batch_size"):
        Trace.from_csv(path)
    path.write_text("")
    with pytest.raises(InputError, match="empty file"):
        Trace.from_csv(path)
    path.write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError, match="binary"):
        Trace.from_csv(path)


def test_header_only_gives_empty_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER)
    assert len(Trace.from_csv(path)) == 0


def test_take_sorted_concat():
    t = _trace()
    s = t.sorted()
    assert s.id.tolist() == [1, 3, 2]
    assert t.take(np.array([2])).model.tolist() == ["a"]
    both = Trace.concat([t.take(slice(0, 1)), t.take(slice(1, 3))])
    assert both == t
    with pytest.raises(InterfpredError, match="duplicate id"):
        Trace.concat([t, t])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e3), st.integers(1, 64),
                          st.sampled_from(["g0", "g1"])), max_size=30))
def test_round_trip_is_exact(tmp_path_factory, rows):
    t = Trace(id=list(range(len(rows))), device=[r[3] for r in rows], model=["m"] * len(rows),
              batch_size=[r[2] for r in rows], start_ms=[r[0] for r in rows],
              end_ms=[r[0] + r[1] for r in rows])
    path = tmp_path_factory.mktemp("rt") / "t.csv"
    t.to_csv(path)
    assert Trace.from_csv(path) == t


@settings(max_examples=120, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789,.-enaif\n\"g x")), max_size=200))
def test_reader_only_raises_its_own_errors(tmp_path_factory, body):
    path = tmp_path_factory.mktemp("fz") / "t.csv"
    path.write_text(HEADER + body)
    try:
        t = Trace.from_csv(path)
    except InterfpredError:
        return
    assert np.all(t.end_ms >= t.start_ms)


def test_device_is_required_and_named_device():
    cols = dict(id=[1, 2], model=["a", "b"], batch_size=[1, 1], start_ms=[0.0, 0.0], end_ms=[1.0, 2.0])
    with pytest.raises(TypeError, match="device"):
        Trace(**cols)
    with pytest.raises(TypeError, match="gpu"):
        Trace(gpu=["g1", "g0"], **cols)
    t = Trace(device=["g1", "g0"], **cols)
    assert t.codes("device") == (("g0", "g1"), pytest.approx(np.array([1, 0])))
    with pytest.raises(InterfpredError, match="factorises 'device' or 'model', not 'gpu'"):
        t.codes("gpu")


def test_csv_needs_a_device_column_and_writes_one(tmp_path):
    from interfpred.data.columnar import read_trace

    path = tmp_path / "gpu.csv"
    path.write_text("id,gpu,model,batch_size,start_ms,end_ms\n1,gpu0,a,1,0.0,1.5\n2,gpu1,a,2,0.5,2.0\n")
    with pytest.raises(InputError, match=r"gpu\.csv.*missing column\(s\) device"):
        Trace.from_csv(path)
    with pytest.raises(InputError, match=r"missing column\(s\) device"):
        read_trace(path)
    path.write_text(path.read_text().replace("id,gpu,", "id,device,"))
    t = Trace.from_csv(path)
    assert t.devices == ("gpu0", "gpu1")
    np.testing.assert_allclose(t.latency_ms, [1.5, 1.5], rtol=1e-12)
    for engine in ("python", "pyarrow"):
        t.to_csv(tmp_path / f"{engine}.csv", engine=engine)
        assert (tmp_path / f"{engine}.csv").read_text().splitlines()[0].startswith("id,device,model,")
