"""Explain reports: the rules as a console table, and an HTML page with the rules as bars of their
unfair rate against the global rate, the rates by protected group as a heatmap, the unfair rows under
each rule, and the regions where no unfair row was seen."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..files import write_text
from ..results.explain import ExplainResult, Rule
from .console import console
from .csv import safe_frame
from .html import page

PLOT, ROW, LEFT = 560, 28, 260
#: Pixels per character of a 12 px label, generously: labels are never clipped.
CHAR = 7.2


def _p(p: float) -> str:
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def _changes(rule: Rule) -> str:
    c = rule.changes
    if not c:
        return "-"
    moved = ", ".join(f"{k} {v}" for k, v in c["moved"].items())
    return f"{c['protected_alone']} alone, {c['with_moves']} with moves" + (f" ({moved})" if moved else "")


def _proof(rules: list[Rule]) -> list[tuple[str, list[str]]]:
    """The columns a domain population adds: each rule's proven-unfair share (sound, from its boxes)
    and, for regions without an unfair point, whether their boxes prove it."""
    out = []
    if any(r.proven_unfair_share is not None for r in rules):
        shares = ["-" if r.proven_unfair_share is None else f"{100 * r.proven_unfair_share:.2f}%" for r in rules]
        out.append(("proven unfair share", shares))
    if any(r.evidence for r in rules):
        out.append(("evidence", [r.evidence or "-" for r in rules]))
    return out


CHANGES = "what changes the decision"


def _rule_rows(
    rules: list[Rule], confidence: float, changes: bool, safe: Callable[[str], str]
) -> tuple[list[str], list[list[str]]]:
    """The rules table's header and rows, for the console and the HTML page alike (`safe` makes
    the text cells safe for the one writing them)."""
    extra = _proof(rules)
    header = ["#", "rule", "share", "unfair / rows", f"rate [{100 * confidence:g}%]", "lift", "p"]
    header += [column for column, _ in extra] + ([CHANGES] if changes else [])
    rows = [
        [
            str(i),
            safe(str(r)),
            f"{100 * r.share:.1f}%",
            f"{r.unfair_rows:,} / {r.rows:,}",
            safe(str(r.unfair_rate)),
            "-" if r.lift is None else f"{r.lift:.1f}",
            _p(r.p_value),
        ]
        + [safe(values[i - 1]) for _, values in extra]
        + ([safe(_changes(r))] if changes else [])
        for i, r in enumerate(rules, 1)
    ]
    return header, rows


def rules_table(rules: list[Rule], title: str, confidence: float, changes: bool) -> Table:
    table = Table(title=escape(title), header_style="bold")
    header, rows = _rule_rows(rules, confidence, changes, escape)
    for column in header:
        table.add_column(escape(column), justify="left" if column in ("rule", CHANGES) else "right")
    for row in rows:
        table.add_row(*row)
    return table


def print_explain(result: ExplainResult) -> None:
    out = console()
    level = result.confidence
    decided = result.rows - result.unknown_rows
    out.print(
        f"unfair rows: {result.unfair_rows:,} of {decided:,} decided ({str(result.unfair_rate)} at "
        f"{100 * level:g}%); {result.unknown_rows:,} unknown left out; population: {escape(result.population)}"
        + (f"; engine: {escape(result.engine)}" if result.engine else "")
        + (f"; stopped: {escape(str(result.stats['stopped']))}" if result.stats.get("stopped") else "")
    )
    changes = any(r.changes for r in result.rules)
    if result.rules:
        out.print(rules_table(result.rules, "where the unfair rows are", level, changes))
        out.print(f"the rules hold {100 * result.coverage():.1f}% of the unfair rows")
    else:
        out.print("no rule: too few unfair rows, or none concentrated beyond chance")
    if result.fair_rules:
        proven = "" if any(r.evidence == "proven" for r in result.fair_rules) else " (empirical, not proven)"
        out.print(rules_table(result.fair_rules, f"where no unfair row was seen{proven}", level, False))
    if "shares" in result.stats:
        out.print(f"[dim]{escape(str(result.stats['shares']))}[/]")
    if "sound_bounds" in result.stats:  # a model the population's bounds cannot read
        out.print(f"[yellow]sound bounds: {escape(str(result.stats['sound_bounds']))}[/]")
    out.print(
        "[dim]rules found on half the rows, measured on the other half: "
        f"{escape(str(result.stats.get('intervals', '')))}; p: {escape(str(result.stats.get('p_values', '')))}[/]"
    )


# ----- HTML ----------------------------------------------------------------------------------------
def rates_chart(result: ExplainResult) -> str:
    """One bar per rule: its unfair rate with its interval, against the global rate (dashed, with its
    interval shaded)."""
    if not result.rules:
        return ""
    e = html.escape
    labels = [str(r) for r in result.rules]
    left = max(LEFT, CHAR * max(len(t) for t in labels) + 16)
    top = min(1.0, 1.1 * max([r.unfair_rate.high for r in result.rules] + [result.unfair_rate.high]))
    x = lambda p: left + PLOT * min(max(p, 0.0), top) / top
    height = ROW * len(result.rules) + 36
    g = result.unfair_rate
    parts = [
        f'<rect x="{x(g.low):.1f}" y="0" width="{x(g.high) - x(g.low):.1f}" height="{height - 30}" '
        f'fill="#888" opacity="0.15"><title>global rate interval [{g.low:.4f}, {g.high:.4f}]</title></rect>'
    ]
    for k in range(6):
        p = top * k / 5
        parts.append(
            f'<text x="{x(p):.1f}" y="{height - 14}" font-size="11" text-anchor="middle">{100 * p:.0f}%</text>'
        )
    for i, (rule, label) in enumerate(zip(result.rules, labels)):
        y, r = ROW * i + 14, rule.unfair_rate
        parts.append(f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">{e(label)}</text>')
        parts.append(
            f'<rect x="{left}" y="{y - 8}" width="{x(r.estimate or 0.0) - left:.1f}" height="16" fill="#cf222e" '
            f'opacity="0.75"><title>{e(str(r))}</title></rect>'
            f'<line x1="{x(r.low):.1f}" y1="{y}" x2="{x(r.high):.1f}" y2="{y}" stroke="#222" stroke-width="2"/>'
            f'<line x1="{x(r.low):.1f}" y1="{y - 5}" x2="{x(r.low):.1f}" y2="{y + 5}" stroke="#222"/>'
            f'<line x1="{x(r.high):.1f}" y1="{y - 5}" x2="{x(r.high):.1f}" y2="{y + 5}" stroke="#222"/>'
        )
    parts.append(
        f'<line x1="{x(g.estimate or 0.0):.1f}" y1="0" x2="{x(g.estimate or 0.0):.1f}" y2="{height - 30}" '
        f'stroke="#0969da" stroke-dasharray="4 3"><title>global unfair rate {e(str(g))}</title></line>'
    )
    return (
        f'<svg width="{left + PLOT + 20:.0f}" height="{height}" role="img" aria-label="unfair rate by rule">'
        f"{''.join(parts)}</svg><p class='note'>red: each rule's unfair rate on the held-out half, with its "
        f"{100 * g.confidence:g}% interval; dashed blue: the global rate (its interval shaded)</p>"
    )


def _colour(rate: float | None, top: float) -> str:
    """White (no unfair row) to red (the highest rate of the table)."""
    if rate is None:
        return "#eee"
    t = 0.0 if top <= 0 else min(rate / top, 1.0)
    g = int(255 - 190 * t)
    return f"rgb(255,{g},{g})"


def heatmap(result: ExplainResult) -> str:
    """The unfair rate of each intersection of the protected attributes: the first attribute down,
    the others across."""
    if not result.by_group:
        return ""
    e = html.escape
    first = result.protected[0]
    rest = result.protected[1:]
    across = lambda c: " / ".join(c.group[p] for p in rest) or "all"
    rows = list(dict.fromkeys(c.group[first] for c in result.by_group))
    columns = list(dict.fromkeys(across(c) for c in result.by_group))
    cells = {(c.group[first], across(c)): c for c in result.by_group}
    top = max((c.unfair_rate.estimate or 0.0) for c in result.by_group)
    corner = f"{first} \\ {' / '.join(rest)}" if rest else first
    head = f"<th>{e(corner)}</th>" + "".join(f"<th>{e(c)}</th>" for c in columns)
    body = []
    for r in rows:
        line = [f"<td>{e(r)}</td>"]
        for c in columns:
            cell = cells.get((r, c))
            if cell is None:
                line.append("<td>-</td>")
                continue
            line.append(
                f'<td style="background:{_colour(cell.unfair_rate.estimate, top)}">{e(str(cell.unfair_rate))}'
                f"<br><span class='note'>{cell.unfair_rows:,} of {cell.rows:,}</span></td>"
            )
        body.append("<tr>" + "".join(line) + "</tr>")
    return (
        f"<h2>Unfair rate by protected group</h2><div class='wide'><table><tr>{head}</tr>{''.join(body)}</table></div>"
        f"<p class='note'>each cell: the unfair rate of its decided rows with its "
        f"{100 * result.confidence:g}% interval; redder is higher</p>"
    )


def _rules_html(rules: list[Rule], confidence: float, changes: bool) -> str:
    header, rows = _rule_rows(rules, confidence, changes, html.escape)
    lines = ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows]
    head = "".join(f"<th>{h}</th>" for h in header)
    return f"<div class='wide'><table><tr>{head}</tr>{''.join(lines)}</table></div>"


def _examples(result: ExplainResult) -> str:
    e = html.escape
    out = []
    for i, rule in enumerate(result.rules, 1):
        if not rule.examples:
            continue
        names = [k for k in rule.examples[0] if k != "row"]
        head = "<th>row</th>" + "".join(f"<th>{e(n)}</th>" for n in names)
        body = "".join(
            f"<tr><td>{x['row']}</td>" + "".join(f"<td>{e(str(x[n]))}</td>" for n in names) + "</tr>"
            for x in rule.examples
        )
        out.append(
            f"<h3>Rule {i}: {e(str(rule))} (the first {len(rule.examples)} of {rule.unfair_rows:,} unfair rows)</h3>"
            f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>"
        )
    return "<h2>Unfair rows under each rule</h2>" + "".join(out) if out else ""


def render_explain(result: ExplainResult, standalone: bool = True) -> str:
    e = html.escape
    level = f"{100 * result.confidence:g}%"
    summary = [
        ("model", e(result.model or "-")),
        ("engine (per-row audit)", e(result.engine or "- (verdicts given)")),
        ("rows", f"{result.rows:,} (population: {e(result.population)})"),
        ("unfair rows", f"{result.unfair_rows:,}: {e(str(result.unfair_rate))} at {level}"),
        ("unknown rows (left out)", f"{result.unknown_rows:,}"),
        ("unfair rows the rules hold", f"{100 * result.coverage():.1f}%"),
        ("selection", e(f"{result.selection}: rules found on half the rows, measured on the other half")),
        ("intervals", e(str(result.stats.get("intervals", "")))),
        ("p-values", e(str(result.stats.get("p_values", "")))),
    ]
    if "shares" in result.stats:  # a domain population: the rows are points drawn from it
        summary.append(("shares", e(str(result.stats["shares"]))))
    if "sound_bounds" in result.stats:
        summary.append(("sound bounds", e(str(result.stats["sound_bounds"]))))
    table = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in summary)
    changes = any(r.changes for r in result.rules)
    table_html = _rules_html(result.rules, result.confidence, changes)
    unfair = (
        f"<h2>Where the unfair rows are</h2>{rates_chart(result)}{table_html}"
        if result.rules
        else "<p>No rule: too few unfair rows, or none concentrated beyond chance.</p>"
    )
    fair = (
        "<h2>Where no unfair row was seen</h2><p class='note'>no unfair row among the search half's rows of each "
        "region; the interval bounds the rate on the held-out half (not a proof, unless the evidence column says "
        "proven: every box of the region verified fair)</p>" + _rules_html(result.fair_rules, result.confidence, False)
        if result.fair_rules
        else ""
    )
    body = f"<h1>faircert: where the unfair decisions are</h1><table>{table}</table>{unfair}{heatmap(result)}"
    return page(body + fair + _examples(result), "faircert explain", standalone)


def write_rules_csv(result: ExplainResult, path: str | Path) -> None:
    write_text(path, safe_frame(result.to_frame()).to_csv(index=False))
