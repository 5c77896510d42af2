"""Ground-truth GPU co-location simulator (no GPU needed).

Executions sharing a GPU (see docs/simulator.md): the truth rates (:mod:`~interfpred.sim.contention`),
one event engine for both truths (:mod:`~interfpred.sim.engine`: programs of operators, the fluid
truth as one operator per execution), the phase-structured truth (operator programs and hidden
per-model factors, :mod:`~interfpred.sim.operators`, its front :mod:`~interfpred.sim.phased`, the
orion and synthetic families :mod:`~interfpred.sim.orion`), the synthetic zoo
(:mod:`~interfpred.sim.zoo`), arrival streams (:mod:`~interfpred.sim.arrivals`) and scenarios
(:mod:`~interfpred.sim.workload`), and the same executions under MPS, MIG or time-slicing
(:mod:`~interfpred.sim.mechanisms`), and requests through batching instances
(:mod:`~interfpred.sim.batching`). The simulated GPU type is the keyword ``spec`` everywhere (a
:class:`GpuSpec` or a preset name).

Examples
--------
>>> from interfpred import sim
>>> res = sim.simulate(["resnet50", "roberta_base"], [16, 4], [0.0, 2.0], spec="l4", seed=0)
>>> res.trace.model.tolist(), bool(res.slowdown.min() > 1.0)
(['resnet50', 'roberta_base'], True)
>>> [round(float(r), 3) for r in sim.rates([[0.7, 0.4, 0.1], [0.5, 0.5, 0.3]], "l4")]
[0.81, 0.81]
"""

from interfpred.sim.arrivals import Arrivals, offered_load, poisson_arrivals, simulate_arrivals
from interfpred.sim.batching import BatchingInstance, BatchingResult, simulate_batching
from interfpred.sim.contention import (
    GPU_PRESETS,
    GpuSpec,
    check_fits,
    effective_demands,
    get_gpu_spec,
    rates,
)
from interfpred.sim.engine import SimResult, noisy_work, simulate, simulate_programs, simulate_work
from interfpred.sim.mechanisms import (
    MigInstance,
    check_time_slicing,
    instance_demands,
    simulate_mechanism,
    switch_cost_ms,
)
from interfpred.sim.operators import HiddenFactors, PhaseZoo, Program, draw_hidden, merge_phases
from interfpred.sim.orion import orion_zoo, phase_zoo, synthetic_phase_zoo
from interfpred.sim.phased import simulate_phased
from interfpred.sim.workload import Scenario, mix_scenario, paper_scenario, write_scenario
from interfpred.sim.zoo import ZOO_MODELS, zoo_profiles

__all__ = [
    "GPU_PRESETS",
    "GpuSpec",
    "check_fits",
    "get_gpu_spec",
    "rates",
    "effective_demands",
    "SimResult",
    "simulate",
    "simulate_programs",
    "simulate_work",
    "noisy_work",
    "MigInstance",
    "check_time_slicing",
    "instance_demands",
    "simulate_mechanism",
    "switch_cost_ms",
    "Arrivals",
    "Scenario",
    "poisson_arrivals",
    "offered_load",
    "simulate_arrivals",
    "paper_scenario",
    "mix_scenario",
    "write_scenario",
    "ZOO_MODELS",
    "zoo_profiles",
    "Program",
    "HiddenFactors",
    "PhaseZoo",
    "draw_hidden",
    "merge_phases",
    "orion_zoo",
    "synthetic_phase_zoo",
    "phase_zoo",
    "simulate_phased",
    "BatchingInstance",
    "BatchingResult",
    "simulate_batching",
]
