"""The per-row audit's options: the budget of `audit` and the per-row budgets of the model kinds."""

from __future__ import annotations

from dataclasses import dataclass

from ...options import AuditOptions
from .audit import RowLimits


@dataclass(frozen=True)
class RowsOptions(AuditOptions):
    """`AuditOptions` with `RowLimits`' per-row budgets (the same names, meanings and defaults):
    the budgets an `unknown` row's reason names."""

    max_cells: int = RowLimits.max_cells
    max_twins: int | None = RowLimits.max_twins
    milp_seconds: float = RowLimits.milp_seconds

    def __post_init__(self) -> None:
        super().__post_init__()
        RowLimits.of(self)  # checks the budgets
