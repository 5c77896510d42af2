"""One solo profile: a (model, batch size) measured alone on one GPU, validated at the edges."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from interfpred.constants import DEFAULT_SHARE, MAX_BATCH_SIZE
from interfpred.errors import InterfpredError

__all__ = ["Profile"]


class Profile(BaseModel):
    """Solo measurements of one (model, batch size) on one GPU.

    Throughputs are fractions of peak in [0, 1] (Nsight Compute's percent divided by 100);
    each may be None when that counter was not measured (never zero in its place).
    ``solo_ms`` is the latency of the batch running alone, in milliseconds; ``share`` the MPS
    active thread percentage it ran under, in (0, 100] (100: not partitioned).  ``extra`` keeps
    any additional columns of a profile CSV as strings.  A field out of range raises
    :class:`~interfpred.errors.InterfpredError` naming each bad field, its value and the rule.

    Examples
    --------
    >>> Profile(gpu="l4", model="vgg19", batch_size=8, solo_ms=12.5, sm=0.7, l2=0.3, dram=0.45)
    Profile(gpu='l4', model='vgg19', batch_size=8, solo_ms=12.5, sm=0.7, l2=0.3, dram=0.45, share=100.0, extra={})
    >>> Profile(gpu="l4", model="vgg19", batch_size=8, solo_ms=12.5, sm=70, l2=0.3, dram=0.45)
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: invalid profile: sm 70: Input should be less than or equal to 1
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str = Field(min_length=1)
    model: str = Field(min_length=1)
    batch_size: int = Field(gt=0, le=MAX_BATCH_SIZE)
    solo_ms: float = Field(gt=0, allow_inf_nan=False)
    sm: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    l2: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    dram: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    share: float = Field(default=DEFAULT_SHARE, gt=0.0, le=100.0, allow_inf_nan=False)
    extra: dict[str, str] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            parts = [f"{'.'.join(map(str, e['loc'])) or 'profile'} {e.get('input')!r}: {e['msg']}"
                     for e in exc.errors()]
            raise InterfpredError("invalid profile: " + "; ".join(parts)) from None

    @field_validator("gpu", "model")
    @classmethod
    def _no_surrounding_space(cls, value: str) -> str:
        if value != value.strip():
            raise ValueError(f"{value!r} has leading or trailing whitespace")
        return value

