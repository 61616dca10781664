"""Readable table of a ProgramResult (on stderr)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..results import ProgramResult
from .console import VERDICT_STYLE, console
from .format import bounds


def program_table(result: ProgramResult) -> Table:
    table = Table(title=escape(f"faircert program: {result.program}"), show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("verdict", f"[{VERDICT_STYLE[result.verdict]}]{result.verdict}[/] ({result.vnncomp})")
    if result.kind.startswith("probability"):
        table.add_row("property", result.kind)
    else:
        form = {
            "ratio": "P[t|s]/P[t|not s] > {t:g}",
            "parity": "both ratios > {t:g}",
            "difference": "|P[t|s] - P[t|not s]| < {e:g}",
        }[result.kind]
        table.add_row("property", escape(form.format(t=1 - result.epsilon, e=result.epsilon)))
        table.add_row(escape("ratio P[t|s] / P[t|not s]"), bounds(result.ratio_low, result.ratio_high))
    for name, (lo, hi) in result.probabilities.items():
        table.add_row(escape(f"P[{name}]"), bounds(lo, hi))
    table.add_row("method / guarantee", escape(f"{result.method} / {result.guarantee}"))
    if result.samples is not None:
        table.add_row("samples", f"{result.samples:,}")
    if result.stopped:
        table.add_row("stopped by", result.stopped)
    table.add_row("time", f"{result.elapsed_s:.2f} s")
    return table


def print_program_result(result: ProgramResult) -> None:
    console().print(program_table(result))
