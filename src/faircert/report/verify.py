"""The report of `verify`'s `Result`: the console table, the counterexamples' and partitions' CSV
(feature and category names; the twin's columns suffixed), and a self-contained HTML page (inline CSS
and SVG; no scripts, no external files)."""

from __future__ import annotations

import csv
import html
from pathlib import Path

import numpy as np
from rich.table import Table

from ..files import write_atomic
from ..results import Result
from . import format as fmt
from .console import VERDICT_STYLE, console
from .csv import spreadsheet_safe
from .html import page

COLOURS = {"certified": "#2da44e", "falsified": "#cf222e", "undecided": "#d4a72c"}


def result_table(result: Result) -> Table:
    table = Table(title=f"faircert: {result.model}", show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("verdict", f"[{VERDICT_STYLE[result.verdict]}]{result.verdict}[/] ({result.vnncomp})")
    table.add_row("protected", ", ".join(result.protected) or "-")
    if result.epsilon:
        table.add_row("epsilon", fmt.epsilon(result.epsilon))
    statistical = statistical_row(result)
    if result.statistical_first:  # the proofs left much undecided: the sampled answer comes first
        table.add_row(*statistical, style="bold")
    proof = " (proof)" if result.statistical_first else " (sound)"
    table.add_row("certified fair" + proof, fmt.percent(result.certified))
    table.add_row("proven unfair" + proof, fmt.percent(result.falsified))
    table.add_row("undecided", fmt.percent(result.undecided))
    table.add_row("domain size", f"{result.domain_size:.6g}")
    if result.population != "uniform":
        table.add_row("measure", f"population {result.population}: shares are probabilities")
    if result.exact is not None:
        table.add_row("exact", "yes" if result.exact else "no: sound bounds, their gap is the undecided share")
    if result.measure is not None:  # tree ensembles: the shares above are of the confident inputs
        m = result.measure
        table.add_row("measured inputs (confident)", f"{m.confident_size:.6g}")
        table.add_row("unfair inputs (proven)", f"{m.unfair_size:.6g}")
        table.add_row("measure (sound bounds)", fmt.bounds(m.lower, m.upper))
    if statistical and not result.statistical_first:
        table.add_row(*statistical)
    table.add_row("counterexamples (re-checked)", f"{len(result.counterexamples):,}")
    table.add_row("engine / time", f"{result.engine} / {result.elapsed_s:.2f} s")
    if result.stopped not in ("", "done"):
        table.add_row("stopped by", f"[yellow]{STOP_HINTS.get(result.stopped, result.stopped)}[/]")
    return table


def statistical_row(result: Result) -> tuple[str, str] | tuple[()]:
    """The statistical answer as a table row (label, value), or none where there is none."""
    s = result.statistical
    if s is None:
        return ()
    if not s.sampled:
        return ("unfair share", f"{100 * s.unfair:.4f} % (exact: nothing undecided to sample)")
    return (
        f"unfair share (statistical, {100 * s.confidence:g}% CI)",
        fmt.statistical(s),
    )


#: What each early stop means to the person reading the table.
STOP_HINTS = {
    "time limit": "the time limit (--time-limit)",
    "box budget": "the box budget (--budget boxes=N)",
    "memory limit": "the memory limit (--budget memory=BYTES), before the time limit",
    "interrupted": "a stop request (Ctrl-C)",
}


def print_result(result: Result, max_examples: int = 3) -> None:
    out = console()
    out.print(result_table(result))
    names = result.column_names()

    def shown(i: int, v: float) -> str:
        value = result.value_name(names[i], v)
        return value if isinstance(value, str) else f"{value:g}"

    for cex in result.distinct_counterexamples()[:max_examples]:
        diff = [
            f"{names[i]}: {shown(i, a)} -> {shown(i, b)}" for i, (a, b) in enumerate(zip(cex.x, cex.x_prime)) if a != b
        ]
        out.print(f"  counterexample: output {cex.output:+.4g} vs {cex.output_prime:+.4g} when " + "; ".join(diff))


def write_counterexamples(result: Result, path: str | Path) -> int:
    names = [spreadsheet_safe(str(n)) for n in result.column_names()]
    header = list(names) + [f"{n}_prime" for n in names] + ["output", "output_prime"]
    raw = result.column_names()

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for c in result.counterexamples:
            writer.writerow(
                [_fmt(result.value_name(n, v)) for n, v in zip(raw, c.x)]
                + [_fmt(result.value_name(n, v)) for n, v in zip(raw, c.x_prime)]
                + [_cell(c.output), _cell(c.output_prime)]
            )

    write_atomic(path, write, newline="")
    return len(result.counterexamples)


def write_partitions(result: Result, path: str | Path) -> int:
    """One row per partition: id, verdict, seconds, evidence, the bounds of the cut features, and
    the counterexample's two inputs (empty unless unfair)."""
    rows = result.partitions or []
    cut = list(rows[0]["lower"]) if rows else []
    names = [spreadsheet_safe(str(n)) for n in result.column_names()]
    header = (
        ["partition", "verdict", "seconds", "evidence"]
        + [f"{spreadsheet_safe(str(n))}_min" for n in cut]
        + [f"{spreadsheet_safe(str(n))}_max" for n in cut]
        + [f"x_{n}" for n in names]
        + [f"x_prime_{n}" for n in names]
    )

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in rows:
            pair = r["counterexample"]
            xs = [_fmt(v) for v in pair["x"]] + [_fmt(v) for v in pair["x_prime"]] if pair else [""] * (2 * len(names))
            writer.writerow(
                [r["id"], r["verdict"], f"{r['seconds']:.6f}", r["evidence"] or ""]
                + [_fmt(r["lower"][n]) for n in cut]
                + [_fmt(r["upper"][n]) for n in cut]
                + xs
            )

    write_atomic(path, write, newline="")
    return len(rows)


def _fmt(value: float | str) -> str:
    if isinstance(value, str):  # a category's name
        return spreadsheet_safe(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _cell(value: object) -> object:
    """Numbers stay numbers; text (a class label) is made spreadsheet-safe."""
    return spreadsheet_safe(value) if isinstance(value, str) else value


def _share_bar(result: Result, width: int = 900, height: int = 28) -> str:
    parts, x = [], 0.0
    for key in ("certified", "falsified", "undecided"):
        w = width * getattr(result, key)
        if w > 0:
            parts.append(
                f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{COLOURS[key]}">'
                f"<title>{key}: {100 * getattr(result, key):.4f}%</title></rect>"
            )
        x += w
    return f'<svg width="{width}" height="{height}" role="img" aria-label="shares">{"".join(parts)}</svg>'


def implicated_features(result: Result) -> list[str]:
    """The two non-protected features on which the counterexamples concentrate most: the smallest
    spread of their values relative to the feature's range (a uniform spread scores 1)."""
    names = result.column_names()
    points = np.array([c.x for c in result.distinct_counterexamples()], dtype=np.float64)
    scores = []
    for j, name in enumerate(names):
        lo, hi = result.feature_ranges.get(name, (0.0, 0.0))
        if name in result.protected or hi <= lo or len(points) < 2:
            continue
        scores.append((float(np.std(points[:, j])) / ((hi - lo) / np.sqrt(12.0)), j, name))
    return [name for _, _, name in sorted(scores)[:2]]


def region_plot(result: Result, size: int = 420, pad: int = 50) -> str:
    """The counterexamples projected on the two most implicated features, within the domain's ranges."""
    pair = implicated_features(result)
    if len(pair) < 2:
        return ""
    e = html.escape
    names = result.column_names()
    ja, jb = names.index(pair[0]), names.index(pair[1])
    (a_lo, a_hi), (b_lo, b_hi) = result.feature_ranges[pair[0]], result.feature_ranges[pair[1]]
    inner = size - 2 * pad

    def px(v: float, lo: float, hi: float) -> float:
        return pad + inner * (v - lo) / (hi - lo)

    dots = "".join(
        f'<circle cx="{px(c.x[ja], a_lo, a_hi):.1f}" cy="{size - px(c.x[jb], b_lo, b_hi):.1f}" r="3" '
        f'fill="#cf222e" opacity="0.5"/>'
        for c in result.distinct_counterexamples()
    )
    ticks = (
        f'<text x="{pad}" y="{size - pad + 16}" font-size="11">{e(str(result.value_name(pair[0], a_lo)))}</text>'
        f'<text x="{size - pad}" y="{size - pad + 16}" font-size="11" text-anchor="end">'
        f"{e(str(result.value_name(pair[0], a_hi)))}</text>"
        f'<text x="{pad - 6}" y="{size - pad}" font-size="11" '
        f'text-anchor="end">{e(str(result.value_name(pair[1], b_lo)))}'
        f'</text><text x="{pad - 6}" y="{pad + 4}" font-size="11" text-anchor="end">'
        f"{e(str(result.value_name(pair[1], b_hi)))}</text>"
    )
    axes = (
        f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" fill="none" stroke="#888"/>'
        f'<text x="{size / 2}" y="{size - 10}" font-size="12" text-anchor="middle">{e(pair[0])}</text>'
        f'<text x="14" y="{size / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {size / 2})">{e(pair[1])}</text>'
    )
    return (
        f"<h2>Where the counterexamples lie</h2><svg width='{size}' height='{size}' role='img' "
        f"aria-label='counterexamples'>{axes}{ticks}{dots}</svg><p class='note'>each re-checked counterexample "
        f"on {e(pair[0])} and {e(pair[1])}, the features on which they concentrate most (the box is the "
        "domain)</p>"
    )


def render_result(result: Result, max_examples: int = 200, standalone: bool = True) -> str:
    e = html.escape
    s = result.statistical
    statistical = []
    if s is not None and s.sampled:
        statistical = [
            (
                f"unfair share (statistical, {100 * s.confidence:g}% CI)",
                fmt.statistical(s),
            )
        ]
    proof = "proof" if result.statistical_first else "sound"
    rows = [
        ("verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'),
        ("model", e(result.model)),
        ("protected", e(", ".join(result.protected))),
        ("epsilon", e(fmt.epsilon(result.epsilon))),
        *(statistical if result.statistical_first else []),
        (f"certified fair ({proof})", fmt.percent(result.certified)),
        (f"proven unfair ({proof})", fmt.percent(result.falsified)),
        ("undecided", fmt.percent(result.undecided)),
        ("domain size", f"{result.domain_size:.6g}"),
    ]
    if result.measure is not None:
        rows.append(("measure (sound bounds)", fmt.bounds(result.measure.lower, result.measure.upper)))
    if not result.statistical_first:
        rows += statistical
    rows.append(("engine / time", f"{e(result.engine)} / {result.elapsed_s:.2f} s"))
    summary = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    names = result.column_names()

    def shown(name: str, v: float) -> str:
        value = result.value_name(name, v)
        return e(value) if isinstance(value, str) else f"{value:g}"

    distinct = result.distinct_counterexamples()
    cex_rows = []
    for c in distinct[:max_examples]:
        cells = [
            f"<td>{shown(n, a)}</td>" if a == b else f"<td><b>{shown(n, a)} &rarr; {shown(n, b)}</b></td>"
            for n, a, b in zip(names, c.x, c.x_prime)
        ]
        cex_rows.append(f"<tr>{''.join(cells)}<td>{c.output:+.4g}</td><td>{c.output_prime:+.4g}</td></tr>")
    header = "".join(f"<th>{e(n)}</th>" for n in names) + "<th>output</th><th>twin output</th>"
    cex = (
        (
            f"<h2>Counterexamples ({len(distinct)} re-checked on the model)</h2>"
            f"<div class='wide'><table><tr>{header}</tr>{''.join(cex_rows)}</table></div>"
        )
        if cex_rows
        else "<p>No counterexample found.</p>"
    )
    headline = ""
    if result.statistical_first and s is not None:
        headline = (
            f"<p class='headline'><b>{100 * s.unfair:.2f}%</b> of the domain has an unfair twin "
            f"(statistical: {100 * s.confidence:g}% confidence interval [{100 * s.ci_low:.2f}%, "
            f"{100 * s.ci_high:.2f}%], from {s.samples:,} samples; not a proof). The proofs below leave "
            f"{100 * result.undecided:.1f}% undecided.</p>"
        )
    body = (
        f"<h1>faircert: individual fairness</h1>{headline}"
        f"{_share_bar(result)}<p class='note'>green: proven fair; red: proven unfair; amber: undecided "
        f"(sound shares of the domain)</p><table>{summary}</table>{region_plot(result)}{cex}"
    )
    return page(body, "faircert report", standalone)
