"""Every result's outputs through one protocol: `render(result, outputs)` finds the result family's
`Renderer` by the result's type and writes what `outputs` asks (JSON, HTML, CSV tables, console)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import STDOUT, print_stdout, write_text


@dataclass(frozen=True)
class Renderer:
    """How one result family is shown; its functions live in `report/<family>.py`."""

    #: readable tables on stderr
    console: Callable[[Any], None]
    #: a self-contained page, or a notebook cell's fragment (`standalone=False`)
    html: Callable[..., str]
    #: the CSV tables it writes, by kind (`--csv KIND=OUT.csv`)
    csv: Mapping[str, Callable[[Any, str | Path], object]] = field(default_factory=dict)
    #: whether the JSON reports the time spent writing the other outputs (`timings.write_s`)
    times_writing: bool = False


@dataclass(frozen=True)
class Outputs:
    """What a command writes: JSON (`-` for stdout), an HTML page, CSV tables by kind, and the
    console tables unless quiet."""

    json: str | None = None
    html: str | None = None
    csv: Mapping[str, str] = field(default_factory=dict)
    console: bool = True
    #: what the HTML page's renderer takes beyond the result (a link to a companion page)
    page: Mapping[str, Any] = field(default_factory=dict)


def families() -> dict[type, Renderer]:
    """Each result type's renderer."""
    from ..results import Comparison, GroupResult, ProgramResult, Result
    from ..results.audit import AuditTables
    from ..results.explain import ExplainResult
    from ..results.rows import RowsResult
    from . import audit, explain, group, group_html, program, rows, verify

    return {
        Result: Renderer(
            verify.print_result,
            verify.render_result,
            {"counterexamples": verify.write_counterexamples, "partitions": verify.write_partitions},
        ),
        RowsResult: Renderer(rows.print_rows, rows.render_rows, {"rows": rows.write_rows_csv}, times_writing=True),
        GroupResult: Renderer(group.print_group, group_html.render_group, {"audit": group.write_group_audit_csv}),
        Comparison: Renderer(group.print_comparison, group_html.render_comparison),
        ProgramResult: Renderer(program.print_program_result, program.render_program),
        ExplainResult: Renderer(explain.print_explain, explain.render_explain, {"rules": explain.write_rules_csv}),
        AuditTables: Renderer(audit.print_audit, audit.render_audit, {"tables": audit.write_audit_csv}),
    }


def renderer(result: Any) -> Renderer:
    """The renderer of `result`'s family, by its type."""
    known = families()
    for cls in type(result).__mro__:
        if cls in known:
            return known[cls]
    raise TypeError(f"no report for a {type(result).__name__}")


def html(result: Any, standalone: bool = True) -> str:
    """The HTML page of any result (a fragment for a notebook cell when not `standalone`)."""
    return renderer(result).html(result, standalone=standalone)


def render(result: Any, outputs: Outputs) -> None:
    """Write `result` as `outputs` asks."""
    family = renderer(result)
    began = time.perf_counter()
    for kind, path in outputs.csv.items():
        family.csv[kind](result, path)
    if outputs.html:
        write_text(outputs.html, family.html(result, **outputs.page))
    if family.times_writing:
        result.timings["write_s"] = time.perf_counter() - began
    emit_json(result.to_json(), outputs.json)  # last, so that it can report the writing
    if outputs.console:
        family.console(result)


def emit_json(text: str, destination: str | None) -> None:
    """Write JSON to a file, to stdout for '-', or nowhere when no destination was asked for."""
    if destination == STDOUT:
        print_stdout(text + "\n")
    elif destination:
        write_text(destination, text + "\n")
