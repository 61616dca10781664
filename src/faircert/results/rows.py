"""Result of a per-row audit: each data row's verdict, its re-checked twin, and exact counts.

A row is `fair` (no allowed twin changes the decision: proven by closed form, enumeration of the
twins' ball, the tree cells it meets, or bounds and a MILP), `unfair` (a twin the model labels
differently, re-checked on the model) or `unknown`, with its reason in `methods`: a per-row budget
ran out (the reason names it), the run stopped at its time or memory limit, the model cannot
evaluate one of the row's values, or a decision sat within the rounding tolerance of the model's
threshold. Counts over the rows are exact: the rows are a finite set.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Verdict

if TYPE_CHECKING:  # pandas is imported where a frame is made
    import pandas as pd

ROW_VERDICTS = ("fair", "unfair", "unknown")
#: How the JSON lists the rows: "all" (every row's verdict and every unfair row), "summary"
#: (counts, reasons and the first `UNFAIR_SAMPLE` unfair rows), "auto" (all up to `LISTED_ROWS`).
JSON_ROWS = ("auto", "all", "summary")
LISTED_ROWS = 10_000
UNFAIR_SAMPLE = 100


@dataclass
class RowsResult(Verdict):
    """Per-row verdicts over a dataset, with the counterfactual flip test beside the epsilon answer."""

    verdict: str
    #: one of ROW_VERDICTS per input row, in the input's order
    verdicts: list[str]
    #: how each row was decided ("flip test", "closed form", "enumeration", "tree cells", "bounds",
    #: "milp", "search", or why it is unknown)
    methods: list[str]
    #: the twin x' of each unfair row (domain codes; None for the others)
    twins: list[list[float] | None]
    #: the model's label of each row (None: a row it cannot evaluate) and of its twin
    labels: list[int | None]
    twin_labels: list[int | None]
    #: rows the plain flip test (epsilon 0) finds unfair: exact, any model
    flip_unfair: int
    #: the protected group of each row (category names joined by "/")
    groups: list[str]
    rows: np.ndarray
    elapsed_s: float = 0.0
    engine: str = ""
    model: str = ""
    protected: list[str] = field(default_factory=list)
    epsilon: dict[str, float] = field(default_factory=dict)
    feature_names: list[str] = field(default_factory=list)
    categories: dict[str, list[str]] = field(default_factory=dict)
    stopped: str = "done"
    #: The measure of the shares: "uniform" (grid counts and volume), "independent" (the data's
    #: marginals), "empirical" (the data's rows) or "rows" (the rows given)
    population: str = "uniform"
    stats: dict[str, Any] = field(default_factory=dict)
    #: seconds spent reading the rows and the model (`read_s`), auditing (`audit_s`), kept back for
    #: the result and its files (`finish_reserve_s`) and, once written, writing them (`write_s`)
    timings: dict[str, float] = field(default_factory=dict)
    #: one of JSON_ROWS: how `to_dict` lists the rows
    json_rows: str = "auto"

    # ----- counts ----------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return len(self.verdicts)

    def counts(self) -> dict[str, int]:
        return {v: self.verdicts.count(v) for v in ROW_VERDICTS}

    @property
    def lists_rows(self) -> bool:
        """Whether the JSON lists every row (else it summarises them): see `json_rows`."""
        return self.json_rows == "all" or (self.json_rows == "auto" and self.n_rows <= LISTED_ROWS)

    @property
    def by_group(self) -> pd.DataFrame:
        """DataFrame: one row per protected group: rows, fair, unfair, unknown, unfair share, flip-test unfair."""
        import pandas as pd

        # counted in one pass (a large audit's rows are many; its groups and verdicts few)
        tally = Counter(zip(self.groups, self.verdicts))
        flips = Counter(itertools.compress(self.groups, self.stats.get("flip_rows", [])))
        names = sorted({g for g, _ in tally})
        table = pd.DataFrame(
            {v: [tally[g, v] for g in names] for v in ROW_VERDICTS} | {"flip_unfair": [flips[g] for g in names]},
            index=pd.Index(names, name="group"),
            dtype=np.int64,
        )
        table.insert(0, "rows", table[list(ROW_VERDICTS)].sum(axis=1))
        table["unfair_share"] = table["unfair"] / table["rows"]
        table["flip_unfair"] = table["flip_unfair"].astype(int)
        return table

    # ----- views -----------------------------------------------------------------------------------
    def value_name(self, feature: str, value: float) -> str | float | None:
        """A value as people read it: a category by name, a whole number as an int; None for no
        value (a row the model cannot evaluate)."""
        value = float(value)
        if not math.isfinite(value):
            return None
        names = self.categories.get(feature)
        if names is not None and value.is_integer() and 0 <= int(value) < len(names):
            return names[int(value)]
        return int(value) if value.is_integer() else value

    def changed(self, i: int) -> list[str]:
        """The features on which row i's twin differs from the row (none without a twin)."""
        twin = self.twins[i]
        if twin is None:
            return []
        return [n for j, n in enumerate(self.feature_names) if twin[j] != self.rows[i, j]]

    def to_frame(self) -> pd.DataFrame:
        """One line per input row, in the input's order: verdict, method (or why unknown), labels,
        the features the twin changes, then each feature's value in the row beside the twin's
        (suffix `_prime`; categories by name; the twin's empty unless unfair)."""
        import pandas as pd

        out = pd.DataFrame(
            {
                "verdict": self.verdicts,
                "method": self.methods,
                "group": self.groups,
                "label": self.labels,
                "twin_label": self.twin_labels,
                "changed": [";".join(self.changed(i)) for i in range(self.n_rows)],
            }
        )
        for j, n in enumerate(self.feature_names):
            out[n] = [self.value_name(n, v) for v in self.rows[:, j]]
            out[f"{n}_prime"] = [None if t is None else self.value_name(n, t[j]) for t in self.twins]
        return out

    def unfair_rows(self, limit: int | None = None) -> pd.DataFrame:
        """The unfair rows beside their twins (the row's features, then the twin's), categories by name."""
        import pandas as pd

        names = list(self.feature_names)
        picked = [i for i, v in enumerate(self.verdicts) if v == "unfair"][:limit]
        rows = []
        for i in picked:
            twin = self.twins[i]
            assert twin is not None  # every unfair row has its twin
            rows.append(
                {"row": i}
                | {n: self.value_name(n, self.rows[i, j]) for j, n in enumerate(names)}
                | {f"{n}_prime": self.value_name(n, twin[j]) for j, n in enumerate(names)}
                | {"label": self.labels[i], "twin_label": self.twin_labels[i]}
            )
        return pd.DataFrame(rows, columns=["row"] + names + [f"{n}_prime" for n in names] + ["label", "twin_label"])

    def to_dict(self) -> dict[str, Any]:
        counts = self.counts()
        n = max(self.n_rows, 1)
        groups = self.by_group
        unfair = (i for i, v in enumerate(self.verdicts) if v == "unfair")
        listed = list(unfair) if self.lists_rows else list(itertools.islice(unfair, UNFAIR_SAMPLE))
        return {
            "verdict": self.verdict,
            "vnncomp": self.vnncomp,
            "rows": self.n_rows,
            "counts": counts,
            "shares": {k: v / n for k, v in counts.items()},
            "flip_test": {"unfair": self.flip_unfair, "share": self.flip_unfair / n},
            "by_group": {
                str(g): {
                    "rows": int(r["rows"]),
                    "fair": int(r["fair"]),
                    "unfair": int(r["unfair"]),
                    "unknown": int(r["unknown"]),
                    "flip_unfair": int(r["flip_unfair"]),
                }
                for g, r in groups.iterrows()
            },
            "elapsed_s": self.elapsed_s,
            "engine": self.engine,
            "model": self.model,
            "protected": list(self.protected),
            "epsilon": dict(self.epsilon),
            "stopped": self.stopped,
            "population": self.population,
            "feature_names": list(self.feature_names),
            "listing": {"rows": "all" if self.lists_rows else "summary", "unfair_listed": len(listed)},
            "unfair": [self._unfair_entry(i) for i in listed],
            "unknown_reasons": self.unknown_reasons(),
            "timings": dict(self.timings),
            "stats": {k: v for k, v in self.stats.items() if k != "flip_rows"},
        } | ({"row_verdicts": list(self.verdicts)} if self.lists_rows else {})

    def _unfair_entry(self, i: int) -> dict[str, Any]:
        """An unfair row for JSON: its twin (categories by name) and each value the twin changes."""
        twin = self.twins[i]
        assert twin is not None  # every unfair row has its twin
        names = self.feature_names
        return {
            "row": i,
            "twin": [self.value_name(n, v) for n, v in zip(names, twin)],
            "changes": {
                n: [self.value_name(n, self.rows[i, j]), self.value_name(n, twin[j])]
                for j, n in enumerate(names)
                if n in self.changed(i)
            },
            "label": self.labels[i],
            "twin_label": self.twin_labels[i],
        }

    def unknown_reasons(self) -> dict[str, int]:
        """How many rows are unknown for each reason (the reason names what would decide more)."""
        out: dict[str, int] = {}
        for v, m in zip(self.verdicts, self.methods):
            if v == "unknown":
                out[m] = out.get(m, 0) + 1
        return out

    def __str__(self) -> str:
        counts, n = self.counts(), max(self.n_rows, 1)
        eps = f"; epsilon: {self.epsilon}" if self.epsilon else ""
        lines = [
            f"verdict: {self.verdict} ({self.engine}, {self.elapsed_s:.2f} "
            f"s{', ' + self.stopped if self.stopped != 'done' else ''})",
            f"model: {self.model}",
            f"protected: {', '.join(self.protected)}{eps}",
            f"rows: {self.n_rows}  fair: {counts['fair']} ({100 * counts['fair'] / n:.2f}%)  "
            f"unfair: {counts['unfair']} ({100 * counts['unfair'] / n:.2f}%)  "
            f"unknown: {counts['unknown']} ({100 * counts['unknown'] / n:.2f}%)",
            f"flip test (epsilon 0): {self.flip_unfair} unfair ({100 * self.flip_unfair / n:.2f}%)",
            "by group:",
        ]
        for g, r in self.by_group.iterrows():
            lines.append(
                f"  {g}: {int(r['rows'])} rows, {int(r['unfair'])} unfair ({100 * r['unfair_share']:.2f}%), "
                f"{int(r['unknown'])} unknown, flip test {int(r['flip_unfair'])}"
            )
        return "\n".join(lines)
