"""Entities: the CSR table of own and co-runner entities beside feature rows."""

import numpy as np
import pytest

from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError


def test_from_lists_round_trips_every_row():
    own = ["a", "b", "c", "a"]
    co = [{"b": 1.0, "c": 0.25}, {}, {"a": 2.0}, {"a": 1.0}]
    ent = Entities.from_lists(own, co)
    assert len(ent) == 4
    for i in range(4):
        assert ent.row(i) == (own[i], co[i])


def test_take_selects_rows_in_order_and_keeps_vocabulary():
    ent = Entities.from_lists(["a", "b", "c"], [{"b": 1.0}, {"a": 0.5, "c": 0.5}, {}])
    sub = ent.take(np.array([2, 1, 1]))
    assert sub.names == ent.names
    assert [sub.row(i) for i in range(3)] == [ent.row(2), ent.row(1), ent.row(1)]
    mask = ent.take(np.array([True, False, True]))
    assert [mask.row(i) for i in range(2)] == [ent.row(0), ent.row(2)]
    assert len(ent.take(np.array([], dtype=np.int64))) == 0


def test_pair_keys_ignore_zero_weights_and_sort():
    ent = Entities.from_lists(["a"], [{"c": 1.0, "b": 0.0, "a": 1.0}])
    assert ent.pair_keys() == [("a", ("a", "c"))]


@pytest.mark.parametrize("kwargs, needle", [
    (dict(own=[0, 1], indptr=[0, 0], co=[], weight=[]), "indptr has 2 entries"),
    (dict(own=[0], indptr=[0, 2], co=[0], weight=[1.0]), "end at len(co)"),
    (dict(own=[0], indptr=[0, 1], co=[0], weight=[1.0, 2.0]), "weight has 2"),
    (dict(own=[3], indptr=[0, 0], co=[], weight=[]), "own holds index 3"),
    (dict(own=[0], indptr=[0, 1], co=[-1], weight=[1.0]), "co holds index -1"),
    (dict(own=[0], indptr=[0, 1], co=[0], weight=[np.nan]), "finite"),
    (dict(own=[0], indptr=[0, 1], co=[0], weight=[-1.0]), ">= 0"),
])
def test_bad_tables_are_refused(kwargs, needle):
    with pytest.raises(InterfpredError, match=None) as err:
        Entities(names=("a", "b"), **{k: np.asarray(v) for k, v in kwargs.items()})
    assert needle in str(err.value)


def test_duplicate_names_are_refused():
    with pytest.raises(InterfpredError, match="distinct"):
        Entities(("a", "a"), np.zeros(1), np.zeros(2), np.zeros(0), np.zeros(0))
