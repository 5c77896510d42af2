"""Draw docs/advise_attainment.png: SLO attainment of time-slicing, MPS and MIG as the load grows.

Run from the repository root:  python docs/make_advise_figure.py
It runs ``interfpred.advise`` on the crowded and isolation workloads of docs/provisioning.md with
every rate scaled by 0.25 .. 2, and prints the attainment it plots (percent).
"""

from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from interfpred import advise  # noqa: E402
from interfpred._core.atomic import atomic_open  # noqa: E402

WORKLOADS = {
    "crowded: four small models, SLO 8-10 ms, 1 GPU": (
        {"resnet50": (300.0, 8.0), "yolov8n": (300.0, 8.0), "vit_b16": (200.0, 10.0), "roberta_base": (200.0, 10.0)}, 1),
    "isolation: resnet50 (SLO 6 ms) beside vgg19 (100 ms), 1 GPU": (
        {"resnet50": (600.0, 6.0), "vgg19": (600.0, 100.0)}, 1),
}
SCALES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
STYLE = {"time_slicing": ("tab:red", "s"), "mps": ("tab:blue", "o"), "mig": ("tab:green", "^")}


def main(path: str = os.path.join(os.path.dirname(__file__), "advise_attainment.png")) -> None:
    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(11, 3.8), sharey=True)
    for ax, (title, (slo, gpus)) in zip(axes, WORKLOADS.items()):
        got: dict[str, list[float]] = {m: [] for m in STYLE}
        for s in SCALES:
            a = advise({m: (r * s, lat) for m, (r, lat) in slo.items()}, spec="a100", gpus=gpus)
            for score in a.ranking:
                got[score.mechanism].append(100 * score.attainment)
        print(title)
        for mech, (color, marker) in STYLE.items():
            print(f"  {mech:13s}", " ".join(f"{v:5.1f}" for v in got[mech]))
            ax.plot(SCALES, got[mech], color=color, marker=marker, label=mech)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("load (x the rates above)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("SLO attainment (% of requests)")
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
