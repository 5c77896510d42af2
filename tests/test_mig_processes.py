"""E5: features of N processes in one MIG instance, and the leave-one-model-out comparison."""

from __future__ import annotations

import numpy as np
import pytest

from interfpred.data.datasets import parvagpu_a100
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError
from interfpred.experiments.mig_processes import E5_METHODS, e5_errors, e5_predictions, run_e5
from interfpred.experiments.report import ReproduceContext
from interfpred.features.processes import process_features


@pytest.fixture(scope="module")
def features():
    return process_features(parvagpu_a100())


def test_features_against_a_plain_reading(features):
    f = features
    solo = {(m, g, b): s for m, g, b, s in zip(f.model, f.gpcs, f.batch_size, f.solo_ms)}
    rng = np.random.default_rng(0)
    for i in rng.choice(len(f.model), 40, replace=False):
        m, g, b, n = str(f.model[i]), int(f.gpcs[i]), int(f.batch_size[i]), int(f.processes[i])
        k = n - 1
        sat = solo[(m, g, 2 * b)] / (2 * solo[(m, g, b)]) if (m, g, 2 * b) in solo else \
            solo[(m, g, b)] / (2 * solo[(m, g, b // 2)])
        scale = solo[(m, 7, b)] * 7 / (solo[(m, g, b)] * g)
        want = [k, k * sat, k * scale, k * np.log2(b), k * np.log2(g), k * sat * np.log2(b)]
        assert f.x[i] == pytest.approx(want)
    assert np.all(f.x[f.processes == 1] == 0)


def test_features_refuse_runs_without_a_partition_or_with_two_models():
    m = Measurements.from_columns(run=[1, 1], gpu=["a"] * 2, model=["x", "y"], batch_size=[1, 1],
                                  solo_ms=[1.0, 1.0], observed_ms=[2.0, 2.0])
    with pytest.raises(InterfpredError, match="need a 'partition' column"):
        process_features(m)
    m2 = Measurements.from_columns(run=[1, 1], gpu=["a"] * 2, model=["x", "y"], batch_size=[1, 1],
                                   solo_ms=[1.0, 1.0], observed_ms=[2.0, 2.0], extra={"partition": ["7", "7"]})
    with pytest.raises(InterfpredError, match="mixes models"):
        process_features(m2)


def test_e5_beats_the_linear_in_n_baseline_and_every_baseline(features):
    errors = e5_errors(features)
    assert set(errors) == set(E5_METHODS)
    n = {len(v) for v in errors.values()}
    assert n == {int((features.processes >= 2).sum())}
    mape = {k: float(v.mean()) for k, v in errors.items()}
    assert mape[E5_METHODS[0]] < min(mape[k] for k in E5_METHODS[1:])
    assert mape[E5_METHODS[0]] < 0.25 and mape["linear in N"] > 0.4


def test_leave_one_model_out_does_not_see_the_held_out_model(features):
    # tripling one model's multi-process latencies changes the others' predictions (it trains them)
    # but not its own: they come from the other models only
    f = features
    bert = f.model == "bert"
    bent = type(f)(f.x, f.model, f.gpcs, f.batch_size, f.processes, f.solo_ms,
                   np.where(bert & (f.processes >= 2), f.observed_ms * 3, f.observed_ms))
    a, b = e5_predictions(f), e5_predictions(bent)
    multi = f.processes >= 2
    for k in E5_METHODS:
        assert np.array_equal(a[k][bert & multi], b[k][bert & multi]), k
        assert np.isnan(a[k][~multi]).all()
    assert not np.allclose(a[E5_METHODS[0]][~bert & multi], b[E5_METHODS[0]][~bert & multi])


def test_run_e5_section(tmp_path):
    ctx = ReproduceContext(out_dir=tmp_path, seed=0, quick=True, progress=lambda s: None, gpu="v100",
                           executions=None, truth="phases", zoo=None)
    s = run_e5(ctx)
    assert s.title.startswith("E5") and "| linear in N |" in s.markdown and "E5 beats the best baseline" in s.markdown
    assert s.data["scored_rows"] == 1327 and s.data["models"] == 11
