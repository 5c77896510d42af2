"""Provisioning: which MIG instances, batch sizes and MPS processes serve given models on the fewest GPUs.

:mod:`~interfpred.provisioning.mig` holds the MIG profile tables (GPCs, SMs, memory slices and
valid placements of A100-40GB/80GB, H100 and H200); :mod:`~interfpred.provisioning.plan` packs
models under latency SLOs and request rates onto the fewest GPUs (an integer program solved by
HiGHS), checks any deployment against the measured table, and bounds the GPU count from below;
:mod:`~interfpred.provisioning.advise` ranks time-slicing, MPS and MIG for a workload by simulating each.
"""

from interfpred.provisioning.advise import Advice, MechanismScore, advise, mig_instances
from interfpred.provisioning.mig import MIG_GPUS, MigProfile, check_layout, layout_sizes, mig_profile, place
from interfpred.provisioning.plan import (
    ConfigTable,
    Deployment,
    Plan,
    Segment,
    Validation,
    plan,
    read_slo,
    validate_plan,
)

__all__ = ["MIG_GPUS", "Advice", "ConfigTable", "Deployment", "MechanismScore", "MigProfile", "Plan", "Segment",
           "Validation", "advise", "check_layout", "layout_sizes", "mig_instances", "mig_profile", "place", "plan",
           "read_slo", "validate_plan"]
