"""What several subcommands share: their common options and input loading.

Options that mean one thing are declared once here, so every subcommand spells and explains
them alike (``--profiles``, ``--trace``, ``--measurements``, ``--model-file``, ``--dask``).
"""

from __future__ import annotations

import argparse
from typing import Any

from interfpred.errors import InterfpredError

__all__ = [
    "add_data_options",
    "add_dask_options",
    "add_model_file_options",
    "add_param_option",
    "add_truth_options",
    "load_inputs",
    "per_file",
    "print_summary",
]

#: Help text of --predictor, one wording for every subcommand.
PREDICTOR_HELP = "predictor kind: rls, online_sgd, offline_linear, gpulets, ..."


def add_data_options(p: argparse.ArgumentParser, *, profiles_help: str) -> None:
    """--profiles, --trace and --measurements, worded alike everywhere."""
    p.add_argument("--profiles", help=f"tidy profile file (gpu,model,batch_size,solo_ms[,sm,l2,dram,share]; "
                                      f"CSV, .parquet or .arrow); {profiles_help}")
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
    p.add_argument("--workers", type=int, default=None, help="worker processes of the local Dask cluster "
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


def load_inputs(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(profiles, trace, measurements) from --profiles, --trace and --measurements (None when absent)."""
    from interfpred.data.columnar import read_profiles, read_trace  # CSV, Parquet or Arrow by suffix
    from interfpred.data.measurements import Measurements

    trace_path = getattr(args, "trace", None)
    meas_path = getattr(args, "measurements", None)
    if trace_path is None and meas_path is None:
        raise InterfpredError("give --trace (with --profiles) or --measurements")
    if trace_path is not None and args.profiles is None:
        raise InterfpredError("--trace needs --profiles (solo latency and counters of each model)")
    profiles = None if args.profiles is None else read_profiles(args.profiles)
    trace = None if trace_path is None else read_trace(trace_path)
    meas: Measurements | None = None
    if meas_path is not None and meas_path.startswith("dataset:"):
        from interfpred.data.datasets import load_dataset

        meas = load_dataset(meas_path.removeprefix("dataset:"))
    elif meas_path is not None:
        meas = Measurements.read(meas_path)
    return profiles, trace, meas


def print_summary(summary: Any, title: str, baselines: dict[str, Any] | None = None) -> None:
    """An accuracy summary as a table, the model beside the baselines."""
    from interfpred.evaluation import BASELINE_LABELS
    from interfpred.evaluation.tables import text_table

    baselines = baselines or {}
    header = ["metric", "model", *(BASELINE_LABELS.get(k, k) for k in baselines)]
    rows = [[k, v, *(b.as_dict()[k] for b in baselines.values())] for k, v in summary.as_dict().items()]
    print(title)
    print(text_table(header, rows))
    if not baselines:
        print("(this model file holds no baselines: refit it with 'interfpred fit' to see them beside the model)")
