"""What an engine reports while it runs: one event type for every engine and question.

Callbacks passed as `progress=` receive `ProgressEvent`s, a few per second at most. Every event
has the seconds elapsed; the other fields are those the engine tracks (None otherwise), so a
progress bar reads `certified` and `falsified` whichever engine answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProgressEvent:
    """One report of a running engine."""

    elapsed_s: float
    #: Shares proven fair, proven unfair and still open (of the domain, the population, the rows or
    #: the partitions, as the question asks).
    certified: float | None = None
    falsified: float | None = None
    undecided: float | None = None
    #: Any-time bounds on the fairness measure of tree ensembles (fair share of the confident inputs).
    measure_lower: float | None = None
    measure_upper: float | None = None
    #: Boxes examined (box refinements) or still open (complete checks).
    boxes: int | None = None
    #: Refinement steps (probability bounds).
    iterations: int | None = None
    #: Rows audited so far, of `rows`.
    rows_done: int | None = None
    rows: int | None = None
    #: Partitions (regions) decided so far, of `partitions`.
    decided: int | None = None
    partitions: int | None = None
    #: Draws made (sequential tests) or pairs written (counterexample samples).
    samples: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields the engine reported (for JSON lines)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def __getitem__(self, key: str) -> Any:
        """A reported field by name, so callbacks written for mappings keep working."""
        value = getattr(self, key, None) if key in _FIELDS else None
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


_FIELDS = frozenset(f.name for f in dataclasses.fields(ProgressEvent))

#: A progress callback.
Progress = Callable[[ProgressEvent], None]
