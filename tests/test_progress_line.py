"""The progress line shows elapsed and remaining time before its details (a narrow terminal cuts
the end of the line, not the time)."""

from __future__ import annotations

from types import SimpleNamespace

from faircert.report.console import BudgetColumn


def test_budget_column_shows_elapsed_and_time_left():
    assert BudgetColumn(60.0).render(SimpleNamespace(elapsed=12.4)).plain == "12s, 48s left"
    assert BudgetColumn(600.0).render(SimpleNamespace(elapsed=75.0)).plain == "1m15s, 8m45s left"
    assert BudgetColumn(None).render(SimpleNamespace(elapsed=None)).plain == "0s"
    assert BudgetColumn(10.0).render(SimpleNamespace(elapsed=11.0)).plain == "11s, 0s left"
