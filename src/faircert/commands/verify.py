"""`faircert verify`: quantified individual fairness (or robustness) of one model."""

from __future__ import annotations

import argparse
from typing import Any

from ..options import DEVICES, VerifyOptions
from . import common
from .audit import audit_rows


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="certify and quantify individual fairness of a model",
        description="Certify, falsify and quantify individual fairness of MODEL over a domain. "
        "Exit code: 0 certified fair on the whole domain, 1 counterexample found, "
        "2 undecided remains, 3 bad input.",
    )
    p.add_argument(
        "model",
        help="model file (.nnet, .h5/.keras, .onnx, XGBoost .json/.ubj, LightGBM .txt, "
        "pickled scikit-learn .pkl/.joblib with --trust-pickle)",
    )
    p.add_argument(
        "--domain", help="domain file (YAML/JSON) or a CSV to infer it from; default: the model's own input ranges"
    )
    common.add_tolerances(p)
    p.add_argument(
        "--kappa",
        type=float,
        metavar="K",
        help="only measure inputs whose own confidence exceeds K, in [0.5, 1) (trees)",
    )
    p.add_argument(
        "--robustness",
        action="store_true",
        help="global epsilon-robustness instead of fairness: the twin keeps every protected value and "
        "each feature moves within its epsilon (with epsilon, fairness twins take another "
        "protected value)",
    )
    common.add_run_arguments(
        p,
        VerifyOptions,
        "the box work (ReLU networks and their partitions, the tree-ensemble refinements)",
        (
            "boxes undecided counterexamples",
            "; boxes=N: stop after examining N boxes, a budget by work giving the same result for any --workers; "
            f"undecided=F: stop once the undecided share is at most F (default {VerifyOptions.target_undecided:g}); "
            f"counterexamples=N: keep at most N (default {VerifyOptions.max_counterexamples:,})",
        ),
        "the per-row audit, a network's box refinement or complete (partitioned) decision, or a tree "
        "ensemble's box refinement",
    )
    common.add_defaulted(p, "--confidence", VerifyOptions.confidence, "level of the statistical interval")
    p.add_argument(
        "--device",
        choices=DEVICES,
        help="refine a ReLU or smooth network's boxes with torch in float64 on this device, the open boxes "
        "kept there, in this process unless --workers N says how many share it (on cuda, and its memory) "
        "(the torch extra)",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="decide the question (ReLU networks, tree ensembles): fair with a proof, unfair with a "
        "re-checked pair, unknown only when the time limit runs out or a box cannot be split further",
    )
    p.add_argument(
        "--partition-size",
        type=int,
        metavar="MS",
        help="Fairify's partitioned verification (implies --complete): cut every non-protected integer "
        "feature with more than MS values into chunks of MS and decide each partition",
    )
    p.add_argument(
        "--population",
        choices=("uniform", "independent", "bayesnet", "empirical"),
        default=None,
        help="the measure of the shares: uniform over the domain (default), independent (each feature "
        "drawn from --data, features independent: shares become probabilities; linear models, tree "
        "ensembles with epsilon 0, networks), bayesnet (a Bayesian network learned from --data; epsilon 0: "
        "score histograms for linear models, box refinement for the others) or empirical (the per-row "
        "audit of --data: an alias of `faircert audit`)",
    )
    p.add_argument(
        "--data",
        "--rows",
        action=DataOrRows,
        metavar="DATA.csv",
        help="the data a --population is taken from (default: --domain when it is a CSV)",
    )
    common.add_outputs(
        p,
        {
            "counterexamples": "the re-checked counterexamples, one pair a line",
            "partitions": "one row per partition (bounds, verdict, seconds, counterexample); needs --partition-size",
            "rows": "with --population empirical: one line per row (as `faircert audit --csv`)",
        },
    )
    common.add_model_loading(p)
    p.add_argument(
        "--gate-statistical",
        type=float,
        metavar="SHARE",
        help="exit on the statistical answer instead of the proofs: 0 when its whole interval of the "
        "unfair share is at most SHARE, 1 when all of it is above, 2 when it straddles SHARE",
    )
    p.set_defaults(handler=run, rows=None)


class DataOrRows(argparse.Action):
    """--data DATA.csv; its former spelling `--rows DATA.csv` (hidden) is the per-row audit's alias."""

    shown = 1

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, "rows" if option_string == "--rows" else "data", values)


def run(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..errors import PropertyError
    from ..report.console import progress_bar

    if args.rows or args.population == "empirical":
        return _audit_alias(args)
    if "rows" in (args.csv or {}):
        raise PropertyError("--csv rows=... needs --population empirical (the rows to audit: see `faircert audit`)")
    if args.gate_statistical is not None and not 0.0 <= args.gate_statistical <= 1.0:
        raise PropertyError(f"--gate-statistical takes a share in [0, 1], got {args.gate_statistical}")
    options = common.options_of(VerifyOptions, args, "confidence", "complete", "partition_size", "device")
    if "partitions" in (args.csv or {}) and options.partition_size is None:
        raise PropertyError("--csv partitions=... needs --partition-size MS (there are no partitions without it)")
    with common.run_guard(args), progress_bar(not args.quiet, options.time_limit) as progress:
        result = verify(
            args.model,
            progress=progress,
            options=options,
            **common.picked(args, "domain", "kappa", "robustness", "population", "data"),
            **common.individual_keywords(args),
        )
    common.finish(result, args)
    if args.gate_statistical is not None:
        return result.statistical_exit_code(args.gate_statistical)
    return result.exit_code


def _audit_alias(args: argparse.Namespace) -> int:
    """`verify --rows DATA` and `verify --population empirical`: the per-row audit, said so once."""
    import sys

    from ..errors import PropertyError
    from ..requests.inputs import population_data

    if args.rows and args.population not in (None, "uniform"):
        raise PropertyError("give --rows or a --population, not both (population 'empirical' audits the data's rows)")
    clash = [
        flag
        for flag, given in (
            ("--complete", args.complete),
            ("--partition-size", args.partition_size),
            ("--kappa", args.kappa is not None),
            ("--robustness", args.robustness),
            ("--csv counterexamples", "counterexamples" in (args.csv or {})),
        )
        if given
    ] + [f"--budget {key}" for key in args.budget or {} if key != "memory"]
    if clash:
        raise PropertyError(
            f"{', '.join(clash)} cannot be used with --rows (a per-row audit decides each row; "
            "its twins go to --csv rows=OUT.csv)"
        )
    if not args.quiet:
        print("faircert: note: the per-row audit is now `faircert audit MODEL DATA.csv`", file=sys.stderr)
    rows = args.rows or population_data(args.data, args.domain, "empirical")
    return audit_rows(args, rows, "rows" if args.rows else "empirical")
