"""`faircert verify`: quantified individual fairness (or robustness) of one model."""

from __future__ import annotations

import argparse

from ..options import DEVICES, VerifyOptions
from .audit import add_tolerances, audit_rows
from .common import (
    add_checkpoint_arguments,
    add_defaulted,
    add_memory_argument,
    add_model_loading,
    add_parallel_arguments,
    emit_json,
    job_keywords,
    mark_interrupted,
    name_values,
    run_guard,
)


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
    add_tolerances(p)
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
    add_defaulted(p, "--time-limit", VerifyOptions.time_limit, "seconds", "S")
    add_defaulted(
        p, "--target-undecided", VerifyOptions.target_undecided, "stop once the undecided share is at most F", "F"
    )
    add_defaulted(p, "--confidence", VerifyOptions.confidence, "level of the statistical interval")
    p.add_argument("--seed", type=int, default=VerifyOptions.seed)
    p.add_argument("--max-counterexamples", type=int, default=VerifyOptions.max_counterexamples, metavar="N")
    add_parallel_arguments(p, "the box work (ReLU networks and their partitions, the tree-ensemble refinements)")
    p.add_argument(
        "--max-boxes",
        type=int,
        metavar="N",
        help="stop after examining N boxes: a budget by work, giving the same result for any --workers",
    )
    p.add_argument(
        "--device",
        choices=DEVICES,
        help="bound a ReLU or smooth network's boxes with torch in float64 on this device (the torch extra)",
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
        "--partitions-csv",
        metavar="OUT.csv",
        help="write one row per partition (bounds, verdict, seconds, counterexample); needs --partition-size",
    )
    p.add_argument(
        "--rows",
        metavar="DATA.csv",
        help="the per-row audit of DATA.csv: an alias of `faircert audit MODEL DATA.csv`",
    )
    add_memory_argument(p)
    add_checkpoint_arguments(
        p,
        "the per-row audit, a network's box refinement or complete (partitioned) "
        "decision, or a tree ensemble's box refinement",
    )
    p.add_argument(
        "--rows-csv",
        metavar="OUT.csv",
        help="with --rows: write one line per input row (as `faircert audit --rows-csv`)",
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
        "--data", metavar="DATA.csv", help="the data a --population is taken from (default: --domain when it is a CSV)"
    )
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument("--counterexamples", metavar="OUT.csv", help="write the counterexamples as CSV")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    add_model_loading(p)
    p.add_argument(
        "--gate-statistical",
        type=float,
        metavar="SHARE",
        help="exit on the statistical answer instead of the proofs: 0 when its whole interval of the "
        "unfair share is at most SHARE, 1 when all of it is above, 2 when it straddles SHARE",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..errors import PropertyError
    from ..options import VerifyOptions
    from ..report.console import decided_progress, print_result
    from ..report.csv import write_counterexamples, write_partitions
    from ..report.html import write_html

    if args.rows or args.population == "empirical":
        return _audit_alias(args)
    if args.rows_csv:
        raise PropertyError("--rows-csv needs --rows DATA.csv (the rows to audit: see `faircert audit`)")
    if args.gate_statistical is not None and not 0.0 <= args.gate_statistical <= 1.0:
        raise PropertyError(f"--gate-statistical takes a share in [0, 1], got {args.gate_statistical}")
    options = VerifyOptions(
        time_limit=args.time_limit,
        target_undecided=args.target_undecided,
        confidence=args.confidence,
        seed=args.seed,
        max_counterexamples=args.max_counterexamples,
        workers=args.workers,
        max_boxes=args.max_boxes,
        ray_address=args.ray,
        complete=args.complete,
        partition_size=args.partition_size,
        device=args.device,
        **job_keywords(args),
    )
    if args.partitions_csv and options.partition_size is None:
        raise PropertyError("--partitions-csv needs --partition-size MS (there are no partitions without it)")
    with (
        run_guard([args.json, args.counterexamples, args.html, args.partitions_csv, args.checkpoint], args.quiet),
        decided_progress(not args.quiet, options.time_limit) as progress,
    ):
        result = verify(
            args.model,
            domain=args.domain,
            protected=args.protected,
            epsilon=name_values(args.epsilon) or None,
            epsilon_rate=args.epsilon_rate,
            kappa=args.kappa,
            robustness=args.robustness,
            population=args.population,
            data=args.data,
            trust_pickle=args.trust_pickle,
            preprocessor=args.preprocessor,
            progress=progress,
            options=options,
        )
    mark_interrupted(result)
    emit_json(result.to_json(), args.json)
    for path, write in (
        (args.counterexamples, write_counterexamples),
        (args.partitions_csv, write_partitions),
        (args.html, write_html),
    ):
        if path:
            write(result, path)
    if not args.quiet:
        print_result(result)
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
            ("--counterexamples", args.counterexamples),
            ("--max-boxes", args.max_boxes),
            ("--device", args.device),
        )
        if given
    ]
    if clash:
        raise PropertyError(
            f"{', '.join(clash)} cannot be used with --rows (a per-row audit decides each row; "
            "its twins go to --rows-csv)"
        )
    if not args.quiet:
        print("faircert: note: the per-row audit is now `faircert audit MODEL DATA.csv`", file=sys.stderr)
    rows = args.rows or population_data(args.data, args.domain, "empirical")
    return audit_rows(args, rows, "rows" if args.rows else "empirical")
