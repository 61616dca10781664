"""`faircert program`: group fairness of a decision program under its population (FairSquare's .fr)."""

from __future__ import annotations

import argparse

from ..options import ProgramOptions, ProgramQuestion
from . import common


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "program",
        help="group fairness of a probabilistic decision program (.fr)",
        description="Decide group fairness of an annotated program (FairSquare's language: popModel and "
        "decision functions with sensitiveAttribute(...), fairnessTarget(...) and optionally "
        "qualified(...)): P[target | sensitive] / P[target | not sensitive] > 1 - epsilon. "
        "'sound' refines mathematical lower and upper bounds on every probability until the "
        "property is proven or refuted; 'sampling' runs a sequential statistical test with a "
        "stated error probability. Exit code: 0 fair, 1 unfair, 2 undecided, 3 bad input.",
    )
    p.add_argument("file", metavar="FILE.fr", help="the program")
    common.add_defaulted(p, "--epsilon", ProgramQuestion.epsilon, "fair iff the ratio exceeds 1 - epsilon")
    p.add_argument(
        "--kind",
        choices=("ratio", "parity", "difference"),
        default=ProgramQuestion.kind,
        help="ratio (one-sided, default), parity (both directions) or difference (|gap| < epsilon)",
    )
    common.add_method(p, ProgramOptions, "sound bounds")
    p.add_argument(
        "--bound",
        choices=("binomial", "hoeffding"),
        default=ProgramOptions.bound,
        help="sampling: confidence bound (binomial: exact, doubling looks; hoeffding: VeriFair's adaptive)",
    )
    p.add_argument(
        "--ratio-width",
        type=float,
        metavar="W",
        help="sound: after the verdict, keep refining until the ratio's bounds are at most W apart",
    )
    p.add_argument(
        "--probability",
        metavar="EXPR",
        help="instead of fairness, bound P[EXPR] at the end of the program (e.g. 'x1 + x2 >= 0')",
    )
    p.add_argument(
        "--above", type=float, metavar="C", help="with --probability: prove P[EXPR] > C (exit 0) or < C (exit 1)"
    )
    common.add_defaulted(
        p,
        "--tolerance",
        ProgramOptions.tolerance,
        "with --probability and no --above: stop when the bounds are this close",
    )
    common.add_run_arguments(
        p, ProgramOptions, "the sound bounds' trial splits", checkpoint="the sound bounds' refinement"
    )
    common.add_outputs(p, {})
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import verify_program

    options = common.options_of(ProgramOptions, args, "method", "delta", "bound", "ratio_width", "tolerance")
    with common.run_guard(args):
        result = verify_program(
            args.file, epsilon=args.epsilon, kind=args.kind, query=args.probability, above=args.above, options=options
        )
    common.finish(result, args)
    if args.probability is not None and args.above is None:  # nothing to decide: did the bounds get tight?
        return 0 if not result.stopped else 2
    return result.exit_code
