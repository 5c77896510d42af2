"""One model, one answer: every way of building an extractor with a partial or empty spec completes it
from MODEL_DEFAULT_EXTRACTOR, so a model built by hand learns what ``InterferenceModel()`` and the CLI learn."""

from __future__ import annotations

import inspect

import pytest

from interfpred import InterferenceModel
from interfpred.constants import DEFAULT_EWMA_ALPHA, FEATURE_MAPS, MODEL_DEFAULT_EXTRACTOR, TARGETS
from interfpred.features import EWMA, Static, TimeWeighted, default_extractor, feature_names, make_extractor

DEFAULTS = dict(MODEL_DEFAULT_EXTRACTOR)


def _spec(ex):
    return {k: v for k, v in ex.get_spec().items() if k != "alpha"}


def _expected(**named):
    return {**DEFAULTS, **named}


@pytest.mark.parametrize("build", [
    lambda: InterferenceModel().extractor,
    lambda: InterferenceModel({}).extractor,
    lambda: InterferenceModel(None).extractor,
    lambda: make_extractor({}),
    lambda: make_extractor(),
    lambda: default_extractor(),
    lambda: TimeWeighted(),
], ids=["model()", "model({})", "model(None)", "make_extractor({})", "make_extractor()", "default_extractor()",
        "TimeWeighted()"])
def test_empty_spec_is_the_default(build):
    ex = build()
    assert _spec(ex) == DEFAULTS
    assert ex == default_extractor()


@pytest.mark.parametrize("cls, aggregation", [(Static, "static"), (EWMA, "ewma"), (TimeWeighted, "time_weighted")])
def test_classes_without_arguments_take_the_default_spec(cls, aggregation):
    ex = cls()
    assert _spec(ex) == _expected(aggregation=aggregation)
    assert ex.shares is False
    if cls is EWMA:
        assert ex.alpha == DEFAULT_EWMA_ALPHA
    # the signature itself says so (what help() shows and what clone-by-signature reads)
    params = inspect.signature(cls).parameters
    assert {k: params[k].default for k in ("feature_map", "combine", "target")} == \
        {k: DEFAULTS[k] for k in ("feature_map", "combine", "target")}


@pytest.mark.parametrize("aggregation", ["static", "ewma", "time_weighted"])
def test_a_partial_spec_keeps_every_other_default(aggregation):
    ex = make_extractor({"aggregation": aggregation})
    assert _spec(ex) == _expected(aggregation=aggregation)
    assert _spec(InterferenceModel({"aggregation": aggregation}).extractor) == _expected(aggregation=aggregation)


@pytest.mark.parametrize("fmap", [m for m in FEATURE_MAPS if m != DEFAULTS["feature_map"]])
def test_naming_only_the_map_keeps_the_default_target(fmap):
    want = _expected(feature_map=fmap)
    assert _spec(InterferenceModel({"feature_map": fmap}).extractor) == want
    assert _spec(make_extractor({"feature_map": fmap})) == want
    assert _spec(make_extractor(feature_map=fmap)) == want
    assert _spec(TimeWeighted(feature_map=fmap)) == want


@pytest.mark.parametrize("target", TARGETS)
def test_a_named_target_is_kept_and_the_rest_defaulted(target):
    want = _expected(target=target)
    assert _spec(InterferenceModel({"target": target}).extractor) == want
    assert _spec(make_extractor({"target": target})) == want
    assert _spec(TimeWeighted(target=target)) == want


def test_the_default_target_differs_from_the_paper_slowdown_so_the_check_above_can_fail():
    # the reproduction names "slowdown" explicitly; the library's default is another target
    assert DEFAULTS["target"] != "slowdown"
    assert Static(target="slowdown").target == "slowdown"


def test_feature_names_default_to_the_default_map():
    assert feature_names() == feature_names(DEFAULTS["feature_map"]) == TimeWeighted().names


def test_the_model_file_schema_documents_the_same_defaults():
    from interfpred._core.schema import ExtractorSpec

    filled = ExtractorSpec().model_dump()
    assert {k: filled[k] for k in DEFAULTS} == DEFAULTS
    assert make_extractor({k: v for k, v in filled.items() if v is not None}) == default_extractor()
