"""Readable tables and progress bars for people (on stderr, so stdout stays for data)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn
from rich.table import Table
from rich.text import Text

from ..progress import Progress as ProgressCallback
from ..progress import ProgressEvent
from ..results import Result

VERDICT_STYLE = {"fair": "bold green", "unfair": "bold red", "unknown": "bold yellow"}


def console(stderr: bool = True) -> Console:
    return Console(stderr=stderr, highlight=False)


@contextlib.contextmanager
def decided_progress(enabled: bool, time_limit: float | None) -> Iterator[ProgressCallback]:
    """A progress bar of the decided share; yields the callback engines report to."""
    if not enabled or not sys.stderr.isatty():
        yield lambda info: None
        return
    # time first, details last: a narrow terminal cuts the end of the line
    columns = [
        TextColumn("[bold]verifying"),
        BarColumn(bar_width=16),
        TextColumn("{task.percentage:>6.2f}% decided"),
        BudgetColumn(time_limit),
        TextColumn("{task.fields[detail]}"),
    ]
    with Progress(*columns, console=console(), transient=True) as bar:
        task = bar.add_task("verify", total=100.0, detail="")
        last = [0.0]

        def update(event: ProgressEvent) -> None:
            now = time.monotonic()
            if now - last[0] < 0.1:
                return
            last[0] = now
            fair, unfair = event.certified or 0.0, event.falsified or 0.0
            detail = f"fair {100 * fair:.2f}% unfair {100 * unfair:.2f}%"
            if event.boxes is not None:
                detail += f" | {event.boxes:,} boxes"
            if event.rows is not None:
                detail += f" | {event.rows_done or 0:,}/{event.rows:,} rows"
            bar.update(task, completed=100.0 * (fair + unfair), detail=detail)

        yield update


@contextlib.contextmanager
def budget_progress(enabled: bool, time_limit: float | None, what: str) -> Iterator[ProgressCallback]:
    """A spinner with elapsed and remaining time for work without a decided share (group fairness)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda info: None
        return
    columns = [
        SpinnerColumn(),
        TextColumn(f"[bold]{what}"),
        BudgetColumn(time_limit),
        TextColumn("{task.fields[detail]}"),
    ]
    with Progress(*columns, console=console(), transient=True) as bar:
        task = bar.add_task(what, total=None, detail="")

        def update(event: ProgressEvent) -> None:
            bar.update(task, detail=f"| {event.boxes:,} boxes" if event.boxes is not None else "")

        yield update


class BudgetColumn(ProgressColumn):
    """Elapsed time and, under a time limit, the time left: "12s, 48s left"."""

    def __init__(self, time_limit: float | None) -> None:
        super().__init__()
        self.time_limit = time_limit

    def render(self, task) -> Text:
        elapsed = task.elapsed or 0.0
        text = _seconds(elapsed)
        if self.time_limit is not None:
            text += f", {_seconds(max(0.0, self.time_limit - elapsed))} left"
        return Text(text, style="progress.elapsed")


def _seconds(s: float) -> str:
    return f"{s:.0f}s" if s < 60 else f"{int(s // 60)}m{int(s % 60):02d}s"


def result_table(result: Result) -> Table:
    table = Table(title=f"faircert: {result.model}", show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("verdict", f"[{VERDICT_STYLE[result.verdict]}]{result.verdict}[/] ({result.vnncomp})")
    table.add_row("protected", ", ".join(result.protected) or "-")
    if result.epsilon:
        table.add_row("epsilon", ", ".join(f"{k}={v:g}" for k, v in result.epsilon.items()))
    statistical = statistical_row(result)
    if result.statistical_first:  # the proofs left much undecided: the sampled answer comes first
        table.add_row(*statistical, style="bold")
    proof = " (proof)" if result.statistical_first else " (sound)"
    table.add_row("certified fair" + proof, f"{100 * result.certified:.4f} %")
    table.add_row("proven unfair" + proof, f"{100 * result.falsified:.4f} %")
    table.add_row("undecided", f"{100 * result.undecided:.4f} %")
    table.add_row("domain size", f"{result.domain_size:.6g}")
    if result.population != "uniform":
        table.add_row("measure", f"population {result.population}: shares are probabilities")
    if result.exact is not None:
        table.add_row("exact", "yes" if result.exact else "no: sound bounds, their gap is the undecided share")
    if result.measure is not None:  # tree ensembles: the shares above are of the confident inputs
        m = result.measure
        table.add_row("measured inputs (confident)", f"{m.confident_size:.6g}")
        table.add_row("unfair inputs (proven)", f"{m.unfair_size:.6g}")
        table.add_row("measure (sound bounds)", f"[{m.lower:.6f}, {m.upper:.6f}]")
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
        f"{100 * s.unfair:.4f} % [{100 * s.ci_low:.4f}, {100 * s.ci_high:.4f}], {s.samples:,} samples",
    )


#: What each early stop means to the person reading the table.
STOP_HINTS = {
    "time limit": "the time limit (--time-limit)",
    "box budget": "the box budget (--max-boxes)",
    "memory limit": "the memory limit (--memory-limit), before the time limit",
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
