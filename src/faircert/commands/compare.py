"""`faircert compare`: several models' group fairness in one table (e.g. original and mitigated)."""

from __future__ import annotations

import argparse

from .common import emit_json, mark_interrupted, run_guard
from .group import add_group_options, group_keywords


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="group fairness of several models side by side",
        description="Run `group` on every MODEL with the same data, groups, population and thresholds, and "
        "show one table (and with --html one report). Exit code: 0 all fair, 1 any unfair, "
        "2 otherwise, 3 bad input.",
    )
    p.add_argument("models", nargs="+", metavar="MODEL", help="model files (any format group reads)")
    add_group_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import compare
    from ..report.group import print_comparison

    with run_guard([args.json, args.html], args.quiet):
        result = compare(args.models, args.data, args.protected, **group_keywords(args))
    for one in result.results:
        mark_interrupted(one)
    emit_json(result.to_json(), args.json)
    if args.html:
        from ..report.group_html import write_comparison_html

        write_comparison_html(result, args.html)
    if not args.quiet:
        print_comparison(result)
    return result.exit_code
