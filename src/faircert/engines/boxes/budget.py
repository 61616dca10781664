"""When a run stops: its time limit, its box budget, a stop request or its memory limit.

Every box runner (the networks' rounds and regions, the sharded refinement of trees) asks its
`Budget` between steps whether to go on, so the limits are checked the same way, in this order,
everywhere. The first one reached ends the run and is kept in the words results use
(`Result.stopped`, as the per-row audit and program results do); a run that ends because nothing
is left open says "done".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ... import memory
from ...interrupt import requested as stop_requested

DONE = "done"
TIME_LIMIT = "time limit"
INTERRUPTED = "interrupted"
BOX_BUDGET = "box budget"
MEMORY_LIMIT = memory.STOPPED
STOPS = (DONE, TIME_LIMIT, INTERRUPTED, BOX_BUDGET, MEMORY_LIMIT)
#: the flag each reason also sets in a result's `stats`, as results said before `stopped` existed
FLAGS = {INTERRUPTED: "interrupted", BOX_BUDGET: "box_budget_reached", MEMORY_LIMIT: "memory_limited"}


@dataclass
class Budget:
    """A run's limits: a `deadline` on `clock` (None: no time limit) and `max_boxes` examined
    (None: no budget); `stopped` says which one ended the run."""

    deadline: float | None = None
    max_boxes: int | None = None
    clock: Callable[[], float] = time.monotonic
    stopped: str = DONE

    @classmethod
    def of(
        cls,
        time_limit: float | None,
        *,
        max_boxes: int | None = None,
        share: float = 1.0,
        elapsed: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> Budget:
        """The budget of a run that may take `share` of `time_limit` seconds, of which `elapsed`
        are already spent."""
        deadline = None if time_limit is None else clock() + share * time_limit - elapsed
        return cls(deadline, max_boxes, clock)

    def left(self) -> float:
        """Seconds to the deadline (infinite without one)."""
        return math.inf if self.deadline is None else self.deadline - self.clock()

    def spent(self, *, examined: int | None = None, memory_full: bool = False, ahead_s: float = 0.0) -> bool:
        """Whether the run must stop before its next step (which takes about `ahead_s` seconds),
        with `examined` boxes examined so far (None: not a point where the box budget may end the
        run) and its state over the memory limit or not. The reason is kept in `stopped`."""
        if self.deadline is not None and self.clock() + ahead_s > self.deadline:
            self.stopped = TIME_LIMIT
        elif stop_requested():
            self.stopped = INTERRUPTED
        elif self.max_boxes is not None and examined is not None and examined >= self.max_boxes:
            self.stopped = BOX_BUDGET
        elif memory_full:
            self.stopped = MEMORY_LIMIT
        else:
            return False
        return True

    def flags(self) -> dict[str, bool]:
        """The `stats` flag of the reason the run stopped, if it has one."""
        return {FLAGS[self.stopped]: True} if self.stopped in FLAGS else {}

    def ended(self, complete: bool, memory_full: bool = False) -> str:
        """Why a run whose own loops watched the deadline ended: "done" when `complete`, else the
        first limit that holds now (none: it had nothing left that it could refine)."""
        if not complete:
            self.spent(memory_full=memory_full)
        return self.stopped
