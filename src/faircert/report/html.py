"""A self-contained HTML report (inline CSS and SVG; no scripts, no external files)."""

from __future__ import annotations

import html

import numpy as np

from ..results import Result
from . import format as fmt

STYLE = """
body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
table.rows{table-layout:fixed;width:100%}table.rows td{text-align:left;vertical-align:top;overflow-wrap:anywhere}
.headline{font-size:120%}.wide{overflow-x:auto}.fair{color:#1a7f37}.unfair{color:#cf222e}.unknown{color:#9a6700}.note{color:#666;font-size:90%}
"""
COLOURS = {"certified": "#2da44e", "falsified": "#cf222e", "undecided": "#d4a72c"}


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


def fragment_style() -> str:
    """The report's style without the page rule (for a notebook cell, which is not a page)."""
    return "\n".join(line for line in STYLE.splitlines() if not line.startswith("body"))


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


def render(result: Result, max_examples: int = 200, standalone: bool = True) -> str:
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
        ("epsilon", e(", ".join(f"{k}={v:g}" for k, v in result.epsilon.items()) or "-")),
        *(statistical if result.statistical_first else []),
        (f"certified fair ({proof})", f"{100 * result.certified:.4f} %"),
        (f"proven unfair ({proof})", f"{100 * result.falsified:.4f} %"),
        ("undecided", f"{100 * result.undecided:.4f} %"),
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


def page(body: str, title: str, standalone: bool = True) -> str:
    """A whole self-contained page around `body`, or a styled fragment for a notebook cell."""
    if not standalone:
        return f"<div><style>{fragment_style()}</style>{body}</div>"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )
