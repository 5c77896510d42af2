"""``interfpred fit``, ``evaluate`` and ``predict``: model files from the shell (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from interfpred._core.numbers import float_option, int_option
from interfpred.cli.common import (
    PREDICTOR_HELP,
    Progress,
    add_dask_options,
    add_data_options,
    add_json_option,
    add_model_file_options,
    add_param_option,
    check_label,
    load_inputs,
    print_json,
    print_summary,
    refuse_existing,
    summary_json,
)
from interfpred.errors import InterfpredError

__all__ = ["add_evaluate", "add_fit", "add_predict", "run_evaluate", "run_fit", "run_predict"]

#: Help of --model-file where a model written by ``interfpred fit`` is read.
_MODEL_FILE_HELP = "model file written by 'interfpred fit'"


def _add_quantiles(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--quantiles", type=float_option(), nargs="+", default=None, metavar="Q", help=help_text)


# ---------------------------------------------------------------------------- fit
def add_fit(sub: Any) -> None:
    """Declare the ``fit`` subcommand."""
    from interfpred.constants import (
        AGGREGATIONS,
        COMBINES,
        FEATURE_MAPS,
        MODEL_DEFAULT_EXTRACTOR,
        TARGETS,
    )

    d = dict(MODEL_DEFAULT_EXTRACTOR)
    p = sub.add_parser(
        "fit", help="fit an interference model on a trace and/or measurement runs",
        description="Compute features of every execution of --trace (profiles from --profiles) and of every "
                    "row of --measurements, fit the predictor and the three baselines on them, and save the "
                    "extractor's spec and the predictors' states in one JSON model file. What is not named among "
                    "--predictor, --feature-map, --shares and --target is chosen by validation inside the training "
                    "rows (folds by run scored prequentially, models held out scored frozen); the choice is printed "
                    "beside the three baselines on the same folds.")
    add_data_options(p, profiles_help="needed with --trace, optional with --measurements")
    p.add_argument("--predictor", default=None,
                   help=f"{PREDICTOR_HELP} (default: chosen by validation among entity_rls and rls)")
    add_param_option(p, help_text="hyperparameter of the predictor, e.g. forgetting=0.99; repeatable")
    p.add_argument("--aggregation", choices=AGGREGATIONS, default=d["aggregation"],
                   help=f"temporal aggregation (default {d['aggregation']})")
    p.add_argument("--alpha", type=float_option(), default=None, help="EWMA weight of the newest value (ewma only)")
    p.add_argument("--feature-map", dest="feature_map", choices=FEATURE_MAPS, default=None,
                   help="feature map (default: chosen by validation among those the profiles' counters support)")
    p.add_argument("--shares", action="store_true",
                   help="append the MPS share features to the map (default: tried when the data's shares vary)")
    p.add_argument("--measurement-weight", type=float_option(), default=None, metavar="W",
                   help="weight of every measurement row against trace rows (weight 1) when both are given; "
                        "for predictors that take row weights (offline_linear and the baselines)")
    p.add_argument("--combine", choices=COMBINES, default=d["combine"],
                   help=f"how co-runners combine (default {d['combine']})")
    p.add_argument("--target", choices=TARGETS, default=None,
                   help=f"learning target, one of {', '.join(TARGETS)} (default: chosen by validation)")
    p.add_argument("--require-beat-baselines", dest="require_beat_baselines", action="store_true",
                   help="exit 2 (writing nothing) when a baseline beats the model on validation")
    p.add_argument("--out", required=True, help="model file to write (JSON, atomically; not replaced without --force)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_json_option(p)
    add_dask_options(p)
    p.add_argument("--calibrate", choices=("aci", "split", "fixed"), default=None,
                   help="wrap the predictor in Calibrated (conformal latency bounds) with this method")
    p.add_argument("--quantiles", type=float_option(), nargs="+", default=None, metavar="Q",
                   help="quantiles --calibrate calibrates (default 0.5 0.9 0.99)")
    p.set_defaults(func=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    """Run ``fit``: build the model, fit it, save it and print its training accuracy."""
    from interfpred._core.params import parse_params
    from interfpred.constants import MODEL_DEFAULT_EXTRACTOR
    from interfpred.features import make_extractor
    from interfpred.model.interference import InterferenceModel
    from interfpred.predictors import make_predictor

    defaults = dict(MODEL_DEFAULT_EXTRACTOR)
    spec: dict[str, Any] = {"aggregation": args.aggregation, "combine": args.combine,
                            "target": defaults["target"] if args.target is None else args.target,
                            "feature_map": defaults["feature_map"] if args.feature_map is None else args.feature_map}
    if args.shares:
        spec["shares"] = True
    if args.alpha is not None:
        spec["alpha"] = args.alpha
    make_extractor(spec)  # a bad combination fails before any file is read
    if args.predictor is not None:
        check_label(args.predictor, "--predictor")
    named = args.predictor is not None or bool(args.param)
    predictor = make_predictor(args.predictor or "rls", **parse_params(args.param))
    if args.quantiles is not None and args.calibrate is None:
        raise InterfpredError("--quantiles applies only with --calibrate")
    if args.calibrate is not None:
        from interfpred.predictors import Calibrated

        if args.quantiles is None:
            predictor = Calibrated(predictor, method=args.calibrate)
        else:
            predictor = Calibrated(predictor, method=args.calibrate, quantiles=tuple(args.quantiles))
    refuse_existing(args.out, args.force)  # before any work: a model that took hours is not lost to a typo
    if args.dask is not None:
        unnamed = [flag for flag, v in (("--predictor", args.predictor), ("--feature-map", args.feature_map),
                                         ("--target", args.target)) if v is None]
        if unnamed:    # the choice by validation reads every row in one process; Dask merges a named fit
            raise InterfpredError(f"--dask fits a named configuration (fit without --dask chooses one by validation "
                                  f"in one process): name {', '.join(unnamed)}")
        if args.require_beat_baselines:
            raise InterfpredError("--require-beat-baselines validates inside the training rows; not with --dask")
        return _run_fit_dask(args, spec, predictor)
    progress = Progress("fit")
    profiles, trace, meas = load_inputs(args)
    weights = None
    if args.measurement_weight is not None:
        if trace is None or meas is None:
            raise InterfpredError("--measurement-weight weighs measurement rows against trace rows: give both")
        weights = [1.0] * len(trace) + [args.measurement_weight] * len(meas)
        model = InterferenceModel(spec, predictor)
        model.auto_map = args.feature_map is None
        model.fit(trace, profiles, measurements=meas, weights=weights, progress=progress)
    else:
        model = _fit_validated(args, spec, predictor if named else None, profiles, trace, meas, progress)
        if model is None:
            return 2
    if model.note and model.selection is None:   # a validated choice was printed with its table already
        print(f"interfpred: {model.note}", file=sys.stderr)
    model.save(args.out)
    training: dict[str, Any] = {}
    for name, data in (("executions", trace), ("measurement rows", meas)):
        if data is not None:
            progress(f"model saved, training accuracy on {len(data)} {name}")
            kw = {"measurements": data} if name != "executions" else {"trace": data}
            ev = model.evaluate(profiles=profiles, progress=progress, **kw)
            if args.json:
                training["measurements" if name != "executions" else "trace"] = summary_json(ev.summary, ev.baselines)
            else:
                print_summary(ev.summary, f"fit on {len(data)} {name} (training accuracy)", ev.baselines)
    if args.json:
        print_json({"command": "fit", "out": args.out, "model": repr(model), "note": model.note or None,
                    "selection": None if model.selection is None else model.selection.to_state(),
                    "training": training})
    print(f"wrote {args.out}: {model!r}", file=sys.stderr)
    return 0


def _fit_validated(args: argparse.Namespace, spec: dict[str, Any], predictor: Any, profiles: Any, trace: Any,
                   meas: Any, progress: Any) -> Any:
    """Choose what was not named by validation, print the choice beside the baselines, fit it (None: refused)."""
    from interfpred.model.interference import fit_selected
    from interfpred.model.selection import select_configuration
    from interfpred.predictors import inner_predictor

    fixed = {"aggregation": spec["aggregation"], "combine": spec["combine"], "alpha": spec.get("alpha"),
             "feature_map": args.feature_map, "target": args.target, "shares": True if args.shares else None}
    inner = inner_predictor(predictor)    # a Calibrated one: validation chooses for the predictor it wraps
    progress("choosing the configuration by validation inside the training rows")
    sel = select_configuration(trace, profiles, meas, fixed=fixed, predictor=inner, progress=progress)
    print("\n".join(sel.report()), file=sys.stderr if args.json else sys.stdout)  # --json: stdout holds JSON only
    for line in sel.warnings():
        print(f"interfpred: WARNING: {line}", file=sys.stderr)
    if args.require_beat_baselines and (sel.baseline_chosen or sel.beaten_by or not sel.colocated):
        why = ("no training row ran beside another batch" if not sel.colocated
               else "only a baseline predicts these rows best")
        print(f"interfpred: --require-beat-baselines: {why}; {args.out} not written", file=sys.stderr)
        return None
    final = predictor
    if final is None:
        final = sel.chosen.build()
        if args.calibrate is not None:
            from interfpred.predictors import Calibrated

            kw: dict[str, Any] = {} if args.quantiles is None else {"quantiles": tuple(args.quantiles)}
            final = Calibrated(final, method=args.calibrate, **kw)
    return fit_selected(sel, trace, profiles, meas, predictor=final, progress=progress)


def _dask_inputs(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """(profiles, partitions' files) for --dask: a Parquet trace in files, profiles in any format."""
    from interfpred.data.columnar import read_profiles
    from interfpred.model.distributed import trace_files

    _check_dask_options(args)
    if args.trace is None or args.profiles is None:
        raise InterfpredError("--dask needs --trace (Parquet files: a folder, a glob or a file) and --profiles")
    if getattr(args, "measurements", None) is not None:
        raise InterfpredError("--dask partitions traces by GPU; fit or evaluate --measurements without it")
    return read_profiles(args.profiles), trace_files(args.trace)


def _check_dask_options(args: argparse.Namespace) -> None:
    """--dask's address and --workers, checked before any input is read (a bad one costs no time)."""
    from interfpred._core.limits import check_limit
    from interfpred.model.distributed import check_address

    if args.dask:
        check_address(args.dask)
    if args.workers is not None and (args.workers < 1 or args.dask):
        raise InterfpredError("--workers sizes a new local cluster: a positive number, and --dask without an address")
    if args.workers is not None:
        check_limit("DASK_WORKERS_MAX", args.workers, "--workers")


def _run_fit_dask(args: argparse.Namespace, spec: dict[str, Any], predictor: Any) -> int:
    from interfpred.model.distributed import fit_dask
    from interfpred.model.interference import InterferenceModel

    if args.measurement_weight is not None:
        raise InterfpredError("--measurement-weight does not apply with --dask (traces only)")
    profiles, files = _dask_inputs(args)
    model = InterferenceModel(spec, predictor)
    model.auto_map = args.feature_map is None
    report: dict = {}
    fit_dask(files, profiles, model, address=args.dask or None, n_workers=args.workers, report=report)
    if model.note:
        print(f"interfpred: {model.note}", file=sys.stderr)
    model.save(args.out)
    rows = sum(r["rows"] for r in report.values())
    if args.json:
        print_json({"command": "fit", "out": args.out, "model": repr(model), "note": model.note or None,
                    "rows": rows, "devices": len(report), "files": len(files)})
    print(f"wrote {args.out}: {model!r}, fitted on {rows} executions of {len(report)} devices in {len(files)} files "
          "(Dask, merged per device)", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- evaluate
def add_evaluate(sub: Any) -> None:
    """Declare the ``evaluate`` subcommand."""
    p = sub.add_parser(
        "evaluate", help="accuracy of a saved model on a trace or measurements, beside the baselines",
        description="Predict every execution of --trace (or row of --measurements) with --model-file and print "
                    "the accuracy (MSE of slowdown, relative errors of latency) beside the three baselines fitted "
                    "on the model's training rows. With --online, prequentially: predict each execution at its "
                    "launch (each run with what earlier runs taught), learn from it once finished (the model file "
                    "is not changed). With --split, hold out part of --measurements instead: fit the model's "
                    "configuration afresh on the rest, --repeats times (pair: by run; model: leave-one-model-out).")
    add_model_file_options(p, help_text=f"{_MODEL_FILE_HELP} (with --split: only its configuration is used; "
                                        "when omitted, what fit chooses with no flags, chosen inside each "
                                        "fold's training rows)")
    add_data_options(p, profiles_help="needed with --trace")
    p.add_argument("--online", action="store_true", help="prequential evaluation (predict, then learn)")
    _add_quantiles(p, "also print coverage, width and interval score of the latency bounds at these quantiles, "
                      "overall and per model, beside the quantile baseline (a model fitted with --calibrate); "
                      "with --split, the coverage on the held-out rows of a model calibrated in every fold")
    p.add_argument("--warmup", type=int_option(), default=0, help="leading executions left out of the coverage (default 0)")
    p.add_argument("--split", choices=("pair", "model"), default=None,
                   help="held-out evaluation inside --measurements: pair = 70/30 by run, model = leave-one-model-out")
    p.add_argument("--repeats", type=int_option(), default=None, help="seeded repeats of --split pair (default 20)")
    p.add_argument("--seed", type=int_option(), default=0, help="random seed of the --split pair splits (default 0)")
    p.add_argument("--predictor", default=None,
                   help=f"with --split: fit this {PREDICTOR_HELP} instead of the model file's (or the default fit's)")
    add_param_option(p, help_text="with --split --predictor: a hyperparameter of it, e.g. forgetting=0.99; repeatable")
    add_json_option(p)
    add_dask_options(p)
    p.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    """Run ``evaluate``: the model's accuracy (and bounds' coverage) beside the baselines."""
    from interfpred.model.interference import load_model

    if args.split is not None:
        return _run_split(args)
    if args.predictor is not None or args.param:
        raise InterfpredError("--predictor and --param apply to --split only (a model file holds its predictor)")
    if args.json and args.quantiles:
        raise InterfpredError("--json prints the accuracy summary; run --quantiles without it for the bounds' tables")
    if args.repeats is not None:
        raise InterfpredError("--repeats applies to --split only")
    _check_dask_options(args)  # before the model file is read
    if args.model_file is None:
        raise InterfpredError(f"--model-file is required (a {_MODEL_FILE_HELP}), or use --split")
    if args.trace is not None and args.measurements is not None:
        raise InterfpredError("evaluate one data set at a time: --trace or --measurements")
    model = load_model(args.model_file, trusted=args.trust_model_file)
    if args.dask is not None:
        return _run_evaluate_dask(args, model)
    progress = Progress("evaluate")
    profiles, trace, meas = load_inputs(args)
    ev = model.evaluate(trace, profiles, measurements=meas, online=args.online, progress=progress)
    n, what = (len(trace), "executions") if trace is not None else (len(meas), "measurement rows")
    if args.json:
        print_json({"command": "evaluate", "model_file": args.model_file, "online": args.online,
                    "data": "trace" if trace is not None else "measurements", "rows": n,
                    **summary_json(ev.summary, ev.baselines)})
        return 0
    print_summary(ev.summary, f"{'online (prequential)' if args.online else 'offline'} evaluation of "
                              f"{args.model_file} on {n} {what}", ev.baselines)
    if args.quantiles:
        from interfpred.experiments.model_coverage import evaluate_coverage, format_coverage

        cov = evaluate_coverage(model, trace, profiles, args.quantiles, measurements=meas, online=args.online,
                                skip=args.warmup)
        print(f"latency bounds (coverage: share of {what} at or below the bound; width and interval score "
              f"in slowdown units; first {args.warmup} skipped)")
        print(format_coverage(cov))
    return 0


def _run_evaluate_dask(args: argparse.Namespace, model: Any) -> int:
    from interfpred.model.distributed import evaluate_dask

    profiles, files = _dask_inputs(args)
    ev = evaluate_dask(files, profiles, model, online=args.online, address=args.dask or None,
                       n_workers=args.workers)
    how = "online (prequential per device)" if args.online else "offline"
    if args.json:
        print_json({"command": "evaluate", "model_file": args.model_file, "online": args.online, "data": "trace",
                    "rows": ev.summary.n, "dask": True, **summary_json(ev.summary, ev.baselines)})
        return 0
    print_summary(ev.summary, f"{how} evaluation of {args.model_file} on {ev.summary.n} executions (Dask)",
                  ev.baselines)
    return 0


def _run_split(args: argparse.Namespace) -> int:
    from interfpred._core.params import parse_params
    from interfpred.constants import E4_REPEATS, E4_TRAIN_SHARE
    from interfpred.experiments.real import split_scores, split_table
    from interfpred.model.interference import InterferenceModel, load_model
    from interfpred.predictors import get_tags, make_predictor

    if args.measurements is None or args.trace is not None:
        raise InterfpredError("--split evaluates inside one --measurements file (not a trace)")
    if args.split == "model" and args.repeats is not None:
        raise InterfpredError("--repeats applies to --split pair (leave-one-model-out holds each model out once)")
    if args.param and args.predictor is None:
        raise InterfpredError("--param sets a hyperparameter of --predictor: name it")
    predictor = None if args.predictor is None else make_predictor(check_label(args.predictor, "--predictor"), **parse_params(args.param))
    profiles, _, meas = load_inputs(args)
    model = (load_model(args.model_file, trusted=args.trust_model_file) if args.model_file is not None
             else InterferenceModel())
    if predictor is not None:
        if args.quantiles:
            from interfpred.predictors import Calibrated

            predictor = Calibrated(predictor, quantiles=tuple(args.quantiles))
        model = InterferenceModel(model.extractor, predictor)
        model.auto_map = args.model_file is None
    model.choose_map(profiles, meas)
    if model.note and model.selection is None and (predictor is not None or args.model_file is not None):
        print(f"interfpred: {model.note}", file=sys.stderr)     # a map chosen here (not the file's old choice)
    repeats = E4_REPEATS if args.repeats is None else args.repeats
    default_fit = predictor is None and args.model_file is None   # what fit with no flags would choose, per fold
    if args.quantiles and not default_fit and not get_tags(model.predictor).gives_bounds:
        raise InterfpredError("--quantiles with --split needs a calibrated --model-file (fit it with --calibrate), "
                              "or no --model-file")
    progress = Progress("evaluate")
    chosen: dict[bytes, Any] = {}     # the default fit's model per split, chosen once for both tables
    scores = split_scores(model.extractor, None if default_fit else model.predictor, meas, profiles,
                          split=args.split, repeats=repeats, seed=args.seed, online=args.online, cache=chosen,
                          progress=progress)
    cov = None
    if args.quantiles:
        progress(f"latency bounds at {len(args.quantiles)} quantile(s) on every fold")
        from interfpred.evaluation import run_folds
        from interfpred.experiments.model_coverage import split_coverage

        folds = run_folds(meas, args.split, repeats=repeats, seed=args.seed, train_share=E4_TRAIN_SHARE)
        cov = split_coverage(meas, profiles, folds, args.quantiles, online=args.online,
                             model=None if default_fit else model, chosen=chosen)
    if args.json:
        print_json({"command": "evaluate", "split": args.split, "online": args.online, **scores,
                    **({"coverage": cov} if cov is not None else {})})
        return 0
    print(split_table(scores))
    if cov is not None:
        from interfpred.experiments.model_coverage import split_coverage_table

        how = "prequential" if args.online else "frozen (as predict serves them)"
        print(f"latency bounds on the held-out rows, {how}: share of rows at or below the bound")
        print(split_coverage_table(cov))
    return 0


# ---------------------------------------------------------------------------- predict
def add_predict(sub: Any) -> None:
    """Declare the ``predict`` subcommand."""
    p = sub.add_parser(
        "predict", help="predicted latencies of a trace's executions or of measurement rows",
        description="Write id, predicted_latency_ms, predicted_slowdown and observed_latency_ms for every "
                    "execution of --trace (or run, model, batch_size, share and the same three for every row of "
                    "--measurements) to a CSV (atomically).")
    add_model_file_options(p, help_text=f"{_MODEL_FILE_HELP} (required)")
    add_data_options(p, profiles_help="needed with --trace")
    p.add_argument("--out", required=True, help="predictions file to write: CSV, or .parquet / .arrow (not replaced "
                                                "without --force)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_json_option(p)
    _add_quantiles(p, "one more column per quantile, latency_q<Q>_ms: the latency bound at Q "
                      "(a model fitted with --calibrate)")
    p.set_defaults(func=run_predict)


def run_predict(args: argparse.Namespace) -> int:
    """Run ``predict``: write the predictions file."""
    from interfpred.model.interference import load_model
    from interfpred.model.prediction_tables import write_measurement_predictions, write_predictions

    if args.model_file is None:
        raise InterfpredError(f"--model-file is required (a {_MODEL_FILE_HELP})")
    if args.trace is not None and args.measurements is not None:
        raise InterfpredError("predict one data set at a time: --trace or --measurements")
    refuse_existing(args.out, args.force)
    progress = Progress("predict")
    model = load_model(args.model_file, trusted=args.trust_model_file)
    profiles, trace, meas = load_inputs(args)
    quantiles = tuple(args.quantiles or ())
    rows = len(trace) if trace is not None else len(meas)
    progress(f"inputs read, predicting {rows} rows")
    if trace is not None:
        n = write_predictions(model, trace, profiles, args.out, quantiles=quantiles)
    else:
        n = write_measurement_predictions(model, meas, profiles, args.out, quantiles=quantiles)
    if args.json:
        print_json({"command": "predict", "model_file": args.model_file, "out": args.out, "rows": n,
                    "data": "trace" if trace is not None else "measurements", "quantiles": list(quantiles)})
    print(f"wrote {n} predictions to {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- show
def add_show(sub: Any) -> None:
    """Declare the ``show`` subcommand."""
    p = sub.add_parser(
        "show", help="what a model file holds: configuration, what fit chose and why, sizes",
        description="Print what MODEL_FILE holds without running it: the extractor, the predictor and its "
                    "learned size, what fit chose by validation (every candidate's validation MAPE beside the "
                    "baselines, and the rule that chose) when it chose, the frozen bounds, and how many bytes "
                    "each part takes in the file.")
    p.add_argument("model_file", metavar="MODEL_FILE", help="a model file written by interfpred fit")
    p.add_argument("--trust-model-file", action="store_true",
                   help="allow a model file wrapping a river/scikit-learn estimator, stored as a pickle: loading "
                        "it runs code from the file, so pass this only for files you wrote yourself")
    add_json_option(p)
    p.set_defaults(func=run_show)


def run_show(args: argparse.Namespace) -> int:
    """Run ``show``: describe a model file."""
    import json
    import os

    from interfpred.model.interference import load_model

    model = load_model(args.model_file, trusted=args.trust_model_file)
    state = model.to_state()
    parts = {k: len(json.dumps(v, allow_nan=False)) for k, v in state.items()
             if k in ("predictor", "baselines", "frozen_bounds", "selection")}
    pred = state["predictor"].get("state") or {}
    biggest = sorted(((k, len(json.dumps(v, allow_nan=False))) for k, v in pred.items()), key=lambda kv: -kv[1])[:3]
    info = {"command": "show", "model_file": args.model_file, "bytes": os.path.getsize(args.model_file),
            "model": repr(model), "extractor": model.extractor.get_spec(), "predictor": model.predictor.kind,
            "n_features": model.extractor.n_features, "note": model.note,
            "selection": None if model.selection is None else model.selection.to_state(),
            "frozen_bounds": model.frozen_bounds is not None, "bytes_by_part": parts,
            "largest_predictor_state": dict(biggest)}
    if args.json:
        print_json(info)
        return 0
    print(f"{args.model_file}: {info['bytes']:,} bytes, interfpred {state['interfpred_version']}")
    print(f"model: {model!r}")
    print(f"features: {model.extractor.n_features} ({', '.join(model.extractor.names)})")
    print("bytes by part: " + ", ".join(f"{k} {v:,}" for k, v in parts.items())
          + (f"; largest predictor state: {', '.join(f'{k} {v:,}' for k, v in biggest)}" if biggest else ""))
    if model.selection is None:
        print("selection: none (the configuration was named when the model was fitted)"
              + (f"; {model.note}" if model.note else ""))
    else:
        print("\n".join(model.selection.report()))
        for line in model.selection.warnings():
            print(f"WARNING: {line}")
    return 0
