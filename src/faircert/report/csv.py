"""Counterexamples as CSV with feature names (and category names): one row per pair, the twin's columns
suffixed."""

from __future__ import annotations

import csv
from pathlib import Path

from ..errors import FaircertError
from ..results import Result


def write_counterexamples(result: Result, path: str | Path) -> int:
    names = result.column_names()
    header = list(names) + [f"{n}_prime" for n in names] + ["output", "output_prime"]
    try:
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            for c in result.counterexamples:
                writer.writerow([_fmt(result.value_name(n, v)) for n, v in zip(names, c.x)]
                                + [_fmt(result.value_name(n, v)) for n, v in zip(names, c.x_prime)]
                                + [c.output, c.output_prime])
    except OSError as exc:
        raise FaircertError(f"cannot write {path}: {exc}") from None
    return len(result.counterexamples)


def _fmt(value: float | str) -> str:
    if isinstance(value, str):  # a category's name
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))
