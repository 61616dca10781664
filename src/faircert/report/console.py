"""Readable tables and progress bars for people (on stderr, so stdout stays for data)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TaskID, TextColumn
from rich.text import Text

from ..progress import Progress as ProgressCallback
from ..progress import ProgressEvent
from .format import seconds

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
