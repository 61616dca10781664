"""Separable scores: a network that adds one function of each input feature.

A linear model, a scikit-learn Pipeline ending in one (one-hot, ordinal and scaling steps compile
to one hidden layer of ReLUs that each read a single column) and a single-layer network from any
reader all compute

    logit(x) = bias + sum_j t_j(x_j),

one table per feature. On a discrete feature t_j is a table over its grid; on a real feature it is
affine (a step function of a real column is refused at binding). The engines of this package
count and search on these tables, whose float64 values carry a proven rounding bound, and decide
near-ties again in exact rational arithmetic on the network's float64 parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...domain import Domain
from ...models.network import ReluNetwork

#: Unit roundoff of float64.
UNIT = 2.0**-53
#: Largest grid of a discrete feature tabulated value by value.
MAX_TABLE = 2_000_000


@dataclass
class FeatureTable:
    """t_j over feature j: `values` on the grid (discrete), or `slope` (real; t_j(x) = slope x + offset)."""

    index: int
    discrete: bool
    lo: float
    hi: float
    values: np.ndarray | None = None
    slope: float = 0.0
    offset: float = 0.0
    #: units of the hidden layer that read this feature (empty for a single-layer network)
    units: np.ndarray | None = None
    #: under a population: the feature values behind `values` (default: the grid lo, lo+1, ...)
    #: and how many times each counts (default: once)
    points: np.ndarray | None = None
    weights: np.ndarray | None = None

    def weighted(self, points: np.ndarray, counts: np.ndarray) -> FeatureTable:
        """The table restricted to `points`, each counted `counts` times: a finite distribution."""
        points = np.asarray(points, dtype=np.float64)
        return FeatureTable(
            self.index,
            True,
            float(points.min()),
            float(points.max()),
            values=self.at(points),
            units=self.units,
            points=points,
            weights=np.asarray(counts, dtype=np.int64),
        )

    def window_extremes(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
        """(argmin, min, argmax, max) of the table over each window [lo, hi] of feature values."""
        if not self.discrete:  # affine: at the ends
            a, b = self.at(lo), self.at(hi)
            return np.where(a <= b, lo, hi), np.minimum(a, b), np.where(a <= b, hi, lo), np.maximum(a, b)
        best_lo, arg_lo = self.at(lo), np.asarray(lo, dtype=np.float64).copy()
        best_hi, arg_hi = best_lo.copy(), arg_lo.copy()
        for step in range(1, int(np.max(hi - lo)) + 1 if len(lo) else 1):
            v = np.minimum(lo + step, hi)
            t = self.at(v)
            better_lo, better_hi = t < best_lo, t > best_hi
            best_lo, arg_lo = np.where(better_lo, t, best_lo), np.where(better_lo, v, arg_lo)
            best_hi, arg_hi = np.where(better_hi, t, best_hi), np.where(better_hi, v, arg_hi)
        return arg_lo, best_lo, arg_hi, best_hi

    def value_points(self) -> np.ndarray:
        """The feature value behind each entry of `values`."""
        if self.points is not None:
            return self.points
        assert self.values is not None  # a discrete table
        return self.lo + np.arange(len(self.values), dtype=np.float64)

    @property
    def low(self) -> float:
        return self._range()[0]

    @property
    def high(self) -> float:
        return self._range()[1]

    def _range(self) -> tuple[float, float]:
        """The table's least and greatest value."""
        if self.discrete:
            assert self.values is not None  # a discrete table holds its values
            return float(self.values.min()), float(self.values.max())
        at_lo, at_hi = self.slope * self.lo, self.slope * self.hi
        return float(min(at_lo, at_hi) + self.offset), float(max(at_lo, at_hi) + self.offset)

    def at(self, x: np.ndarray) -> np.ndarray:
        """t_j at feature values x (grid values for a discrete feature)."""
        x = np.asarray(x, dtype=np.float64)
        if self.points is not None:
            assert self.values is not None  # `weighted` keeps both
            return self.values[np.searchsorted(self.points, x)]
        if self.discrete:
            assert self.values is not None  # a discrete table holds its values
            return self.values[np.round(x - self.lo).astype(np.int64)]
        return self.slope * x + self.offset


@dataclass
class SeparableScore:
    """The network's logit as bias + one table per feature, with exact re-evaluation."""

    network: ReluNetwork
    domain: Domain
    tables: list[FeatureTable]
    bias: float
    #: bound on |computed - exact| of any sum of the tables plus the bias, and of any threshold
    #: formed from them, as float64 computes them here
    rounding: float

    @classmethod
    def of(cls, network: ReluNetwork, domain: Domain) -> SeparableScore | None:
        """The separable form of `network` over `domain`, or None when it has none."""
        if len(network.weights) > 2 or network.n_inputs != len(domain):
            return None
        if not network.piecewise_linear:  # the tables below are those of ReLU units
            return None
        if len(network.weights) == 1:
            bias = float(network.biases[0][0])
            reads = None
        else:
            W1, b1 = network.weights[0], network.biases[0]
            nonzero = W1 != 0
            if np.any(nonzero.sum(axis=1) > 1):
                return None
            reads = np.where(nonzero.any(axis=1), np.argmax(nonzero, axis=1), -1)
            w2 = network.weights[1][0]
            # units that read no input are constants relu(b1)
            bias = float(network.biases[1][0] + np.sum(w2[reads < 0] * np.maximum(b1[reads < 0], 0.0)))
        tables, magnitude, terms = [], abs(bias), 1
        for j, f in enumerate(domain.features):
            units = None if reads is None else np.flatnonzero(reads == j)
            if f.is_discrete:
                if f.size > MAX_TABLE:
                    return None
                grid = f.values().astype(np.float64)
                values, mag = _table(network, reads, j, units, grid)
                table = FeatureTable(j, True, float(f.min), float(f.max), values=values, units=units)
            else:
                affine = _affine(network, units, j, float(f.min), float(f.max))
                if affine is None:
                    return None
                slope, offset = affine
                ends = np.array([f.min, f.max], dtype=np.float64)
                _, mag = _table(network, reads, j, units, ends)
                table = FeatureTable(j, False, float(f.min), float(f.max), slope=slope, offset=offset, units=units)
            tables.append(table)
            magnitude += float(mag.max()) if mag.size else 0.0
            terms += 2 + (0 if units is None else len(units))
        # every table entry and every sum of them (plus thresholds) is within gamma_k * magnitude of
        # the exact value; doubled for the subtractions the counting does on top
        k = terms + len(domain) + 8
        rounding = 4.0 * k * UNIT / (1.0 - k * UNIT) * max(magnitude, 1e-300)
        return cls(network, domain, tables, bias, rounding)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """bias + sum_j t_j(x_j) for rows of X (float64)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        out = np.full(X.shape[0], self.bias)
        for t in self.tables:
            out += t.at(X[:, t.index])
        return out

    def exact(self, x: np.ndarray) -> Fraction:
        """The logit at one point in exact rational arithmetic on the float64 parameters."""
        x = np.asarray(x, dtype=np.float64)
        return self.exact_bias() + sum((self.exact_term(j, x[j]) for j in range(len(x))), Fraction(0))

    def exact_bias(self) -> Fraction:
        net = self.network
        if len(net.weights) == 1:
            return Fraction(float(net.biases[0][0]))
        W1, b1, w2 = net.weights[0], net.biases[0], net.weights[1][0]
        constant = ~(W1 != 0).any(axis=1)
        return Fraction(float(net.biases[1][0])) + sum(
            (Fraction(float(w2[u])) * Fraction(float(b1[u])) for u in np.flatnonzero(constant) if b1[u] > 0),
            Fraction(0),
        )

    def exact_term(self, j: int, value: float) -> Fraction:
        """t_j(value) in exact rational arithmetic."""
        net, v = self.network, Fraction(float(value))
        if len(net.weights) == 1:
            return Fraction(float(net.weights[0][0, j])) * v
        W1, b1, w2 = net.weights[0], net.biases[0], net.weights[1][0]
        units = self.tables[j].units
        assert units is not None  # recorded for every table of a two-layer network
        total = Fraction(0)
        for u in units:
            pre = Fraction(float(W1[u, j])) * v + Fraction(float(b1[u]))
            if pre > 0:
                total += Fraction(float(w2[u])) * pre
        return total


def _table(network: ReluNetwork, reads, j: int, units, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t_j on the grid, the sum of absolute terms behind each value: what its rounding scales with)."""
    if reads is None:
        w = float(network.weights[0][0, j])
        return w * grid, np.abs(w * grid)
    W1, b1, w2 = network.weights[0], network.biases[0], network.weights[1][0]
    if units.size == 0:
        return np.zeros_like(grid), np.zeros_like(grid)
    pre = np.outer(grid, W1[units, j]) + b1[units]
    values = np.maximum(pre, 0.0) @ w2[units]
    mag = (np.abs(np.outer(grid, W1[units, j])) + np.abs(b1[units])) @ np.abs(w2[units])
    return values, mag


def _affine(network: ReluNetwork, units, j: int, lo: float, hi: float) -> tuple[float, float] | None:
    """(slope, offset) of t_j over [lo, hi] when it is affine there (every unit stable), else None."""
    if units is None:
        return float(network.weights[0][0, j]), 0.0
    W1, b1, w2 = network.weights[0], network.biases[0], network.weights[1][0]
    slope = offset = 0.0
    for u in units:
        a, b = W1[u, j], b1[u]
        ends = (a * lo + b, a * hi + b)
        if min(ends) >= 0:
            slope += w2[u] * a
            offset += w2[u] * b
        elif max(ends) > 0:
            return None  # a kink inside the range
    return float(slope), float(offset)
