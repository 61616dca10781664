"""`faircert audit`: every row of a dataset decided: would another protected value (and the
epsilon-moves) change the model's decision for this person?"""

from __future__ import annotations

import argparse
from typing import Any

from ..options import DEVICES, AuditOptions
from ..results.rows import JSON_ROWS, LISTED_ROWS, UNFAIR_SAMPLE
from . import common


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="decide every row of a dataset: would another protected value change its decision?",
        description="Audit every row of DATA: is there a twin (another protected value, each --epsilon "
        "feature within its tolerance, every other feature equal) that MODEL decides differently? "
        "Each fair row is proven, each unfair one has a twin re-checked on the model. "
        "The time limit covers reading DATA and the model and writing the results. "
        "Exit code: 0 every row fair, 1 an unfair row, 2 rows left undecided, 3 bad input.",
    )
    p.add_argument("model", help="model file (as for verify), or a pickled classifier with --trust-pickle")
    p.add_argument("data", metavar="DATA.csv", help="the rows to audit (raw columns, categories by name)")
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from; default: inferred from DATA")
    common.add_tolerances(p)
    common.add_run_arguments(
        p,
        AuditOptions,
        "chunks of rows",
        (
            "cells twins milp-seconds",
            "; cells=N: tree ensembles: a row's ball of at most N cells is decided exactly, a larger one "
            f"searched (unfair or unknown) (default {AuditOptions.max_cells:,}); twins=N: black boxes and "
            "networks: a row's ball of at most N twins is evaluated whole (default: the kind's own, 20,000 "
            "for black boxes and 50,000 for networks); milp-seconds=S: networks: seconds one row's MILP may "
            f"take (default {AuditOptions.milp_seconds:g})",
        ),
        "the audit",
    )
    p.add_argument(
        "--device",
        choices=DEVICES,
        help="bound a network's rows with torch in float64 on this device, in this process unless --workers "
        "N says how many share it (the torch extra)",
    )
    common.add_outputs(p, {"rows": "one line per row (verdict, method, group, labels, the twin's features)"})
    p.add_argument(
        "--json-rows",
        choices=JSON_ROWS,
        default="auto",
        help="how the JSON lists the rows: all (every row's verdict and every unfair row), summary (counts, "
        f"reasons and the first {UNFAIR_SAMPLE} unfair rows), auto (all up to {LISTED_ROWS:,} rows; default)",
    )
    p.add_argument(
        "--explain-html",
        metavar="OUT.html",
        help="also write the explain page of the rows (where the unfair rows are, as `faircert explain` "
        "finds them), linked from the --html report",
    )
    common.add_model_loading(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return audit_rows(args, args.data)


def audit_rows(args: argparse.Namespace, rows: Any, population: str = "rows") -> int:
    """Audit `rows` as the command line in `args` asks (also `verify --rows`'s way)."""
    from ..api import audit
    from ..report.console import progress_bar

    options = common.options_of(AuditOptions, args, *(["device"] if hasattr(args, "device") else []))
    explain_html = getattr(args, "explain_html", None)  # `verify --rows` has none
    with common.run_guard(args, explain_html), progress_bar(not args.quiet, options.time_limit, "auditing") as progress:
        result = audit(
            args.model, rows, args.domain, progress=progress, options=options, **common.individual_keywords(args)
        )
    result.population = population
    result.json_rows = getattr(args, "json_rows", "auto")
    if explain_html:
        write_explain_page(result, rows, explain_html, options.seed)
    common.finish(result, args, explain_href=relative_link(explain_html, args.html) if args.html else None)
    return result.exit_code


def write_explain_page(result: Any, rows: Any, path: str, seed: int) -> None:
    """The explain page of the audited rows: rules found on their verdicts, as `faircert explain`
    finds them (the same split of the rows for the same seed)."""
    from ..files import write_text
    from ..report.explain import render_explain
    from ..requests.audit import read_rows
    from ..subgroups import explain_rows

    explained = explain_rows(result, read_rows(rows), seed=seed)
    explained.model = result.model
    write_text(path, render_explain(explained))


def relative_link(target: str | None, page: str) -> str | None:
    """`target` as a link from the page at `page`: relative to the page's folder, URL-quoted."""
    if not target:
        return None
    import os
    from pathlib import Path
    from urllib.parse import quote

    relative = os.path.relpath(os.path.abspath(target), os.path.dirname(os.path.abspath(page)))
    return quote(Path(relative).as_posix())
