"""Features as small integer codes for the rule search: numeric columns in quantile bins, categorical
columns by category. A condition in codes (a run of bins, a set of categories) becomes a condition in
raw units through the values the search rows hold.

Numeric bins come at two resolutions: the search grows rules over a few coarse bins (many fine ones
let a rule fit the search rows' noise), then moves each range's ends over the fine bins, which
place an edge where the data has one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..results.explain import Condition

#: Bins per numeric feature: a column with at most this many distinct values keeps each value.
MAX_BINS = 64
#: Coarse bins per numeric feature, each a run of fine bins.
COARSE_BINS = 12


@dataclass(frozen=True)
class Encoded:
    """One feature's code per row (-1: missing, or a category the search rows never held) and, per
    code, the smallest and largest value it holds (numeric) or its category name."""

    name: str
    numeric: bool
    codes: np.ndarray
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()
    names: tuple[str, ...] = ()
    #: the coarse bin of each fine bin (numeric features; non-decreasing)
    coarse: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.names) if not self.numeric else len(self.lows)

    def interval(self, first: int, last: int) -> Condition:
        """Bins first..last as an inclusive range; the outer bins leave their end open."""
        low = None if first == 0 else self.lows[first]
        high = None if last == self.size - 1 else self.highs[last]
        return Condition(self.name, low=low, high=high)

    def categories(self, codes: frozenset[int]) -> Condition:
        return Condition(self.name, values=tuple(sorted(self.names[c] for c in codes)))


def is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def encode(column: pd.Series, search: np.ndarray) -> Encoded:
    """Codes for every row, with the bins (or categories) taken from the rows in `search` alone."""
    name = str(column.name)
    if is_numeric(column):
        x = column.to_numpy(dtype=np.float64, na_value=np.nan)
        seen = x[search & ~np.isnan(x)]
        distinct = np.unique(seen)
        if len(distinct) == 0:  # nothing to cut: no condition on it
            return Encoded(name, True, np.full(len(x), -1, dtype=np.int64))
        if len(distinct) <= MAX_BINS:
            edges = distinct[:-1]
        else:  # quantile cut points; ties collapse, so a heavy value keeps a bin of its own
            edges = np.unique(np.quantile(seen, np.linspace(0, 1, MAX_BINS + 1)[1:-1], method="inverted_cdf"))
            edges = edges[edges < distinct[-1]]
        codes = np.searchsorted(edges, x, side="left")
        codes[np.isnan(x)] = -1
        held = codes[search & ~np.isnan(x)]
        lows = tuple(float(seen[held == b].min()) for b in range(len(edges) + 1))
        highs = tuple(float(seen[held == b].max()) for b in range(len(edges) + 1))
        return Encoded(name, True, codes.astype(np.int64), lows=lows, highs=highs, coarse=_coarse(seen, highs))
    text = column.astype(str).where(column.notna(), None)
    names = tuple(sorted({v for v in text[search] if v is not None}))
    lookup = {v: i for i, v in enumerate(names)}
    codes = np.array([lookup.get(v, -1) if v is not None else -1 for v in text], dtype=np.int64)
    return Encoded(name, False, codes, names=names)


def _coarse(seen: np.ndarray, highs: tuple[float, ...]) -> np.ndarray:
    """Each fine bin's coarse bin: the coarse quantile bin its largest value falls in."""
    if len(highs) <= COARSE_BINS:
        return np.arange(len(highs))
    cuts = np.unique(np.quantile(seen, np.linspace(0, 1, COARSE_BINS + 1)[1:-1], method="inverted_cdf"))
    groups = np.searchsorted(cuts, np.asarray(highs), side="left")
    return np.unique(groups, return_inverse=True)[1]  # no empty coarse bin
