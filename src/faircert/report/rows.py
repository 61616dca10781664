"""Per-row audit reports: a console table, the per-row CSV, and an HTML page with a per-group chart."""

from __future__ import annotations

import csv
import html
from pathlib import Path

from rich.table import Table

from ..files import write_atomic, write_text
from ..results.rows import RowsResult
from .console import VERDICT_STYLE, console
from .csv import spreadsheet_safe
from .html import page

COLOURS = {"fair": "#2da44e", "unfair": "#cf222e", "unknown": "#d4a72c"}


def print_rows(result: RowsResult, max_examples: int = 3) -> None:
    out = console()
    counts, n = result.counts(), max(result.n_rows, 1)
    table = Table(title="faircert per-row audit", show_header=True)
    for column in ("group", "rows", "fair", "unfair", "unknown", "flip test unfair"):
        table.add_column(column, justify="left" if column == "group" else "right")
    for group, r in result.by_group.iterrows():
        table.add_row(
            str(group),
            f"{int(r['rows']):,}",
            f"{int(r['fair']):,}",
            f"{int(r['unfair']):,} ({100 * r['unfair_share']:.2f}%)",
            f"{int(r['unknown']):,}",
            f"{int(r['flip_unfair']):,}",
        )
    table.add_row(
        "[bold]all[/]",
        f"{result.n_rows:,}",
        f"{counts['fair']:,}",
        f"{counts['unfair']:,} ({100 * counts['unfair'] / n:.2f}%)",
        f"{counts['unknown']:,}",
        f"{result.flip_unfair:,}",
    )
    out.print(table)
    eps = ", ".join(f"{k}={v:g}" for k, v in result.epsilon.items()) or "0 (flip test)"
    out.print(
        f"verdict: [{VERDICT_STYLE[result.verdict]}]{result.verdict}[/]  rows: {result.population}  "
        f"protected: {', '.join(result.protected)}"
        f"  epsilon: {eps}  engine: {result.engine}  {result.elapsed_s:.2f} s"
        + (f"  stopped: {result.stopped}" if result.stopped != "done" else "")
    )
    examples = result.unfair_rows(max_examples)
    names = result.feature_names
    for _, row in examples.iterrows():
        diff = [f"{n}: {row[n]} -> {row[n + '_prime']}" for n in names if row[n] != row[n + "_prime"]]
        out.print(f"  row {row['row']}: decision {row['label']} -> {row['twin_label']} when " + "; ".join(diff))


def write_rows_csv(result: RowsResult, path: str | Path) -> int:
    """One line per input row, in the input's order: verdict, method, group, the model's label and
    the twin's, then the twin's features (`<name>_prime`, categories by name; empty unless unfair)."""
    names = list(result.feature_names)
    header = ["row", "verdict", "method", "group", "label", "twin_label"] + [
        spreadsheet_safe(f"{n}_prime") for n in names
    ]

    def cell(value) -> str:
        if value is None:
            return ""
        return spreadsheet_safe(value) if isinstance(value, str) else str(value)

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for i in range(result.n_rows):
            twin = result.twins[i]
            writer.writerow(
                [
                    i,
                    result.verdicts[i],
                    cell(result.methods[i]),
                    cell(result.groups[i]),
                    result.labels[i],
                    cell(result.twin_labels[i]),
                ]
                + ["" if twin is None else cell(result.value_name(n, twin[j])) for j, n in enumerate(names)]
            )

    write_atomic(path, write, newline="")
    return result.n_rows


def _group_chart(result: RowsResult, width: int = 900, bar: int = 24) -> str:
    """One stacked bar per protected group: fair, unfair, unknown shares of its rows."""
    e = html.escape
    groups = result.by_group
    label_w = 12 + 8 * max([len(str(g)) for g in groups.index] + [5])
    plot_w = width - label_w - 90
    out = []
    for k, (group, r) in enumerate(groups.iterrows()):
        y, x = k * (bar + 8), float(label_w)
        out.append(
            f'<text x="{label_w - 8}" y="{y + bar * 0.7:.1f}" font-size="13" text-anchor="end">{e(str(group))}</text>'
        )
        for key in ("fair", "unfair", "unknown"):
            w = plot_w * r[key] / max(r["rows"], 1)
            if w > 0:
                out.append(
                    f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar}" fill="{COLOURS[key]}">'
                    f"<title>{e(str(group))} {key}: {int(r[key])} of {int(r['rows'])}</title></rect>"
                )
            x += w
        out.append(
            f'<text x="{label_w + plot_w + 6}" y="{y + bar * 0.7:.1f}" font-size="12">'
            f"{100 * r['unfair_share']:.2f}% unfair</text>"
        )
    height = len(groups) * (bar + 8)
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="rows by group">{"".join(out)}</svg>'
        "<p class='note'>per protected group: green fair (proven), red unfair (a re-checked twin), amber unknown</p>"
    )


def render_rows(result: RowsResult, max_rows: int = 200, standalone: bool = True) -> str:
    e = html.escape
    counts, n = result.counts(), max(result.n_rows, 1)
    summary = [
        ("verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'),
        ("model", e(result.model)),
        ("protected", e(", ".join(result.protected))),
        ("epsilon", e(", ".join(f"{k}={v:g}" for k, v in result.epsilon.items()) or "0 (flip test)")),
        ("rows", f"{result.n_rows:,}"),
    ]
    summary += [(k, f"{counts[k]:,} ({100 * counts[k] / n:.2f} %)") for k in ("fair", "unfair", "unknown")]
    summary += [
        ("flip test unfair (epsilon 0)", f"{result.flip_unfair:,} ({100 * result.flip_unfair / n:.2f} %)"),
        ("engine / time", f"{e(result.engine)} / {result.elapsed_s:.2f} s"),
    ]
    if result.stopped != "done":
        summary.append(("stopped", e(result.stopped)))
    table = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in summary)
    unfair = result.unfair_rows(max_rows)
    names = result.feature_names
    lines = []
    for _, row in unfair.iterrows():
        cells = [
            f"<td>{e(str(row[c]))}</td>"
            if row[c] == row[c + "_prime"]
            else f"<td><b>{e(str(row[c]))} &rarr; {e(str(row[c + '_prime']))}</b></td>"
            for c in names
        ]
        lines.append(
            f"<tr><td>{row['row']}</td>{''.join(cells)}<td>{row['label']} &rarr; {row['twin_label']}</td></tr>"
        )
    header = "<th>row</th>" + "".join(f"<th>{e(c)}</th>" for c in names) + "<th>decision</th>"
    rows_html = (
        (
            f"<h2>Unfair rows ({counts['unfair']:,}; the first {len(lines)} shown, each twin re-checked)</h2>"
            f"<div class='wide'><table><tr>{header}</tr>{''.join(lines)}</table></div>"
        )
        if lines
        else "<p>No unfair row.</p>"
    )
    body = f"<h1>faircert: per-row audit</h1>{_group_chart(result)}<table>{table}</table>{rows_html}"
    return page(body, "faircert per-row audit", standalone)


def write_rows_html(result: RowsResult, path: str | Path) -> None:
    write_text(path, render_rows(result))
