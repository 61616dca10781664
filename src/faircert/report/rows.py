"""Per-row audit reports: a console table, the per-row CSV, and an HTML page with a per-group chart."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from rich.markup import escape
from rich.table import Table

from ..files import write_atomic
from ..results.rows import RowsResult
from . import format as fmt
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
    eps = fmt.epsilon(result.epsilon, "0 (flip test)")
    out.print(
        f"verdict: [{VERDICT_STYLE[result.verdict]}]{result.verdict}[/]  rows: {result.population}  "
        f"protected: {', '.join(result.protected)}"
        f"  epsilon: {eps}  engine: {result.engine}  {result.elapsed_s:.2f} s"
        + (f"  stopped: {result.stopped}" if result.stopped != "done" else "")
    )
    if result.stats.get("black_box"):  # what made the model a black box, audited on its own labels
        out.print(f"  black box: {escape(str(result.stats['black_box']))}")
    for reason, count in sorted(result.unknown_reasons().items(), key=lambda item: -item[1]):
        hint = unknown_hint(reason)
        more = f" (what decides more: {escape(hint)})" if hint else ""
        out.print(f"  unknown: {count:,} rows: {escape(reason)}{more}")
    examples = result.unfair_rows(max_examples)
    names = result.feature_names
    for _, row in examples.iterrows():
        diff = [f"{n}: {row[n]} -> {row[n + '_prime']}" for n in names if row[n] != row[n + "_prime"]]
        out.print(f"  row {row['row']}: decision {row['label']} -> {row['twin_label']} when " + "; ".join(diff))


#: Rows written to the rows CSV at a time: each block's text is made column by column.
CSV_BLOCK = 20_000
#: Whole numbers of a column spanning fewer values have each text made once.
SPAN = 65_536


def write_rows_csv(result: RowsResult, path: str | Path) -> int:
    """One line per input row, in the input's order: verdict, method (or why unknown), group, the
    model's label and the twin's, the features the twin changes (`changed`, joined by ";"), then
    each feature's value in the row beside the twin's (`<name>`, `<name>_prime`; categories by
    name; the twin's empty unless unfair). Written block by block, each block's cells made a
    column at a time, so that a large audit's file costs neither a table in memory nor a Python
    call per cell."""
    names = list(result.feature_names)
    header = ["row", "verdict", "method", "group", "label", "twin_label", "changed"]
    header += [spreadsheet_safe(c) for n in names for c in (n, f"{n}_prime")]

    def write(handle) -> None:
        handle.write(",".join(_field(h) for h in header) + LINE)
        for start in range(0, result.n_rows, CSV_BLOCK):
            columns = _csv_columns(result, range(start, min(start + CSV_BLOCK, result.n_rows)))
            handle.write(LINE.join(map(",".join, zip(*columns))) + LINE)

    write_atomic(path, write, newline="")
    return result.n_rows


def _csv_columns(result: RowsResult, block: range) -> list[list[str]]:
    """The rows CSV's columns for the rows in `block`."""
    names = result.feature_names
    own = np.asarray(result.rows[block.start : block.stop], dtype=np.float64)
    twins = np.full(own.shape, np.nan)
    with_twin = [k for k, i in enumerate(block) if result.twins[i] is not None]
    if with_twin:
        twins[with_twin] = [result.twins[block[k]] for k in with_twin]
    changed = [""] * len(block)
    if with_twin:  # rows change few sets of features: each set's cell made once
        moved = own[with_twin] != twins[with_twin]
        keys = list(map(bytes, moved))
        sets = {
            key: cell(";".join(n for n, m in zip(names, moved[k]) if m))
            for key, k in {k: i for i, k in enumerate(keys)}.items()
        }
        for k, key in zip(with_twin, keys):
            changed[k] = sets[key]
    columns = [
        [str(i) for i in block],
        _cells(result.verdicts[block.start : block.stop]),
        _cells(result.methods[block.start : block.stop]),
        _cells(result.groups[block.start : block.stop]),
        _cells(result.labels[block.start : block.stop]),
        _cells(result.twin_labels[block.start : block.stop]),
        changed,
    ]
    for j, n in enumerate(names):
        columns += [_value_texts(result, n, own[:, j]), _value_texts(result, n, twins[:, j])]
    return columns


#: The csv module's line ending, and the characters that make it quote a field.
LINE = "\r\n"
QUOTED = (",", '"', "\r", "\n")


def _field(text: str) -> str:
    """`text` as the csv module writes a field: quoted, its quotes doubled, where it must be."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in QUOTED) else text


def cell(value) -> str:
    """A CSV field: empty for None, text spreadsheet-safe, a number as Python writes it."""
    if value is None:
        return ""
    return _field(spreadsheet_safe(value) if isinstance(value, str) else str(value))


def _cells(values: list) -> list[str]:
    """Cells of a column of few distinct values (verdicts, reasons, groups, labels): each made once."""
    made = {v: cell(v) for v in set(values)}
    return list(map(made.__getitem__, values))


def _value_texts(result: RowsResult, name: str, values: np.ndarray) -> list[str]:
    """The cells of feature `name`'s values as `cell(result.value_name(name, v))` makes them: a
    category by name, a whole number as an int, no value empty; whole numbers and categories
    converted all at once."""
    finite = np.isfinite(values)
    if not finite.any():  # the twins' columns of rows without a twin
        return [""] * len(values)
    out = np.full(len(values), "", dtype=object)
    whole = finite & (values == np.round(values)) & (np.abs(values) < 2.0**53)
    for k in np.flatnonzero(finite & ~whole).tolist():  # fractions, huge numbers
        out[k] = cell(result.value_name(name, values[k]))
    categories = result.categories.get(name)
    if categories is not None:
        named = whole & (values >= 0) & (values < len(categories))
        out[named] = np.array([cell(c) for c in categories], dtype=object)[values[named].astype(np.int64)]
        whole &= ~named
    if whole.any():
        ints = values[whole].astype(np.int64)
        low, high = int(ints.min()), int(ints.max())
        if high - low < SPAN:  # each number's text made once
            out[whole] = np.array([str(v) for v in range(low, high + 1)], dtype=object)[ints - low]
        else:
            out[whole] = ints.astype(str).astype(object)
    return out.tolist()


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


#: What decides more rows left unknown for a reason (those naming their budget say it themselves).
HINTS = (
    ("time limit", "a longer time limit"),
    ("memory limit", "a larger memory limit"),
    ("not reached", "a run that is not stopped"),
    ("cannot be evaluated", "a value the model reads: correct the row, or a domain that names its category"),
    ("within rounding tolerance", "none: the decision sits on the model's threshold"),
    ("a real feature moves", "a model faircert reads (not a black box), or epsilon on whole-number features"),
)


def unknown_hint(reason: str) -> str:
    """What would decide a row left unknown for `reason`."""
    if "(raise " in reason:  # "... (raise max_cells, now 20,000)"
        name, _, now = reason.split("(raise ", 1)[1].rstrip(")").partition(", ")
        return f"a larger {name}" + (f" ({now})" if now else "")
    return next((hint for key, hint in HINTS if key in reason), "")


def _values(result: RowsResult, i: int, skip: list[str]) -> str:
    """Row i's values as "name=value" items (those in `skip` left out), wrapping freely."""
    e = html.escape
    return ", ".join(
        f"{e(n)}={e(str(result.value_name(n, result.rows[i, j])))}"
        for j, n in enumerate(result.feature_names)
        if n not in skip
    )


def _unfair_table(result: RowsResult, max_rows: int) -> str:
    """Each unfair row: its decision, each value its twin changes, then its other values. Columns
    wrap within the page's width, so nothing hides off to the right."""
    e = html.escape
    picked = [i for i, v in enumerate(result.verdicts) if v == "unfair"][:max_rows]
    if not picked:
        return "<p>No unfair row.</p>"
    lines = []
    for i in picked:
        twin = result.twins[i]
        assert twin is not None  # every unfair row has its twin
        changed = result.changed(i)
        changes = "<br>".join(
            f"<b>{e(n)}</b>: {e(str(result.value_name(n, result.rows[i, j])))} &rarr; "
            f"<b>{e(str(result.value_name(n, twin[j])))}</b>"
            for j, n in enumerate(result.feature_names)
            if n in changed
        )
        lines.append(
            f"<tr><td>{i}</td><td>{e(result.groups[i])}</td>"
            f"<td>{result.labels[i]} &rarr; <b>{result.twin_labels[i]}</b></td>"
            f"<td>{changes}</td><td class='note'>{_values(result, i, changed)}</td></tr>"
        )
    count = result.counts()["unfair"]
    return (
        f"<h2>Unfair rows ({count:,}; {'all' if len(lines) == count else f'the first {len(lines)}'} shown, "
        "each twin re-checked on the model)</h2>"
        "<table class='rows'><colgroup><col style='width:7%'><col style='width:13%'><col style='width:10%'>"
        "<col style='width:35%'><col></colgroup>"
        "<tr><th>row</th><th>group</th><th>decision (row &rarr; twin)</th><th>what the twin changes</th>"
        f"<th>the row's other values</th></tr>{''.join(lines)}</table>"
    )


def _unknown_table(result: RowsResult, max_rows: int) -> str:
    """The reasons rows stayed unknown, with what decides more, then each row with its reason."""
    e = html.escape
    reasons = result.unknown_reasons()
    if not reasons:
        return ""
    summary = "".join(
        f"<tr><td>{e(r)}</td><td>{k:,}</td><td>{e(unknown_hint(r))}</td></tr>"
        for r, k in sorted(reasons.items(), key=lambda item: -item[1])
    )
    picked = [i for i, v in enumerate(result.verdicts) if v == "unknown"][:max_rows]
    lines = "".join(
        f"<tr><td>{i}</td><td>{e(result.groups[i])}</td><td>{e(result.methods[i])}</td>"
        f"<td class='note'>{_values(result, i, [])}</td></tr>"
        for i in picked
    )
    count = sum(reasons.values())
    return (
        f"<h2>Unknown rows ({count:,})</h2>"
        "<table class='rows'><colgroup><col style='width:45%'><col style='width:10%'><col></colgroup>"
        f"<tr><th>reason</th><th>rows</th><th>what decides more</th></tr>{summary}</table>"
        f"<p>{'All' if len(picked) == count else f'The first {len(picked)}'} of them:</p>"
        "<table class='rows'><colgroup><col style='width:7%'><col style='width:13%'><col style='width:35%'><col>"
        "</colgroup><tr><th>row</th><th>group</th><th>reason</th><th>the row's values</th></tr>"
        f"{lines}</table>"
    )


def render_rows(
    result: RowsResult, max_rows: int = 200, standalone: bool = True, explain_href: str | None = None
) -> str:
    """The page; `explain_href`, where given, links the explain page of the same rows."""
    e = html.escape
    counts, n = result.counts(), max(result.n_rows, 1)
    summary = [
        ("verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'),
        ("model", e(result.model)),
        ("protected", e(", ".join(result.protected))),
        ("epsilon", e(fmt.epsilon(result.epsilon, "0 (flip test)"))),
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
    link = (
        ""
        if explain_href is None
        else f'<p class="explain-link">Where the unfair rows are, as rules: <a href="{e(explain_href)}">'
        "the explain page</a>.</p>"
    )
    body = (
        f"<h1>faircert: per-row audit</h1>{link}{_group_chart(result)}<table>{table}</table>"
        f"{_unfair_table(result, max_rows)}{_unknown_table(result, max_rows)}"
    )
    return page(body, "faircert per-row audit", standalone)
