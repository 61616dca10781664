"""Results of program questions: probability and ratio intervals, sound or statistical."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import Verdict

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd


@dataclass
class ProgramResult(Verdict):
    """Group fairness of a decision program under a population: probability and ratio intervals.

    `guarantee` is "sound" (the intervals are mathematical bounds) or, for the sampling method,
    a statement of the error probability of the verdict (e.g. "P[wrong verdict] <= 1e-06").
    """

    verdict: str
    ratio_low: float
    ratio_high: float
    probabilities: dict[str, tuple[float, float]]
    epsilon: float
    method: str
    guarantee: str
    elapsed_s: float
    samples: int | None = None
    kind: str = "ratio"
    program: str = ""
    #: Why the engine stopped without a verdict ("time limit", "box budget", ...), else "".
    stopped: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    #: The registered engine that answered (`faircert.engines.registry`).
    engine: str = ""

    @property
    def ratio(self) -> tuple[float, float]:
        return (self.ratio_low, self.ratio_high)

    def to_frame(self) -> pd.DataFrame:
        """The probability bounds as a pandas DataFrame (one row per probability: low, high)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "low": {k: lo for k, (lo, _) in self.probabilities.items()},
                "high": {k: hi for k, (_, hi) in self.probabilities.items()},
            },
            columns=["low", "high"],
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "ratio": {"low": _finite(self.ratio_low), "high": _finite(self.ratio_high)},
            "probabilities": {k: {"low": lo, "high": hi} for k, (lo, hi) in self.probabilities.items()},
            "epsilon": _finite(self.epsilon),
            "kind": self.kind,
            "method": self.method,
            "guarantee": self.guarantee,
            "engine": self.engine,
            "elapsed_s": self.elapsed_s,
            "program": self.program,
            "stopped": self.stopped,
            "stats": self.stats,
        }
        if self.samples is not None:
            out["samples"] = self.samples
        return out

    def __str__(self) -> str:
        lines = [
            f"verdict: {self.verdict} ({self.method}, {self.guarantee}, {self.elapsed_s:.2f} s)",
            f"program: {self.program}",
            f"ratio in [{self.ratio_low:.6f}, {self.ratio_high:.6f}]  (fair iff > {1 - self.epsilon:g}, {self.kind})"
            if not self.kind.startswith("probability")
            else f"property: {self.kind}",
        ]
        for name, (lo, hi) in self.probabilities.items():
            lines.append(f"  P[{name}] in [{lo:.6f}, {hi:.6f}]")
        if self.samples is not None:
            lines.append(f"samples: {self.samples}")
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)


def _finite(x: float) -> float | str:
    """JSON has no infinity: an unbounded ratio end is written as the string "inf"."""
    return x if math.isfinite(x) else str(x)
