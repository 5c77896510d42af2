"""The fleet description ``interfpred serve`` reads: which devices (GPUs or MIG instances) sit on which node.

A JSON file::

    {"profiles": "profiles.csv",
     "devices": [{"node": "node-a", "device": "gpu0", "gpu": "h200"},
                 {"node": "node-a", "device": "gpu1", "gpu": "h200"}],
     "max_running": 4, "margin": 0.1}

``profiles`` is a profile file (CSV, Parquet or Arrow) relative to the description's folder;
each device's ``gpu`` is the GPU type (a MIG instance's own type) its profiles describe, and may
be omitted when the table holds one type. A device is named ``node/device`` everywhere else.

Examples
--------
>>> spec = FleetSpec.model_validate({"profiles": "p.csv", "devices": [{"node": "n1", "device": "gpu0"}]})
>>> spec.device_names(), spec.nodes()
(['n1/gpu0'], {'n1': ['n1/gpu0']})
>>> FleetSpec.model_validate({"profiles": "p.csv", "devices": []})
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for FleetSpec
...
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from interfpred._core.atomic import read_json
from interfpred.constants import FLEET_MARGIN, SERVE_MAX_NAME_CHARS, TRACKER_LATE_WINDOW_MS
from interfpred.errors import InterfpredError

__all__ = ["DeviceSpec", "FleetSpec", "read_fleet_spec"]

_NAME = r"^[A-Za-z0-9]([A-Za-z0-9._:-]*[A-Za-z0-9])?$"


class DeviceSpec(BaseModel):
    """One device: the node it sits on, its name on that node, its GPU type in the profiles."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    node: str = Field(min_length=1, max_length=SERVE_MAX_NAME_CHARS, pattern=_NAME)
    device: str = Field(min_length=1, max_length=SERVE_MAX_NAME_CHARS, pattern=_NAME)
    gpu: str | None = Field(default=None, min_length=1, max_length=SERVE_MAX_NAME_CHARS)

    @property
    def name(self) -> str:
        """``node/device``, the device's name in every request and answer."""
        return f"{self.node}/{self.device}"


class FleetSpec(BaseModel):
    """The whole description: the profile file, the devices, and the fleet's placement options."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    profiles: str = Field(min_length=1)
    devices: list[DeviceSpec] = Field(min_length=1, max_length=100_000)
    margin: float = Field(default=FLEET_MARGIN, ge=0.0, allow_inf_nan=False)
    max_running: int | None = Field(default=None, ge=1)
    late_window_ms: float = Field(default=TRACKER_LATE_WINDOW_MS, ge=0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _distinct(self) -> FleetSpec:
        names = self.device_names()
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"device {dup!r} is listed twice")
        return self

    def device_names(self) -> list[str]:
        """Every device's ``node/device`` name, in the file's order (the order ties are broken in)."""
        return [d.name for d in self.devices]

    def nodes(self) -> dict[str, list[str]]:
        """Node name -> its devices' names."""
        out: dict[str, list[str]] = {}
        for d in self.devices:
            out.setdefault(d.node, []).append(d.name)
        return out


def read_fleet_spec(path: str | os.PathLike[str]) -> tuple[FleetSpec, Path]:
    """The description in ``path`` and its profile file's path (resolved against the description's folder)."""
    raw = read_json(path)
    try:
        spec = FleetSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InterfpredError(f"{os.fspath(path)}: {where}: {first['msg']}") from None
    return spec, Path(path).resolve().parent / spec.profiles
