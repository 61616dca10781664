"""EmpiricalPopulation: the data's rows as the distribution, each row with the same weight.

Under it P[yhat = 1 | group] is the model's selection rate on the group's rows, the number
fairlearn's MetricFrame(selection_rate) shows; it is computed exactly by running the model on
every row. Rows with a missing value in a column used are left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import DataError


@dataclass
class EmpiricalPopulation:
    """The rows of `frame` (no missing values in the columns used), `protected` and `label` named."""

    frame: Any
    protected: tuple[str, ...]
    label: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_data(cls, frame: Any, columns: list[str], protected: list[str], label: str | None) -> EmpiricalPopulation:
        used = list(dict.fromkeys(list(protected) + list(columns) + ([label] if label else [])))
        have = [str(c) for c in frame.columns]
        missing = [c for c in used if c not in have]
        if missing:
            raise DataError(f"unknown column(s) {missing}; the data has: {', '.join(have)}")
        frame = frame.copy()
        frame.columns = have
        kept = frame.dropna(subset=used)
        if kept.empty:
            raise DataError("no data rows without missing values in the columns used")
        return cls(kept.reset_index(drop=True), tuple(protected), label,
                   {"rows": len(kept), "rows_dropped_missing": int(len(frame) - len(kept))})

    def describe(self) -> str:
        return f"empirical: the data's {self.info.get('rows', len(self.frame)):,} rows, each with equal weight"

    def __str__(self) -> str:
        return self.describe()
