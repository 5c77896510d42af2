"""A measuring campaign: from workloads on a device to the measurement and profile files ``interfpred fit`` reads.

:func:`measure` plans every window (:func:`~interfpred.measure.spec.build_plan`), then, mechanism
by mechanism, starts the persistent workers once and runs the windows in order: every workload
alone (before), the runs with the solo windows again halfway (between), and alone once more
(after). Each window's results are appended to ``runs.jsonl`` (fsynced) the moment it ends, and
``measurements.csv`` and ``solo.csv`` are rewritten (atomically) from the log, so a campaign
killed at any point has lost at most the window it was in: started again with ``resume`` it
skips everything the log holds. Then the profiler runs over one batch of each workload
(:mod:`~interfpred.measure.profiling`) and ``profiles.csv`` is written from the reports.

Files in the output folder: ``campaign.json`` (the options, to check a resumption against),
``runs.jsonl``, ``measurements.csv`` (and ``measurements_MECHANISM.csv`` per mechanism when there
are several), ``solo.csv``, ``profiles.csv``, ``ncu/`` (one report a
workload) and ``logs/`` (one log a worker process). Nothing else in the folder is touched.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from interfpred._core.atomic import atomic_write_text
from interfpred.constants import (
    DEFAULT_SHARE,
    MEASURE_MARGIN_S,
    MEASURE_MECHANISMS,
    MEASURE_NCU_TIMEOUT_S,
    MEASURE_WINDOW_S,
)
from interfpred.data.ingest import write_profiles
from interfpred.data.profiles import ProfileTable
from interfpred.errors import InterfpredError
from interfpred.measure.backend import Backend, layout, mps_daemon_problem
from interfpred.measure.journal import ResultsLog, read_log
from interfpred.measure.profiling import ingest, run_profiler
from interfpred.measure.results import measurement_table, model_names, solo_stats, solo_table_text
from interfpred.measure.spec import Plan, Workload, build_plan

__all__ = ["CAMPAIGN_FILES", "CampaignSummary", "MeasureConfig", "measure"]

#: The files a campaign writes in its folder, and its two sub-folders.
CAMPAIGN_FILES = ("campaign.json", "runs.jsonl", "measurements.csv", "solo.csv", "profiles.csv")
_CAMPAIGN_DIRS = ("ncu", "logs")
_FORMAT = 1
#: Options a resumed campaign may change: they decide how profiles are taken, not what the windows measure.
_RESUMABLE = ("profiles", "ncu_timeout_s", "allow_truncated")


@dataclass(frozen=True)
class MeasureConfig:
    """What a campaign measures and how (the options of ``interfpred measure``).

    ``mps_shares`` maps a workload label to the MPS share its processes run under (100 when
    absent); ``mig_instances`` are the MIG instances (UUIDs, ``MIG-...``) that copy 0, 1, ... of a
    workload run in; ``gpu`` overrides the GPU name the device reports.
    """

    workloads: tuple[Workload, ...]
    mechanisms: tuple[str, ...] = ("streams",)
    sets: tuple[tuple[Workload, ...], ...] = ()
    self_pairs: bool = True
    seed: int = 0
    window_s: float = MEASURE_WINDOW_S
    margin_s: float = MEASURE_MARGIN_S
    mps_shares: Mapping[str, float] = field(default_factory=dict)
    mig_instances: tuple[str, ...] = ()
    profiles: bool = True
    ncu_timeout_s: float = MEASURE_NCU_TIMEOUT_S
    allow_truncated: bool = False
    gpu: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The options as JSON (what ``campaign.json`` keeps)."""
        return {"workloads": [w.label for w in self.workloads], "mechanisms": list(self.mechanisms),
                "sets": [[w.label for w in s] for s in self.sets], "self_pairs": self.self_pairs, "seed": self.seed,
                "window_s": self.window_s, "margin_s": self.margin_s, "mps_shares": dict(self.mps_shares),
                "mig_instances": list(self.mig_instances), "profiles": self.profiles,
                "ncu_timeout_s": self.ncu_timeout_s, "allow_truncated": self.allow_truncated, "gpu": self.gpu}

    def plan(self) -> Plan:
        """Check the options and plan the windows (refusals in one line)."""
        if not self.window_s > 2 * self.margin_s or self.margin_s < 0:
            raise InterfpredError(f"window {self.window_s:g} s must be longer than twice its margin {self.margin_s:g} s")
        if not self.ncu_timeout_s > 0:
            raise InterfpredError(f"ncu time limit {self.ncu_timeout_s:g} s must be positive")
        labels = {w.label for w in self.workloads}
        for label, share in self.mps_shares.items():
            if label not in labels:
                raise InterfpredError(f"MPS share given for {label!r}, which is not a workload")
            if not 0.0 < share <= 100.0:
                raise InterfpredError(f"MPS share {share:g} of {label} must be in (0, 100]")
        if self.mps_shares and "mps" not in self.mechanisms and any(s != 100.0 for s in self.mps_shares.values()):
            raise InterfpredError("MPS shares apply under mechanism mps only: add mps to the mechanisms")
        if self.mig_instances and "mig" not in self.mechanisms:
            raise InterfpredError("MIG instances apply under mechanism mig only: add mig to the mechanisms")
        if len(set(self.mig_instances)) != len(self.mig_instances):
            raise InterfpredError("a MIG instance is given twice")
        return build_plan(self.workloads, self.mechanisms, sets=self.sets, self_pairs=self.self_pairs, seed=self.seed,
                          mig_slots=len(self.mig_instances) if "mig" in self.mechanisms else None)


def check_sharing(mechanisms: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Refuse mechanisms the machine's MPS state contradicts: ``mps`` without a running MPS control
    daemon (saying how to start it), ``time_slicing`` with one (its processes would be MPS clients)."""
    problem = mps_daemon_problem(env)
    if "mps" in mechanisms and "time_slicing" in mechanisms:
        raise InterfpredError("time_slicing and mps cannot be measured in one campaign: processes are MPS clients "
                              "while the MPS daemon runs and time-sliced when it does not; run two campaigns")
    if "mps" in mechanisms and problem is not None:
        raise InterfpredError(f"mechanism mps: {problem}")
    if "time_slicing" in mechanisms and problem is None:
        raise InterfpredError("mechanism time_slicing: an MPS control daemon is running, so separate processes would "
                              "share the GPU through MPS; stop it ('echo quit | nvidia-cuda-mps-control') or measure mps")


@dataclass
class CampaignSummary:
    """What a campaign did: windows done of all, rows written, profiles, and what went wrong."""

    out: str
    windows_done: int
    windows_total: int
    measurements: int
    runs: int
    profiled: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    max_spread: tuple[float, str] | None = None


def _prepare(out: str, config: MeasureConfig, *, resume: bool, force: bool) -> None:
    """Create or check the output folder (see :func:`measure`)."""
    out_abs = os.path.abspath(out)
    if os.path.lexists(out) and not os.path.isdir(out):
        raise InterfpredError(f"--out {out} exists and is not a folder")
    if not os.path.isdir(out):
        if not os.path.isdir(os.path.dirname(out_abs)):
            raise InterfpredError(f"{out}: folder {os.path.dirname(out_abs)} does not exist")
        os.mkdir(out)
    entries = set(os.listdir(out))
    meta = os.path.join(out, "campaign.json")
    if "campaign.json" not in entries:
        if entries:
            shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
            raise InterfpredError(f"{out} is not empty and holds no campaign ({shown}): name a new or empty folder")
    else:
        try:
            with open(meta, encoding="utf-8") as fh:
                old = json.load(fh)
            old_options = dict(old["options"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InterfpredError(f"{meta}: cannot read the campaign's options ({exc})") from None
        if force:
            _remove_campaign(out)
        elif resume:
            mine = config.as_json()
            diffs = [k for k in mine if k not in _RESUMABLE and old_options.get(k) != mine[k]]
            if old.get("format") != _FORMAT or diffs:
                k = diffs[0] if diffs else "format"
                raise InterfpredError(f"--resume: the campaign in {out} was started with {k} "
                                      f"{old_options.get(k)!r}, not {mine.get(k)!r}; give the same options, or "
                                      "--force to start over")
        else:
            done = len({r.get("key") for r in read_log(os.path.join(out, "runs.jsonl")) if r.get("type") == "window"})
            raise InterfpredError(f"{out} holds a campaign ({done} of its windows done): pass --resume to continue it "
                                  "or --force to start over")
    atomic_write_text(meta, json.dumps({"format": _FORMAT, "options": config.as_json()}, indent=1) + "\n")


def _remove_campaign(out: str) -> None:
    """Remove what a campaign wrote in ``out`` (its files, and its sub-folders' files), nothing else."""
    for name in (*CAMPAIGN_FILES, *(f"measurements_{m}.csv" for m in MEASURE_MECHANISMS)):
        path = os.path.join(out, name)
        if os.path.isfile(path):
            os.remove(path)
    for sub, suffixes in (("ncu", (".csv",)), ("logs", (".log",))):
        folder = os.path.join(out, sub)
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name.endswith(suffixes) and os.path.isfile(os.path.join(folder, name)):
                    os.remove(os.path.join(folder, name))
            if not os.listdir(folder):
                os.rmdir(folder)


def measure(config: MeasureConfig, out: str, *, backend: Backend, resume: bool = False, force: bool = False,
            progress: Callable[[str], None] | None = None) -> CampaignSummary:
    """Run the campaign ``config`` on ``backend``, writing into the folder ``out`` (see the module docstring).

    ``out`` is created when missing; a folder holding a campaign is continued with ``resume`` (its
    options must be the same, except how profiles are taken; profiles that failed are tried again) or started over with ``force`` (only the campaign's own files are
    removed); a folder holding anything else is refused, as is a campaign folder without either.
    ``progress`` receives one line after each window (``runs k of N, about S s left``) and profile.
    """
    say = progress or (lambda _msg: None)
    plan = config.plan()
    check_sharing(config.mechanisms)
    backend.check(config.workloads, config.mechanisms, config.mig_instances, config.profiles)
    partitions = backend.partitions(config.mig_instances) if "mig" in config.mechanisms else []
    gpu = config.gpu or backend.gpu_name()
    _prepare(out, config, resume=resume, force=force)
    log_path = os.path.join(out, "runs.jsonl")
    records = read_log(log_path)
    log = ResultsLog(log_path)
    shares = {w.label: float(config.mps_shares.get(w.label, DEFAULT_SHARE)) for w in plan.workloads}
    done = {r["key"] for r in records if r.get("type") == "window"}
    notes: list[str] = [str(r["text"]) for r in records if r.get("type") == "note"]
    total = len(plan.windows)
    count = sum(1 for w in plan.windows if w.key in done)
    t0, n_here = time.monotonic(), 0

    def write_tables() -> None:
        table = measurement_table(plan, records, gpu=gpu, shares=shares, partitions=partitions)
        if table is not None:
            table.to_csv(os.path.join(out, "measurements.csv"))
            if len(plan.mechanisms) > 1:       # one file per mechanism too: fit them apart
                mech_of_row = table.columns()["mechanism"]
                for mech in sorted(set(mech_of_row.tolist())):
                    table.take(mech_of_row == mech).to_csv(os.path.join(out, f"measurements_{mech}.csv"))
        atomic_write_text(os.path.join(out, "solo.csv"),
                          solo_table_text(plan, records, gpu=gpu, shares=shares, partitions=partitions))

    for mech in plan.mechanisms:
        todo = [w for w in plan.windows if w.mechanism == mech and w.key not in done]
        if not todo:
            continue
        inst = [(k, plan.workload(k)) for k in plan.instances[mech]]
        groups = layout(mech, inst, shares=shares, mig_instances=config.mig_instances)
        say(f"{mech}: starting {len(groups)} worker process(es) for {len(inst)} workload instance(s)")
        hosts = backend.open_hosts(mech, groups, os.path.join(out, "logs"))
        try:
            for note in hosts.notes:
                if note not in notes:
                    notes.append(note)
                    note_rec: dict[str, Any] = {"type": "note", "text": note}
                    log.append(note_rec)
                    records.append(note_rec)
            for w in todo:
                ctx = {"window": w.key, "members": [[m, plan.workload(m).label, shares[plan.workload(m).label]
                                                     if mech == "mps" else DEFAULT_SHARE] for m in w.members]}
                t = time.monotonic()
                res = hosts.run(w.members, config.window_s, config.margin_s, ctx)
                rec: dict[str, Any] = {
                    "type": "window", "key": w.key, "mechanism": mech, "kind": w.kind, "phase": w.phase,
                    "members": list(w.members), "results": {k: v.as_dict() for k, v in res.items()},
                    "graphs": {k: hosts.graphs.get(k, True) for k in w.members},
                    "seconds": round(time.monotonic() - t, 4)}
                log.append(rec)
                records.append(rec)
                done.add(w.key)
                count += 1
                n_here += 1
                write_tables()
                left = (time.monotonic() - t0) / n_here * (total - count)
                say(f"runs {count} of {total}, about {left:.0f} s left ({mech} {w.kind} {w.phase})")
        finally:
            hosts.close()
    write_tables()
    summary = CampaignSummary(out, count, total, 0, 0, notes=notes)
    table = measurement_table(plan, records, gpu=gpu, shares=shares, partitions=partitions)
    if table is not None:
        summary.measurements, summary.runs = len(table), table.n_runs
    spreads = [(s.spread_pct, f"{inst} under {mech}") for (mech, inst), s in solo_stats(records).items()
               if len(s.times_ms) > 1]
    summary.max_spread = max(spreads) if spreads else None
    if config.profiles:
        _profiles(config, plan, records, log, out, backend, gpu, summary, say)
    return summary


def _profiles(config: MeasureConfig, plan: Plan, records: list[dict[str, Any]], log: ResultsLog, out: str,
              backend: Backend, gpu: str, summary: CampaignSummary, say: Callable[[str], None]) -> None:
    """Profile every workload not profiled yet, then write profiles.csv from every usable report."""
    folder = os.path.join(out, "ncu")
    os.makedirs(folder, exist_ok=True)
    names = model_names(plan.workloads)
    seen = {r["label"]: r for r in records if r.get("type") == "profile"}   # the latest record of each wins
    todo = [w for w in plan.workloads if seen.get(w.label, {}).get("status") not in ("ok", "truncated")]
    for i, w in enumerate(todo, start=1):
        index = plan.workloads.index(w)
        rel = os.path.join("ncu", f"{index:02d}_{w.name}_b{w.batch_size}_{w.dtype}.csv")
        report = os.path.join(out, rel)
        say(f"profile {i} of {len(todo)}: {w.label} (at most {config.ncu_timeout_s:g} s)")
        run = run_profiler(backend.profile_command(w, report), report, config.ncu_timeout_s)
        status, message = run.status, run.message
        if status == "ok" or (status == "timeout" and config.allow_truncated):
            try:
                ingest(report, gpu=gpu, model=names[w.label], batch_size=w.batch_size, stopped=status == "timeout",
                       allow_truncated=config.allow_truncated)
                status = "ok" if status == "ok" else "truncated"
            except InterfpredError as exc:
                status, message = "failed", str(exc)
        rec: dict[str, Any] = {"type": "profile", "label": w.label, "status": status, "report": rel, "seconds": round(run.seconds, 3),
               "message": message}
        log.append(rec)
        records.append(rec)
        seen[w.label] = rec
    profiles = []
    for w in plan.workloads:
        rec = seen[w.label]
        if rec["status"] in ("ok", "truncated"):
            profiles.append(ingest(os.path.join(out, str(rec["report"])), gpu=gpu, model=names[w.label],
                                   batch_size=w.batch_size, stopped=rec["status"] == "truncated",
                                   allow_truncated=True))
            summary.profiled.append(w.label)
            if rec["status"] == "truncated":
                summary.problems.append(f"{w.label}: the profiler did not finish within {config.ncu_timeout_s:g} s; "
                                        f"kept as asked, marked truncated=1 in profiles.csv ({rec['report']})")
        elif rec["status"] == "timeout":
            summary.problems.append(f"{w.label}: the profiler did not finish within {config.ncu_timeout_s:g} s; its "
                                    f"report {rec['report']} holds part of a batch and is left out of profiles.csv "
                                    "(raise --ncu-timeout-s, or keep it marked truncated with --allow-truncated)")
        else:
            summary.problems.append(f"{w.label}: not profiled: {rec['message']} ({rec['report']})")
    if profiles:
        write_profiles(ProfileTable.from_profiles(profiles), os.path.join(out, "profiles.csv"))
