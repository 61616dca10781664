"""`faircert explain`: where the unfair decisions are, as rules over the data's rows."""

from __future__ import annotations

import argparse

from ..options import AuditOptions
from .audit import add_tolerances
from .common import (
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
        "explain",
        help="where the unfair decisions are: rules over the data's rows, with their rates and intervals",
        description="Audit every row of --data (as `faircert audit`), then describe where the unfair rows "
        "are: at most --max-rules rules (ranges and category sets in raw units) found on one half of the "
        "rows and measured on the other (exact counts, an interval, lift, a p-value corrected by "
        "Benjamini-Hochberg), what changes the decision under each, and the largest regions without an "
        "unfair row. Exit code: 0 no unfair row, 1 unfair rows, 2 rows left undecided, 3 bad input.",
    )
    p.add_argument("model", help="model file (as for verify), or a pickled classifier with --trust-pickle")
    p.add_argument("--data", required=True, metavar="DATA.csv", help="the rows to audit and explain (raw columns)")
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from; default: inferred from DATA")
    add_tolerances(p)
    p.add_argument(
        "--population",
        choices=("empirical", "uniform", "independent"),
        default="empirical",
        help="what the rules describe: the data's rows (empirical, the default), or the domain, uniformly or "
        "under the data's independent marginals: points drawn from it, each decided exactly, and each rule's "
        "proven-unfair share from its boxes verified",
    )
    p.add_argument(
        "--samples", type=int, default=4000, metavar="N", help="points drawn from a domain population (default 4000)"
    )
    p.add_argument("--max-rules", type=int, default=5, metavar="K", help="at most K rules (default 5)")
    add_defaulted(p, "--min-lift", 3.0, "the least lift of a rule over the global unfair rate, where found", "L")
    add_defaulted(p, "--confidence", 0.95, "level of each rule's interval", "C")
    add_defaulted(p, "--time-limit", AuditOptions.time_limit, "seconds for the audit", "S")
    p.add_argument("--seed", type=int, default=AuditOptions.seed, help="the split of the rows in two halves")
    add_parallel_arguments(p, "chunks of rows")
    add_memory_argument(p)
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    p.add_argument("--csv", metavar="OUT.csv", help="write one line per rule")
    add_model_loading(p)
    p.add_argument("--quiet", action="store_true", help="no table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import explain
    from ..files import write_text
    from ..report.csv import safe_frame
    from ..report.explain import print_explain, write_explain_html

    options = AuditOptions(
        time_limit=args.time_limit, seed=args.seed, workers=args.workers, ray_address=args.ray, **job_keywords(args)
    )
    with run_guard([args.json, args.html, args.csv], args.quiet):
        result = explain(
            args.model,
            args.data,
            args.protected,
            epsilon=name_values(args.epsilon) or None,
            epsilon_rate=args.epsilon_rate,
            max_rules=args.max_rules,
            domain=args.domain,
            min_lift=args.min_lift,
            confidence=args.confidence,
            population=args.population,
            samples=args.samples,
            trust_pickle=args.trust_pickle,
            preprocessor=args.preprocessor,
            options=options,
        )
    mark_interrupted(result)
    emit_json(result.to_json(), args.json)
    if args.html:
        write_explain_html(result, args.html)
    if args.csv:
        write_text(args.csv, safe_frame(result.to_frame()).to_csv(index=False))
    if not args.quiet:
        print_explain(result)
    return result.exit_code
