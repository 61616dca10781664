"""How much of a product domain puts a separable score inside an interval.

The question is the mass of {x : low < bias + sum_j t_j(x_j) <= high} under the uniform measure
(grid counts times lengths). Two methods:

* **Meet in the middle** (discrete features, each half's distinct sums at most `MITM_SIZE`): the
  features are split into two halves whose distinct partial sums are enumerated; one half is
  sorted with cumulative counts and every sum of the other half finds its matching range by binary
  search. Counts are exact integers. Sums closer to an end than the proven rounding bound are
  decided again in exact rational arithmetic (`ExactCheck`); the answer is then exact.
* **Histograms beside one exact half** (anything larger, and real features): small discrete
  features are merged into blocks summed exactly; the blocks of widest span whose distinct sums fit
  one sorted array form the exact half; every other block's contribution is put in buckets of one
  width h and the bucket histograms are convolved. A bucket and a sum of the exact half count as
  inside (outside) only when every score they may hold is. The mass left at the two ends is the
  gap between the sound lower and upper bounds; it shrinks with h (and with fewer blocks), which
  the run halves while time remains. Float error of the convolutions is bounded and added to it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

import numpy as np

from .separable import FeatureTable

#: Largest number of distinct partial sums in one half of the meet in the middle.
MITM_SIZE = 1 << 22
#: Sums of the enumerated half processed at once (memory of the binary searches).
CHUNK = 1 << 18
#: Near-tie sum classes re-decided exactly at most; beyond, they stay in the gap.
RECHECK_MAX = 20_000
#: Histogram resolutions tried, in buckets over the total range.
FIRST_BUCKETS, MIN_BUCKETS, LAST_BUCKETS = 1 << 12, 1 << 18, 1 << 23
#: Kernels up to this size are convolved directly (exact up to relative rounding), larger by FFT.
DIRECT_KERNEL = 64
#: Distinct sums of one block of discrete features merged before the histograms.
BLOCK = 1 << 13
#: The histograms stop refining at this gap, or before the next resolution would pass this much
#: time (or half the time limit); they always reach MIN_BUCKETS.
GAP = 1e-7
HISTOGRAM_SECONDS = 1.0


@dataclass
class Interval:
    """Sound bounds on the share of the domain whose score lies in the interval."""

    lower: float
    upper: float
    exact: bool
    method: str
    #: exact integer counts of grid points (lower, upper, total) when every feature is discrete
    counts: tuple[int, int, int] | None = None
    stats: dict = field(default_factory=dict)


class ExactCheck(Protocol):
    """Exact arithmetic for near-ties: one table's value, and whether a point is inside."""

    def term(self, position: int, value: float) -> Fraction: ...

    def inside(self, values: list[float]) -> bool: ...


def share_between(
    tables: Sequence[FeatureTable],
    bias: float,
    low: float,
    high: float,
    rounding: float,
    exact: ExactCheck | None = None,
    time_limit: float | None = None,
) -> Interval:
    """Share of the domain of `tables` with low < bias + sum t_j <= high, soundly bounded.

    `exact` decides near-ties in rational arithmetic (given one value per table); without it they
    stay in the gap. Real tables (affine) always go to the histograms."""
    t0 = time.perf_counter()
    if not tables:  # one point: inside, outside, or too close to an end to tell
        if min(abs(bias - low), abs(bias - high)) <= rounding:
            return Interval(0.0, 1.0, False, "constant")
        inside = float(low < bias <= high)
        return Interval(inside, inside, True, "constant")
    real = [t for t in tables if not t.discrete and t.slope != 0.0]
    if not real:
        classes = [_classes(t) for t in tables]
        if _mitm_fits(classes):
            return _meet_in_the_middle(tables, classes, bias, low, high, rounding, exact, t0)
    return _histograms(tables, bias, low, high, rounding, time_limit, t0)


# ----- meet in the middle --------------------------------------------------------------------------


@dataclass
class _Classes:
    """A discrete table's distinct values, how many grid points take each, and which ones."""

    values: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray


def _classes(table: FeatureTable) -> _Classes:
    assert table.values is not None  # a discrete table
    values, inverse, counts = np.unique(table.values, return_inverse=True, return_counts=True)
    if table.weights is not None:  # counts of data rows: sums far below 2**53 are exact in float64
        counts = np.bincount(inverse, weights=table.weights.astype(np.float64), minlength=len(values)).round()
    return _Classes(values, counts.astype(np.int64), inverse)


@dataclass
class _Half:
    """Distinct partial sums of some features, with multiplicities and which value class made each."""

    features: list[int]  # positions in the table list
    sums: np.ndarray
    mult: np.ndarray  # int64 (or object when the counts outgrow it)
    size: int  # grid points of the half


def _split(classes: list[_Classes]) -> tuple[list[int], list[int]]:
    """Two halves with balanced numbers of distinct partial sums (largest features first)."""
    order = sorted(range(len(classes)), key=lambda i: -len(classes[i].values))
    a, b, size_a, size_b = [], [], 1.0, 1.0
    for i in order:
        if size_a <= size_b:
            a.append(i)
            size_a *= len(classes[i].values)
        else:
            b.append(i)
            size_b *= len(classes[i].values)
    return a, b


def _mitm_fits(classes: list[_Classes]) -> bool:
    a, b = _split(classes)
    return all(math.prod(len(classes[i].values) for i in half) <= MITM_SIZE for half in (a, b))


def _half(classes: list[_Classes], features: list[int]) -> _Half:
    sums, mult, size = np.zeros(1), np.ones(1, dtype=np.int64), 1
    for i in features:
        c = classes[i]
        size *= int(c.counts.sum())
        sums = (sums[:, None] + c.values[None, :]).ravel()
        if size < 2**62:
            mult = (mult[:, None] * c.counts[None, :]).ravel()
        else:
            mult = (mult.astype(object)[:, None] * c.counts.astype(object)[None, :]).ravel()
    return _Half(features, sums, mult, size)


def _class_of(classes: list[_Classes], features: list[int], index: int) -> dict[int, int]:
    """The value class of each feature behind one enumerated partial sum (mixed radix, last fastest)."""
    out = {}
    for i in reversed(features):
        k = len(classes[i].values)
        out[i] = index % k
        index //= k
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> int:
    if a.dtype == object or b.dtype == object or (a.size and int(a.max()) * int(max(b.max(), 0)) * a.size >= 2**62):
        return int(np.dot(a.astype(object), b.astype(object)))
    return int(np.dot(a, b))


def _meet_in_the_middle(tables, classes, bias, low, high, rounding, exact, t0) -> Interval:
    names_a, names_b = _split(classes)
    A, B = _half(classes, names_a), _half(classes, names_b)
    order = np.argsort(B.sums, kind="stable")
    sorted_b = B.sums[order]
    cum = (
        np.concatenate([[0], np.cumsum(B.mult[order])])
        if B.mult.dtype != object
        else np.concatenate([np.array([0], dtype=object), np.cumsum(B.mult[order])])
    )
    lo_t, hi_t = low - bias, high - bias
    d = rounding
    sure = maybe = 0
    uncertain: list[tuple[int, int, int]] = []  # (index in A, first and end position in sorted B)
    too_many = False
    for start in range(0, A.sums.size, CHUNK):
        a = A.sums[start : start + CHUNK]
        m = A.mult[start : start + CHUNK]
        in_lo = np.searchsorted(sorted_b, lo_t - a + d, side="right")
        in_hi = np.maximum(np.searchsorted(sorted_b, hi_t - a - d, side="right"), in_lo)
        out_lo = np.searchsorted(sorted_b, lo_t - a - d, side="right")
        out_hi = np.searchsorted(sorted_b, hi_t - a + d, side="right")
        sure += _dot(m, cum[in_hi] - cum[in_lo])
        maybe += _dot(m, cum[out_hi] - cum[out_lo])
        if exact is not None and not too_many:
            for lo_pos, hi_pos in ((out_lo, np.minimum(in_lo, out_hi)), (np.maximum(in_hi, out_lo), out_hi)):
                rows = np.flatnonzero(hi_pos > lo_pos)
                if int(np.sum(hi_pos[rows] - lo_pos[rows])) + len(uncertain) > RECHECK_MAX:
                    too_many = True
                    break
                uncertain += [(start + int(r), int(lo_pos[r]), int(hi_pos[r])) for r in rows]
    total = A.size * B.size
    rechecked = 0
    if uncertain and not too_many:
        exact_class = _ExactClasses(tables, classes, exact)
        for ia, first, end in uncertain:
            cls_a = _class_of(classes, names_a, ia)
            for pos in range(first, end):
                cls = {**cls_a, **_class_of(classes, names_b, int(order[pos]))}
                values = exact_class.representatives(cls)
                weight = int(A.mult[ia]) * int(B.mult[order[pos]])
                rechecked += 1
                if values is None:
                    continue  # the class's grid values differ exactly: stays undecided
                if exact.inside(values):
                    sure += weight
                else:
                    maybe -= weight
    stats = {
        "halves": [len(names_a), len(names_b)],
        "sums": [int(A.sums.size), int(B.sums.size)],
        "near_ties_rechecked": rechecked,
        "near_ties_unresolved": maybe - sure,
        "seconds": time.perf_counter() - t0,
    }
    return Interval(
        sure / total, maybe / total, sure == maybe, "meet-in-the-middle", (int(sure), int(maybe), int(total)), stats
    )


class _ExactClasses:
    """Grid values of a value class, checked to be one exact value (floats may merge two)."""

    def __init__(self, tables, classes, exact: ExactCheck) -> None:
        self.tables, self.classes, self.exact = tables, classes, exact
        self.cache: dict[tuple[int, int], float | None] = {}

    def representatives(self, cls: dict[int, int]) -> list[float] | None:
        out = [0.0] * len(self.tables)
        for i, k in cls.items():
            v = self._value(i, k)
            if v is None:
                return None
            out[i] = v
        return out

    def _value(self, i: int, k: int) -> float | None:
        key = (i, k)
        if key not in self.cache:
            members = self.tables[i].value_points()[self.classes[i].inverse == k]
            # a class of several grid values is one exact value only if the table is constant on
            # it in exact arithmetic; the caller's exact check compares the representative alone,
            # so members that differ leave the class undecided
            self.cache[key] = float(members[0]) if self._same(i, members) else None
        return self.cache[key]

    def _same(self, i: int, members: np.ndarray) -> bool:
        if members.size == 1:
            return True
        first = self.exact.term(i, members[0])
        return all(self.exact.term(i, v) == first for v in members[1:])


# ----- histograms beside one exact half --------------------------------------------------------------


@dataclass
class _Block:
    """Features summed exactly: distinct partial sums and their probabilities (a real feature: its span)."""

    sums: np.ndarray
    probs: np.ndarray
    span: float
    real: FeatureTable | None = None


def _blocks(tables: Sequence[FeatureTable]) -> list[_Block]:
    """Discrete features merged (smallest first) while a block has at most `BLOCK` distinct sums;
    every merge removes one bucket's worth of rounding from the histograms' gap."""
    discrete = sorted((_classes(t) for t in tables if t.discrete), key=lambda c: len(c.values))
    blocks: list[_Block] = []
    sums, probs = np.zeros(1), np.ones(1)
    for c in discrete:
        if sums.size > 1 and sums.size * len(c.values) > BLOCK:
            blocks.append(_Block(sums, probs, float(sums.max() - sums.min())))
            sums, probs = np.zeros(1), np.ones(1)
        sums = (sums[:, None] + c.values[None, :]).ravel()
        probs = (probs[:, None] * (c.counts / c.counts.sum())[None, :]).ravel()
    if sums.size > 1 or not blocks:
        blocks.append(_Block(sums, probs, float(sums.max() - sums.min())))
    for t in tables:
        if not t.discrete:
            blocks.append(_Block(np.array([t.low]), np.ones(1), t.high - t.low, real=t))
    return blocks


def _exact_side(blocks: list[_Block]) -> tuple[_Block, list[_Block]]:
    """The discrete blocks of the widest span whose distinct sums fit `MITM_SIZE`, summed exactly
    and sorted; the rest go to the histograms."""
    order = sorted(range(len(blocks)), key=lambda i: -blocks[i].span)
    sums, probs, chosen = np.zeros(1), np.ones(1), set()
    for i in order:
        b = blocks[i]
        if b.real is not None or sums.size * b.sums.size > MITM_SIZE:
            continue
        sums = (sums[:, None] + b.sums[None, :]).ravel()
        probs = (probs[:, None] * b.probs[None, :]).ravel()
        chosen.add(i)
    by_sum = np.argsort(sums, kind="stable")
    exact = _Block(sums[by_sum], probs[by_sum], float(sums.max() - sums.min()))
    return exact, [b for i, b in enumerate(blocks) if i not in chosen]


def _histograms(tables, bias, low, high, rounding, time_limit, t0) -> Interval:
    exact, rest = _exact_side(_blocks(tables))
    cum = np.concatenate([[0.0], np.cumsum(exact.probs)])
    budget = HISTOGRAM_SECONDS if time_limit is None else min(HISTOGRAM_SECONDS, time_limit / 2)
    buckets = FIRST_BUCKETS
    best = None
    while True:
        step = time.perf_counter()
        lower, upper, err = _histogram_bounds(exact, cum, rest, bias, low, high, rounding, buckets)
        step = time.perf_counter() - step
        current = Interval(
            max(lower - err, 0.0),
            min(upper + err, 1.0),
            False,
            "histogram",
            stats={
                "buckets": buckets,
                "float_error": err,
                "exact_sums": int(exact.sums.size),
                "histogram_blocks": len(rest),
            },
        )
        if best is None or current.upper - current.lower < best.upper - best.lower:
            best = current
        # each doubling costs about twice the last step: stop when the next one would overrun the
        # budget, once the resolution is worth having
        next_end = time.perf_counter() - t0 + 2.5 * step
        if buckets >= LAST_BUCKETS or best.upper - best.lower <= GAP or (buckets >= MIN_BUCKETS and next_end > budget):
            break
        buckets *= 2
    best.stats["seconds"] = time.perf_counter() - t0
    return best


def _histogram_bounds(exact, cum, rest, bias, low, high, rounding, buckets) -> tuple[float, float, float]:
    """(lower, upper, float error) of the share with the score in (low, high] at `buckets` buckets
    of the histogram side, each bucket matched against the exact side by binary search."""
    total_span = sum(b.span for b in rest)
    width = max(total_span, 1e-300) / buckets
    dist, err, base = np.ones(1), 0.0, bias
    for b in rest:
        base += float(b.sums.min()) if b.real is None else b.real.low
        dist, e = _convolve(dist, _bucket(b, width))
        err += e
    n = len(rest)
    # histogram bucket k holds sums in [base + k w, base + (k + n) w]: each block may sit anywhere
    # in its own bucket; the exact side adds one of its sorted sums
    k = np.flatnonzero(dist > 0)
    start, end = base + k * width, base + (k + n) * width
    slack = rounding + 8.0 * (n + 2) * 2.0**-52 * (abs(base) + (buckets + n) * width + float(np.abs(exact.sums).max()))
    p = dist[k]
    inside = _mass(cum, exact.sums, low - start + slack, high - end - slack)
    touch = _mass(cum, exact.sums, low - end - slack, high - start + slack)
    lower, upper = float(np.dot(p, inside)), float(np.dot(p, touch))
    # the probabilities' own rounding (a few ulps each) and the two dot products
    err += 8.0 * (exact.sums.size + dist.size + n) * 2.0**-53
    return lower, upper, err


def _mass(cum: np.ndarray, sorted_sums: np.ndarray, above: np.ndarray, at_most: np.ndarray) -> np.ndarray:
    """Probability of the exact side's sums in (above, at_most], per bucket."""
    lo = np.searchsorted(sorted_sums, above, side="right")
    hi = np.maximum(np.searchsorted(sorted_sums, at_most, side="right"), lo)
    return cum[hi] - cum[lo]


def _bucket(block: _Block, width: float) -> np.ndarray:
    """The block's probability distribution over buckets [low + k w, low + (k+1) w)."""
    n = int(block.span // width) + 1 if width > 0 else 1
    if block.real is None:
        low = float(block.sums.min())
        idx = (
            np.minimum(((block.sums - low) / width).astype(np.int64), n - 1)
            if width > 0
            else np.zeros(block.sums.size, dtype=np.int64)
        )
        return np.bincount(idx, weights=block.probs, minlength=n)
    if block.span == 0.0:
        return np.ones(1)
    edges = np.minimum(np.arange(n + 1) * width, block.span)
    return np.diff(edges) / block.span


def _convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """(a * b, a bound on the l1 error of the computed result) for probability vectors."""
    gamma = lambda k: k * 2.0**-53 / (1 - k * 2.0**-53)  # noqa: E731
    if min(a.size, b.size) <= DIRECT_KERNEL:
        # nonnegative terms: each entry within gamma_k of its exact value relative to itself
        return np.convolve(a, b), 2.0 * gamma(min(a.size, b.size) + 1)
    from scipy.signal import fftconvolve

    out = np.maximum(fftconvolve(a, b), 0.0)
    size = a.size + b.size - 1
    # the FFT product's per-entry error is at most c log2(N) u ||a||_2 ||b||_2 (c = 10 here, a
    # generous constant); the l1 error over the N entries is at most N times that
    per_entry = 10.0 * math.log2(max(size, 2)) * 2.0**-53 * float(np.linalg.norm(a) * np.linalg.norm(b))
    return out, size * per_entry + gamma(4)
