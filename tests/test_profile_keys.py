"""Sharing mechanism, MIG partition and processes as keys of a profile (missing: today's behaviour)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interfpred.constants import MECHANISMS
from interfpred.data.datasets import parvagpu_a100
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InputError, InterfpredError

HEADER = "gpu,model,batch_size,solo_ms,mechanism,partition,processes\n"


def _table(rows: str) -> ProfileTable:
    return ProfileTable.from_csv_text(HEADER + rows)


def test_rows_without_keys_behave_as_before():
    plain = ProfileTable.from_csv_text("gpu,model,batch_size,solo_ms\nl4,m,1,1.0\nl4,m,4,4.0\n")
    keyed = _table("l4,m,1,1.0,,,\nl4,m,4,4.0,,,\nl4,m,4,9.0,mig,3,1\n")
    for b in (1, 2, 3, 4):
        assert keyed.lookup("m", b).solo_ms == plain.lookup("m", b).solo_ms
    assert keyed.lookup_arrays(["m", "m"], [2, 3])["solo_ms"].tolist() == [2.0, 3.0]
    assert keyed.lookup("m", 4, mechanism="mig", partition="3").solo_ms == 9.0


def test_exact_keys_and_linear_in_processes():
    t = _table("a100,m,8,10.0,mig,3,1\na100,m,8,30.0,mig,3,3\na100,m,16,18.0,mig,3,1\na100,m,16,54.0,mig,3,3\n"
               "a100,m,8,7.0,mig,7,1\na100,m,8,12.0,mps,,2\n")
    assert t.keys("m") == (("mig", "3", 1), ("mig", "3", 3), ("mig", "7", 1), ("mps", "", 2))
    assert t.lookup("m", 8, mechanism="mig", partition="3", processes=2).solo_ms == 20.0
    assert t.lookup("m", 12, mechanism="mig", partition="3", processes=2).solo_ms == pytest.approx((14 + 42) / 2)
    p = t.lookup("m", 8, mechanism="mig", partition="3", processes=3)
    assert p.solo_ms == 30.0 and p.extra == {"mechanism": "mig", "partition": "3", "processes": "3"}
    assert t.lookup("m", 8, mechanism="mps", processes=2).solo_ms == 12.0
    arr = t.lookup_arrays(["m", "m"], [8, 16], mechanism="mig", partition="3", processes=3)["solo_ms"]
    assert arr.tolist() == [30.0, 54.0]
    with pytest.raises(InterfpredError, match=r"processes 4 of model 'm' is outside the profiled process counts 1..3"):
        t.lookup("m", 8, mechanism="mig", partition="3", processes=4)
    with pytest.raises(InterfpredError, match=r"no profile for model 'm' on gpu 'a100' with mechanism 'mig', "
                                              r"partition '2'; profiled: mechanism 'mig', partition '3'"):
        t.lookup("m", 8, mechanism="mig", partition="2")
    with pytest.raises(InterfpredError, match="with no mechanism or partition"):
        t.lookup("m", 8)


def test_bad_key_cells_are_located(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text(HEADER + "l4,m,1,1.0,mig,1,1\nl4,m,1,1.0,mig2,1,1\n")
    with pytest.raises(InputError, match=r"p.csv line 3: mechanism 'mig2' must be one of time_slicing, mps, mig"):
        ProfileTable.from_csv(f)
    with pytest.raises(InputError, match=r"row 2: processes '0' must be a positive integer"):
        _table("l4,m,1,1.0,mps,,0\n")
    # the same key twice with different numbers disagrees; different keys never do
    with pytest.raises(InputError, match=r"duplicate profile .*, mechanism 'mps', processes 2\) disagrees"):
        _table("l4,m,1,1.0,mps,,2\nl4,m,1,2.0,mps,,2\n")
    assert len(_table("l4,m,1,1.0,mps,,2\nl4,m,1,2.0,mps,,3\nl4,m,1,3.0,,,\n")) == 3


def test_keys_survive_csv_and_frames(tmp_path):
    t = _table("a100,m,8,10.0,mig,3g.40gb,1\na100,m,8,30.0,mig,3g.40gb,3\na100,m,8,5.0,,,\n")
    t.to_csv(tmp_path / "p.csv")
    back = ProfileTable.from_csv(tmp_path / "p.csv")
    assert back == t and back.keys("m") == t.keys("m")
    pytest.importorskip("pandas")
    from interfpred.data.columnar import profiles_from_frame, profiles_to_frame

    again = profiles_from_frame(profiles_to_frame(t))
    assert again.lookup("m", 8, mechanism="mig", partition="3g.40gb", processes=2).solo_ms == 20.0


def test_parvagpu_as_keyed_profiles():
    # every measured latency of ParvaGPU's runs read back through keyed lookups
    m = parvagpu_a100()
    c = m.columns()
    first = np.array([m.run_members(r)[0] for r in range(m.n_runs)])
    t = ProfileTable.from_columns(gpu=c["gpu"][first], model=c["model"][first], batch_size=m.batch_size[first],
                                  solo_ms=m.observed_ms[first],
                                  extra={k: c[k][first] for k in ("mechanism", "partition", "processes")})
    for i in first[::37]:
        got = t.lookup(str(c["model"][i]), int(m.batch_size[i]), mechanism="mig", partition=str(c["partition"][i]),
                       processes=int(c["processes"][i])).solo_ms
        assert got == pytest.approx(float(m.observed_ms[i]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", *MECHANISMS]), st.sampled_from(["", "1", "3", "7g.80gb"]),
                          st.integers(1, 5), st.sampled_from([1, 2, 8]), st.floats(0.5, 100)),
                min_size=1, max_size=12, unique_by=lambda r: r[:4]))
def test_every_profiled_row_is_found_again(rows):
    t = ProfileTable.from_columns(gpu=["g"] * len(rows), model=["m"] * len(rows), batch_size=[r[3] for r in rows],
                                  solo_ms=[r[4] for r in rows],
                                  extra={"mechanism": [r[0] for r in rows], "partition": [r[1] for r in rows],
                                         "processes": [str(r[2]) for r in rows]})
    for mech, part, procs, batch, ms in rows:
        assert t.lookup("m", batch, mechanism=mech, partition=part, processes=procs).solo_ms == ms


def test_measurements_check_the_same_keys(tmp_path):
    from interfpred.data.measurements import Measurements

    f = tmp_path / "m.csv"
    f.write_text("run,gpu,model,batch_size,solo_ms,observed_ms,member,mechanism,processes\n"
                 "1,a100,m,8,1.0,2.0,1,mig,2\n1,a100,m,8,1.0,2.0,2,timeslicing,2\n")
    with pytest.raises(InputError, match=r"m.csv line 3: mechanism 'timeslicing' must be one of time_slicing"):
        Measurements.read(f)
    assert Measurements.read(_ok(tmp_path)).extra_columns == ("mechanism", "processes")


def _ok(tmp_path):
    f = tmp_path / "ok.csv"
    f.write_text("run,gpu,model,batch_size,solo_ms,observed_ms,member,mechanism,processes\n"
                 "1,a100,m,8,1.0,2.0,1,time_slicing,2\n1,a100,m,8,1.0,2.0,2,time_slicing,2\n")
    return f
