"""`faircert compare`: several models' group fairness in one table (e.g. original and mitigated)."""

from __future__ import annotations

import argparse

from . import common
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

    with common.run_guard(args):
        result = compare(args.models, args.data, args.protected, **group_keywords(args))
    for one in result.results:
        common.mark_interrupted(one)
    common.finish(result, args)
    return result.exit_code
