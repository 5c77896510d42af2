"""Extractors against the plain-Python reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _timeline_cases import profile_tables, traces
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_feature_map, naive_features

from interfpred import (
    EWMA,
    CustomMap,
    InterfpredError,
    ProfileTable,
    Static,
    TimeWeighted,
    Trace,
    build_timeline,
    make_extractor,
)
from interfpred.constants import PREDICTED_RATE_MIN
from interfpred.data.profiles import profile_arrays
from interfpred.features import feature_names

MAPS = ("default", "gpulets", "rich")
COMBINES = ("sum", "max")


def _extractors():
    out = []
    for m in MAPS:
        for c in COMBINES:
            kw = {"feature_map": m, "combine": c, "target": "slowdown"}   # y checked as latency / solo
            out += [Static(**kw), EWMA(alpha=0.3, **kw), EWMA(alpha=1.0, **kw), TimeWeighted(**kw)]
    return out


@settings(max_examples=60, deadline=None)
@given(traces(), profile_tables(gpus=("g0", "g1")))
def test_every_extractor_matches_naive(trace, prof):
    dem, solo = profile_arrays(trace, prof)
    tl = build_timeline(trace)
    for ex in _extractors():
        fm = ex.transform(trace, prof, timeline=tl)
        ref = naive_features(trace.device, trace.start_ms, trace.end_ms, dem, ex.feature_map, ex.combine,
                             ex.aggregation, ex.compiled_spec.alpha)
        assert fm.X.shape == (len(trace), len(ex.names))
        np.testing.assert_allclose(fm.X, np.array(ref).reshape(fm.X.shape), rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(fm.X, ex.transform(trace, prof).X)  # with or without a timeline
        np.testing.assert_allclose(fm.y, fm.latency_ms / solo)


@settings(max_examples=40, deadline=None)
@given(traces(), profile_tables(gpus=("g0", "g1")), st.floats(0.0, 1.0))
def test_ewma_limits(trace, prof, alpha):
    for m in MAPS:
        kw = {"feature_map": m, "target": "slowdown"}    # the rate of a zero-length row is refused
        static = Static(**kw).transform(trace, prof).X
        np.testing.assert_array_equal(EWMA(alpha=0.0, **kw).transform(trace, prof).X, static)
        got = EWMA(alpha=alpha, **kw).transform(trace, prof).X
        assert np.all(np.isfinite(got))


def test_ewma_one_is_the_last_running_set_and_time_weighting_is_exact():
    prof = ProfileTable.from_columns(gpu=["g"] * 3, model=["a", "b", "c"], batch_size=[1] * 3,
                                     solo_ms=[1.0] * 3, sm=[0.5, 0.2, 0.4], l2=[0.1, 0.3, 0.6],
                                     dram=[0.2, 0.8, 0.1])
    # a runs 0..10; b joins 2..4; c joins 6..10.
    tr = Trace(id=[1, 2, 3], device=["g"] * 3, model=["a", "b", "c"], batch_size=[1] * 3,
               start_ms=[0.0, 2.0, 6.0], end_ms=[10.0, 4.0, 10.0])
    dm = "default"
    last = EWMA(alpha=1.0, feature_map=dm).transform(tr, prof).X[0]
    np.testing.assert_allclose(last, [0.5, 0.1, 0.2, 0.4, 0.6, 0.1])
    tw = TimeWeighted(feature_map=dm).transform(tr, prof).X[0]
    np.testing.assert_allclose(tw, [0.5, 0.1, 0.2, (2 * 0.2 + 4 * 0.4) / 10, (2 * 0.3 + 4 * 0.6) / 10,
                                    (2 * 0.8 + 4 * 0.1) / 10])
    e = EWMA(alpha=0.5, feature_map=dm).transform(tr, prof).X[0, 3]
    # launch 0 -> b arrives (0.2) -> b leaves (0) -> c arrives (0.4)
    assert e == pytest.approx(0.5 * 0.4 + 0.5 * (0.5 * 0.0 + 0.5 * (0.5 * 0.2 + 0.5 * 0.0)))
    np.testing.assert_array_equal(Static(feature_map=dm).transform(tr, prof).X[0, 3:], [0.0, 0.0, 0.0])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[st.floats(0, 1)] * 3), min_size=1, max_size=9),
       st.sampled_from(MAPS), st.sampled_from(COMBINES))
def test_instant_maps_match_naive(rows, fmap, combine):
    ex = Static(feature_map=fmap, combine=combine)
    dem = np.array(rows)
    allm = ex.map_running_set(dem)
    for a in range(len(rows)):
        others = [rows[j] for j in range(len(rows)) if j != a]
        ref = naive_feature_map(rows[a], others, fmap, combine)
        np.testing.assert_allclose(allm[a], ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(ex.map_running_set(dem, check=False)[a], allm[a])
        inst = ex.map_instant(dem[a], np.array(others).reshape(-1, 3))
        np.testing.assert_array_equal(inst, allm[a])
        # order of the others never matters, to the bit
        np.testing.assert_array_equal(ex.map_instant(dem[a], np.array(others[::-1]).reshape(-1, 3)), inst)


def test_custom_map_matches_builtin_and_naive():
    rng = np.random.default_rng(3)
    n = 60
    start = np.round(rng.uniform(0, 20, n), 1)
    tr = Trace(id=np.arange(n), device=["g0"] * n, model=rng.choice(["a", "b"], n), batch_size=rng.integers(1, 5, n),
               start_ms=start, end_ms=start + np.round(rng.uniform(0, 4, n), 1))
    prof = ProfileTable.from_columns(gpu=["g0"] * 4, model=["a", "a", "b", "b"], batch_size=[1, 4, 1, 4],
                                     solo_ms=[1.0, 3.0, 2.0, 5.0], sm=[0.2, 0.6, 0.3, 0.5],
                                     l2=[0.1, 0.4, 0.2, 0.3], dram=[0.3, 0.7, 0.1, 0.2])

    def fn(me, others):
        return [me[0], me[1], me[2], others[:, 0].sum(), others[:, 1].sum(), others[:, 2].sum()]

    cm = CustomMap(fn, names=feature_names("default"))
    dem, _ = profile_arrays(tr, prof)
    for agg in (Static, TimeWeighted, lambda **kw: EWMA(alpha=0.4, **kw)):
        got = agg(feature_map=cm, target="slowdown").transform(tr, prof).X     # zero-length rows too
        np.testing.assert_allclose(got, agg(feature_map="default", target="slowdown").transform(tr, prof).X,
                                   rtol=1e-12, atol=1e-14)
        ex = agg(feature_map=cm, target="slowdown")
        ref = naive_features(tr.device, tr.start_ms, tr.end_ms, dem, aggregation=ex.aggregation, alpha=ex.compiled_spec.alpha,
                             map_fn=lambda me, o: fn(np.array(me), np.array(o).reshape(-1, 3)))
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(InterfpredError, match="returned 1 values"):
        TimeWeighted(feature_map=CustomMap(lambda me, o: [1.0], names=["x", "y"]), target="slowdown").transform(tr, prof)
    with pytest.raises(InterfpredError, match="cannot be described"):
        Static(feature_map=cm).get_spec()


def test_profiles_interpolate_and_gpu_choice():
    prof = ProfileTable.from_columns(gpu=["l4", "l4"], model=["a", "a"], batch_size=[2, 4], solo_ms=[2.0, 4.0],
                                     sm=[0.2, 0.4], l2=[0.1, 0.3], dram=[0.5, 0.7])
    tr = Trace(id=["x", "y"], device=["dev0", "dev1"], model=["a", "a"], batch_size=[3, 2],
               start_ms=[0.0, 0.0], end_ms=[6.0, 4.0])
    fm = Static(feature_map="default", target="rate").transform(tr, prof)   # one-gpu table serves every device
    np.testing.assert_allclose(fm.solo_ms, [3.0, 2.0])
    np.testing.assert_allclose(fm.X[0, :3], [0.3, 0.2, 0.6])
    np.testing.assert_allclose(fm.y, [0.5, 0.5])
    np.testing.assert_allclose(fm.X[:, 3:], 0.0)       # different devices never interfere
    two = prof.merge(ProfileTable.from_columns(gpu=["h100"], model=["a"], batch_size=[2], solo_ms=[1.0],
                                               sm=[0.1], l2=[0.1], dram=[0.1]))
    with pytest.raises(InterfpredError, match="trace runs on devices dev0, dev1"):
        Static().transform(tr, two)
    per_gpu = Trace(id=[1, 2], device=["l4", "h100"], model=["a", "a"], batch_size=[2, 2],
                    start_ms=[0.0, 0.0], end_ms=[4.0, 2.0])
    np.testing.assert_allclose(Static().transform(per_gpu, two).solo_ms, [2.0, 1.0])


def test_bad_input_names_the_row():
    prof = ProfileTable.from_columns(gpu=["g"], model=["a"], batch_size=[1], solo_ms=[1.0], sm=[0.1],
                                     l2=[0.1], dram=[0.1])
    tr = Trace(id=[5, 6, 7], device=["g"] * 3, model=["a", "a", "zz"], batch_size=[1, 1, 1],
               start_ms=[0.0, 1.0, 2.0], end_ms=[1.0, 1.0, 3.0])
    with pytest.raises(InterfpredError, match=r"row 2 \(id 7\): no profile for model 'zz'"):
        Static(feature_map="default", target="slowdown").transform(tr, prof)
    ok = tr.take([0, 1])
    with pytest.raises(InterfpredError, match=r"row 1 \(id 6\) has zero latency"):
        Static(target="rate").transform(ok, prof)
    assert Static(feature_map="default", target="slowdown").transform(ok, prof).y.tolist() == [1.0, 0.0]
    big = Trace(id=[1], device=["g"], model=["a"], batch_size=[3], start_ms=[0.0], end_ms=[1.0])
    with pytest.raises(InterfpredError, match=r"row 0 \(id 1\): batch size 3 .* outside"):
        Static(feature_map="default", target="slowdown").transform(big, prof)
    assert Static(feature_map="default", target="slowdown").transform(big, prof, extrapolate=True).X.shape == (1, 6)
    with pytest.raises(InterfpredError, match="timeline was not built from this trace"):
        Static(feature_map="default", target="slowdown").transform(ok, prof, timeline=build_timeline(tr))
    with pytest.raises(InterfpredError, match="expected a ProfileTable"):
        Static(feature_map="default", target="slowdown").transform(ok, {"a": 1})


def test_spec_round_trip_and_errors():
    for ex in _extractors():
        for target in ("slowdown", "rate"):
            e = make_extractor(ex.get_spec(), target=target)
            spec = e.get_spec()
            assert json.loads(json.dumps(spec)) == spec
            assert make_extractor(spec) == e and make_extractor(**spec) == e
    assert make_extractor() == TimeWeighted()
    assert make_extractor(aggregation="ewma").alpha == 0.5
    assert make_extractor({"aggregation": "static", "feature_map": "rich"}) == Static(feature_map="rich")
    for bad, msg in [({"aggregation": "mean"}, "aggregation 'mean'"), ({"feature_map": "huge"}, "feature_map 'huge'"),
                     ({"combine": "min"}, "combine 'min'"), ({"target": "latency"}, "target 'latency'"),
                     ({"alpha": 0.3}, "only meaningful"), ({"aggregation": "ewma", "alpha": 1.5}, "alpha 1.5"),
                     ({"aggregation": "ewma", "alpha": "x"}, "alpha 'x'"), ({"window": 3}, "unknown extractor key")]:
        with pytest.raises(InterfpredError, match=msg):
            make_extractor(bad)


def test_spec_writes_feature_map_and_time_weighted():
    spec = TimeWeighted(feature_map="gpulets", combine="max").get_spec()
    assert spec["feature_map"] == "gpulets" and "map" not in spec
    assert spec["aggregation"] == "time_weighted" == TimeWeighted.aggregation
    assert repr(EWMA(alpha=0.3)) == "EWMA(alpha=0.3, feature_map='rich', combine='sum', target='rate')"


def test_spec_refuses_spellings_that_are_not_its_own():
    with pytest.raises(InterfpredError, match="unknown extractor key.s. map; expected"):
        make_extractor({"map": "rich"})
    with pytest.raises(InterfpredError, match="aggregation 'time-weighted' is not one of static, ewma, time_weighted"):
        make_extractor({"aggregation": "time-weighted"})


def test_extractor_hyperparameters_are_keyword_only():
    assert EWMA(alpha=0.2, feature_map="gpulets").alpha == pytest.approx(0.2)
    with pytest.raises(TypeError):
        EWMA(0.2)
    with pytest.raises(TypeError):
        Static(0.2)


def test_compiled_spec_is_public_and_consistent():
    from interfpred.features import compiled_maps as k

    spec = EWMA(alpha=0.25, feature_map="default", combine="max").compiled_spec
    assert spec[:3] == (k.MAP_DEFAULT, k.COMBINE_MAX, k.AGG_EWMA) and spec.alpha == pytest.approx(0.25)
    assert TimeWeighted(feature_map="rich").compiled_spec[:3] == (k.MAP_RICH, k.COMBINE_SUM, k.AGG_TIME_WEIGHTED)
    assert Static(feature_map=CustomMap(lambda me, o: [0.0], names=["z"])).compiled_spec.map_id == -1


@pytest.mark.parametrize("fmap", MAPS)
@pytest.mark.parametrize("combine", COMBINES)
def test_affine_form_equals_the_model_over_the_naive_map(fmap, combine):
    # b + w . phi_i = own(i) + sum_r other_weight(i, r) * other_r(i) + set terms, the split the
    # compiled projection evaluates, against the model over the plain-Python map of tests/naive.py
    # (not over the compiled map); the others' demands are computed here without either.
    from interfpred.features import compiled_maps as k

    rng = np.random.default_rng(11)
    map_id = Static(feature_map=fmap, combine=combine).compiled_spec.map_id
    for n in (1, 2, 5):
        dem = np.round(rng.random((n, 3)) * 4) / 4 if n == 5 else rng.random((n, 3))   # ties too
        phi = np.array([naive_feature_map(dem[i], np.delete(dem, i, axis=0), fmap, combine) for i in range(n)])
        w = rng.normal(size=phi.shape[1])
        terms, w_others = k.affine_terms(w, map_id)
        tot = k.quantize(dem).sum(axis=0)
        for i in range(n):
            rest = np.delete(dem, i, axis=0)
            other = np.zeros(3) if n == 1 else rest.sum(axis=0) if combine == "sum" else rest.max(axis=0)
            got = (k.affine_own(terms, 0.25, *dem[i]) + k.affine_set(terms, w_others, tot, n)
                   + sum(k.affine_other_weight(terms, r, dem[i, r]) * other[r] for r in range(3)))
            assert got == pytest.approx(0.25 + w @ phi[i], rel=1e-12, abs=1e-12)


def test_map_counters_checks_its_input_and_drops_the_share_columns():
    dem = [[0.5, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.9]]
    for fmap in MAPS:
        np.testing.assert_array_equal(Static(feature_map=fmap, shares=True).map_counters(dem),
                                      Static(feature_map=fmap).map_running_set(dem))
    with pytest.raises(InterfpredError, match=r"outside \[0, 1\]"):
        Static(shares=True).map_counters([[0.1, 1.5, 0.3]])
    with pytest.raises(InterfpredError, match="no counter part"):
        Static(feature_map="shares").map_counters(dem)


def test_latency_round_trip():
    solo = np.array([2.0, 3.0, 4.0])
    lat = np.array([2.5, 6.0, 4.0])
    for target in ("slowdown", "rate"):
        ex = Static(target=target)
        np.testing.assert_allclose(ex.latency_from_target(ex.target_from_latency(lat, solo), solo), lat)
    assert TimeWeighted(target="rate").latency_from_target(-1.0, 2.0) == pytest.approx(2.0 / PREDICTED_RATE_MIN)
    # the one clamp: never faster than solo, whichever target
    assert Static(target="slowdown").latency_from_target(0.5, 2.0) == 2.0
    assert Static(target="rate").latency_from_target(1.5, 2.0) == 2.0


def test_instant_map_input_checks():
    ex = Static(feature_map="default")
    with pytest.raises(InterfpredError, match=r"me has shape \(2,\)"):
        ex.map_instant([0.1, 0.2], [])
    with pytest.raises(InterfpredError, match=r"others has shape \(3,\)"):
        ex.map_instant([0.1, 0.2, 0.3], [0.1, 0.2, 0.3])
    with pytest.raises(InterfpredError, match="outside"):
        ex.map_running_set([[0.1, np.nan, 0.3]])
    with pytest.raises(InterfpredError, match=r"outside \[0, 1\]"):
        ex.map_instant([0.1, 1.5, 0.3], [])
    with pytest.raises(InterfpredError, match="MAX_RUNNING_SET"):
        ex.map_running_set(np.zeros((5000, 3)))
    np.testing.assert_array_equal(ex.map_instant([0.1, 0.2, 0.3], []), [0.1, 0.2, 0.3, 0, 0, 0])
    assert ex.map_running_set(np.empty((0, 3))).shape == (0, 6)


@settings(max_examples=25, deadline=None)
@given(traces(), profile_tables(gpus=("g0", "g1")))
def test_transform_many_equals_each_transform(trace, prof):
    from interfpred.features import transform_many

    cm = CustomMap(lambda me, o: [me[0] + o[:, 0].sum()], names=["sm_sum"])
    exs = _extractors() + [TimeWeighted(feature_map=cm, target="slowdown"), Static(target="slowdown")]
    many = transform_many(trace, prof, exs)
    for ex, fm in zip(exs, many):
        one = ex.transform(trace, prof)
        np.testing.assert_array_equal(fm.X, one.X)
        np.testing.assert_array_equal(fm.y, one.y)
        assert fm.names == one.names
    with pytest.raises(InterfpredError, match="at least one extractor"):
        transform_many(trace, prof, [])
    with pytest.raises(InterfpredError, match="expected Extractor"):
        transform_many(trace, prof, ["static"])


def test_model_files_name_the_extractor_key_they_do_not_know(tmp_path):
    from interfpred import InterferenceModel, load_model

    prof = ProfileTable.from_columns(gpu=["g"] * 2, model=["a", "b"], batch_size=[1, 1], solo_ms=[2.0, 4.0],
                                     sm=[0.5, 0.25], l2=[0.5, 0.5], dram=[0.25, 0.5])
    tr = Trace(id=[1, 2, 3], device=["g"] * 3, model=["a", "b", "a"], batch_size=[1, 1, 1],
               start_ms=[0.0, 1.0, 2.0], end_ms=[4.0, 6.0, 5.0])
    model = InterferenceModel({"aggregation": "static", "feature_map": "gpulets"}, "offline_linear").fit(tr, prof)
    state = model.to_state()
    assert state["extractor"]["feature_map"] == "gpulets"
    renamed = json.loads(json.dumps(state))
    renamed["extractor"]["map"] = renamed["extractor"].pop("feature_map")
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(renamed))
    with pytest.raises(InterfpredError, match=r"extractor\.map: unknown key"):
        load_model(path)
    path.write_text(json.dumps(state))
    np.testing.assert_allclose(load_model(path).predict_latency(tr, prof), model.predict_latency(tr, prof), rtol=1e-12)


def test_cli_aggregation_choices_are_the_extractor_names():
    from interfpred.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["fit", "--aggregation", "time-weighted", "--out", "m.json"])
    args = build_parser().parse_args(["fit", "--aggregation", "ewma", "--out", "m.json"])
    assert make_extractor(aggregation=args.aggregation) == EWMA()
    assert build_parser().parse_args(["fit", "--out", "m.json"]).aggregation == "time_weighted"
