"""`faircert group`: group fairness (DI, SP, EO, PCF) of a model under a population model."""

from __future__ import annotations

import argparse

from ..errors import FaircertError
from ..metrics import METRICS
from ..options import GroupOptions, GroupQuestion
from .common import (
    add_checkpoint_arguments,
    add_defaulted,
    add_memory_argument,
    add_model_loading,
    add_parallel_arguments,
    emit_json,
    job_keywords,
    mark_interrupted,
    run_guard,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "group",
        help="group fairness (DI, SP, EO, PCF) under a population model",
        description="Compute P[yhat = 1 | group] for every compound group of the protected attributes under a "
        "population model (the data's own rows: the default with --data; independent marginals or a "
        "Bayesian network learned from --data; a saved population .json; or a population program .fr), "
        "and the metrics DI = min/max over groups, SP = max - min, EO (the worse of the Y=0 / Y=1 "
        "gaps), equal opportunity (TPR gap or ratio), predictive parity (precision gap), PCF. Linear models under "
        "discrete populations: exact, or sound bounds a few 1e-3 wide "
        "on score grids; other models: sound bounds, with a sampled estimate beside them where they "
        "stay wide. Exit code: 0 fair at the thresholds, 1 unfair, 2 undecided, 3 bad input.",
    )
    p.add_argument(
        "model",
        help="model: linear JSON (weights, intercept, encoding), a pickled scikit-learn "
        "estimator/Pipeline (.pkl/.joblib, needs --trust-pickle), or any format verify reads",
    )
    add_group_options(p)
    add_checkpoint_arguments(p, "the sound bounds' refinement (models other than linear ones under a population)")
    p.set_defaults(handler=run)


def add_group_options(p: argparse.ArgumentParser) -> None:
    """What `group` and `compare` share: the data, groups, population, metrics, budget and outputs."""
    p.add_argument("--data", help="CSV of raw rows to learn the population from (and to bin continuous columns)")
    p.add_argument(
        "--protected", help="protected attribute(s), comma-separated; their value combinations are the groups"
    )
    p.add_argument("--label", help="true-label column (needed for --metric eo, eop, eopr, pp)")
    p.add_argument(
        "--population",
        default=None,
        help="empirical (the data's rows, as fairlearn's MetricFrame: the default with --data), "
        "independent, bayesnet, a saved population .json, or a population program .fr",
    )
    p.add_argument(
        "--metric",
        default=",".join(GroupQuestion.metrics),
        help=f"metrics, comma-separated (default {','.join(GroupQuestion.metrics)}): "
        + ", ".join(f"{m.name} ({m.summary().split(':')[0].lower()})" for m in METRICS.values())
        + "; fairlearn's and AIF360's names are accepted too (e.g. demographic_parity_ratio, "
        "equal_opportunity_difference)",
    )
    p.add_argument("--mediators", help="mediator features for PCF, comma-separated")
    p.add_argument(
        "--threshold",
        type=float,
        default=GroupQuestion.threshold,
        help=f"ratio threshold: fair iff DI = min/max >= T (default {GroupQuestion.threshold:g}, the "
        "four-fifths rule), and so for every ratio metric computed (eopr)",
    )
    p.add_argument(
        "--max-gap",
        type=float,
        metavar="G",
        help="also require SP (and every other gap metric computed: eo, eop, pp, pcf) <= G",
    )
    p.add_argument("--influence", action="store_true", help="fairness influence of every non-protected feature")
    p.add_argument(
        "--influence-set",
        action="append",
        metavar="A,B",
        help="influence of a set of features made uniform together (repeatable)",
    )
    p.add_argument("--max-bins", type=int, default=10, help="bin continuous columns into at most N bins (default 10)")
    p.add_argument("--binning", choices=("quantile", "width"), default="quantile", help="bin edges (default quantile)")
    p.add_argument(
        "--bin-value",
        choices=("data", "mean", "midpoint"),
        default="data",
        help="what a binned column takes inside a bin: the data's own values with their frequencies "
        "(default), or one value, the mean of its data or its midpoint",
    )
    p.add_argument(
        "--bins",
        action="append",
        metavar="NAME=K|NAME=E1:E2:...",
        help="bins of one column: a count or explicit edges (needed for a continuous protected attribute)",
    )
    p.add_argument(
        "--bin-bounds",
        action="store_true",
        help="also bound every probability for any distribution inside the bins (e.g. the continuous data)",
    )
    p.add_argument("--score", choices=("k2", "bic", "bdeu"), default="k2", help="network structure score (default k2)")
    p.add_argument("--max-indegree", type=int, default=3, help="most parents of a network node (default 3)")
    p.add_argument(
        "--network-width",
        type=int,
        default=2000,
        metavar="N",
        help="drop a learned network's weakest edges until eliminating it holds at most N configurations "
        "at once, so a linear model's rates come out tight in seconds (default 2000; 0: keep every edge)",
    )
    p.add_argument("--save-population", metavar="OUT.json", help="save the learned population to repeat the check")
    add_defaulted(
        p,
        "--time-limit",
        GroupOptions.time_limit,
        "seconds for the whole answer: learning the population, compiling the model for it, and bounding",
        "S",
    )
    add_memory_argument(p)
    add_parallel_arguments(p, "the sound bounds' trial splits")
    p.add_argument(
        "--method",
        choices=("sound", "sampling"),
        default=GroupOptions.method,
        help="sound: exact or sound bounds (default); sampling: a sequential test with error probability --delta",
    )
    add_defaulted(p, "--delta", GroupOptions.delta, "sampling: probability that the verdict is wrong")
    p.add_argument("--seed", type=int, default=GroupOptions.seed)
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    add_model_loading(p)
    p.add_argument(
        "--audit-table",
        action="store_true",
        help="add the bias-audit tables of the data's rows: per protected attribute and their intersection, "
        "each cell's count, selection rate with a 95%% interval and impact ratio; small cells flagged, rows "
        "missing a protected value counted apart",
    )
    p.add_argument(
        "--exclude-small", action="store_true", help="with --audit-table: cells under 2%% leave the impact ratios"
    )
    p.add_argument("--audit-csv", metavar="OUT.csv", help="with --audit-table: write the tables as CSV")
    p.add_argument(
        "--gate-statistical",
        action="store_true",
        help="exit on the statistical answer instead of the proofs: the sampled metrics checked against "
        "the thresholds where the sound bounds stayed wide (0 fair, 1 unfair, 2 undecided)",
    )
    p.add_argument("--quiet", action="store_true", help="no tables")


def parse_bins(items: list[str] | None) -> dict[str, int | list[float]]:
    out: dict[str, int | list[float]] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise FaircertError(f"--bins expects NAME=K or NAME=E1:E2:..., got {item!r}")
        try:
            out[name.strip()] = [float(v) for v in value.split(":")] if ":" in value else int(value)
        except ValueError:
            raise FaircertError(f"--bins {item!r}: expected an integer count or numbers separated by ':'") from None
    return out


def group_keywords(args: argparse.Namespace) -> dict:
    """The keywords of `faircert.group` from the shared options."""
    from ..options import GroupOptions

    gaps = {m.name: args.max_gap for m in METRICS.values() if m.direction == "<="} if args.max_gap is not None else None
    influence: bool | list = args.influence
    if args.influence_set:  # "*" stands for every feature on its own (when --influence is given too)
        influence = ([["*"]] if args.influence else []) + [s.split(",") for s in args.influence_set]
    return {
        "label": args.label,
        "population": args.population,
        "metrics": args.metric,
        "mediators": args.mediators,
        "threshold": args.threshold,
        "gap_thresholds": gaps,
        "influence": influence,
        "bins": parse_bins(args.bins),
        "max_bins": args.max_bins,
        "binning": args.binning,
        "bin_value": args.bin_value,
        "score": args.score,
        "max_indegree": args.max_indegree,
        "max_width": args.network_width or None,
        "trust_pickle": args.trust_pickle,
        "preprocessor": args.preprocessor,
        "save_population": args.save_population,
        "bin_bounds": args.bin_bounds,
        "options": GroupOptions(
            time_limit=args.time_limit,
            seed=args.seed,
            method=args.method,
            delta=args.delta,
            workers=args.workers,
            ray_address=args.ray,
            **job_keywords(args),
        ),
    }


def run(args: argparse.Namespace) -> int:
    from ..api import group
    from ..report.console import budget_progress
    from ..report.group import print_group

    with (
        run_guard([args.json, args.save_population, args.html, args.checkpoint, args.audit_csv], args.quiet),
        budget_progress(not args.quiet, args.time_limit, "group fairness") as progress,
    ):
        if (args.audit_csv or args.exclude_small) and not args.audit_table:
            raise FaircertError("--audit-csv and --exclude-small are about the audit tables: add --audit-table")
        audit = {"audit_table": True, "exclude_small": args.exclude_small} if args.audit_table else {}
        result = group(
            args.model, args.data, protected=args.protected, progress=progress, **audit, **group_keywords(args)
        )
    mark_interrupted(result)
    emit_json(result.to_json(), args.json)
    if args.html:
        from ..report.group_html import write_group_html

        write_group_html(result, args.html)
    if result.audit is not None and args.audit_csv:
        from ..report.audit import write_audit_csv

        write_audit_csv(result.audit, args.audit_csv)
    if not args.quiet:
        print_group(result)
    return result.statistical_exit_code() if args.gate_statistical else result.exit_code
