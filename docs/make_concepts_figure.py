"""Draw docs/concepts_timeline.png: the worked example of docs/concepts.md.

Run from the repository root:  python docs/make_concepts_figure.py
The numbers printed are the ones quoted in docs/concepts.md; they come from the library itself.
"""

from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from interfpred import EWMA, ProfileTable, Static, TimeWeighted, Trace, build_timeline  # noqa: E402
from interfpred._core.atomic import atomic_open  # noqa: E402

PROFILES = ProfileTable.from_columns(
    gpu=["l4"] * 3, model=["resnet50", "vgg19", "yolov8n"], batch_size=[8] * 3,
    solo_ms=[6.0, 3.0, 2.0], sm=[0.5, 0.6, 0.3], l2=[0.3, 0.4, 0.2], dram=[0.4, 0.7, 0.2])
TRACE = Trace(id=["A", "B", "C"], device=["l4"] * 3, model=["resnet50", "vgg19", "yolov8n"], batch_size=[8] * 3,
              start_ms=[0.0, 2.0, 5.0], end_ms=[10.0, 6.0, 7.0])


def main(path: str = os.path.join(os.path.dirname(__file__), "concepts_timeline.png")) -> None:
    tl = build_timeline(TRACE)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 5.2), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    colors = {"A": "#4C72B0", "B": "#DD8452", "C": "#55A868"}
    for row, (i, c) in enumerate(colors.items()):
        s, e = TRACE.start_ms[row], TRACE.end_ms[row]
        ax.barh(2 - row, e - s, left=s, color=c, height=0.6)
        ax.text(e + 0.1, 2 - row, f"{i}: {TRACE.model[row]}  [{s:g}, {e:g}) ms", va="center", fontsize=9)
    for t in np.unique(np.concatenate([tl.seg_start, tl.seg_end])):
        ax.axvline(t, color="grey", lw=0.6, ls=":")
        ax2.axvline(t, color="grey", lw=0.6, ls=":")
    for s in range(tl.n_segments):
        members = sorted(str(TRACE.id[j]) for j in tl.running_set(s))
        mid = (tl.seg_start[s] + tl.seg_end[s]) / 2
        ax.text(mid, -0.75, "{" + ",".join(members) + "}", ha="center", fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-1.1, 2.5)
    ax.set_title("Executions on one GPU and the segments of their timeline")
    # A's "dram_other" (sum of co-runners' DRAM throughput) over time and what each aggregation keeps.
    ex = Static()
    xs, ys = [], []
    for s in tl.segments_of(0):
        dem = np.array([[PROFILES.lookup(TRACE.model[j], 8).sm, PROFILES.lookup(TRACE.model[j], 8).l2,
                         PROFILES.lookup(TRACE.model[j], 8).dram] for j in [0] + [int(k) for k in tl.running_set(s)
                                                                                if k != 0]])
        v = ex.map_instant(dem[0], dem[1:])[5]
        xs += [tl.seg_start[s], tl.seg_end[s]]
        ys += [v, v]
    ax2.plot(xs, ys, color=colors["A"], lw=2, label="A: dram_other per segment")
    for extractor, style, label in ((Static(), "--", "Static"), (EWMA(alpha=0.5), "-.", "EWMA(0.5)"),
                                    (TimeWeighted(), "-", "TimeWeighted")):
        val = extractor.transform(TRACE, PROFILES).X[0, 5]
        ax2.axhline(val, ls=style, color="black", lw=1)
        ax2.text(10.15, val + 0.04, f"{label} = {val:.3f}", va="bottom", fontsize=8,
                 bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        print(f"A {label}: dram_other = {val:.4f}")
    ax2.set_xlim(-0.3, 13.5)
    ax2.set_ylim(-0.05, 1.0)
    ax2.set_xlabel("time (ms)")
    ax2.set_ylabel("dram_other")
    ax2.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
