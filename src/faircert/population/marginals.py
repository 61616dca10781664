"""Marginals: the data's own distribution of each feature, taken as independent.

Each domain feature takes the values observed in the data with their frequencies (a real feature
its observed values: a finite distribution, not a density). Under this product measure a share of
the domain becomes the probability P[x has an unfair twin] for x drawn feature by feature from the
data; with integer counts every such probability is an exact fraction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import DataError


@dataclass(frozen=True)
class Marginals:
    """Per domain feature: the distinct observed values (domain codes) and how many rows hold each."""

    values: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    rows: int

    @classmethod
    def from_codes(cls, codes: np.ndarray) -> Marginals:
        codes = np.atleast_2d(np.asarray(codes, dtype=np.float64))
        if len(codes) == 0:
            raise DataError("the population needs at least one data row")
        values, counts = [], []
        for column in codes.T:
            v, c = np.unique(column, return_counts=True)
            values.append(v)
            counts.append(c.astype(np.int64))
        return cls(tuple(values), tuple(counts), len(codes))

    def describe(self) -> str:
        return f"independent: each feature drawn from the data's {self.rows:,} rows, features independent"

    def __str__(self) -> str:
        return self.describe()
