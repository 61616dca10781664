"""Readable tables and progress bars for people (on stderr, so stdout stays for data)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..results import Result

VERDICT_STYLE = {"fair": "bold green", "unfair": "bold red", "unknown": "bold yellow"}


def console(stderr: bool = True) -> Console:
    return Console(stderr=stderr, highlight=False)


@contextlib.contextmanager
def decided_progress(enabled: bool, time_limit: float | None) -> Iterator[Callable[[dict], None]]:
    """A progress bar of the decided share; yields the callback engines report to."""
    if not enabled or not sys.stderr.isatty():
        yield lambda info: None
        return
    columns = [TextColumn("[bold]verifying"), BarColumn(), TextColumn("{task.percentage:>6.2f}% decided"),
               TextColumn("{task.fields[detail]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console(), transient=True) as bar:
        task = bar.add_task("verify", total=100.0, detail="")
        last = [0.0]

        def update(info: dict) -> None:
            now = time.monotonic()
            if now - last[0] < 0.1:
                return
            last[0] = now
            decided = 100.0 * (info.get("certified", 0.0) + info.get("falsified", 0.0))
            detail = f"fair {100 * info.get('certified', 0):.2f}% unfair {100 * info.get('falsified', 0):.2f}%"
            if "boxes" in info:
                detail += f" | {info['boxes']:,} boxes"
            bar.update(task, completed=decided, detail=detail)

        yield update


def result_table(result: Result) -> Table:
    table = Table(title=f"faircert: {result.model}", show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("verdict", f"[{VERDICT_STYLE[result.verdict]}]{result.verdict}[/] ({result.vnncomp})")
    table.add_row("protected", ", ".join(result.protected) or "-")
    if result.epsilon:
        table.add_row("epsilon", ", ".join(f"{k}={v:g}" for k, v in result.epsilon.items()))
    table.add_row("certified fair (sound)", f"{100 * result.certified:.4f} %")
    table.add_row("proven unfair (sound)", f"{100 * result.falsified:.4f} %")
    table.add_row("undecided", f"{100 * result.undecided:.4f} %")
    table.add_row("domain size", f"{result.domain_size:.6g}")
    if result.confident_size is not None:  # tree ensembles: the shares above are of these inputs
        table.add_row("measured inputs (confident)", f"{result.confident_size:.6g}")
        table.add_row("unfair inputs (proven)", f"{result.unfair_size:.6g}")
    if result.measure_lower is not None:
        table.add_row("measure (sound bounds)", f"[{result.measure_lower:.6f}, {result.measure_upper:.6f}]")
    if result.statistical is not None:
        s = result.statistical
        if s.samples == 0 and s.ci_low == s.ci_high:
            table.add_row("unfair share", f"{100 * s.unfair:.4f} % (exact: nothing undecided to sample)")
        else:
            table.add_row("unfair share (statistical)",
                          f"{100 * s.unfair:.4f} % [{100 * s.ci_low:.4f}, {100 * s.ci_high:.4f}] "
                          f"at {100 * s.confidence:g}%, {s.samples:,} samples")
    table.add_row("counterexamples (re-checked)", f"{len(result.counterexamples):,}")
    table.add_row("engine / time", f"{result.engine} / {result.elapsed_s:.2f} s")
    if (result.stats or {}).get("memory_limited"):
        table.add_row("stopped early", "[yellow]box memory limit reached before the time limit[/]")
    return table


def print_result(result: Result, max_examples: int = 3) -> None:
    out = console()
    out.print(result_table(result))
    names = result.column_names()
    for cex in result.counterexamples[:max_examples]:
        diff = [f"{names[i]}: {a:g} -> {b:g}"
                for i, (a, b) in enumerate(zip(cex.x, cex.x_prime)) if a != b]
        out.print(f"  counterexample: output {cex.output:+.4g} vs {cex.output_prime:+.4g} when " + "; ".join(diff))
