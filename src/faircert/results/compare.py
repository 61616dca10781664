"""Several models' group fairness side by side (e.g. an original model and a mitigated one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import Verdict
from .group import GroupResult

#: A comparison's `stopped`: the first of these any model's run stopped for.
STOPPED_ORDER = ("memory limit", "interrupted", "time limit", "sample budget")

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd


@dataclass
class Comparison(Verdict):
    """One GroupResult per model, under the same data, groups and thresholds. The verdict is the
    worst of theirs: unfair if any model is proven unfair, fair if all are proven fair."""

    verdict: str
    names: list[str]
    results: list[GroupResult] = field(default_factory=list)

    @classmethod
    def of(cls, names: list[str], results: list[GroupResult]) -> Comparison:
        verdicts = [r.verdict for r in results]
        verdict = "unfair" if "unfair" in verdicts else "fair" if all(v == "fair" for v in verdicts) else "unknown"
        return cls(verdict, list(names), list(results))

    @property
    def stopped(self) -> str:
        """Why the comparison ended short, if any model's run did: the most pressing of their reasons
        (memory limit, interrupted, time limit, sample budget), else "done"."""
        reasons = {r.stopped for r in self.results}
        return next((s for s in STOPPED_ORDER if s in reasons), "done")

    def to_frame(self) -> pd.DataFrame:
        """One row per model: verdict, each metric's bounds, and each group's P[yhat = 1 | group]."""
        import pandas as pd

        rows = []
        for name, r in zip(self.names, self.results):
            row: dict[str, Any] = {"model": name, "verdict": r.verdict}
            for m in r.metrics.values():
                row[f"{m.name}_low"], row[f"{m.name}_high"] = m.low, m.high
            row.update({f"P[yhat=1 | {k}]": v for k, v in r.rates.items()})
            row["population"] = r.population
            rows.append(row)
        return pd.DataFrame(rows).set_index("model")

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "stopped": self.stopped,
            "models": [{"name": n, **r.to_dict()} for n, r in zip(self.names, self.results)],
        }

    def __str__(self) -> str:
        """A readable table: one line per model, its verdict and every metric's bounds."""
        lines = [f"verdict: {self.verdict} (worst of {len(self.results)} models)"]
        for name, r in zip(self.names, self.results):
            metrics = "  ".join(f"{m.name} [{m.low:.4f}, {m.high:.4f}]" for m in r.metrics.values())
            stopped = "" if r.stopped in ("", "done") else f"  (stopped: {r.stopped})"
            lines.append(f"  {name}: {r.verdict}  {metrics}  (population: {r.population}){stopped}")
        return "\n".join(lines)
