"""EmpiricalPopulation: the data's rows as the distribution, each row with the same weight.

Under it P[yhat = 1 | group] is the model's selection rate on the group's rows, the number
fairlearn's MetricFrame(selection_rate) shows; it is computed exactly by running the model on
every row. Rows with a missing value in a column used are left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import DataError
from .base import Population


@dataclass
class EmpiricalPopulation(Population):
    """The rows of `frame` (no missing values in the columns used), `protected` and `label` named."""

    frame: Any
    protected: tuple[str, ...]
    label: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: Per row, the name of its group in each protected column (a bin's name for a binned column).
    groups: Any = None

    @classmethod
    def from_data(
        cls,
        frame: Any,
        columns: list[str],
        protected: list[str],
        label: str | None,
        bins: Any = None,
        max_bins: int = 10,
    ) -> EmpiricalPopulation:
        """The rows of `frame`; a continuous protected column is grouped by `bins` (never implicitly)."""
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
        kept = kept.reset_index(drop=True)
        import pandas as pd

        from .discretize import discretise

        named = discretise(
            kept,
            list(protected),
            protected=protected,
            max_bins=max_bins,
            bins={p: b for p, b in (bins or {}).items() if p in protected},
        )
        groups = pd.DataFrame({c.name: [c.labels[k] for k in c.codes] for c in named})
        return cls(
            kept,
            tuple(protected),
            label,
            {"rows": len(kept), "rows_dropped_missing": int(len(frame) - len(kept))},
            groups,
        )

    def describe(self) -> str:
        return f"empirical: the data's {self.info.get('rows', len(self.frame)):,} rows, each with equal weight"

    def __str__(self) -> str:
        return self.describe()
