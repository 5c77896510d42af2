"""Pair check: two-model slowdowns on the simulated v100 beside published magnitudes.

No parameter is tuned here.  Every ordered pair of (model, batch size) of the orion family on the
v100 preset runs in steady state (each member repeating its pass, see
:mod:`interfpred.sim.steady_pairs`); the slowdown distribution (median, p90, max) prints beside
Gavel's V100 pair table (training jobs launched together: median 1.67, p90 17.9, max 119) and the
1.0-1.3 usually reported for pairs of inference jobs under MPS shares.  The same pairs also run on
the fluid truth (one time-averaged demand per pass, no hidden factors), and on the synthetic family.

Run: ``python benchmarks/check_sim_pairs.py``
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interfpred.sim.operators import NEUTRAL, PhaseZoo  # noqa: E402
from interfpred.sim.orion import orion_zoo  # noqa: E402
from interfpred.sim.steady_pairs import GAVEL_V100_PAIRS, INFERENCE_PAIRS_RANGE, pair_slowdowns, summarise  # noqa: E402


def main() -> None:
    print(f"{'source':<44} {'batch sizes':<18} {'pairs':>6} {'median':>7} {'p90':>7} {'max':>7} {'<= 1.3':>7}")
    g = GAVEL_V100_PAIRS
    print(f"{'Gavel V100, training job pairs (measured)':<44} {'as trained':<18} {g['n']:>6} {g['median']:>7.2f} "
          f"{g['p90']:>7.2f} {g['max']:>7.1f} {'0.27':>7}")
    lo, hi = INFERENCE_PAIRS_RANGE
    print(f"{'inference pairs under MPS (typical, published)':<44} {'small':<18} {'':>6} {f'{lo}-{hi}':>7}")
    z = orion_zoo()
    neutral = PhaseZoo(family="orion", gpu="v100", programs=z.programs, hidden={m: NEUTRAL for m in z.hidden},
                       max_phases=z.max_phases)
    runs = [("v100 orion, phase truth", "v100", "orion", "phases"),
            ("v100 orion, phases without hidden factors", "v100", neutral, "phases"),
            ("v100 orion, full operator sequences", "v100", orion_zoo(max_phases=0), "phases"),
            ("v100 orion, fluid truth (averaged demands)", "v100", "orion", "fluid"),
            ("v100 synthetic, phase truth", "v100", "synthetic", "phases")]
    for label, gpu, zoo, truth in runs:
        for bs in ((1, 2, 4, 8, 16, 32),) if not isinstance(zoo, str) else ((1, 2, 4, 8, 16, 32), (1,), (8,), (32,)):
            s = summarise(pair_slowdowns(gpu, zoo=zoo, truth=truth, batch_sizes=bs))
            print(f"{label:<44} {','.join(map(str, bs)):<18} {s['n']:>6} {s['median']:>7.2f} {s['p90']:>7.2f} "
                  f"{s['max']:>7.2f} {s['within_1.3']:>7.2f}")


if __name__ == "__main__":
    main()
