"""E3's figure: SLO attainment of every policy against the offered load."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from interfpred._core.atomic import atomic_open
from interfpred.experiments.plotting import pyplot

__all__ = ["ATTAINMENT_FIGURE", "plot_attainment"]

#: File name of the figure inside the report folder.
ATTAINMENT_FIGURE = "e3_slo_attainment.png"


def plot_attainment(out_dir: Path, loads: Sequence[float], attainment: Mapping[str, Sequence[float]],
                    labels: Mapping[str, str]) -> str | None:
    """Draw policy -> attainment per load into ``out_dir``; the file name, or None when matplotlib is missing.

    Policies are drawn in ``attainment``'s order, each with its ``labels`` entry.
    """
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for (pol, values), marker in zip(attainment.items(), "osD^v"):
        ax.plot(loads, list(values), marker=marker, label=labels[pol])
    ax.axhline(0.99, color="grey", lw=0.8, ls="--")
    ax.axhline(0.90, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("offered load per GPU (utilisation at batch size 1)")
    ax.set_ylabel("SLO attainment")
    ax.set_title("E3: SLO attainment against load")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_open(Path(out_dir) / ATTAINMENT_FIGURE, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return ATTAINMENT_FIGURE
