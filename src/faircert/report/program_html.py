"""A self-contained HTML report of a decision program's fairness or probability query."""

from __future__ import annotations

import html
from pathlib import Path

from ..files import write_text
from ..results import ProgramResult
from .html import STYLE, fragment_style


def render_program(result: ProgramResult, standalone: bool = True) -> str:
    e = html.escape
    rows = [("verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'),
            ("program", e(result.program)), ("property", e(result.kind))]
    if not result.kind.startswith("probability"):
        rows.append(("ratio P[t|s] / P[t|not s]", f"[{result.ratio_low:.6f}, {result.ratio_high:.6f}]"))
    rows += [(e(f"P[{name}]"), f"[{lo:.6f}, {hi:.6f}]") for name, (lo, hi) in result.probabilities.items()]
    rows += [("method / guarantee", e(f"{result.method} / {result.guarantee}")),
             ("stopped", e(result.stopped or "-")), ("time", f"{result.elapsed_s:.2f} s")]
    table = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    body = f"<h1>faircert: program fairness</h1><table>{table}</table>"
    if not standalone:
        return f"<div><style>{fragment_style()}</style>{body}</div>"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>faircert program report</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>\n")


def write_program_html(result: ProgramResult, path: str | Path) -> None:
    write_text(path, render_program(result))
