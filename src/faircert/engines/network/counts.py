"""What the network engines have done so far: their counters, as typed records.

A worker counts its own work; the driver adds the workers' counts to its own (`absorb`). A
checkpoint carries them under the same names, and reads them back checked (`of_state`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TypeVar

C = TypeVar("C", bound="Counters")


@dataclass
class Counters:
    """Non-negative counts and seconds; subclasses name them."""

    def absorb(self, other: Counters) -> None:
        """Add another worker's work to these counts."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)

    @classmethod
    def of_state(cls: type[C], state: dict) -> C:
        """The counts a checkpoint saved (untrusted: ValueError unless every one is a non-negative
        number of its kind; KeyError or TypeError when one is missing or not a number)."""
        counts = cls(**{f.name: state[f.name] for f in fields(cls)})
        for f in fields(cls):
            value = getattr(counts, f.name)
            kinds = (int,) if f.type == "int" else (int, float)
            if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value < float("inf"):
                raise ValueError(f"the counter {f.name!r} is not a non-negative number")
        return counts


@dataclass
class Counts(Counters):
    """The box refinement's counters (`settle`)."""

    boxes_bounded: int = 0  # boxes bounded by the refinement
    boxes_bounded_grow: int = 0  # boxes bounded while growing unfair boxes around counterexamples
    boxes_exact: int = 0  # boxes decided by enumerating their points
    points_exact: int = 0
    boxes_grown: int = 0  # unfair boxes grown around counterexamples
    grow_calls: int = 0
    cuts: int = 0  # boxes cut along a bound's hyperplane
    t_bound: float = 0.0  # seconds bounding
    t_exact: float = 0.0
    t_grow: float = 0.0
    t_credit: float = 0.0  # seconds proving shares of undecided boxes by their linear forms


@dataclass
class RegionCounts(Counters):
    """The complete check's counters (`complete`); the parallel driver adds its chunks' counts
    whole, rounds included (the rounds of all branch-and-bound runs)."""

    boxes_bounded: int = 0
    boxes_exact: int = 0  # boxes decided by enumerating their points
    milp_calls: int = 0
    milp_fair: int = 0  # boxes the MILP proved fair
    milp_pairs: int = 0  # counterexamples the MILP found that re-checked on the model
    milp_unknown: int = 0  # MILP calls that ended undecided
    milp_s: float = 0.0  # seconds in the MILP (neuron splitting included)
    phases_fair: int = 0  # boxes neuron splitting proved fair
    phases_s: float = 0.0
    pairs_rejected: int = 0  # candidate pairs that did not re-check on the model
    rounds: int = 0
