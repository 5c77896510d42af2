"""A small fitted model, profiles and fleet description for the ``interfpred serve`` tests, and a reference fleet."""

from __future__ import annotations

import json
import math
from pathlib import Path

from interfpred import RLS, ColocationTracker, EntityRLS, Fleet, InterferenceModel
from interfpred.data.columnar import write_profiles
from interfpred.features import default_extractor
from interfpred.sim.workload import mix_scenario

MODELS = ["resnet50", "vgg19", "yolov8n", "vit_b16"]


def write_inputs(folder: Path, *, predictor: str = "rls", nodes: int = 3, per_node: int = 2,
                 max_running: int | None = 4, margin: float = 0.1) -> tuple[Path, Path]:
    """(model file, fleet file) in ``folder``: a model fitted on a small simulated trace, ``nodes`` x ``per_node``."""
    sc = mix_scenario(MODELS, rho=1.2, executions=300, seed=3)
    pred = RLS() if predictor == "rls" else EntityRLS()
    model = InterferenceModel(default_extractor(), pred).fit(sc.traces["trace"], sc.profiles)
    model.save(folder / "model.json")
    write_profiles(sc.profiles, folder / "profiles.csv")
    spec = {"profiles": "profiles.csv", "margin": margin, "max_running": max_running,
            "devices": [{"node": f"node-{i}", "device": f"gpu{j}", "gpu": "l4"}
                        for i in range(nodes) for j in range(per_node)]}
    (folder / "fleet.json").write_text(json.dumps(spec))
    return folder / "model.json", folder / "fleet.json"


def reference_fleet(model_file: Path, fleet_file: Path) -> Fleet:
    """The fleet the service holds, built with the library alone (each device its own copy of the model)."""
    from interfpred.data.columnar import read_profiles

    spec = json.loads(Path(fleet_file).read_text())
    profiles = read_profiles(Path(fleet_file).parent / spec["profiles"])
    state = json.loads(Path(model_file).read_text())
    trackers = {}
    for d in spec["devices"]:
        model = InterferenceModel.from_state(state)
        trackers[f"{d['node']}/{d['device']}"] = ColocationTracker.from_model(model, profiles, gpu=d["gpu"])
    return Fleet(trackers, margin=spec["margin"], max_running=spec["max_running"])


def close(a: float, b: float) -> bool:
    """Equal to 1e-9, relative (the service's answers against the library's)."""
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
