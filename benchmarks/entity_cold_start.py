"""A model never seen in training: EntityRLS with and without its features-only backoff (scaled or not), on Gavel's V100 pairs.

Three protocols, MAPE of latency (%), mean over folds: leave-one-model-out frozen (fitted on the
other models, then only predicting the held-out model's runs), leave-one-model-out prequential
(the same, but learning each test run after predicting it) and E4's stream in which a model first
appears halfway (prequential on the second half). Beside EntityRLS without the backoff
(``backoff_evidence=0``, the predictor before the backoff existed) and with the backoff unscaled
(``backoff_scale=False``: the features-only mean, not the value of least latency error), its features-only ablation, RLS
and the three baselines, on the same rows, for both targets.

    PYTHONPATH=. python benchmarks/entity_cold_start.py
"""

from __future__ import annotations

import numpy as np

from interfpred.data.datasets import gavel_v100
from interfpred.evaluation import held_out_mape, run_folds
from interfpred.experiments.real import new_model_streams
from interfpred.features import TimeWeighted
from interfpred.features.measurement_features import measurement_features
from interfpred.predictors import make_predictor


def main() -> None:
    m = gavel_v100()
    protocols = {"LOMO frozen": (run_folds(m, "model", repeats=1), False),
                 "LOMO prequential": (run_folds(m, "model", repeats=1), True),
                 "stream, new model halfway": (new_model_streams(m), True)}
    methods = [("entity_rls, no backoff (before)", make_predictor("entity_rls", backoff_evidence=0.0)),
               ("entity_rls, backoff unscaled", make_predictor("entity_rls", backoff_scale=False)),
               ("entity_rls (default: scaled backoff)", make_predictor("entity_rls")),
               ("entity_rls (no entity terms)", make_predictor("entity_rls", entity_terms=False)),
               ("rls (features only)", make_predictor("rls")),
               ("baseline: no interference", make_predictor("no_interference")),
               ("baseline: global mean", make_predictor("global_mean")),
               ("baseline: pair mean", make_predictor("pair_mean"))]
    print(f"Gavel V100 pairs: {len(m)} rows, {m.n_runs} runs, {len(m.models)} models; MAPE of latency (%)")
    for target in ("rate", "slowdown"):
        ex = TimeWeighted(feature_map="shares", target=target)
        fms = {key: measurement_features(ex, m, None, entity_key=key) for key in ("model", "model_batch")}
        print(f"\ntarget {target!r}")
        print(f"{'method':38s}" + "".join(f"{name:>28s}" for name in protocols))
        for label, p in methods:
            fm = fms[getattr(p, "entity", "model") if p.tags.uses_entities else "model"]
            cells = [100 * np.mean([held_out_mape(fm, ex, m.run_code, p, f, online=online) for f in folds])
                     for folds, online in protocols.values()]
            print(f"{label:38s}" + "".join(f"{c:28.2f}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
