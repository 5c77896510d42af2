"""Convert Gavel's V100 paired throughputs into the :class:`~interfpred.Measurements` form.

Gavel (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020; MIT licence, stanford-futuredata/gavel) measured 26 deep-learning training
job types on a real V100, each alone and in pairs launched together on the same GPU, as
throughputs (steps per second). Their ``physical_cluster_throughputs.json`` reads
``{"v100": {"(job, scale)": {"null": solo, "(other_job, scale)": [self, other], ...}}}``.

The conversion keeps single-GPU jobs, writes one run of two members per measured unordered pair
and skips pairs recorded as ``0.0`` (never a measurement); docs/data.md gives the rules. Regenerate
the shipped file with ``python -m interfpred.data.datasets.gavel v100_physical_cluster_throughputs.json``.

Examples
--------
>>> raw = {"v100": {"('A (batch size 8)', 1)": {"null": 10.0, "('A (batch size 8)', 1)": [6.0, 6.0],
...                                              "('B', 1)": [5.0, 4.0]},
...                 "('B', 1)": {"null": 8.0, "('A (batch size 8)', 1)": [4.0, 5.0], "('B', 1)": 0.0}}}
>>> m = measurements_from_gavel(raw)
>>> m.n_runs, m.model.tolist(), m.batch_size.tolist()
(2, ['A', 'A', 'A', 'B'], [8, 8, 8, 1])
>>> m.slowdown.round(3).tolist()
[1.667, 1.667, 2.0, 2.0]
"""

from __future__ import annotations

import argparse
import ast
import csv
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interfpred._core.atomic import atomic_open, read_json
from interfpred.data.measurements import Measurements
from interfpred.errors import InterfpredError

__all__ = ["DATA_FILE", "gavel_columns", "measurements_from_gavel", "split_job"]

#: The shipped conversion, beside this module.
DATA_FILE = Path(__file__).with_name("gavel_v100.csv")
_BATCH = re.compile(r"^(?P<model>.*?)\s*\(batch size (?P<batch>\d+)\)\s*$")


def split_job(job: str) -> tuple[str, int]:
    """Model and batch size of a Gavel job name (batch size 1 when the name has none).

    Examples
    --------
    >>> split_job("ResNet-50 (batch size 64)"), split_job("A3C")
    (('ResNet-50', 64), ('A3C', 1))
    """
    hit = _BATCH.match(job)
    return (hit["model"], int(hit["batch"])) if hit else (job.strip(), 1)


def _key(text: str) -> tuple[str, int]:
    try:
        job, scale = ast.literal_eval(text)
        return str(job), int(scale)
    except (ValueError, SyntaxError, TypeError):
        raise InterfpredError(f"gavel: key {text!r} is not a '(job, scale)' tuple") from None


def _missing(value: Any) -> bool:
    return not isinstance(value, list) or len(value) != 2 or 0.0 in value


def gavel_columns(raw: dict[str, Any], *, gpu: str = "v100") -> dict[str, list]:
    """The measured pairs of single-GPU jobs as columns (throughput form, rates as Gavel wrote them)."""
    if gpu not in raw or not isinstance(raw[gpu], dict):
        raise InterfpredError(f"gavel: no {gpu!r} section; sections: {', '.join(map(str, raw))}")
    table = raw[gpu]
    jobs = sorted(k for k in table if _key(k)[1] == 1)
    cols: dict[str, list] = {k: [] for k in ("run", "gpu", "model", "batch_size", "share", "member",
                                             "solo_throughput", "observed_throughput", "job")}
    runs = 0
    for a_i, a in enumerate(jobs):
        for b in jobs[a_i:]:
            value = table[a].get(b)
            if value is None or _missing(value):
                continue
            back = table[b].get(a)
            if a != b and back is not None and not _missing(back) and (back[0], back[1]) != (value[1], value[0]):
                raise InterfpredError(f"gavel: pair {a} / {b} disagrees with {b} / {a}: {value} vs {back}")
            runs += 1
            for member, (job, rate) in enumerate(((a, value[0]), (b, value[1])), start=1):
                name = _key(job)[0]
                model, batch = split_job(name)
                solo = table[job].get("null")
                if not isinstance(solo, (int, float)) or solo <= 0:
                    raise InterfpredError(f"gavel: job {job} has no solo throughput ('null': {solo!r})")
                for k, v in (("run", f"gavel-{runs:03d}"), ("gpu", gpu), ("model", model), ("batch_size", batch),
                             ("share", 100.0), ("member", str(member)), ("solo_throughput", float(solo)),
                             ("observed_throughput", float(rate)), ("job", name)):
                    cols[k].append(v)
    return cols


def measurements_from_gavel(raw: dict[str, Any], *, gpu: str = "v100") -> Measurements:
    """The measured pairs of single-GPU jobs in Gavel's JSON, as :class:`Measurements`."""
    cols: dict[str, Any] = gavel_columns(raw, gpu=gpu)
    job = cols.pop("job")
    return Measurements.from_columns(**cols, extra={"job": job})


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate the shipped CSV (throughput form, Gavel's own numbers) from Gavel's JSON."""
    p = argparse.ArgumentParser(prog="python -m interfpred.data.datasets.gavel", description=main.__doc__)
    p.add_argument("source", help="Gavel's physical_cluster_throughputs.json (or its v100 part)")
    p.add_argument("--out", default=os.fspath(DATA_FILE), help="CSV to write (default: the shipped file)")
    args = p.parse_args(argv)
    raw = read_json(args.source)
    if not isinstance(raw, dict):
        raise InterfpredError(f"{args.source}: expected a JSON object, got {type(raw).__name__}")
    cols = gavel_columns(raw)
    m = measurements_from_gavel(raw)  # validates every row before anything is written
    with atomic_open(args.out, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(list(cols))
        w.writerows(zip(*[[repr(v) if isinstance(v, float) else v for v in c] for c in cols.values()]))
    print(f"wrote {args.out}: {len(m)} rows, {m.n_runs} runs, {len(m.models)} models", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    try:
        sys.exit(main())
    except (InterfpredError, OSError) as exc:
        print(f"python -m interfpred.data.datasets.gavel: error: {exc}", file=sys.stderr)
        sys.exit(2)
