"""The page every HTML report sits in: one style, inline; no scripts, no external files."""

from __future__ import annotations

import html

STYLE = """
body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
table.rows{table-layout:fixed;width:100%}table.rows td{text-align:left;vertical-align:top;overflow-wrap:anywhere}
.headline{font-size:120%}.wide{overflow-x:auto}.fair{color:#1a7f37}.unfair{color:#cf222e}.unknown{color:#9a6700}.note{color:#666;font-size:90%}
"""


def fragment_style() -> str:
    """The report's style without the page rule (for a notebook cell, which is not a page)."""
    return "\n".join(line for line in STYLE.splitlines() if not line.startswith("body"))


def page(body: str, title: str, standalone: bool = True) -> str:
    """A whole self-contained page around `body`, or a styled fragment for a notebook cell."""
    if not standalone:
        return f"<div><style>{fragment_style()}</style>{body}</div>"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )
