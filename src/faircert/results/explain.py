"""Result of `explain`: rules in raw units that say where the unfair decisions are, and where none
was seen.

A rule is a conjunction of conditions: a numeric range (inclusive; either end may be open) or a set
of categories by name. Rules are found on one half of the rows and measured on the other half
(`selection: split-half`), so each rule's interval and p-value are those of a fixed rule on rows the
search never saw. Counts over the data (`rows`, `unfair_rows`, `share`) are exact on all rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Verdict

if TYPE_CHECKING:  # pandas is imported where a frame is read
    import pandas as pd


@dataclass(frozen=True)
class Rate:
    """A rate with its two-sided interval at `confidence` (estimate None where no row was measured)."""

    estimate: float | None
    low: float
    high: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "confidence": self.confidence}

    def __str__(self) -> str:
        if self.estimate is None:
            return "no rows"
        return f"{100 * self.estimate:.1f}% [{100 * self.low:.1f}, {100 * self.high:.1f}]"


@dataclass(frozen=True)
class Condition:
    """`low <= feature <= high` (either end None: open) or `feature in values` (category names)."""

    feature: str
    low: float | None = None
    high: float | None = None
    values: tuple[str, ...] | None = None

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows that meet the condition; a missing value meets none."""
        column = frame[self.feature]
        if self.values is not None:
            present = np.asarray(column.notna(), dtype=bool)
            named: np.ndarray = present & np.asarray(column.astype(str).isin(self.values), dtype=bool)
            return named
        x = column.to_numpy(dtype=np.float64, na_value=np.nan)
        ok = ~np.isnan(x)
        if self.low is not None:
            ok &= x >= self.low
        if self.high is not None:
            ok &= x <= self.high
        inside: np.ndarray = ok
        return inside

    def to_dict(self) -> dict[str, Any]:
        if self.values is not None:
            return {"feature": self.feature, "in": list(self.values)}
        return {"feature": self.feature, "low": self.low, "high": self.high}

    def __str__(self) -> str:
        if self.values is not None:
            return f"{self.feature} in {{{', '.join(self.values)}}}"
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            return f"{self.feature} = {low}" if self.low == self.high else f"{low} <= {self.feature} <= {high}"
        return f"{self.feature} >= {low}" if self.low is not None else f"{self.feature} <= {high}"


def _number(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


@dataclass
class Rule:
    """A conjunction of conditions, with its counts on all rows and its rate on the held-out half."""

    conditions: list[Condition]
    #: share of all rows (unknown ones included) the rule holds: exact on the data
    share: float
    rows: int
    unfair_rows: int
    #: rows of the rule whose verdict is unknown (left out of every rate)
    unknown_rows: int
    #: the unfair rate of the rule's decided rows in the held-out half, with its interval
    unfair_rate: Rate
    #: decided rows and unfair rows of the held-out half the rate is measured on
    measured_rows: int
    measured_unfair: int
    #: the rate over the global unfair rate (None where either is unmeasured or the global rate is 0)
    lift: float | None
    #: one-sided Fisher test (in-rule rate above the rest for unfair rules, below for fair ones) on the
    #: held-out half, Benjamini-Hochberg-adjusted over every rule reported
    p_value: float
    #: the proven-unfair mass inside the rule under a domain population; None for data rows
    proven_unfair_share: float | None = None
    #: "empirical" (no unfair row seen: not a proof) or "proven"; fair rules only
    evidence: str | None = None
    #: unfair rows of the rule the protected attribute alone flips, those that need epsilon-moves,
    #: and how often each epsilon-feature moved (None where the verdicts came without twins)
    changes: dict[str, Any] | None = None
    #: a few unfair rows of the rule (raw values), for the report
    examples: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        out = np.ones(len(frame), dtype=bool)
        for c in self.conditions:
            out &= c.mask(frame)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "conditions": [c.to_dict() for c in self.conditions],
            "share": self.share,
            "rows": self.rows,
            "unfair_rows": self.unfair_rows,
            "unknown_rows": self.unknown_rows,
            "unfair_rate": self.unfair_rate.to_dict(),
            "measured_on": {"rows": self.measured_rows, "unfair_rows": self.measured_unfair},
            "lift": self.lift,
            "p_value": self.p_value,
            "proven_unfair_share": self.proven_unfair_share,
        }
        if self.evidence is not None:
            out["evidence"] = self.evidence
        if self.changes is not None:
            out["changes"] = self.changes
        return out

    def __str__(self) -> str:
        return " and ".join(str(c) for c in self.conditions) or "all rows"


@dataclass
class GroupCell:
    """The unfair rate of one protected group (a cell of their intersection) over its decided rows."""

    group: dict[str, str]
    rows: int
    unfair_rows: int
    unfair_rate: Rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": dict(self.group),
            "rows": self.rows,
            "unfair_rows": self.unfair_rows,
            "unfair_rate": self.unfair_rate.to_dict(),
        }


@dataclass
class ExplainResult(Verdict):
    """Rules locating the unfair rows, regions where none was seen, and the rates by protected group."""

    verdict: str
    rules: list[Rule]
    fair_rules: list[Rule]
    #: the global unfair rate over all decided rows (exact count; interval for the population)
    unfair_rate: Rate
    #: the measure the rules' shares are over: "rows" or "empirical" (the data's rows), or "uniform"
    #: or "independent" (the domain: `rows` are then points drawn from it, each decided exactly)
    population: str
    rows: int
    unfair_rows: int
    unknown_rows: int
    #: how the rules' p-values and intervals stay honest after the search
    selection: str = "split-half"
    protected: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    by_group: list[GroupCell] = field(default_factory=list)
    model: str = ""
    elapsed_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    #: the engine of the per-row audit whose verdicts the rules explain ("" where the verdicts were given)
    engine: str = ""

    @property
    def confidence(self) -> float:
        return self.unfair_rate.confidence

    def coverage(self) -> float:
        """The share of the unfair rows that at least one rule holds (exact on the data)."""
        return float(self.stats.get("covered_unfair_rows", 0)) / max(self.unfair_rows, 1)

    def to_frame(self) -> pd.DataFrame:
        """One line per rule (unfair rules first, then fair ones): the rule, counts, rate, lift, p."""
        import pandas as pd

        lines = [
            {
                "kind": kind,
                "rule": str(r),
                "share": r.share,
                "rows": r.rows,
                "unfair_rows": r.unfair_rows,
                "unfair_rate": r.unfair_rate.estimate,
                "low": r.unfair_rate.low,
                "high": r.unfair_rate.high,
                "lift": r.lift,
                "p_value": r.p_value,
                "proven_unfair_share": r.proven_unfair_share,
            }
            for kind, rules in (("unfair", self.rules), ("fair", self.fair_rules))
            for r in rules
        ]
        return pd.DataFrame(
            lines,
            columns=[
                "kind",
                "rule",
                "share",
                "rows",
                "unfair_rows",
                "unfair_rate",
                "low",
                "high",
                "lift",
                "p_value",
                "proven_unfair_share",
            ],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "rules": [r.to_dict() for r in self.rules],
            "fair_rules": [r.to_dict() for r in self.fair_rules],
            "unfair_rate": self.unfair_rate.to_dict(),
            "population": self.population,
            "rows": self.rows,
            "unfair_rows": self.unfair_rows,
            "unknown_rows": self.unknown_rows,
            "coverage": self.coverage(),
            "selection": self.selection,
            "confidence": self.confidence,
            "protected": list(self.protected),
            "features": list(self.features),
            "by_group": [c.to_dict() for c in self.by_group],
            "model": self.model,
            "engine": self.engine,
            "elapsed_s": self.elapsed_s,
            "stats": dict(self.stats),
        }

    def __str__(self) -> str:
        level = f"{100 * self.confidence:g}%"
        lines = [
            f"unfair rows: {self.unfair_rows:,} of {self.rows - self.unknown_rows:,} decided "
            f"({self.unfair_rate} at {level}); {self.unknown_rows:,} unknown left out"
            + (f" (stopped: {self.stats['stopped']})" if self.stats.get("stopped") else ""),
            f"rules found on half the rows, measured on the other half ({self.selection}); "
            f"they hold {100 * self.coverage():.1f}% of the unfair rows",
        ]
        header = (
            f"{'#':>2}  {'share':>6}  {'unfair/rows':>13}  {'rate [' + level + ']':>22}  {'lift':>5}  {'p':>8}  rule"
        )
        for title, rules in (
            ("where the unfair rows are", self.rules),
            ("where no unfair row was seen", self.fair_rules),
        ):
            lines += ["", title + ":", header]
            for i, r in enumerate(rules, 1):
                lift = "-" if r.lift is None else f"{r.lift:.1f}"
                counts = f"{r.unfair_rows:,}/{r.rows:,}"
                proven = (
                    "" if r.proven_unfair_share is None else f"  (proven unfair {100 * r.proven_unfair_share:.2f}%)"
                )
                lines.append(
                    f"{i:>2}  {100 * r.share:5.1f}%  {counts:>13}  {str(r.unfair_rate):>22}  {lift:>5}  "
                    f"{_p(r.p_value):>8}  {r}{proven}"
                )
            if not rules:
                lines.append("    (none)")
        return "\n".join(lines)


def _p(p: float) -> str:
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"
