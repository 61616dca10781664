"""Readable tables and progress bars for people (on stderr, so stdout stays for data)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TaskID, TextColumn
from rich.table import Table
from rich.text import Text

from ..progress import Progress as ProgressCallback
from ..progress import ProgressEvent
from ..results import Result
from .format import bounds, seconds, statistical

VERDICT_STYLE = {"fair": "bold green", "unfair": "bold red", "unknown": "bold yellow"}


def console(stderr: bool = True) -> Console:
    return Console(stderr=stderr, highlight=False)


@contextlib.contextmanager
def progress_bar(enabled: bool, time_limit: float | None, what: str = "verifying") -> Iterator[ProgressCallback]:
    """The command's progress line on a terminal; yields the callback engines report to."""
    if not enabled or not sys.stderr.isatty():
        yield lambda event: None
        return
    # time first, details last: a narrow terminal cuts the end of the line
    columns = [
        SpinnerColumn(),
        TextColumn(f"[bold]{what}"),
        BarColumn(bar_width=16),
        TextColumn("{task.fields[share]}"),
        BudgetColumn(time_limit),
        TextColumn("{task.fields[detail]}"),
    ]
    with Progress(*columns, console=console(), transient=True) as bar:
        yield ProgressLine(bar, bar.add_task(what, total=None, share="", detail=""))


class ProgressLine:
    """One progress reporter for every engine: the decided share where the engine tracks one (a
    bar), else a spinner, with the boxes and rows it reports; redrawn ten times a second at most."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self.bar, self.task, self.last = bar, task, 0.0

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        details = []
        if event.certified is not None or event.falsified is not None:
            fair, unfair = event.certified or 0.0, event.falsified or 0.0
            details.append(f"fair {100 * fair:.2f}% unfair {100 * unfair:.2f}%")
            share = f"{100 * (fair + unfair):>6.2f}% decided"
            self.bar.update(self.task, total=100.0, completed=100.0 * (fair + unfair), share=share)
        if event.boxes is not None:
            details.append(f"{event.boxes:,} boxes")
        if event.rows is not None:
            details.append(f"{event.rows_done or 0:,}/{event.rows:,} rows")
        self.bar.update(self.task, detail=" | ".join(details))


class BudgetColumn(ProgressColumn):
    """Elapsed time and, under a time limit, the time left: "12s, 48s left"."""

    def __init__(self, time_limit: float | None) -> None:
        super().__init__()
        self.time_limit = time_limit

    def render(self, task) -> Text:
        elapsed = task.elapsed or 0.0
        text = seconds(elapsed)
        if self.time_limit is not None:
            text += f", {seconds(max(0.0, self.time_limit - elapsed))} left"
        return Text(text, style="progress.elapsed")


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
        table.add_row("measure (sound bounds)", bounds(m.lower, m.upper))
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
        statistical(s),
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
