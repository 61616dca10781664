"""Readable tables of a GroupResult (on stderr): groups, metrics, influences, approximations."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..metrics import METRICS
from ..metrics.base import condition_title
from ..results import Comparison, GroupResult
from .audit import print_audit, write_audit_csv
from .console import VERDICT_STYLE, console
from .format import interval


def groups_table(result: GroupResult) -> Table:
    title = "P[yhat = 1 | group]" + (f": {result.model}" if result.model else "")
    table = Table(title=escape(title), header_style="bold")
    table.add_column("group")
    table.add_column(escape("P[group]"), justify="right")
    table.add_column(escape("P[yhat=1 | group]"), justify="right")
    for cond in result.conditional:
        table.add_column(escape(condition_title(cond)), justify="right")
    table.add_column("")
    by_cond = {k: {g.name: g for g in v} for k, v in result.conditional.items()}
    for g in sorted(result.groups, key=lambda g: -g.value):
        mark = (
            "most favoured"
            if g.name == result.most_favoured
            else "least favoured"
            if g.name == result.least_favoured
            else ""
        )
        extra = [interval(c[g.name].low, c[g.name].high) if g.name in c else "-" for c in by_cond.values()]
        size = interval(g.size, g.size_high) if g.size_high is not None else f"{g.size:.4f}"
        table.add_row(escape(g.name), size, interval(g.low, g.high), *extra, mark)
    return table


def estimate_table(result: GroupResult) -> Table:
    """The sampled answer beside wide sound bounds: named as an estimate, with its error probability."""
    est = result.estimate
    assert est is not None  # asked for where there is one
    table = Table(
        title=f"statistical answer: sampled from the same population, not a proof (the intervals hold "
        f"together with confidence {100 * (1 - est.stats.get('delta', 0)):g}%, {est.stats.get('samples', 0):,} "
        "samples)",
        header_style="bold",
    )
    table.add_column("")
    table.add_column("sound bounds (proof)", justify="right")
    table.add_column("statistical", justify="right")
    for quantity, sound, sampled in estimate_rows(result):
        table.add_row(escape(quantity), sound, sampled)
    return table


def estimate_rows(result: GroupResult) -> list[tuple[str, str, str]]:
    """(quantity, sound bounds, statistical interval) of each group rate and metric sampled."""
    est = result.estimate
    assert est is not None  # asked for where there is one
    sound = {g.name: g for g in result.groups}
    rates = [(g, sound[g.name]) for g in est.groups if g.name in sound]
    rows = [(f"P[yhat=1 | {g.name}]", interval(s.low, s.high), interval(g.low, g.high)) for g, s in rates]
    metrics = [(n, m, result.metrics[n]) for n, m in est.metrics.items() if n in result.metrics]
    return rows + [(n.upper(), interval(s.low, s.high), interval(m.low, m.high)) for n, m, s in metrics]


def metrics_table(result: GroupResult) -> Table:
    table = Table(title=f"group fairness: [{VERDICT_STYLE[result.verdict]}]{result.verdict}[/]", header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("check", justify="right")
    table.add_column("attained by")
    for m in result.metrics.values():
        check = ""
        if m.threshold is not None:
            check = f"{m.direction} {m.threshold:g}: [{VERDICT_STYLE.get(m.verdict, '')}]{m.verdict}[/]"
        title = METRICS[m.name].title if m.name in METRICS else m.name
        table.add_row(title, interval(m.low, m.high), check, escape(m.detail))
    return table


def influence_table(result: GroupResult) -> Table:
    """FIFs on DI, SP and the most and least favoured groups, most influential first."""
    table = Table(title="fairness influence (base - feature made uniform)", header_style="bold")
    table.add_column("feature(s)")
    shown = list(dict.fromkeys([result.most_favoured, result.least_favoured]))
    for n in shown:
        table.add_column(escape(n), justify="right")
    table.add_column("DI", justify="right")
    table.add_column("SP", justify="right")
    for inf in sorted(result.influence, key=lambda i: -abs(i.sp)):
        table.add_row(
            escape(", ".join(inf.features)),
            *(f"{inf.by_group.get(n, 0.0):+.4f}" for n in shown),
            f"{inf.di:+.4f}",
            f"{inf.sp:+.4f}",
        )
    return table


def print_group(result: GroupResult) -> None:
    out = console()
    if result.statistical_first:  # the proofs left the rates wide: the sampled answer leads
        out.print(estimate_table(result))
        out.print(
            "[dim](the verdict below follows the proofs; the statistical answer says where the truth likely is)[/]"
        )
    out.print(groups_table(result))
    out.print(metrics_table(result))
    if result.estimate is not None and not result.statistical_first:
        out.print(estimate_table(result))
        out.print("[dim](the verdict follows the sound bounds; the estimate says where the truth likely is)[/]")
    if result.influence:
        out.print(influence_table(result))
    if result.audit is not None:
        print_audit(result.audit)
    out.print(f"numbers under the population: {escape(result.population)}")
    if result.population.startswith(("independent", "bayesnet")):
        out.print(
            "[dim](the model's rates on the population learned from the data, not on the data's rows; "
            "--population empirical gives the selection rates fairlearn's MetricFrame shows)[/]"
        )
    dropped = result.stats.get("rows_dropped_missing", 0)
    if dropped:
        out.print(f"[yellow]{dropped:,} rows with missing values were left out of the data[/]")
    out.print(
        f"engine: {result.engine_description}, {result.elapsed_s:.2f} s"
        + (
            f" (engine {result.stats['engine_s']:.3f} s, population learning {result.stats['learning_s']:.3f} s)"
            if "engine_s" in result.stats
            else ""
        )
    )
    bounds = result.stats.get("within_bin_bounds")
    if bounds:
        out.print(
            f"for any distribution inside the bins: DI in [{bounds['di'][0]:.4f}, {bounds['di'][1]:.4f}], "
            f"SP in [{bounds['sp'][0]:.4f}, {bounds['sp'][1]:.4f}]"
        )
    for note in result.approximations:
        out.print(f"[yellow]approximation:[/] {escape(note)}")


def print_comparison(comparison: Comparison) -> None:
    """One row per model: verdict, metrics and each group's P[yhat = 1 | group]."""
    out = console()
    groups = list(dict.fromkeys(name for r in comparison.results for name in r.rates))
    metrics = list(dict.fromkeys(m for r in comparison.results for m in r.metrics))
    table = Table(title="group fairness compared", header_style="bold")
    for column in ["model", "verdict"] + [m.upper() for m in metrics] + [f"P[yhat=1 | {g}]" for g in groups]:
        table.add_column(escape(column), justify="left" if column in ("model", "verdict") else "right")
    for name, r in zip(comparison.names, comparison.results):
        cells = [interval(r.metrics[m].low, r.metrics[m].high) if m in r.metrics else "-" for m in metrics]
        by_name = {g.name: g for g in r.groups}
        cells += [interval(by_name[g].low, by_name[g].high) if g in by_name else "-" for g in groups]
        table.add_row(escape(name), f"[{VERDICT_STYLE[r.verdict]}]{r.verdict}[/]", *cells)
    out.print(table)
    populations = sorted({r.population for r in comparison.results})
    out.print(f"numbers under the population: {escape('; '.join(populations))}")


def write_group_audit_csv(result: GroupResult, path: str | Path) -> None:
    """The bias-audit tables of the data's rows, where the result holds them."""
    if result.audit is not None:
        write_audit_csv(result.audit, path)
