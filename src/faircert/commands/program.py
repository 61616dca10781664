"""`faircert program`: group fairness of a decision program under its population (FairSquare's .fr)."""

from __future__ import annotations

import argparse

from ..options import ProgramOptions, ProgramQuestion
from .common import (
    add_checkpoint_arguments,
    add_defaulted,
    add_memory_argument,
    add_parallel_arguments,
    emit_json,
    job_keywords,
    mark_interrupted,
    run_guard,
)


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
    add_defaulted(p, "--epsilon", ProgramQuestion.epsilon, "fair iff the ratio exceeds 1 - epsilon")
    p.add_argument(
        "--kind",
        choices=("ratio", "parity", "difference"),
        default=ProgramQuestion.kind,
        help="ratio (one-sided, default), parity (both directions) or difference (|gap| < epsilon)",
    )
    add_defaulted(p, "--time-limit", ProgramOptions.time_limit, "seconds", "S")
    p.add_argument(
        "--method",
        choices=("sound", "sampling"),
        default=ProgramOptions.method,
        help="sound bounds (default) or a sequential statistical test",
    )
    add_defaulted(p, "--delta", ProgramOptions.delta, "sampling: probability that the verdict is wrong")
    p.add_argument(
        "--bound",
        choices=("binomial", "hoeffding"),
        default=ProgramOptions.bound,
        help="sampling: confidence bound (binomial: exact, doubling looks; hoeffding: VeriFair's adaptive)",
    )
    p.add_argument("--seed", type=int, default=ProgramOptions.seed, help="sampling: random seed")
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
    add_defaulted(
        p,
        "--tolerance",
        ProgramOptions.tolerance,
        "with --probability and no --above: stop when the bounds are this close",
    )
    add_parallel_arguments(p, "the sound bounds' trial splits")
    add_memory_argument(p)
    add_checkpoint_arguments(p, "the sound bounds' refinement")
    p.add_argument("--json", metavar="OUT", help="write the JSON result here ('-' for stdout)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML report")
    p.add_argument("--quiet", action="store_true", help="no table on stderr")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import verify_program
    from ..options import ProgramOptions
    from ..report.program import print_program_result

    options = ProgramOptions(
        time_limit=args.time_limit,
        seed=args.seed,
        method=args.method,
        delta=args.delta,
        bound=args.bound,
        ratio_width=args.ratio_width,
        tolerance=args.tolerance,
        workers=args.workers,
        ray_address=args.ray,
        **job_keywords(args),
    )
    with run_guard([args.json, args.html, args.checkpoint], args.quiet):
        result = verify_program(
            args.file, epsilon=args.epsilon, kind=args.kind, query=args.probability, above=args.above, options=options
        )
    mark_interrupted(result)
    emit_json(result.to_json(), args.json)
    if args.html:
        from ..report.program_html import write_program_html

        write_program_html(result, args.html)
    if not args.quiet:
        print_program_result(result)
    if args.probability is not None and args.above is None:  # nothing to decide: did the bounds get tight?
        return 0 if not result.stopped else 2
    return result.exit_code
