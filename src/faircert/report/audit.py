"""Audit tables as people and spreadsheets read them: console tables, one CSV of every table, and an
HTML page (one table per protected attribute and one for their intersection)."""

from __future__ import annotations

import csv
import html
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..files import write_atomic
from ..results.audit import AuditCell, AuditTable, AuditTables
from .console import console
from .csv import spreadsheet_safe
from .format import ratio
from .html import page


def _columns(result: AuditTables) -> list[str]:
    scored = result.median_score is not None
    level = f"{100 * result.confidence:g}%"
    return ["count", "share", "selected", f"selection rate [{level}]", "impact ratio"] + (
        [f"scoring rate [{level}]", "scoring impact ratio"] if scored else []
    )


def _cells(result: AuditTables, c: AuditCell) -> list[str]:
    small = " (small)" if c.small else ""
    out = [f"{c.count:,}", f"{100 * c.share:.2f}%{small}", f"{c.selected:,}", str(c.selection_rate)]
    out.append(ratio(c.impact_ratio))
    if c.scoring_rate is not None:
        out += [str(c.scoring_rate), ratio(c.scoring_impact_ratio)]
    return out


def _note(result: AuditTables) -> str:
    small = f"cells under {100 * result.small_share:g}% of the rows are marked small"
    return small + (", and left out of the impact ratios" if result.exclude_small else " (kept in the impact ratios)")


def print_audit(result: AuditTables) -> None:
    out = console()
    for t in result.tables:
        table = Table(title=escape(f"{t.name}: {t.missing:,} rows with a missing value counted apart"))
        table.add_column(escape(" / ".join(t.attributes)))
        for column in _columns(result):
            table.add_column(escape(column), justify="right")
        for c in t.cells:
            table.add_row(escape(" / ".join(c.group.values())), *_cells(result, c))
        out.print(table)
    median = "" if result.median_score is None else f"; median score {result.median_score:g}"
    out.print(f"{result.rows:,} rows; {_note(result)}{median}")


def write_audit_csv(result: AuditTables, path: str | Path) -> int:
    """Every table in one CSV: the table's name, a column per protected attribute (empty where the
    table does not cut on it), then the cell's figures; a line per table counts the missing rows."""
    attributes = list(dict.fromkeys(a for t in result.tables for a in t.attributes))
    frames = [(t, t.to_frame()) for t in result.tables]
    figures = list(dict.fromkeys(c for _, f in frames for c in f.columns if c not in attributes))
    header = ["table"] + attributes + figures

    def cell(value) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return ""
        return spreadsheet_safe(value) if isinstance(value, str) else str(value)

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow([spreadsheet_safe(h) for h in header])
        for t, frame in frames:
            for _, line in frame.iterrows():
                writer.writerow([cell(t.name)] + [cell(line.get(c)) for c in attributes + figures])
            writer.writerow(
                [cell(t.name)]
                + ["(missing)" if a in t.attributes else "" for a in attributes]
                + [str(t.missing)]
                + [""] * (len(figures) - 1)
            )

    write_atomic(path, write, newline="")
    return sum(len(t.cells) for t in result.tables)


def _table_html(result: AuditTables, t: AuditTable) -> str:
    e = html.escape
    head = f"<th>{e(' / '.join(t.attributes))}</th>" + "".join(f"<th>{e(c)}</th>" for c in _columns(result))
    body = "".join(
        "<tr>"
        + f"<td>{e(' / '.join(c.group.values()))}</td>"
        + "".join(f"<td>{e(v)}</td>" for v in _cells(result, c))
        + "</tr>"
        for c in t.cells
    )
    return (
        f"<h2>{e(t.name)}</h2><div class='wide'><table><tr>{head}</tr>{body}</table></div>"
        f"<p class='note'>{t.missing:,} rows with a missing {e(' or '.join(t.attributes))} counted apart</p>"
    )


def render_audit(result: AuditTables, standalone: bool = True) -> str:
    median = "" if result.median_score is None else f" Median score of all rows: {result.median_score:g}."
    intro = (
        f"<p>{result.rows:,} rows. Selection rate: the share of a category's rows the model selects, with a "
        f"Clopper-Pearson {100 * result.confidence:g}% interval for the population the rows were drawn from. "
        f"Impact ratio: the rate over the highest rate of the table. {html.escape(_note(result))}.{median}</p>"
    )
    body = "<h1>faircert: audit tables</h1>" + intro + "".join(_table_html(result, t) for t in result.tables)
    return page(body, "faircert audit tables", standalone)
