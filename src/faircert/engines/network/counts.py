"""What a network box refinement has done so far: its counters, one typed record.

Each chunk of a round counts its own work; the driver adds the chunks' counts to its own
(`absorb`) and counts the rounds itself. A checkpoint carries them under the same names."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class Counts:
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
    rounds: int = 0  # the driver's rounds (not added from chunks)

    def absorb(self, chunk: Counts) -> None:
        """Add a chunk's work to these counts."""
        for f in fields(self):
            if f.name != "rounds":
                setattr(self, f.name, getattr(self, f.name) + getattr(chunk, f.name))

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)

    @classmethod
    def of_state(cls, state: dict) -> Counts:
        """The counts a checkpoint saved (untrusted: ValueError unless every one is a non-negative
        number of its kind; KeyError or TypeError when one is missing or not a number)."""
        counts = cls(**{f.name: state[f.name] for f in fields(cls)})
        for f in fields(cls):
            value = getattr(counts, f.name)
            kinds = (int,) if f.type == "int" else (int, float)
            if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value < float("inf"):
                raise ValueError(f"the counter {f.name!r} is not a non-negative number")
        return counts
