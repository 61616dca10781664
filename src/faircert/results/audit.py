"""Result of an audit table: selection rates by protected attribute and by their intersection, in the
form a bias audit publishes (NYC Local Law 144: selection rates and impact ratios for sex, race and
their intersection, the rows with missing demographics counted apart, categories under 2% of the
data flagged and optionally left out of the impact ratios).

Counts are exact on the rows; each rate's interval reads the rows as a sample of the population
they were drawn from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import jsonable, report_html, versioned
from .explain import Rate

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd


@dataclass
class AuditCell:
    """One category (or intersection of categories) of a table."""

    group: dict[str, str]
    count: int
    #: the cell's share of all rows (those with a missing protected value included)
    share: float
    selected: int
    selection_rate: Rate
    #: the selection rate over the table's highest (None where it is 0, or the cell is left out)
    impact_ratio: float | None
    #: under the small-cell threshold
    small: bool
    #: rows scored above the median score of all rows, its rate and ratio (score outputs only)
    scored_above: int | None = None
    scoring_rate: Rate | None = None
    scoring_impact_ratio: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "group": dict(self.group),
            "count": self.count,
            "share": self.share,
            "selected": self.selected,
            "selection_rate": self.selection_rate.to_dict(),
            "impact_ratio": self.impact_ratio,
            "small": self.small,
        }
        if self.scoring_rate is not None:
            out |= {
                "scored_above_median": self.scored_above,
                "scoring_rate": self.scoring_rate.to_dict(),
                "scoring_impact_ratio": self.scoring_impact_ratio,
            }
        return out


@dataclass
class AuditTable:
    """The cells of one attribute, or of the intersection of several."""

    attributes: list[str]
    cells: list[AuditCell]
    #: rows left out of this table because one of its attributes is missing
    missing: int

    @property
    def name(self) -> str:
        return " x ".join(self.attributes)

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        lines = []
        for c in self.cells:
            line: dict[str, Any] = dict(c.group) | {
                "count": c.count,
                "share": c.share,
                "selected": c.selected,
                "selection_rate": c.selection_rate.estimate,
                "low": c.selection_rate.low,
                "high": c.selection_rate.high,
                "impact_ratio": c.impact_ratio,
                "small": c.small,
            }
            if c.scoring_rate is not None:
                line |= {
                    "scoring_rate": c.scoring_rate.estimate,
                    "scoring_low": c.scoring_rate.low,
                    "scoring_high": c.scoring_rate.high,
                    "scoring_impact_ratio": c.scoring_impact_ratio,
                }
            lines.append(line)
        return pd.DataFrame(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "attributes": list(self.attributes),
            "missing": self.missing,
            "cells": [c.to_dict() for c in self.cells],
        }


@dataclass
class AuditTables:
    """One table per protected attribute, then one for their intersection (two or more)."""

    tables: list[AuditTable]
    rows: int
    confidence: float
    #: cells under this share of all rows are flagged `small`
    small_share: float
    #: whether small cells are left out of the impact ratios (theirs and the reference rate)
    exclude_small: bool
    #: the median score of all rows (None: the decisions alone were given)
    median_score: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def table(self, *attributes: str) -> AuditTable:
        for t in self.tables:
            if t.attributes == list(attributes):
                return t
        raise KeyError(" x ".join(attributes))

    def to_frames(self) -> dict[str, pd.DataFrame]:
        return {t.name: t.to_frame() for t in self.tables}

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "confidence": self.confidence,
            "small_share": self.small_share,
            "exclude_small": self.exclude_small,
            "median_score": self.median_score,
            "intervals": f"Clopper-Pearson, each at {self.confidence:g}",
            "tables": [t.to_dict() for t in self.tables],
            "stats": dict(self.stats),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(versioned(self.to_dict()), indent=indent, default=jsonable)

    def _repr_html_(self) -> str:
        return report_html(self)

    def __str__(self) -> str:
        lines = []
        for t in self.tables:
            lines.append(f"{t.name} ({t.missing:,} rows with a missing value left out):")
            for c in t.cells:
                ratio = "-" if c.impact_ratio is None else f"{c.impact_ratio:.3f}"
                lines.append(
                    f"  {' / '.join(c.group.values())}: {c.count:,} rows, selection rate {c.selection_rate}, "
                    f"impact ratio {ratio}{'  (under ' + format(self.small_share, '.0%') + ')' if c.small else ''}"
                )
        return "\n".join(lines)
