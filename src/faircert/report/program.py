"""The report of a decision program's fairness or probability query: the console table (on
stderr), and a self-contained HTML page with the decided quantity's bounds against its threshold
and every probability's bounds (inline SVG; no scripts, no external files)."""

from __future__ import annotations

import html
import math

from rich.markup import escape
from rich.table import Table

from ..results import ProgramResult
from .console import VERDICT_STYLE, console
from .format import bounds
from .html import page

PLOT, ROW, CHAR = 560, 26, 7.2


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


def interval_chart(rows: list[tuple[str, float, float]], lines: list[tuple[float, str]], top: float, label: str) -> str:
    """One row per (name, low, high): its interval on [0, top] (a dot where exact), and dashed
    vertical `lines` (value, title) marking thresholds."""
    e = html.escape
    left = max(160.0, CHAR * max(len(name) for name, _, _ in rows) + 16)
    height = ROW * len(rows) + 40

    def x(v: float) -> float:
        return left + PLOT * min(max(v / top, 0.0), 1.0)

    parts = []
    for k in range(11):
        t = top * k / 10
        parts.append(
            f'<line x1="{x(t):.1f}" y1="0" x2="{x(t):.1f}" y2="{height - 30}" stroke="#eee"/>'
            f'<text x="{x(t):.1f}" y="{height - 14}" font-size="11" text-anchor="middle">{t:.3g}</text>'
        )
    for i, (name, lo, hi) in enumerate(rows):
        y = ROW * i + 14
        parts.append(f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">{e(name)}</text>')
        if hi - lo > 1e-4 * top:
            parts.append(
                f'<rect x="{x(lo):.1f}" y="{y - 6}" width="{x(hi) - x(lo):.1f}" height="12" fill="#0969da" '
                f'opacity="0.6"><title>[{lo:.6f}, {hi:.6f}]</title></rect>'
            )
        else:
            parts.append(f'<circle cx="{x(lo):.1f}" cy="{y}" r="5" fill="#0969da"><title>{lo:.6f}</title></circle>')
    for value, title in lines:
        parts.append(
            f'<line x1="{x(value):.1f}" y1="0" x2="{x(value):.1f}" y2="{height - 30}" stroke="#9a6700" '
            f'stroke-dasharray="4 3"><title>{e(title)}</title></line>'
        )
    return (
        f'<svg width="{left + PLOT + 20:.0f}" height="{height}" role="img" aria-label="{e(label)}">'
        f"{''.join(parts)}</svg>"
    )


def _decided_chart(result: ProgramResult) -> str:
    """The quantity the verdict is about, against its threshold(s)."""
    eps, probs = result.epsilon, result.probabilities
    if result.kind.startswith("probability"):
        ((name, (lo, hi)),) = probs.items()
        above = float(result.kind.split(">")[1]) if ">" in result.kind else None
        lines = [] if above is None else [(above, f"threshold: P > {above:g} is proven fair")]
        note = "" if above is None else f"; dashed: the threshold {above:g}"
        return (
            interval_chart([(f"P[{name}]", lo, hi)], lines, 1.0, "probability")
            + f"<p class='note'>Sound bounds of P[{html.escape(name)}]{note}</p>"
        )
    if result.kind == "difference":
        (a_lo, a_hi), (b_lo, b_hi) = probs["target_given_sensitive"], probs["target_given_not_sensitive"]
        lo, hi = a_lo - b_hi, a_hi - b_lo
        top = max(1.0, abs(lo), abs(hi))
        chart = interval_chart(
            [("|P[t|s] - P[t|not s]|", max(0.0, lo, -hi), max(abs(lo), abs(hi)))],
            [(eps, f"epsilon {eps:g}: fair below it")],
            top,
            "difference",
        )
        return chart + f"<p class='note'>Bounds of the gap between the groups' rates; dashed: &epsilon; = {eps:g}</p>"
    t = 1 - eps
    lines = [(t, f"1 - epsilon = {t:g}: fair above it")]
    if result.kind == "parity":
        lines.append((1 / t, f"1 / (1 - epsilon) = {1 / t:.4g}: fair below it"))
    finite = [v for v in (result.ratio_low, result.ratio_high) if v == v and v != float("inf")]
    top = math.ceil(2 * max([1.25 / t] + [1.1 * v for v in finite])) / 2  # round ticks
    hi = result.ratio_high if result.ratio_high == result.ratio_high and result.ratio_high != float("inf") else top
    chart = interval_chart([("P[t|s] / P[t|not s]", result.ratio_low, hi)], lines, top, "ratio")
    return chart + (
        "<p class='note'>Bounds of the ratio of the groups' rates; dashed: the fairness threshold"
        f"{'s' if len(lines) > 1 else ''} for &epsilon; = {eps:g}</p>"
    )


def _probabilities_chart(result: ProgramResult) -> str:
    rows = [(name, lo, hi) for name, (lo, hi) in result.probabilities.items()]
    return "<h2>Probabilities</h2>" + interval_chart(rows, [], 1.0, "probabilities")


def render_program(result: ProgramResult, standalone: bool = True) -> str:
    e = html.escape
    rows = [
        ("verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'),
        ("program", e(result.program)),
        ("property", e(result.kind)),
    ]
    if not result.kind.startswith("probability"):
        rows.append(("ratio P[t|s] / P[t|not s]", bounds(result.ratio_low, result.ratio_high)))
    rows += [(e(f"P[{name}]"), bounds(lo, hi)) for name, (lo, hi) in result.probabilities.items()]
    rows += [
        ("method / guarantee", e(f"{result.method} / {result.guarantee}")),
        ("stopped", e(result.stopped or "-")),
        ("time", f"{result.elapsed_s:.2f} s"),
    ]
    table = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    charts = "<h2>Decision</h2>" + _decided_chart(result)
    if len(result.probabilities) > 1:
        charts += _probabilities_chart(result)
    body = f"<h1>faircert: program fairness</h1><table>{table}</table>{charts}"
    return page(body, "faircert program report", standalone)
