"""The limits every box runner checks (`engines.boxes.budget`): which one ends a run, and its words."""

from __future__ import annotations

import pytest

from faircert import interrupt
from faircert.engines.boxes.budget import FLAGS, STOPS, Budget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


def test_each_limit_ends_the_run_in_its_words(clock):
    budget = Budget.of(10.0, max_boxes=50, clock=clock)
    assert budget.deadline == 110.0 and budget.left() == 10.0
    assert not budget.spent(examined=49) and budget.stopped == "done" and budget.flags() == {}
    assert budget.spent(examined=50) and budget.stopped == "box budget"
    assert budget.flags() == {"box_budget_reached": True}
    assert Budget.of(None, clock=clock).spent(memory_full=True)
    clock.now = 109.5
    late = Budget(110.0, clock=clock)
    assert late.spent(ahead_s=1.0) and late.stopped == "time limit"  # the next step would end past it
    assert not Budget(110.0, clock=clock).spent(ahead_s=0.25)


def test_the_box_budget_counts_only_where_the_runner_says(clock):
    budget = Budget(None, max_boxes=0, clock=clock)
    assert not budget.spent(examined=None) and budget.stopped == "done"
    assert budget.spent(examined=0) and budget.stopped == "box budget"


def test_time_comes_first_then_a_stop_request_then_boxes_then_memory(clock):
    interrupt.request()
    try:
        both = Budget(90.0, max_boxes=1, clock=clock)
        assert both.spent(examined=5, memory_full=True) and both.stopped == "time limit"
        asked = Budget(None, max_boxes=1, clock=clock)
        assert asked.spent(examined=5, memory_full=True) and asked.stopped == "interrupted"
        assert asked.flags() == {"interrupted": True}
    finally:
        interrupt.clear()
    full = Budget(None, max_boxes=10, clock=clock)
    assert full.spent(examined=5, memory_full=True) and full.stopped == "memory limit"
    assert full.flags() == {"memory_limited": True}


def test_a_run_that_watched_its_own_deadline_says_why_it_ended(clock):
    assert Budget(50.0, clock=clock).ended(complete=True) == "done"
    assert Budget(50.0, clock=clock).ended(complete=False) == "time limit"
    assert Budget(150.0, clock=clock).ended(complete=False, memory_full=True) == "memory limit"
    assert Budget(150.0, clock=clock).ended(complete=False) == "done"  # nothing left it could refine
    assert set(FLAGS) < set(STOPS)


def test_the_report_says_which_limit_ended_the_run():
    from rich.console import Console

    from faircert.report.verify import result_table
    from faircert.results.verify import Result

    def shown(stopped: str) -> str:
        out = Console(record=True, width=200)
        out.print(result_table(Result("unknown", 0.5, 0.0, 0.5, 100.0, stopped=stopped)))
        return out.export_text()

    assert "stopped by" in shown("box budget") and "the box budget (--budget boxes=N)" in shown("box budget")
    assert "stopped by" not in shown("done")
