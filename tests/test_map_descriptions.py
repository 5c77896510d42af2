"""Each built-in feature map is described once, as data (its columns: a term kind and a resource each).

The description, the feature names and the plain-Python map of tests/naive.py must agree; every form
read from the description (the compiled map, its affine form, the std-bound pattern vectors of the
serving layer) is held to the naive map here or in the test module of that form, never to another form.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_feature_map

from interfpred import Static
from interfpred.constants import RESOURCES
from interfpred.features import compiled_maps as k
from interfpred.features import feature_names
from interfpred.features.maps import MAP_IDS, SHARE_COLUMNS
from interfpred.serving.projection import bounds

MAPS = ("default", "gpulets", "rich")
#: Feature name suffix -> term kind, written out here (not read from the library's name table).
SUFFIX_KIND = {"me": k.TERM_OWN, "other": k.TERM_OTHER, "me_x_other": k.TERM_PRODUCT, "total": k.TERM_TOTAL,
               "excess": k.TERM_EXCESS}


def _parse(name):
    """A feature name -> (term kind, resource), from its spelling alone."""
    if name == "n_others":
        return k.TERM_N_OTHERS, -1
    res, _, suffix = name.partition("_")
    return SUFFIX_KIND[suffix], RESOURCES.index(res)


def _term_by_definition(kind, r, me, others, combine):
    """One term of member ``me`` beside ``others`` from its definition (independent of the library)."""
    if kind == k.TERM_N_OTHERS:
        return float(len(others))
    other = (sum(o[r] for o in others) if combine == "sum" else max([o[r] for o in others], default=0.0))
    total = me[r] + sum(o[r] for o in others)
    return {k.TERM_OWN: me[r], k.TERM_OTHER: other, k.TERM_PRODUCT: me[r] * other, k.TERM_TOTAL: total,
            k.TERM_EXCESS: max(0.0, total - 1.0)}[kind]


def test_resource_codes_are_the_columns_of_a_demand_row():
    assert (k.SM, k.L2, k.DRAM) == tuple(RESOURCES.index(r) for r in ("sm", "l2", "dram")) and k.N_RESOURCES == 3


@pytest.mark.parametrize("fmap", MAPS)
def test_each_description_and_its_feature_names_agree(fmap):
    map_id = MAP_IDS[fmap]
    desc = k.MAP_DESCRIPTIONS[map_id]
    names = feature_names(fmap)
    assert tuple(_parse(n) for n in names) == desc
    assert len(set(desc)) == len(desc)
    assert k.n_features(map_id) == len(desc) == Static(feature_map=fmap).n_features
    for f, (kind, r) in enumerate(desc):
        assert tuple(k.MAP_TERMS[map_id, f]) == (kind, r)
        assert k.TERM_COLUMN[map_id, kind, max(r, 0)] == f
    assert int((k.TERM_COLUMN[map_id] >= 0).sum()) == len(desc)   # no column the description does not hold


def test_the_public_names_of_the_built_in_maps():
    # what users and saved models see, spelled out
    assert feature_names("gpulets") == ("l2_me", "dram_me", "l2_other", "dram_other")
    assert feature_names("default") == ("sm_me", "l2_me", "dram_me", "sm_other", "l2_other", "dram_other")
    assert feature_names("rich") == feature_names("default") + (
        "sm_me_x_other", "l2_me_x_other", "dram_me_x_other", "sm_total", "l2_total", "dram_total",
        "sm_excess", "l2_excess", "dram_excess", "n_others")
    assert feature_names("shares") == ("share_me", "share_other", "n_others")
    default = feature_names("default")
    assert tuple(default[c] for c in SHARE_COLUMNS) == ("sm_me", "sm_other", "l2_other")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.floats(0, 1)] * 3), min_size=1, max_size=6),
       st.sampled_from(MAPS), st.sampled_from(("sum", "max")))
def test_each_description_says_what_the_naive_map_computes(rows, fmap, combine):
    # column f of the naive map is the term the description names for it, by that term's definition
    desc = k.MAP_DESCRIPTIONS[MAP_IDS[fmap]]
    for a in range(len(rows)):
        others = rows[:a] + rows[a + 1:]
        got = naive_feature_map(rows[a], others, fmap, combine)
        want = [_term_by_definition(kind, r, rows[a], others, combine) for kind, r in desc]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_a_malformed_description_is_refused(monkeypatch):
    monkeypatch.setitem(k.MAP_DESCRIPTIONS, k.MAP_DEFAULT, ((k.TERM_OWN, k.SM), (k.TERM_OWN, k.SM)))
    with pytest.raises(ValueError, match=r"map 0 column 1: term \(0, 0\) is already column 0"):
        k._term_tables()
    monkeypatch.setitem(k.MAP_DESCRIPTIONS, k.MAP_DEFAULT, ((k.TERM_N_OTHERS, k.SM),))
    with pytest.raises(ValueError, match=r"map 0 column 0: term \(5, 0\) is not a known kind and resource"):
        k._term_tables()


def _dense_pattern_vectors(map_id, d, pattern):
    vidx = np.empty((bounds.N_PATTERN_VECTORS, bounds.PATTERN_SLOTS), dtype=np.int64)
    vval = np.empty((bounds.N_PATTERN_VECTORS, bounds.PATTERN_SLOTS))
    bounds.std_pattern_vectors(map_id, d, True, pattern, vidx, vval)
    V = np.zeros((bounds.N_PATTERN_VECTORS, d + 1))
    for u in range(bounds.N_PATTERN_VECTORS):
        used = vidx[u] >= 0
        assert not np.any(used[np.argmin(used):]) or used.all()    # the used pairs come first
        np.add.at(V[u], vidx[u][used], vval[u][used])
    return V


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.floats(0, 1)] * 3), min_size=1, max_size=6), st.sampled_from(MAPS))
def test_std_pattern_vectors_rebuild_the_naive_rows(rows, fmap):
    # a + sum_r T_r b_r + n N, with a = A + sum_r me_r D_r - sum_r me_r^2 C_r and b_r = B_r + me_r C_r,
    # is the member's row [phi, 1] of the naive map (sum combine), for the pattern of totals over capacity
    map_id = MAP_IDS[fmap]
    d = len(feature_names(fmap))
    T = np.array(rows).sum(axis=0)
    has_excess = [any(kind == k.TERM_EXCESS and r == s for kind, r in k.MAP_DESCRIPTIONS[map_id]) for s in range(3)]
    pattern = sum(1 << r for r in range(3) if has_excess[r] and T[r] > 1.0)
    V = _dense_pattern_vectors(map_id, d, pattern)
    A, N = V[bounds._VA], V[bounds._VN]
    D, C, B = (V[base:base + 3] for base in (bounds._VD, bounds._VC, bounds._VB))
    for a in range(len(rows)):
        me = np.array(rows[a])
        x = A + me @ D - (me ** 2) @ C + T @ (B + me[:, None] * C) + (len(rows) - 1) * N
        want = np.append(naive_feature_map(rows[a], rows[:a] + rows[a + 1:], fmap, "sum"), 1.0)
        np.testing.assert_allclose(x, want, rtol=1e-9, atol=1e-12)


def test_pattern_slots_hold_the_widest_vector():
    # the rich map with every total over capacity: A holds the intercept and the three excesses
    vidx = np.empty((bounds.N_PATTERN_VECTORS, bounds.PATTERN_SLOTS), dtype=np.int64)
    vval = np.empty((bounds.N_PATTERN_VECTORS, bounds.PATTERN_SLOTS))
    bounds.std_pattern_vectors(k.MAP_RICH, 16, True, 0b111, vidx, vval)
    assert bounds.PATTERN_SLOTS == 4
    np.testing.assert_array_equal(vidx[bounds._VA], [16, 12, 13, 14])
    np.testing.assert_array_equal(vval[bounds._VA], [1.0, -1.0, -1.0, -1.0])


def test_gpulets_model_weighs_the_gpulets_map_columns_by_their_terms():
    # the predictors layer cannot read the description (it sits below features); this holds it to it
    from interfpred import GpuletsModel

    c = (0.1, 0.2, 0.3, 0.4, 0.5)    # gpulets' own order: L2_me, L2_other, DRAM_me, DRAM_other, 1
    own_order = {(k.TERM_OWN, k.L2): 0, (k.TERM_OTHER, k.L2): 1, (k.TERM_OWN, k.DRAM): 2, (k.TERM_OTHER, k.DRAM): 3}
    want = [c[own_order[t]] for t in k.MAP_DESCRIPTIONS[k.MAP_GPULETS]]
    np.testing.assert_array_equal(GpuletsModel(coefficients=c).coef_, want)
