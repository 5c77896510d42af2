"""The published schema of interfpred's JSON files: predictor states and model files.

Every predictor file (:meth:`~interfpred.predictors.BasePredictor.save`) and model file
(:meth:`~interfpred.InterferenceModel.save`, ``interfpred fit``) is validated against these
pydantic models before anything in it is used: unknown keys, wrong types (a list where a
name belongs, ``true`` where a version number belongs) and missing keys are refused with one
:class:`~interfpred.errors.InterfpredError` naming the file and the key.  Files are also
refused when larger than :data:`~interfpred.constants.MODEL_FILE_MAX_BYTES` or nested deeper
than :data:`~interfpred.constants.MODEL_FILE_MAX_DEPTH` (see :func:`interfpred._core.atomic.read_json`).

:func:`model_file_json_schema` gives the JSON Schema (published as
``docs/model-file.schema.json``; regenerate it with ``python -m interfpred._core.schema``).

Examples
--------
>>> check_predictor_file({"schema_version": True, "kind": "rls", "params": {}}, source="p.json")
Traceback (most recent call last):
...
interfpred.errors.InterfpredError: p.json: schema_version: Input should be a valid integer
>>> sorted(model_file_json_schema()["properties"])
['baselines', 'extractor', 'feature_names', 'frozen_bounds', 'interfpred_version', 'kind', 'predictor',
 'schema_version', 'selection']
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from interfpred.constants import AGGREGATIONS, COMBINES, FEATURE_MAPS, MODEL_DEFAULT_EXTRACTOR, SCHEMA_VERSION, TARGETS
from interfpred.errors import InterfpredError

__all__ = ["ExtractorSpec", "PredictorFile", "ModelFile", "check_predictor_file", "check_model_file", "check_schema_version",
           "model_file_json_schema"]


class PredictorFile(BaseModel):
    """A saved predictor: kind, hyperparameters, input width and learned state."""

    model_config = ConfigDict(extra="forbid", strict=True)

    schema_version: StrictInt
    kind: StrictStr
    params: dict[StrictStr, JsonValue]
    n_features_in: StrictInt | None = Field(default=None, ge=1)
    state: dict[StrictStr, JsonValue] | None = None


_DEFAULT_EXTRACTOR = dict(MODEL_DEFAULT_EXTRACTOR)


class ExtractorSpec(BaseModel):
    """An extractor's spec, as ``Extractor.get_spec`` writes it; ``make_extractor`` checks the values.

    A key left out takes ``MODEL_DEFAULT_EXTRACTOR``'s value, as ``make_extractor`` fills it.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    aggregation: StrictStr = Field(default=_DEFAULT_EXTRACTOR["aggregation"],
                                   description=f"one of {', '.join(AGGREGATIONS)}")
    alpha: StrictFloat | StrictInt | None = Field(default=None, description="EWMA weight of the newest value, ewma only")
    feature_map: StrictStr | None = Field(default=_DEFAULT_EXTRACTOR["feature_map"],
                                          description=f"one of {', '.join(FEATURE_MAPS)}")
    combine: StrictStr = Field(default=_DEFAULT_EXTRACTOR["combine"], description=f"one of {', '.join(COMBINES)}")
    target: StrictStr = Field(default=_DEFAULT_EXTRACTOR["target"], description=f"one of {', '.join(TARGETS)}")
    shares: StrictBool = Field(default=False, description="the MPS share features appended to the map")


class NoveltyCategoryFile(BaseModel):
    """One novelty category of frozen bounds: its cross-fitted scores and thresholds (empty: too few)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    n_scores: StrictInt = Field(ge=0)
    thresholds: list[StrictFloat]


class FrozenBoundsFile(BaseModel):
    """Thresholds of a model's frozen latency bounds (cross-fitted residual scores), one per level.

    ``thresholds`` are pooled; ``categories`` (``warm``, ``cold``) hold a threshold per level for
    rows whose models were all ``seen`` at fit, and for the others (see ``interfpred.model.crossfit``).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    levels: list[StrictFloat] = Field(min_length=1)
    thresholds: list[StrictFloat] = Field(min_length=1)
    folds: StrictInt = Field(ge=2)
    n_scores: StrictInt = Field(ge=1)
    seen: list[StrictStr] = Field(default_factory=list)
    min_scores: StrictInt = Field(ge=1)
    categories: dict[StrictStr, NoveltyCategoryFile]


class CandidateFile(BaseModel):
    """One configuration ``fit`` scored: a predictor kind and the extractor's feature map, share features, target."""

    model_config = ConfigDict(extra="forbid", strict=True)

    predictor: StrictStr
    feature_map: StrictStr
    shares: StrictBool
    target: StrictStr
    backoff: StrictStr | None = Field(default=None, description="what an EntityRLS candidate backs off to")


#: (warm, cold online, cold frozen) validation MAPE as fractions; null where that kind of fold could not be made.
_Figures = list[StrictFloat | StrictInt | None]


class SelectionFile(BaseModel):
    """What ``fit`` measured and chose when it chose the configuration by validation."""

    model_config = ConfigDict(extra="forbid", strict=True)

    chosen: CandidateFile
    rule: StrictStr = Field(description="how the choice was made, in words (derived: read for people)")
    scores: dict[StrictStr, _Figures] = Field(description="candidate label -> (warm, cold online, cold frozen) MAPE")
    baselines: dict[StrictStr, _Figures] = Field(description="baseline name -> the same figures, on the chosen target")
    warm_folds: StrictInt = Field(ge=0)
    cold_folds: StrictInt = Field(ge=0)
    fixed: dict[StrictStr, JsonValue] = Field(default_factory=dict, description="extractor keys the caller fixed")
    colocated: StrictBool = True
    uncovered: StrictStr | None = Field(default=None, description="why counter maps were left out (profiles "
                                        "not covering every row), or null")


class ModelFile(BaseModel):
    """A saved interference model: the extractor's spec and the predictor's state in one file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    schema_version: StrictInt
    kind: Literal["interfpred.model.interference"] = "interfpred.model.interference"  # constants.MODEL_FILE_KIND
    interfpred_version: StrictStr
    extractor: ExtractorSpec
    feature_names: list[StrictStr]
    predictor: PredictorFile
    #: The baselines (no interference, global mean, per-pair mean) fitted on the model's rows.
    baselines: dict[StrictStr, PredictorFile] = Field(default_factory=dict)
    #: Thresholds of the frozen latency bounds of a Calibrated predictor (absent otherwise).
    frozen_bounds: FrozenBoundsFile | None = None
    #: What ``fit`` chose by validation, with every candidate's scores (absent when the configuration was named).
    selection: SelectionFile | None = None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "file"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key (not part of the file format)"
    return f"{loc}: {msg}"


def check_predictor_file(state: Any, *, source: str = "state") -> None:
    """Raise :class:`InterfpredError` unless ``state`` follows :class:`PredictorFile`."""
    try:
        PredictorFile.model_validate(state)
    except ValidationError as exc:
        raise InterfpredError(f"{source}: {_first_error(exc)}") from None


def check_model_file(state: Any, *, source: str = "state") -> None:
    """Raise :class:`InterfpredError` unless ``state`` follows :class:`ModelFile`."""
    try:
        ModelFile.model_validate(state)
    except ValidationError as exc:
        raise InterfpredError(f"{source}: {_first_error(exc)}") from None


def check_schema_version(state: dict[str, Any], *, source: str = "state") -> None:
    """Raise :class:`InterfpredError` unless ``state["schema_version"]`` is the one this interfpred reads.

    >>> check_schema_version({"schema_version": 0}, source="m.json")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: m.json: schema_version 0 is not supported (this interfpred reads 1)
    """
    version = state.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InterfpredError(
            f"{source}: schema_version {version!r} is not supported (this interfpred reads {SCHEMA_VERSION})")


def model_file_json_schema() -> dict[str, Any]:
    """The JSON Schema of a model file (which embeds the predictor file's schema).

    Examples
    --------
    >>> model_file_json_schema()["additionalProperties"]
    False
    """
    return ModelFile.model_json_schema()


if __name__ == "__main__":  # pragma: no cover - regenerates docs/model-file.schema.json
    import json
    import sys

    sys.stdout.write(json.dumps(model_file_json_schema(), indent=2) + "\n")
