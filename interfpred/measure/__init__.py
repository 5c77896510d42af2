"""Measuring campaigns: a GPU's co-location runs and profiles, written as the files ``interfpred fit`` reads.

``interfpred measure`` is :func:`measure` on a backend: :class:`~interfpred.measure.torch_backend.TorchBackend`
(PyTorch on CUDA, Nsight Compute; ``pip install "interfpred[measure]"``) or
:class:`~interfpred.measure.fake.FakeBackend` (a simulated device with known slowdowns, which runs
the same campaign without a GPU). The method is in docs/measure.md.

Names are imported when first used, so a measuring worker process starts without loading the
rest of interfpred.

Examples
--------
>>> from interfpred.measure import MeasureConfig, parse_workload
>>> config = MeasureConfig((parse_workload("resnet50:8"), parse_workload("vit_b_16:16")))
>>> len(config.plan().windows)       # 2 workloads x 3 solo windows, 1 pair, 2 self pairs
9
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interfpred.measure.campaign import CampaignSummary, MeasureConfig, measure
    from interfpred.measure.fake import FakeBackend
    from interfpred.measure.spec import Plan, Workload, build_plan, parse_workload

__all__ = ["CampaignSummary", "FakeBackend", "MeasureConfig", "Plan", "Workload", "build_plan", "measure",
           "parse_workload"]

_WHERE = {"CampaignSummary": "campaign", "MeasureConfig": "campaign", "measure": "campaign", "FakeBackend": "fake",
          "Plan": "spec", "Workload": "spec", "build_plan": "spec", "parse_workload": "spec"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"interfpred.measure.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'interfpred.measure' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
