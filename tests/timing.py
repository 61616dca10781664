"""Wall-clock bounds that hold on a busy machine (CI shares its cores with other jobs).

A test that checks a run keeps its time limit can only bound the wall time: an engine stops
between steps, and under load a step (or starting a process) takes several times as long as on a
quiet machine. `wall(seconds)` turns what a run takes on a quiet machine into such a bound: still
far below what a run that ignored its limit would take.
"""

from __future__ import annotations

#: how many times slower than on a quiet machine a run may go when other processes take the cores
LOAD = 3.0
#: seconds on top: starting processes and first calls, on a busy machine
SLACK_S = 5.0


def wall(seconds: float) -> float:
    """A bound on the wall time of what takes `seconds` on a quiet machine."""
    return LOAD * seconds + SLACK_S
