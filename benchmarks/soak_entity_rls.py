"""Soak: 10,000,000 EntityRLS updates (rank 2) with one of six features active and, on every tenth row, a model
and a co-runner that appear once and never again.

Checks after every chunk that the global weights, the entity terms and every covariance stay finite, the global
covariance symmetric positive definite and bounded (stabilised forgetting), and every entity variance at or below
its prior variance; prints memory (parameters and entities, which grow with the entities seen, not with the
updates) and the time per update. Run: ``python benchmarks/soak_entity_rls.py [--n 10000000]``.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interfpred import Entities, EntityRLS

MODELS = ["resnet50", "vgg19", "convnext_b", "roberta_base", "vit_b16", "yolov8n"]


def chunk_rows(start, k, rng, d=6):
    X = np.zeros((k, d))
    X[np.arange(k), (start + np.arange(k)) % d] = rng.random(k)
    own, co = [], []
    for i in range(start, start + k):
        if i % 10 == 0:
            own.append(f"once-{i}")
            co.append({f"gone-{i}": 1.0})
        else:
            own.append(MODELS[i % 6])
            co.append({MODELS[(i // 6) % 6]: 1.0})
    y = 1.0 + X.sum(axis=1) + 0.01 * rng.normal(size=k)
    return X, y, Entities.from_lists(own, co)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    p = EntityRLS(forgetting=0.99, entity_forgetting=0.99, rank=2)
    done, t_upd = 0, 0.0
    while done < a.n:
        k = min(a.chunk, a.n - done)
        X, y, ent = chunk_rows(done, k, rng)
        t0 = time.perf_counter()
        p.update(X, y, entities=ent)
        t_upd += time.perf_counter() - t0
        done += k
        P = p.covariance_
        ev = np.linalg.eigvalsh(P)
        var, prior = p.entity_variances_, p.entity_priors_
        terms = np.array([v for t in p.entity_terms_.values() for v in t.values()]) if done == a.n else np.zeros(1)
        ok = (np.isfinite(p.coef_).all() and np.isfinite(P).all() and np.array_equal(P, P.T) and ev.min() > 0
              and ev.max() <= p.delta * 1.01 ** 6 and np.isfinite(var).all() and bool((var <= prior * (1 + 1e-9)).all())
              and np.isfinite(terms).all())
        print(f"{done:>10,} updates  P eig [{ev.min():.3g}, {ev.max():.3g}]  entities {len(p.entities_):>9,}  "
              f"max var/prior {float((var / prior).max()):.3f}  {'ok' if ok else 'FAILED'}", flush=True)
        if not ok:
            sys.exit(1)
    print(f"{a.n:,} updates in {t_upd:.1f} s ({t_upd / a.n * 1e6:.2f} us per update, batches of {a.chunk:,}); "
          f"max |entity term| {np.abs(terms).max():.3g}; all finite and bounded")
