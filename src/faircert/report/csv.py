"""Counterexamples as CSV with feature names (and category names): one row per pair, the twin's columns
suffixed."""

from __future__ import annotations

import csv
from pathlib import Path

from ..files import write_atomic
from ..results import Result


def write_counterexamples(result: Result, path: str | Path) -> int:
    names = [spreadsheet_safe(str(n)) for n in result.column_names()]
    header = list(names) + [f"{n}_prime" for n in names] + ["output", "output_prime"]
    raw = result.column_names()

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for c in result.counterexamples:
            writer.writerow(
                [_fmt(result.value_name(n, v)) for n, v in zip(raw, c.x)]
                + [_fmt(result.value_name(n, v)) for n, v in zip(raw, c.x_prime)]
                + [_cell(c.output), _cell(c.output_prime)]
            )

    write_atomic(path, write, newline="")
    return len(result.counterexamples)


def write_partitions(result: Result, path: str | Path) -> int:
    """One row per partition: id, verdict, seconds, evidence, the bounds of the cut features, and
    the counterexample's two inputs (empty unless unfair)."""
    rows = result.partitions or []
    cut = list(rows[0]["lower"]) if rows else []
    names = [spreadsheet_safe(str(n)) for n in result.column_names()]
    header = (
        ["partition", "verdict", "seconds", "evidence"]
        + [f"{spreadsheet_safe(str(n))}_min" for n in cut]
        + [f"{spreadsheet_safe(str(n))}_max" for n in cut]
        + [f"x_{n}" for n in names]
        + [f"x_prime_{n}" for n in names]
    )

    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in rows:
            pair = r["counterexample"]
            xs = [_fmt(v) for v in pair["x"]] + [_fmt(v) for v in pair["x_prime"]] if pair else [""] * (2 * len(names))
            writer.writerow(
                [r["id"], r["verdict"], f"{r['seconds']:.6f}", r["evidence"] or ""]
                + [_fmt(r["lower"][n]) for n in cut]
                + [_fmt(r["upper"][n]) for n in cut]
                + xs
            )

    write_atomic(path, write, newline="")
    return len(rows)


def _fmt(value: float | str) -> str:
    if isinstance(value, str):  # a category's name
        return spreadsheet_safe(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """Text a spreadsheet shows as text: a leading formula character is escaped with a quote."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def safe_frame(frame):
    """A DataFrame whose text cells and column names a spreadsheet shows as text."""
    import pandas as pd

    frame = frame.rename(columns=lambda c: spreadsheet_safe(str(c)))
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):  # object or string columns
            frame[column] = [spreadsheet_safe(v) if isinstance(v, str) else v for v in frame[column]]
    return frame


def _cell(value: object) -> object:
    """Numbers stay numbers; text (a class label) is made spreadsheet-safe."""
    return spreadsheet_safe(value) if isinstance(value, str) else value
