"""Counterexamples as CSV with feature names: one row per pair, the twin's columns suffixed."""

from __future__ import annotations

import csv
from pathlib import Path

from ..files import write_atomic
from ..results import Result


def write_counterexamples(result: Result, path: str | Path) -> int:
    names = result.column_names()
    header = list(names) + [f"{n}_prime" for n in names] + ["output", "output_prime"]

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for c in result.counterexamples:
            writer.writerow([_fmt(v) for v in c.x] + [_fmt(v) for v in c.x_prime] + [c.output, c.output_prime])

    write_atomic(path, write, newline="")
    return len(result.counterexamples)


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
