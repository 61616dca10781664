"""Relaxed (epsilon) individual fairness of separable models, by enumeration of the moving features.

With moving features E (epsilon > 0) and fixed ones N, a free point x has the score
R = R_N + r_E, and its twins reach every score in [R - d-, R + d+] where d-, d+ are the sums over
E of how far each t_j falls and rises inside x_j's window. x is unfair iff for some protected a
and another a':
    R + s_a > 0 >= R - d- + s_a'    or    R + s_a <= 0 < R + d+ + s_a',
i.e. R_N lies in a union of intervals that depends only on (r_E, d-, d+). The moving features'
joint values are enumerated (at most `MAX_MOVING` combinations); the fixed part's distribution is
held exactly (sorted sums with integer counts) when it fits, else in histogram buckets, and the
union's probability under it is bounded per enumerated combination.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .count import MITM_SIZE, Interval, _classes, _convolve
from .separable import FeatureTable

#: Joint values of the moving features enumerated at most.
MAX_MOVING = 200_000
#: Buckets of the fixed part's histogram when it has too many distinct sums to hold exactly.
BUCKETS = 1 << 20


def moving_size(tables: list[FeatureTable], eps: list[float]) -> float:
    """How many joint values the moving features take (inf when a real feature moves)."""
    size = 1.0
    for t, e in zip(tables, eps):
        if e > 0:
            if not t.discrete:
                return math.inf
            assert t.values is not None  # a discrete table holds its values
            size *= len(t.values)
    return size


def _window_terms(t: FeatureTable, grid: FeatureTable, eps: float) -> tuple[np.ndarray, ...]:
    """(t, fall, rise, weight) per value of a moving feature: how far t_j falls and rises inside the
    value's window [x - eps, x + eps] of the domain's grid (`grid`: the feature's full table; `t`
    may hold a population's points only), and how much each value weighs."""
    points = t.value_points()
    values, own = grid.values, t.values
    assert values is not None and own is not None  # a moving feature's tables are discrete
    lo = np.clip(np.ceil(points - eps - grid.lo - 1e-9), 0, len(values) - 1).astype(np.int64)
    hi = np.clip(np.floor(points + eps - grid.lo + 1e-9), 0, len(values) - 1).astype(np.int64) + 1
    # sliding minima and maxima over index windows, by doubling (a sparse table)
    mins, maxs, span = [values], [values], 1
    while span * 2 <= len(values):
        mins.append(np.minimum(mins[-1][:-span], mins[-1][span:]))
        maxs.append(np.maximum(maxs[-1][:-span], maxs[-1][span:]))
        span *= 2
    low_w, high_w = np.empty(len(points)), np.empty(len(points))
    level = np.floor(np.log2(np.maximum(hi - lo, 1))).astype(np.int64)
    for k in np.unique(level):
        rows = np.flatnonzero(level == k)
        a, b = lo[rows], hi[rows] - (1 << int(k))
        low_w[rows] = np.minimum(mins[k][a], mins[k][b])
        high_w[rows] = np.maximum(maxs[k][a], maxs[k][b])
    weight = t.weights if t.weights is not None else np.ones(len(own), dtype=np.int64)
    return own, own - low_w, high_w - own, weight


def relaxed_share(
    tables: list[FeatureTable],
    grids: list[FeatureTable],
    eps: list[float],
    bias: float,
    shifts: np.ndarray,
    rounding: float,
) -> Interval:
    """Sound bounds (exact where the fixed part fits) on the share of free points with an unfair twin.

    `tables` are the free features' tables under the measure (a population's points, or the grid),
    `grids` their full tables on the domain's grid (where twins may go), `eps` their tolerances."""
    t0 = time.perf_counter()
    moving = [i for i, e in enumerate(eps) if e > 0]
    fixed = [i for i, e in enumerate(eps) if e <= 0]
    r, fall, rise, weight = _moving_joint([_window_terms(tables[i], grids[i], eps[i]) for i in moving])
    intervals = _unfair_intervals(shifts, fall, rise)  # (E, K, 2) in the score R
    cuts = np.sort(intervals.reshape(len(r), -1), axis=1)  # breakpoints of the union
    lows, highs = cuts[:, :-1], cuts[:, 1:]
    mid = 0.5 * (lows + highs)
    inside = np.any(
        (mid[:, :, None] > intervals[:, None, :, 0]) & (mid[:, :, None] <= intervals[:, None, :, 1]), axis=2
    ) & (highs > lows)
    part = _FixedPart([tables[i] for i in fixed], bias, rounding)
    # P[R_N in (low - r, high - r]] for every inside segment, bounded
    lo_q, hi_q = (lows - r[:, None])[inside], (highs - r[:, None])[inside]
    sure, maybe = part.between(lo_q, hi_q)
    rows = np.repeat(np.arange(len(r)), inside.sum(axis=1))
    stats: dict[str, object] = {
        "moving_combinations": int(len(r)),
        "fixed_part": "exact" if part.exact_sums else "histogram",
        "seconds": time.perf_counter() - t0,
    }
    # the segments of one combination are disjoint: their bounds add
    if part.exact_sums:  # exact integer counts of grid points (or of data rows' products)
        total = int(weight.sum()) * part.total
        low = int(np.dot(weight[rows].astype(object), sure.astype(object))) if len(rows) else 0
        high = int(np.dot(weight[rows].astype(object), maybe.astype(object))) if len(rows) else 0
        stats["counts"] = {"unfair_at_least": low, "unfair_at_most": high, "points": total}
        return Interval(low / total, high / total, low == high, "relaxed enumeration", (low, high, total), stats)
    w = weight.astype(np.float64) / weight.sum()
    err = 8.0 * (len(r) + part.size) * 2.0**-53 + part.err  # the probabilities' own rounding
    lower, upper = float(np.dot(w[rows], sure)), float(np.dot(w[rows], maybe))
    return Interval(max(lower - err, 0.0), min(upper + err, 1.0), False, "relaxed enumeration", stats=stats)


def _moving_joint(terms: list[tuple]) -> tuple[np.ndarray, ...]:
    """The moving features' joint (r, fall, rise, weight), one row per combination of values."""
    r, fall, rise, weight = np.zeros(1), np.zeros(1), np.zeros(1), np.ones(1, dtype=np.int64)
    for t, f, u, w in terms:
        r = (r[:, None] + t[None, :]).ravel()
        fall = (fall[:, None] + f[None, :]).ravel()
        rise = (rise[:, None] + u[None, :]).ravel()
        weight = (weight[:, None] * w[None, :]).ravel()
    return r, fall, rise, weight


def _unfair_intervals(shifts: np.ndarray, fall: np.ndarray, rise: np.ndarray) -> np.ndarray:
    """(E, 2T, 2): for each combination, the intervals (low, high] of R that make x unfair."""
    T = len(shifts)
    order = np.argsort(shifts)
    others_min = np.where(np.arange(T) == order[0], shifts[order[1]], shifts[order[0]])
    others_max = np.where(np.arange(T) == order[-1], shifts[order[-2]], shifts[order[-1]])
    # R + s_a > 0 >= R - fall + s_a'  <=>  R in (-s_a, fall - min_{a' != a} s_a']
    down = np.stack([np.broadcast_to(-shifts, (len(fall), T)), fall[:, None] - others_min[None, :]], axis=2)
    # R + s_a <= 0 < R + rise + s_a'  <=>  R in (-rise - max_{a' != a} s_a', -s_a]
    up = np.stack([-rise[:, None] - others_max[None, :], np.broadcast_to(-shifts, (len(rise), T))], axis=2)
    return np.concatenate([down, up], axis=1)


class _FixedPart:
    """The fixed features' score distribution: exact sorted sums with integer counts, or histogram
    buckets; `between(lo, hi)` bounds P[lo < R_N <= hi] (vectors)."""

    def __init__(self, tables: list[FeatureTable], bias: float, rounding: float) -> None:
        self.rounding, self.err = rounding, 0.0
        classes = [_classes(t) for t in tables if t.discrete]
        reals = [t for t in tables if not t.discrete and t.slope != 0.0]
        distinct = math.prod(len(c.values) for c in classes) if classes else 1
        self.exact_sums = not reals and distinct <= MITM_SIZE
        if self.exact_sums:
            sums, counts = np.full(1, bias), np.ones(1, dtype=object)
            for c in classes:
                sums = (sums[:, None] + c.values[None, :]).ravel()
                counts = (counts[:, None] * c.counts.astype(object)[None, :]).ravel()
            order = np.argsort(sums, kind="stable")
            self.sums = sums[order]
            self.cum = np.concatenate([np.array([0], dtype=object), np.cumsum(counts[order])])  # exact counts
            self.total = int(self.cum[-1])
            self.size = len(self.sums)
        else:
            self._histogram(tables, bias)

    def _histogram(self, tables, bias) -> None:
        from .count import _blocks, _bucket

        blocks = _blocks(tables)
        width = max(sum(b.span for b in blocks), 1e-300) / BUCKETS
        dist, base = np.ones(1), bias
        for b in blocks:
            base += float(b.sums.min()) if b.real is None else b.real.low
            dist, e = _convolve(dist, _bucket(b, width))
            self.err += e
        k = np.arange(dist.size)
        n = len(blocks)
        self.start = base + k * width  # bucket k holds sums in [start_k, end_k]
        self.end = base + (k + n) * width
        self.cum = np.concatenate([[0.0], np.cumsum(dist)])
        self.size = dist.size
        self.rounding += 8.0 * (n + 2) * 2.0**-52 * (abs(base) + (dist.size + n) * width)

    def between(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = self.rounding
        if self.exact_sums:  # counts of grid points (Python integers)
            f = lambda t: self.cum[np.searchsorted(self.sums, t, side="right")]  # noqa: E731
            sure, maybe = f(hi - d) - f(lo + d), f(hi + d) - f(lo - d)
            return np.where(sure > 0, sure, 0), np.where(maybe > 0, maybe, 0)
        # sure: buckets wholly inside (start > lo, end <= hi); maybe: buckets touching (end > lo, start <= hi)
        first_in = np.searchsorted(self.start, lo + d, side="right")
        last_in = np.searchsorted(self.end, hi - d, side="right")
        sure = np.maximum(self.cum[np.maximum(last_in, first_in)] - self.cum[first_in], 0.0)
        first_touch = np.searchsorted(self.end, lo - d, side="right")
        last_touch = np.searchsorted(self.start, hi + d, side="right")
        maybe = np.maximum(self.cum[np.maximum(last_touch, first_touch)] - self.cum[first_touch], 0.0)
        return sure, maybe
