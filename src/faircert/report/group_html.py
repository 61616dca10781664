"""A self-contained HTML report of a group-fairness result: per-group probability intervals with the
DI threshold line, the metrics, per-condition rates and influence bars (inline SVG; no scripts, no
external files)."""

from __future__ import annotations

import html

from ..metrics import METRICS
from ..metrics.base import condition_title
from ..results import Comparison, GroupResult
from .format import interval
from .group import estimate_rows
from .html import page

PLOT, ROW, LEFT = 660, 26, 220
#: Pixels per character of a 12 px label, generously: labels are never clipped.
CHAR = 7.2


def _left(labels: list[str]) -> float:
    """The label column's width: wide enough for the longest label."""
    return max(LEFT, CHAR * max((len(t) for t in labels), default=0) + 16)


def _x(p: float, left: float = LEFT) -> float:
    return left + PLOT * min(max(p, 0.0), 1.0)


def rates_chart(result: GroupResult) -> str:
    """One row per group: its interval of P[yhat = 1 | group] on [0, 1] (a dot where exact), and the
    DI line at `threshold` times the most favoured group's rate: groups left of it fail the rule."""
    e = html.escape
    groups = sorted(result.groups, key=lambda g: -g.value)
    height = ROW * len(groups) + 40
    top = max(g.value for g in groups)
    left = _left([g.name for g in groups])
    width = left + PLOT + 20
    parts = []
    for k in range(11):
        x = _x(k / 10, left)
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 30}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{height - 14}" font-size="11" text-anchor="middle">{k / 10:g}</text>'
        )
    for i, g in enumerate(groups):
        y = ROW * i + 14
        colour = "#cf222e" if g.high < result.threshold * top else "#0969da"
        parts.append(f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">{e(g.name)}</text>')
        if g.high - g.low > 1e-4:
            parts.append(
                f'<rect x="{_x(g.low, left):.1f}" y="{y - 6}" width="{_x(g.high, left) - _x(g.low, left):.1f}" '
                'height="12" '
                f'fill="{colour}" opacity="0.6"><title>[{g.low:.4f}, {g.high:.4f}]</title></rect>'
            )
        else:
            parts.append(
                f'<circle cx="{_x(g.value, left):.1f}" cy="{y}" r="5" fill="{colour}">'
                f"<title>{g.value:.4f}</title></circle>"
            )
    line = _x(result.threshold * top, left)
    parts.append(
        f'<line x1="{line:.1f}" y1="0" x2="{line:.1f}" y2="{height - 30}" stroke="#9a6700" '
        f'stroke-dasharray="4 3"><title>DI threshold: {result.threshold:g} x the most favoured rate'
        f"</title></line>"
    )
    return (
        f'<svg width="{width:.0f}" height="{height}" role="img" aria-label="P[yhat=1 | group]">{"".join(parts)}</svg>'
        f"<p class='note'>P[yhat = 1 | group]: a dot where exact, a bar where bounded; dashed: "
        f"{result.threshold:g} &times; the most favoured group's rate (groups left of it fail DI &ge; "
        f"{result.threshold:g}, red)</p>"
    )


def influence_chart(result: GroupResult) -> str:
    """Bars of each feature set's influence on SP (base minus the set made uniform)."""
    if not result.influence:
        return ""
    e = html.escape
    items = sorted(result.influence, key=lambda i: -abs(i.sp))
    scale = max(abs(i.sp) for i in items) or 1.0
    left = _left([", ".join(i.features) for i in items])
    mid, half = left + PLOT / 2, PLOT / 2
    parts = [f'<line x1="{mid:.1f}" y1="0" x2="{mid:.1f}" y2="{ROW * len(items)}" stroke="#888"/>']
    for k, inf in enumerate(items):
        y = ROW * k + 14
        w = half * inf.sp / scale
        parts.append(
            f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">'
            f"{e(', '.join(inf.features))}</text>"
            f'<rect x="{min(mid, mid + w):.1f}" y="{y - 6}" width="{abs(w):.1f}" height="12" '
            f'fill="{"#cf222e" if inf.sp > 0 else "#2da44e"}"><title>{inf.sp:+.4f}</title></rect>'
        )
    return (
        f"<h2>Influence on SP</h2><svg width='{left + PLOT + 20:.0f}' height='{ROW * len(items) + 10}' role='img' "
        f"aria-label='influence'>{''.join(parts)}</svg><p class='note'>SP minus SP with the feature(s) made "
        "uniform: red bars add to the disparity</p>"
    )


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>"


def _estimate(result: GroupResult) -> str:
    """The sampled answer beside wide sound bounds, named as an estimate."""
    est = result.estimate
    if est is None:
        return ""
    rows = [[html.escape(quantity), sound, sampled] for quantity, sound, sampled in estimate_rows(result)]
    return (
        f"<h2>Statistical answer (sampled, not a proof)</h2><p class='note'>The sound bounds are wide; sampling "
        f"the same population gives these intervals, which hold together with confidence "
        f"{100 * (1 - est.stats.get('delta', 0)):g}% ({est.stats.get('samples', 0):,} samples). The verdict "
        "follows the proofs.</p>" + _table(["", "sound bounds (proof)", "statistical"], rows)
    )


def render_group(result: GroupResult, standalone: bool = True) -> str:
    e = html.escape
    summary = _table(
        ["", ""],
        [
            ["verdict", f'<b class="{result.verdict}">{result.verdict}</b> ({result.vnncomp})'],
            ["model", e(result.model)],
            ["protected", e(", ".join(result.protected))],
            ["numbers under the population", e(result.population)],
            ["engine / time", f"{e(result.engine_description)} / {result.elapsed_s:.2f} s"],
            ["stopped", e(f"{result.stopped} ({result.stats.get('stopped') or 'done'})")],
        ],
    )
    conditions = list(result.conditional)
    by_cond = {k: {g.name: g for g in v} for k, v in result.conditional.items()}
    groups = _table(
        ["group", "P[group]", "P[yhat=1 | group]"] + [e(condition_title(c)) for c in conditions],
        [
            [e(g.name), interval(g.size, g.size if g.size_high is None else g.size_high), interval(g.low, g.high)]
            + [
                interval(by_cond[c][g.name].low, by_cond[c][g.name].high) if g.name in by_cond[c] else "-"
                for c in conditions
            ]
            for g in sorted(result.groups, key=lambda g: -g.value)
        ],
    )
    metrics = _table(
        ["metric", "value", "check", "attained by"],
        [
            [
                e(METRICS[m.name].title if m.name in METRICS else m.name),
                interval(m.low, m.high),
                (
                    f"{'&ge;' if m.direction == '>=' else '&le;'} {m.threshold:g}: <b "
                    f"class='{m.verdict}'>{m.verdict}</b>"
                    if m.threshold is not None
                    else ""
                ),
                e(m.detail),
            ]
            for m in result.metrics.values()
        ],
    )
    first = result.statistical_first  # the proofs left the rates wide: the sampled answer leads
    notes = ("" if first else _estimate(result)) + "".join(
        f"<p class='note'>approximation: {e(a)}</p>" for a in result.approximations
    )
    dropped = result.stats.get("rows_dropped_missing", 0)
    if dropped:
        notes += f"<p class='note'>{dropped:,} rows with missing values were left out of the data</p>"
    if result.audit is not None:
        from .audit import render_audit

        notes += "<h2>Audit tables (the data's rows)</h2>" + render_audit(result.audit, standalone=False)
    body = (
        f"<h1>faircert: group fairness</h1>{summary}{_estimate(result) if first else ''}"
        f"<h2>P[yhat = 1 | group]{' (proofs)' if first else ''}</h2>{rates_chart(result)}"
        f"{groups}<h2>Metrics</h2>{metrics}{influence_chart(result)}{notes}"
    )
    return page(body, "faircert group report", standalone)


def render_comparison(comparison: Comparison, standalone: bool = True) -> str:
    """One table across the models, then each model's rates chart."""
    e = html.escape
    frame = comparison.to_frame()
    header = ["model"] + [e(str(c)) for c in frame.columns]
    rows = [
        [e(str(name))] + [f"{v:.4f}" if isinstance(v, float) else e(str(v)) for v in row]
        for name, row in zip(frame.index, frame.itertuples(index=False))
    ]
    charts = "".join(
        f"<h2>{e(n)}: <b class='{r.verdict}'>{r.verdict}</b></h2>{rates_chart(r)}"
        for n, r in zip(comparison.names, comparison.results)
    )
    body = f"<h1>faircert: group fairness compared</h1>{_table(header, rows)}{charts}"
    return page(body, "faircert comparison", standalone)
