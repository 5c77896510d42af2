"""What several subcommands share: their common options, input loading and output.

Options that mean one thing are declared once here, so every subcommand spells and explains
them alike (``--profiles``, ``--trace``, ``--measurements``, ``--model-file``, ``--dask``,
``--json``); so are the rule that a written ``--out`` is never replaced without ``--force``
(:func:`refuse_existing`), the accuracy table's units (:func:`summary_row`: relative errors and
shares in percent) and the progress lines of long commands (:class:`Progress`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from interfpred._core.atomic import json_ready
from interfpred._core.numbers import int_option
from interfpred.errors import InputError, InterfpredError

__all__ = [
    "Progress",
    "add_data_options",
    "add_dask_options",
    "add_json_option",
    "add_model_file_options",
    "add_param_option",
    "add_quiet_option",
    "add_truth_options",
    "check_label",
    "load_config_table",
    "load_configs_or_profiles",
    "load_inputs",
    "load_profiles_arg",
    "load_slo_arg",
    "per_file",
    "print_json",
    "print_summary",
    "progress_scope",
    "refuse_existing",
    "summary_json",
    "summary_row",
    "write_output",
]


def check_label(value: str, option: str) -> str:
    """``value`` of a name option (``--gpu``, ``--predictor``): refused when empty, with a control
    character (a newline would split a CSV row) or with a lone surrogate (undecodable bytes)."""
    bad = next((c for c in value if not c.isprintable() or "\ud800" <= c <= "\udfff"), None)
    if not value.strip() or bad is not None:
        what = "is empty" if not value.strip() else f"holds the character {bad!r}"
        raise InterfpredError(f"{option} {value!r} {what}; give a name of printable characters")
    return value


def refuse_existing(path: str, force: bool, *, option: str = "--out") -> None:
    """Before any work: refuse an output file ``path`` that exists (unless ``force``, ``--force``), that is a
    folder (even with ``force``: a file output never replaces a folder), that may never be replaced
    (:func:`~interfpred._core.atomic.check_replaceable`), or whose folder does not exist.

    Every subcommand that writes a file calls this on each of its outputs before reading its inputs, and
    then writes with :func:`write_output`."""
    from interfpred._core.atomic import check_replaceable

    full = check_replaceable(path, what=option)
    if os.path.isdir(path):
        raise InterfpredError(f"{option} {path} is a folder: name a file to write")
    if os.path.lexists(path) and not force:
        raise InterfpredError(f"{path} exists: pass --force to replace it")
    folder = os.path.dirname(full)
    if not os.path.isdir(folder):
        raise InterfpredError(f"{path}: folder {folder} does not exist")


def write_output(value: Any, path: str) -> None:
    """Write a trace, profile table or measurement runs in the format ``path``'s suffix names, atomically.

    ``.parquet``/``.pq`` is Parquet, ``.arrow``/``.feather``/``.ipc`` Arrow IPC (Feather), anything else
    CSV (:func:`~interfpred.data.columnar.format_of`): one rule for every subcommand's ``--out``. A small
    result table with ``to_csv_text()`` and ``to_json_text()`` (such as an advice) is written as JSON to a
    ``.json`` path and as CSV otherwise (not as Parquet or Arrow).
    """
    from interfpred._core.atomic import atomic_write_text
    from interfpred.data import columnar
    from interfpred.data.measurements import Measurements
    from interfpred.data.profiles import ProfileTable
    from interfpred.data.trace import Trace

    if isinstance(value, Trace):
        columnar.write_trace(value, path)
    elif isinstance(value, ProfileTable):
        columnar.write_profiles(value, path)
    elif isinstance(value, Measurements):
        columnar.write_measurements(value, path)
    elif hasattr(value, "to_csv_text") and hasattr(value, "to_json_text"):
        if os.fspath(path).lower().endswith(".json"):
            atomic_write_text(path, value.to_json_text())
        elif columnar.format_of(path) != "csv":
            raise InterfpredError(f"{path}: this table is written as CSV or JSON (.json), not "
                                  f"{columnar.format_of(path)}")
        else:
            atomic_write_text(path, value.to_csv_text())
    else:
        raise TypeError(f"write_output writes a Trace, ProfileTable or Measurements, not {type(value).__name__}")


def add_json_option(p: argparse.ArgumentParser, *, what: str | None = None) -> None:
    """--json: the summary as one JSON object on stdout instead of the tables (``what``: the help, when other)."""
    p.add_argument("--json", action="store_true",
                   help=what or "print the summary as one JSON object on stdout instead of tables (same names and "
                                "units)")


def summary_row(summary: Any) -> dict[str, float]:
    """An accuracy summary's figures as the CLI shows them: n, mse, then relative errors and shares in percent
    (:meth:`~interfpred.evaluation.metrics.AccuracySummary.as_percent_dict`)."""
    return dict(summary.as_percent_dict())


def summary_json(summary: Any, baselines: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model's figures and each baseline's (by kind), as in :func:`print_summary`'s table."""
    return {"model": summary_row(summary), "baselines": {k: summary_row(b) for k, b in (baselines or {}).items()}}


def print_json(obj: Any) -> None:
    """One JSON object on stdout (no NaN: a missing figure is null)."""
    print(json.dumps(json_ready(obj), allow_nan=False))


class Progress:
    """Progress lines on stderr for a command that runs long: ``fit: 2/4 predictors on 20000 rows (3.1 s)``.

    Calling it with a message makes that the current step and prints ``"<command>: <message>
    (<elapsed> s)"`` once the command has run ``after_s`` seconds, then at most once per
    ``every_s`` seconds; earlier calls print nothing, so a quick command stays quiet. Used as a
    context manager, a heartbeat thread also prints the current step again whenever no line came
    for ``heartbeat_s`` seconds, so a long step shows a line at least every ``heartbeat_s`` plus a
    fraction of a second (a compiled kernel that holds the interpreter delays it). On a terminal
    (``stream.isatty()``) the lines rewrite one line, ended when the context closes; elsewhere
    they are plain lines. ``quiet`` prints nothing. Defaults: ``PROGRESS_AFTER_S``,
    ``PROGRESS_EVERY_S`` and ``PROGRESS_HEARTBEAT_S`` in :mod:`interfpred.constants`, read when
    the object is made.

    Examples
    --------
    >>> import io
    >>> ticks = iter([0.0, 1.0, 2.5, 3.0, 4.0])
    >>> out = io.StringIO()
    >>> p = Progress("fit", after_s=2.0, every_s=1.0, stream=out, clock=lambda: next(ticks))
    >>> for msg in ("a", "b", "c", "d"):
    ...     p(msg)
    >>> out.getvalue().splitlines()
    ['fit: b (2.5 s)', 'fit: d (4.0 s)']

    The heartbeat (here called by hand, as its thread does) repeats the current step:

    >>> now = [0.0]
    >>> out = io.StringIO()
    >>> p = Progress("fit", after_s=0.0, every_s=1.0, heartbeat_s=1.5, stream=out, clock=lambda: now[0])
    >>> p("choosing"); now[0] = 1.0; p.tick(); now[0] = 1.6; p.tick()
    >>> out.getvalue().splitlines()
    ['fit: choosing (0.0 s)', 'fit: choosing (1.6 s)']
    """

    def __init__(self, command: str, *, after_s: float | None = None, every_s: float | None = None,
                 heartbeat_s: float | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, quiet: bool = False) -> None:
        from interfpred import constants

        self.command = command
        self.after_s = constants.PROGRESS_AFTER_S if after_s is None else after_s
        self.every_s = constants.PROGRESS_EVERY_S if every_s is None else every_s
        self.heartbeat_s = constants.PROGRESS_HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        self.stream = stream
        self.clock = clock
        self.quiet = quiet
        self._t0 = clock()
        self._last: float | None = None
        self._message: str | None = None
        self._open = False           # a rewritten terminal line waits for its newline
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if _SCOPES:          # made inside a command (progress_scope): heartbeat on, closed with the command
            scope_quiet, made = _SCOPES[-1]
            self.quiet = self.quiet or scope_quiet
            made.append(self)
            self.__enter__()

    def _out(self) -> TextIO:
        out = self.stream or sys.stderr
        return out.inner if isinstance(out, _EndsProgressLines) else out

    def end_line(self) -> None:
        """End a rewritten terminal line (before other output reaches the terminal); the next step rewrites anew."""
        with self._lock:
            if self._open:
                self._out().write("\n")
                self._out().flush()
                self._open = False

    def _emit(self, now: float, min_gap: float) -> None:
        elapsed = now - self._t0
        if self.quiet or self._message is None or elapsed < self.after_s or (
                self._last is not None and now - self._last < min_gap):
            return
        self._last = now
        line = f"{self.command}: {self._message} ({elapsed:.1f} s)"
        out = self._out()
        isatty = getattr(out, "isatty", None)
        if isatty is not None and isatty():
            out.write(f"\r\x1b[K{line}")
            self._open = True
        else:
            out.write(line + "\n")
        out.flush()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._message = message
            self._emit(self.clock(), self.every_s)

    def tick(self) -> None:
        """Print the current step again if no line came for ``heartbeat_s`` seconds (the heartbeat's call)."""
        with self._lock:
            self._emit(self.clock(), self.heartbeat_s)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s / 4.0):
            self.tick()

    def __enter__(self) -> Progress:
        if not self.quiet and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._beat, name=f"progress-{self.command}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the heartbeat and end a rewritten terminal line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.end_line()


class _EndsProgressLines:
    """A terminal stream that ends the open rewritten progress lines before anything else is written to it."""

    def __init__(self, inner: TextIO, made: list[Progress]) -> None:
        self.inner = inner
        self._made = made

    def write(self, text: str) -> int:
        if text:
            for p in self._made:
                p.end_line()
        return self.inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


#: The commands running (innermost last): whether --quiet was given, and the Progress objects made.
_SCOPES: list[tuple[bool, list[Progress]]] = []


@contextlib.contextmanager
def progress_scope(*, quiet: bool = False) -> Iterator[None]:
    """A command's run: every :class:`Progress` made inside keeps its heartbeat (none with ``quiet``,
    which also silences them) and is closed when the command ends, however it ends.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with progress_scope(quiet=True):
    ...     Progress("fit", after_s=0.0, stream=out)("reading")
    >>> out.getvalue()
    ''
    """
    made: list[Progress] = []
    _SCOPES.append((quiet, made))
    saved = sys.stdout, sys.stderr
    if not quiet:       # on a terminal, the command's own output starts on a line of its own
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if getattr(stream, "isatty", lambda: False)():
                setattr(sys, name, _EndsProgressLines(stream, made))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        _SCOPES.pop()
        for p in made:
            p.close()


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    """--quiet: no progress lines on stderr (errors and warnings still print)."""
    p.add_argument("--quiet", action="store_true", help="print no progress lines on stderr")


#: Help text of --predictor, one wording for every subcommand.
PREDICTOR_HELP = "predictor kind: rls, online_sgd, offline_linear, gpulets, ..."


def add_data_options(p: argparse.ArgumentParser, *, profiles_help: str) -> None:
    """--profiles, --trace and --measurements, worded alike everywhere."""
    p.add_argument("--profiles", help=f"tidy profile file (gpu,model,batch_size,solo_ms[,sm,l2,dram,share][,kernel "
                                      f"columns]; CSV, .parquet or .arrow), or dataset:NAME for the profiles shipped "
                                      f"with a dataset (h200_streams); {profiles_help}")
    p.add_argument("--trace", help="trace file (id,device,model,batch_size,start_ms,end_ms[,share]; CSV, .parquet "
                                   "or .arrow)")
    p.add_argument("--measurements", help="measurement runs (run,gpu,model,batch_size[,share],solo_ms,observed_ms; "
                                          "CSV or .parquet), or dataset:NAME for a shipped dataset")


def add_model_file_options(p: argparse.ArgumentParser, *, help_text: str) -> None:
    """--model-file and --trust-model-file."""
    p.add_argument("--model-file", dest="model_file", metavar="FILE", help=help_text)
    p.add_argument("--trust-model-file", action="store_true",
                   help="allow a model file wrapping a river/scikit-learn estimator, stored as a pickle: loading "
                        "it runs code from the file, so pass this only for files you wrote yourself")


def add_param_option(p: argparse.ArgumentParser, *, help_text: str) -> None:
    """--param K=V, repeatable."""
    p.add_argument("--param", action="append", default=[], metavar="K=V", help=help_text)


def add_dask_options(p: argparse.ArgumentParser) -> None:
    """--dask [ADDRESS] and --workers N."""
    p.add_argument("--dask", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Dask, one task per device of the Parquet trace files --trace names (a folder, a glob "
                        "or a file): a new local cluster, or the scheduler at ADDRESS (needs interfpred[fleet])")
    p.add_argument("--workers", type=int_option(), default=None, help="worker processes of the local Dask cluster "
                                                             "(default: one per CPU core)")


def add_truth_options(p: argparse.ArgumentParser, *, operators: bool) -> None:
    """--truth / --zoo (and --operators) of simulate and reproduce."""
    from interfpred.constants import SIM_DEFAULT_TRUTH, SIM_TRUTHS, SIM_ZOOS

    p.add_argument("--truth", choices=SIM_TRUTHS, default=SIM_DEFAULT_TRUTH,
                   help="ground truth: phases (operator phases, hidden per-model factors; default) or fluid "
                        "(one demand vector per execution, the earlier simulator)")
    p.add_argument("--zoo", choices=SIM_ZOOS, default=None,
                   help="model family: orion (real V100 operator tables, derived demands; default on v100 with "
                        "--truth phases) or synthetic (default elsewhere); with --truth fluid, orion runs the "
                        "passes' time-averaged profiles")
    if operators:
        p.add_argument("--operators", action="store_true",
                       help="also write operators.csv, the operator-level profile (--truth phases)")


def per_file(values: list[Any] | None, name: str, n: int, default: Any = None) -> list[Any]:
    """A per-file option given once (for all ``n`` files) or once per file; ``default`` when absent."""
    if values is None:
        if default is None:
            raise InterfpredError(f"--{name} is required (once, or once per file)")
        return [default] * n
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise InterfpredError(f"--{name} given {len(values)} times for {n} files: give it once or once per file")
    return list(values)


def load_profiles_arg(text: str) -> Any:
    """A profile table from a --profiles value: a file (CSV, Parquet or Arrow), or dataset:NAME for the
    profiles shipped with a dataset."""
    if text.startswith("dataset:"):
        from interfpred.data.datasets import load_profile_dataset

        return load_profile_dataset(text.removeprefix("dataset:"))
    from interfpred.data.columnar import read_profiles

    return read_profiles(text)


def load_slo_arg(text: str) -> Any:
    """SLOs from a --slo value (``plan`` and ``advise``): an SLO CSV, or dataset:parvagpu_slo1 .. 6."""
    prefix = "dataset:parvagpu_slo"
    if text.startswith(prefix):
        from interfpred._core.numbers import is_int_text
        from interfpred.data.datasets.parvagpu import PARVAGPU_SLO_SETS, parvagpu_slo

        k = text.removeprefix(prefix)
        if not (is_int_text(k) and k.isdigit()):
            raise InterfpredError(f"--slo {text}: expected {prefix}1 .. {prefix}{PARVAGPU_SLO_SETS}")
        return parvagpu_slo(int(k))
    from interfpred.provisioning import read_slo

    return read_slo(text)


def load_config_table(text: str) -> Any:
    """MIG x MPS configurations (a ``ConfigTable``) from a --profiles value: measurements with a ``partition``
    column in a file, or dataset:NAME (``plan``; ``advise`` through :func:`load_configs_or_profiles`)."""
    from interfpred.data.measurements import Measurements
    from interfpred.provisioning import ConfigTable

    if text.startswith("dataset:"):
        from interfpred.data.datasets import load_dataset

        return ConfigTable.from_measurements(load_dataset(text.removeprefix("dataset:")))
    return ConfigTable.from_measurements(Measurements.read(text))


def load_configs_or_profiles(text: str) -> Any:
    """What ``advise`` simulates from a --profiles value: the solo profiles a dataset ships (dataset:h200_streams)
    or a profile file; or, for a dataset or measurements file of MIG x MPS runs (a ``partition`` column, as
    ``plan`` reads), its configurations (a ``ConfigTable``; advise derives solo profiles from it)."""
    if text.startswith("dataset:"):
        from interfpred.data.datasets import DATASETS, PROFILE_DATASETS

        name = text.removeprefix("dataset:")
        if name in PROFILE_DATASETS:
            return load_profiles_arg(text)
        if name in DATASETS:
            return load_config_table(text)
        raise InterfpredError(f"--profiles {text}: no dataset named {name!r}; with profiles: "
                              f"{', '.join(sorted(PROFILE_DATASETS))}; with MIG configurations: parvagpu_a100")
    import csv

    from interfpred.data.columnar import format_of

    if format_of(text) == "csv":
        with open(text, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if "partition" in header and "observed_ms" in header:
            return load_config_table(text)
    return load_profiles_arg(text)


def load_inputs(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(profiles, trace, measurements) from --profiles, --trace and --measurements (None when absent)."""
    from interfpred.data.columnar import read_trace  # CSV, Parquet or Arrow by suffix
    from interfpred.data.measurements import Measurements

    trace_path = getattr(args, "trace", None)
    meas_path = getattr(args, "measurements", None)
    if trace_path is None and meas_path is None:
        raise InterfpredError("give --trace (with --profiles) or --measurements")
    if trace_path is not None and args.profiles is None:
        raise InterfpredError("--trace needs --profiles (solo latency and counters of each model)")
    profiles = None if args.profiles is None else load_profiles_arg(args.profiles)
    trace = None if trace_path is None else read_trace(trace_path)
    if trace is not None and len(trace) == 0:
        raise InputError("has a header but no executions", path=trace_path)
    meas: Measurements | None = None
    if meas_path is not None and meas_path.startswith("dataset:"):
        from interfpred.data.datasets import load_dataset

        meas = load_dataset(meas_path.removeprefix("dataset:"))
    elif meas_path is not None:
        meas = Measurements.read(meas_path)
        if len(meas) == 0:
            raise InputError("has a header but no measurement rows", path=meas_path)
    return profiles, trace, meas


def print_summary(summary: Any, title: str, baselines: dict[str, Any] | None = None) -> None:
    """An accuracy summary as a table, the model beside the baselines (figures as :func:`summary_row`)."""
    from interfpred.evaluation import BASELINE_LABELS
    from interfpred.evaluation.text_tables import text_table

    baselines = baselines or {}
    header = ["metric", "model", *(BASELINE_LABELS.get(k, k) for k in baselines)]
    base_rows = [summary_row(b) for b in baselines.values()]
    rows = [[k, v, *(b[k] for b in base_rows)] for k, v in summary_row(summary).items()]
    print(title)
    print(text_table(header, rows))
    if not baselines:
        print("(this model file holds no baselines: refit it with 'interfpred fit' to see them beside the model)")
