"""Sound bounds on P[score > t | evidence] for a linear model under a Bayesian network of any size
that variable elimination can hold: the messages are histograms of the partial score on a grid.

Every contribution c is written c = h*k + r with h = 2**-j (so k = floor(c / h) is exact) and
0 <= r < h. Variable elimination multiplies the network's tables into one message over the
variables still open, with one histogram over the integer K = sum of k per configuration; summing a
variable out shifts each of its states' slices by that state's k and adds them. With m variables
that move the score, the score lies in [offset + h*K - tol, offset + h*K + m*h + tol], where `tol`
bounds the float rounding of the contributions (`subset_sum.score_tables`). So the answer is exact
except for the mass of K within m + 1 grid steps of a threshold, which is reported as the bounds'
width. Mass that the variables still to come cannot bring back to a threshold is moved out of the
histogram as it appears (certainly above or below), so a histogram spans only the window that can
still matter.

The order of elimination is searched (exactly over the subsets of tables for small networks,
greedily otherwise) for the least total work; a variable without children and with one parent is
eliminated with its parent (the data's values inside a bin, for instance). The grid step is the
finest whose largest message fits `CELLS` floats.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ...models.linear import LinearModel
from ...population.discrete import DiscretePopulation
from ...population.elimination import Factor, factors, search_order
from .subset_sum import score_tables

#: Largest message, in float64 cells (256 MB).
CELLS = 1 << 25
#: Longest histogram, in grid steps.
MAX_LENGTH = 1 << 22
#: The grids' first size (cells of the largest message), the factor each refinement multiplies it by
#: (up to `CELLS`), and the width of the bounds at which refining stops.
FIRST_CELLS = CELLS // 16
REFINE = 4
REFINED_WIDTH = 1e-4
#: Bytes a grid cell costs while a message is built (the message, its parents and temporaries):
#: a memory limit of B bytes allows messages of B / CELL_BYTES cells.
CELL_BYTES = 32
MIN_CELLS = 1 << 10
#: Most distinct shifts a variable is applied with (more are rounded down to a coarser multiple).
MAX_SHIFTS = 4096
#: Relative bound on the float rounding of sums of nonnegative masses (each mass is a product of at
#: most a few dozen tables summed over at most 2**40 terms: well inside 2**-30).
MASS_ROUNDING = 2.0**-30
UNIT = 2.0**-53
T = TypeVar("T")


def refined(
    compute: Callable[[int, bool], T],
    width: Callable[[T], float | None],
    deadline: float | None,
    memory_limit: int | None = None,
) -> tuple[T, int, bool]:
    """`compute(cells, first)` on grids refined fourfold while the bounds are wider than
    `REFINED_WIDTH` (`width` gives None where no grid was needed), the time left (monotonic
    `deadline`) allows another pass, its cost estimated from the last, and a finer grid fits
    `memory_limit` bytes; the answer, the passes, and whether the memory limit stopped them."""
    most = CELLS if memory_limit is None else int(np.clip(memory_limit // CELL_BYTES, MIN_CELLS, CELLS))
    cells, passes = min(FIRST_CELLS, most), 0
    while True:
        started = time.monotonic()
        out = compute(cells, passes == 0)
        passes += 1
        took = time.monotonic() - started
        wide = width(out)
        if wide is None or wide <= REFINED_WIDTH or cells >= CELLS:
            return out, passes, False
        if cells >= most:
            return out, passes, True
        if deadline is not None and time.monotonic() + (REFINE + 0.5) * took > deadline:
            return out, passes, False
        cells = min(cells * REFINE, most)


@dataclass
class Histogram:
    """P[K = base + i, evidence] = mass[i]; `below`/`above`: mass certainly below / above the window."""

    step: float
    base: int
    mass: np.ndarray
    below: float
    above: float
    offset: float  # the score is offset + h*K + r, 0 <= r < slack, up to +-tol
    slack: float
    tol: float
    exact: bool = False  # offset + h*K is the exact score: no rounding margin at a threshold

    @property
    def total(self) -> float:
        return self.below + self.above + float(self.mass.sum())

    def tail(self, t: float, strict: bool) -> tuple[float, float]:
        """Bounds on P[score > t, evidence] (>= when not strict), not normalised."""
        k = self.base + np.arange(len(self.mass))
        reach = self.step * max(abs(int(k[0])), abs(int(k[-1])))
        margin = 0.0 if self.exact else self.tol + 8 * UNIT * (abs(t) + abs(self.offset) + self.slack + reach)
        low_s = self.offset + self.step * k - margin
        high_s = self.offset + self.step * k + self.slack + margin
        sure = (low_s > t) if strict else (low_s >= t)
        maybe = (high_s > t) if strict else (high_s >= t)
        lo = self.above + float(self.mass[sure].sum())
        hi = self.above + float(self.mass[maybe].sum())
        return lo * (1 - MASS_ROUNDING), hi * (1 + MASS_ROUNDING)


@dataclass
class GridStats:
    """What a grid engine's queries took, over all of them."""

    grid_step: float = 0.0  # the coarsest grid step used
    grid_width: float = 0.0  # the widest score band a bound may be off by, at a threshold
    max_cells: int = 0  # the largest message held
    order: list[str] = field(default_factory=list)  # the last elimination order
    over_budget: bool = False  # a query past the deadline ran on a coarser grid


@dataclass
class GridEngine:
    """One linear model under one discrete population; `histogram(evidence)` per query."""

    model: LinearModel
    population: DiscretePopulation
    cells: int | None = None  # default CELLS, read at run time
    #: time.monotonic() after which queries use a 64 times coarser grid (sound, quick)
    deadline: float | None = None
    stats: GridStats = field(default_factory=GridStats)
    _orders: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cells = self.cells or CELLS
        scores = score_tables(self.model, self.population)
        self.contrib = scores.contrib
        self.tol = scores.tol
        self.strict = scores.strict
        self.intercept = scores.intercept
        self.exact = scores.exact  # every sum of contributions is exact in float64

    def probability(self, evidence: dict[str, int]) -> tuple[float, float, float]:
        """(lo, hi, P[evidence]) with lo <= P[yhat = 1 | evidence] <= hi."""
        hist = self.histogram(evidence, [0.0])
        total = hist.total
        if total <= 0:
            return 0.0, 0.0, 0.0
        lo, hi = hist.tail(0.0, self.strict)
        # the total is a float sum too: divide by its largest and smallest possible values
        return max(0.0, lo / (total * (1 + MASS_ROUNDING))), min(1.0, hi / (total * (1 - MASS_ROUNDING))), total

    # ----- one query ----------------------------------------------------------------------------
    def histogram(self, evidence: dict[str, int], thresholds: list[float]) -> Histogram:
        pop = self.population
        moving = [n for n, c in self.contrib.items() if len(c) and np.ptp(c) > 0]
        keep = pop._ancestors(moving + list(evidence))
        offset = self.intercept
        for n, s in evidence.items():
            offset += float(self.contrib[n][s])
        names = [n for n in pop.order() if n in keep]
        key = (tuple(names), tuple(sorted(evidence)))
        if key not in self._orders:  # the order depends on which variables are fixed, not on their states
            self._orders[key] = search_order(factors(pop, names, evidence), {n: pop.variables[n].card for n in names})
        order = self._orders[key]
        ranges = {n: (float(self.contrib[n].min()), float(self.contrib[n].max())) for n in names if n not in evidence}
        cells = self.cells or CELLS
        if self.deadline is not None and time.monotonic() >= self.deadline:
            cells = max(1, cells // 64)
            self.stats.over_budget = True
        step = self._step(order, ranges, thresholds, cells)
        k = {n: np.floor(self.contrib[n] / step).astype(np.int64) for n in ranges}
        # per variable, how many grid steps its rounding may lose: one, or none where exact; a variable
        # with very many distinct shifts (a real column's data values) is rounded down to a coarser
        # multiple, so that applying it costs at most MAX_SHIFTS shifted adds
        lost = {n: 0 if np.all(self.contrib[n] == step * k[n]) else 1 for n in ranges}
        for n in ranges:
            span = int(k[n].max() - k[n].min()) + 1
            if len(np.unique(k[n])) > MAX_SHIFTS:
                width = -(-span // MAX_SHIFTS)
                k[n] = (k[n] // width) * width
                lost[n] = width
        slack = step * sum(lost.values())
        reach = sum(max(abs(lo), abs(hi)) for lo, hi in ranges.values()) + step * len(ranges)
        margin = self.tol + 8 * UNIT * (max(abs(t) for t in thresholds) + abs(offset) + slack + reach)
        exact = self.exact and slack == 0  # h*K is then the score itself, computed exactly
        live_lo = min(math.floor((t - offset - margin - slack) / step) for t in thresholds) - 1
        live_hi = max(math.ceil((t - offset + margin) / step) for t in thresholds) + 1
        hist = _eliminate(pop, order, evidence, k, live_lo, live_hi, self.stats)
        self.stats.grid_step = max(self.stats.grid_step, step)
        self.stats.grid_width = max(self.stats.grid_width, slack + 2 * margin)
        self.stats.order = [f.var for f in order]
        return Histogram(step, hist[0], hist[1], hist[2], hist[3], offset, slack, self.tol, exact)

    def _step(
        self, order: list[Factor], ranges: dict[str, tuple[float, float]], thresholds: list[float], cells: int
    ) -> float:
        """The finest h = 2**-j whose largest message (configurations x window) fits the cell budget.

        A message's window is at most the range of the shifts applied so far, and at most the range
        of those still to come plus the thresholds' spread (the rest is moved out by `_clip`)."""
        cards = {n: v.card for n, v in self.population.variables.items()}
        width = {n: hi - lo for n, (lo, hi) in ranges.items()}
        applied, remaining = 0.0, sum(width.values())
        span = max(thresholds) - min(thresholds)
        need = 2.0**-40
        open_vars: dict[str, int] = {}
        window = 0.0  # the current message's window, in score units
        for pos, f in enumerate(order):
            open_vars.update((v, cards[v]) for v in f.scope)
            configs = math.prod(open_vars.values())
            need = max(need, configs * window / cells)
            later = order[pos + 1 :]
            for v in list(f.leaves) + [v for v in open_vars if not any(v in g.scope for g in later)]:
                if v not in f.leaves:  # a leaf never opens an axis (`_apply_leaf`)
                    configs //= open_vars.pop(v)
                applied += width.get(v, 0.0)
                remaining -= width.get(v, 0.0)
                grown = window + width.get(v, 0.0)  # before the window is clipped again
                need = max(need, configs * grown / cells, grown / MAX_LENGTH)
                window = min(grown, applied, max(remaining, 0.0) + span)
        return 2.0 ** math.ceil(math.log2(need))


def _eliminate(
    pop: DiscretePopulation,
    order: list[Factor],
    evidence: dict[str, int],
    k: dict[str, np.ndarray],
    live_lo: int,
    live_hi: int,
    stats: GridStats,
) -> tuple[int, np.ndarray, float, float]:
    """Variable elimination with histogram messages; returns (base, mass, below, above)."""
    axes: list[str] = []
    arr = np.ones(1)  # shape: cards of `axes` + (window,)
    below = np.zeros(())
    above = np.zeros(())
    base = 0
    kmin = {n: int(v.min()) for n, v in k.items()}
    kmax = {n: int(v.max()) for n, v in k.items()}
    pending = dict(kmin), dict(kmax)  # variables whose shift is still to come
    for pos, f in enumerate(order):
        arr, below, above, axes = _multiply(pop, f.var, evidence, arr, below, above, axes)
        stats.max_cells = max(stats.max_cells, arr.size)
        for leaf in f.leaves:
            arr, base = _apply_leaf(pop, leaf, evidence, arr, axes, base, k[leaf])
            stats.max_cells = max(stats.max_cells, arr.size)
            pending[0].pop(leaf, None), pending[1].pop(leaf, None)
        later = order[pos + 1 :]
        for v in [v for v in axes if not any(v in g.scope for g in later)]:
            arr, below, above, base = _sum_out(v, axes, arr, below, above, base, k)
            axes.remove(v)
            pending[0].pop(v, None), pending[1].pop(v, None)
        arr, below, above, base = _clip(
            arr, below, above, base, live_lo - sum(pending[1].values()), live_hi - sum(pending[0].values())
        )
    if axes:  # every variable is closed after the last table
        raise AssertionError(f"variables left open: {axes}")
    return base, arr, float(below), float(above)


def _multiply(
    pop: DiscretePopulation,
    name: str,
    evidence: dict[str, int],
    arr: np.ndarray,
    below: np.ndarray,
    above: np.ndarray,
    axes: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The message times the table of `name` (sliced at the evidence), opening its variables."""
    var = pop.variables[name]
    table = var.cpt
    scope = list(var.parents) + [name]
    index = tuple(evidence[v] if v in evidence else slice(None) for v in scope)
    table = table[index]
    scope = [v for v in scope if v not in evidence]
    new = [v for v in scope if v not in axes]
    if new:
        grow = tuple(slice(None) for _ in axes) + (None,) * len(new)
        arr = arr[grow + (slice(None),)]
        below, above = below[grow], above[grow]
        axes = axes + new
    # align the table's axes with the message's
    perm = [scope.index(v) for v in axes if v in scope]
    table = np.transpose(table, perm) if table.ndim else table
    shape = [pop.variables[v].card if v in scope else 1 for v in axes]
    table = table.reshape(shape) if shape else table
    return arr * table[..., None], below * table, above * table, axes


def _apply_leaf(
    pop: DiscretePopulation,
    name: str,
    evidence: dict[str, int],
    arr: np.ndarray,
    axes: list[str],
    base: int,
    shifts: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Multiply in and sum out a childless variable with one open parent in one pass: each parent
    state's slice is spread over the leaf's shifts, weighted by P[leaf | parent]. The leaf never
    becomes an axis, so a bin's many data values cost time, not memory."""
    var = pop.variables[name]
    table = var.cpt[tuple(evidence[p] if p in evidence else slice(None) for p in var.parents) + (slice(None),)]
    parent = next(p for p in var.parents if p not in evidence)
    lo, hi = int(shifts.min()), int(shifts.max())
    if lo == hi:  # each row of the table sums to 1: only the shift is left
        return arr, base + lo
    i = axes.index(parent)
    length = arr.shape[-1]
    moved = np.moveaxis(arr, i, 0)
    out = np.zeros(arr.shape[:-1] + (length + hi - lo,))
    spread = np.moveaxis(out, i, 0)
    for b in range(moved.shape[0]):
        row = table[b]
        used = np.flatnonzero(row > 0)
        offsets, where = np.unique(shifts[used] - lo, return_inverse=True)
        weights = np.zeros(len(offsets))
        np.add.at(weights, where, row[used])
        for start, w in zip(offsets, weights):
            spread[b, ..., start : start + length] += w * moved[b]
    return out, base + lo


def _sum_out(
    name: str,
    axes: list[str],
    arr: np.ndarray,
    below: np.ndarray,
    above: np.ndarray,
    base: int,
    k: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    i = axes.index(name)
    below, above = below.sum(axis=i), above.sum(axis=i)
    shifts = k.get(name)
    if shifts is None or np.all(shifts == shifts[0]):
        return arr.sum(axis=i), below, above, base + (int(shifts[0]) if shifts is not None else 0)
    moved = np.moveaxis(arr, i, 0)
    lo = int(shifts.min())
    length = moved.shape[-1]
    out = np.zeros(moved.shape[1:-1] + (length + int(shifts.max()) - lo,))
    for s in range(moved.shape[0]):
        start = int(shifts[s]) - lo
        out[..., start : start + length] += moved[s]
    return out, below, above, base + lo


def _clip(
    arr: np.ndarray, below: np.ndarray, above: np.ndarray, base: int, keep_lo: int, keep_hi: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Move mass outside [keep_lo, keep_hi] (partial K) to below / above."""
    n = arr.shape[-1]
    a = min(max(keep_lo - base, 0), n)
    b = max(min(keep_hi - base + 1, n), a)
    if a == 0 and b == n:
        return arr, below, above, base
    below = below + arr[..., :a].sum(axis=-1)
    above = above + arr[..., b:].sum(axis=-1)
    arr = arr[..., a:b]
    if arr.shape[-1] == 0:  # nothing left in the window: one empty cell keeps the shapes uniform
        return np.zeros(arr.shape[:-1] + (1,)), below, above, keep_lo
    return np.ascontiguousarray(arr), below, above, base + a
