"""Provisioning: which MIG instances, batch sizes and MPS processes serve given models on the fewest GPUs.

:mod:`~interfpred.provisioning.mig` holds the MIG profile tables (GPCs, SMs, memory slices and
valid placements of A100-40GB/80GB, H100 and H200); :mod:`~interfpred.provisioning.plan` packs
models under latency SLOs and request rates onto the fewest GPUs (an integer program solved by
HiGHS), checks any deployment against the measured table, simulates its requests, and bounds the
GPU count from below; :mod:`~interfpred.provisioning.latency` says when a configuration meets an
SLO (a request's whole latency by a stated queueing model, or a share of the SLO for the batch);
:mod:`~interfpred.provisioning.advise` ranks time-slicing, MPS and MIG for a workload by simulating each.
"""

from interfpred.provisioning.advise import Advice, MechanismScore, advise, mig_instances
from interfpred.provisioning.latency import LatencyRule, admitted_rates, request_latency_ms
from interfpred.provisioning.mig import MIG_GPUS, MigProfile, check_layout, layout_sizes, mig_profile, place
from interfpred.provisioning.plan import (
    ConfigTable,
    Deployment,
    Plan,
    Segment,
    Validation,
    feasible,
    instance_rates,
    plan,
    read_slo,
    simulate_plan,
    validate_plan,
)

__all__ = ["MIG_GPUS", "Advice", "ConfigTable", "Deployment", "LatencyRule", "MechanismScore", "MigProfile", "Plan",
           "Segment", "Validation", "admitted_rates", "advise", "check_layout", "feasible", "instance_rates",
           "layout_sizes", "mig_instances", "mig_profile", "place", "plan", "read_slo", "request_latency_ms",
           "simulate_plan", "validate_plan"]
