"""`faircert audit`: every row of a dataset decided: would another protected value (and the
epsilon-moves) change the model's decision for this person?"""

from __future__ import annotations

import argparse
from typing import Any

from ..options import AuditOptions
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


def add_tolerances(p: Any) -> None:
    """--protected, --epsilon and --epsilon-rate: who is protected and how far twins may move."""
    p.add_argument(
        "--protected", help="protected feature name(s), comma-separated (default: those marked in the domain)"
    )
    p.add_argument(
        "--epsilon",
        action="append",
        metavar="NAME=VAL",
        help="tolerance of a non-protected feature (repeatable, or comma-separated)",
    )
    p.add_argument(
        "--epsilon-rate",
        type=float,
        metavar="R",
        help="tolerance of every non-protected, non-categorical feature as a share R of its range "
        "(rounded down for integer features; categorical codes keep 0)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="decide every row of a dataset: would another protected value change its decision?",
        description="Audit every row of DATA: is there a twin (another protected value, each --epsilon "
        "feature within its tolerance, every other feature equal) that MODEL decides differently? "
        "Each fair row is proven, each unfair one has a twin re-checked on the model. "
        "Exit code: 0 every row fair, 1 an unfair row, 2 rows left undecided, 3 bad input.",
    )
    p.add_argument("model", help="model file (as for verify), or a pickled classifier with --trust-pickle")
    p.add_argument("data", metavar="DATA.csv", help="the rows to audit (raw columns, categories by name)")
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from; default: inferred from DATA")
    add_tolerances(p)
    add_defaulted(p, "--time-limit", AuditOptions.time_limit, "seconds", "S")
    p.add_argument("--seed", type=int, default=AuditOptions.seed)
    add_parallel_arguments(p, "chunks of rows")
    p.add_argument(
        "--max-cells",
        type=int,
        default=AuditOptions.max_cells,
        metavar="N",
        help="tree ensembles: a row's ball of at most N cells is decided exactly, a larger one searched "
        f"(unfair or unknown) (default {AuditOptions.max_cells:,})",
    )
    p.add_argument(
        "--max-twins",
        type=int,
        metavar="N",
        help="black boxes and networks: a row's ball of at most N twins is evaluated whole (default: the "
        "kind's own, 20,000 for black boxes and 50,000 for networks)",
    )
    add_defaulted(p, "--milp-seconds", AuditOptions.milp_seconds, "networks: seconds one row's MILP may take", "S")
    add_memory_argument(p)
    add_checkpoint_arguments(p, "the audit")
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument(
        "--rows-csv",
        metavar="OUT.csv",
        help="write one line per row (verdict, method, group, labels, the twin's features)",
    )
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    p.add_argument(
        "--explain-html",
        metavar="OUT.html",
        help="also write the explain page of the rows (where the unfair rows are, as `faircert explain` "
        "finds them), linked from the --html report",
    )
    add_model_loading(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return audit_rows(args, args.data)


def audit_rows(args: argparse.Namespace, rows: Any, population: str = "rows") -> int:
    """Audit `rows` as the command line in `args` asks (also `verify --rows`'s way)."""
    from ..api import audit
    from ..report.console import decided_progress
    from ..report.rows import print_rows, write_rows_csv, write_rows_html

    options = AuditOptions(
        time_limit=args.time_limit,
        seed=args.seed,
        workers=args.workers,
        ray_address=args.ray,
        max_cells=getattr(args, "max_cells", AuditOptions.max_cells),
        max_twins=getattr(args, "max_twins", None),
        milp_seconds=getattr(args, "milp_seconds", AuditOptions.milp_seconds),
        **job_keywords(args),
    )
    with (
        run_guard(
            [args.json, args.html, args.rows_csv, args.checkpoint, getattr(args, "explain_html", None)], args.quiet
        ),
        decided_progress(not args.quiet, options.time_limit) as progress,
    ):
        result = audit(
            args.model,
            rows,
            args.domain,
            args.protected,
            epsilon=name_values(args.epsilon) or None,
            epsilon_rate=args.epsilon_rate,
            trust_pickle=args.trust_pickle,
            preprocessor=args.preprocessor,
            progress=progress,
            options=options,
        )
    result.population = population
    mark_interrupted(result)
    emit_json(result.to_json(), args.json)
    explain_html = getattr(args, "explain_html", None)
    if explain_html:
        write_explain_page(result, rows, explain_html, options.seed)
    if args.rows_csv:
        write_rows_csv(result, args.rows_csv)
    if args.html:
        write_rows_html(result, args.html, explain_href=relative_link(explain_html, args.html))
    if not args.quiet:
        print_rows(result)
    return result.exit_code


def write_explain_page(result: Any, rows: Any, path: str, seed: int) -> None:
    """The explain page of the audited rows: rules found on their verdicts, as `faircert explain`
    finds them (the same split of the rows for the same seed)."""
    from ..report.explain import write_explain_html
    from ..requests.audit import read_rows
    from ..subgroups import explain_rows

    explained = explain_rows(result, read_rows(rows), seed=seed)
    explained.model = result.model
    write_explain_html(explained, path)


def relative_link(target: str | None, page: str) -> str | None:
    """`target` as a link from the page at `page`: relative to the page's folder, URL-quoted."""
    if not target:
        return None
    import os
    from pathlib import Path
    from urllib.parse import quote

    relative = os.path.relpath(os.path.abspath(target), os.path.dirname(os.path.abspath(page)))
    return quote(Path(relative).as_posix())
