"""Sound group rates under independent marginals by refining regions of the inputs on the model's label.

Under independent marginals a protected cell's population is the product of the other inputs'
marginals, with the protected inputs fixed to the cell's values. Each rate P[yhat = 1 | cell] is
bounded any-time: the inputs' values (each input's data values, as counts) are cut into boxes of
consecutive values, a box whose bounds on the model's margin prove the label 1 (or 0) at every
point of it counts its mass as positive (negative), and the undecided boxes are split, those of
most mass first, until every box is decided or the time or memory limit is reached. Then

    positive mass <= P[yhat = 1 | cell] <= 1 - negative mass,

whatever is still undecided. The rates' intervals give every metric's interval by interval
arithmetic (`GroupResult.build`).

Masses are products of integer counts divided by their totals (`trees.marginal_counts`: exact
for marginals learned from rows, the rounding's total variation added to the bounds otherwise),
each box's mass within a relative 1e-15 per input of its true value, summed exactly
(`math.fsum`); the bounds are widened by a relative `MASS_SLACK` for these roundings.

The model is met through a bounder (`Bounder`): the network's symbolic bounds (`network_regions`)
or the trees' reachable leaves (`tree_regions`). A bounder also says where to cut each undecided
box: the input and the value index at which the box is split in two.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...interrupt import requested as stop_requested
from ...memory import STOPPED as MEMORY_STOPPED
from ...metrics import needing
from ...population.discrete import DiscretePopulation
from ...progress import ProgressEvent
from ...results import GroupProbability, GroupResult
from .trees import marginal_counts

#: Relative widening of the masses for the floating-point products and divisions behind them
#: (at most about 2 * 16 roundings of 2**-53 each per box for a model of a few dozen inputs).
MASS_SLACK = 1e-12
#: Boxes bounded in the first step; later steps grow (or shrink) so that one takes about `STEP_S`.
FIRST_BATCH = 256
MAX_BATCH = 1 << 15
STEP_S = 0.1
#: Bytes a box takes in the frontier per input (two int32 ends) and for its mass.
BYTES_PER_INPUT = 8
BYTES_PER_BOX = 8


@dataclass
class Bounds:
    """A bounder's answer for a batch of boxes: margin bounds, and where to cut each box
    (`feature` -1 where no input of the box holds two values: the box is one point)."""

    lower: np.ndarray
    upper: np.ndarray
    feature: np.ndarray
    at: np.ndarray


class Bounder(Protocol):
    """Bounds on the model's margin (label 1 iff margin > 0) over boxes of value indices: input j
    of box i takes the values of indices lo[i, j] <= k < hi[i, j] of the rate's values of input j."""

    tolerance: float

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> Bounds: ...


@dataclass
class Rate:
    """One rate: a protected cell under one population (the groups', or given a label value), its
    inputs' values as counts, its bounder, and its open boxes."""

    key: str  # "" for the groups' rates, "Y=<value>" for the rates given a label value
    group: dict[str, Any]
    size: float
    counts: list[np.ndarray]  # per model input, the count of each of its values (a fixed input: [1])
    bounder: Bounder
    off: float  # total variation of the counts from the population's marginals
    lo: np.ndarray = field(init=False)
    hi: np.ndarray = field(init=False)
    mass: np.ndarray = field(init=False)
    positive: list[float] = field(default_factory=list)
    negative: list[float] = field(default_factory=list)
    stuck: list[float] = field(default_factory=list)  # points whose margin is within the tolerance

    def __post_init__(self) -> None:
        self.cum = [np.concatenate([[0.0], np.cumsum(c, dtype=np.float64)]) for c in self.counts]
        self.lo = np.zeros((1, len(self.counts)), dtype=np.int32)
        self.hi = np.array([[len(c) for c in self.counts]], dtype=np.int32)
        self.mass = self.masses(self.lo, self.hi)
        self._open = float(self.mass.sum())

    def masses(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out = np.ones(len(lo))
        for j, c in enumerate(self.cum):
            out *= (c[hi[:, j]] - c[lo[:, j]]) / c[-1]
        return out

    @property
    def low(self) -> float:
        return max(0.0, math.fsum(self.positive) * (1 - MASS_SLACK) - self.off)

    @property
    def high(self) -> float:
        return min(1.0, 1.0 - math.fsum(self.negative) * (1 - MASS_SLACK) + self.off)

    @property
    def open_mass(self) -> float:
        return self._open

    @property
    def boxes(self) -> int:
        return len(self.mass)

    def step(self, batch: int) -> int:
        """Bound the `batch` open boxes of most mass: count the decided ones, split the others.
        Returns the boxes bounded."""
        n = len(self.mass)
        if n == 0:
            return 0
        take = np.arange(n) if batch >= n else np.argpartition(-self.mass, batch - 1)[:batch]
        keep = np.ones(n, dtype=bool)
        keep[take] = False
        lo, hi, mass = self.lo[take], self.hi[take], self.mass[take]
        b = self.bounder.bound(lo, hi)
        tol = self.bounder.tolerance
        pos, neg = b.lower > tol, b.upper < -tol
        self.positive.append(float(mass[pos].sum()))
        self.negative.append(float(mass[neg].sum()))
        split = ~pos & ~neg & (b.feature >= 0)
        point = ~pos & ~neg & (b.feature < 0)
        self.stuck.append(float(mass[point].sum()))
        lo, hi, f, at = lo[split], hi[split], b.feature[split].astype(np.int64), b.at[split].astype(np.int32)
        rows = np.arange(len(lo))
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[rows, f] = at
        right_lo[rows, f] = at
        new_lo = np.concatenate([self.lo[keep], lo, right_lo])
        new_hi = np.concatenate([self.hi[keep], left_hi, hi])
        self.mass = np.concatenate([self.mass[keep], self.masses(lo, left_hi), self.masses(right_lo, hi)])
        self.lo, self.hi = new_lo, new_hi
        self._open = float(self.mass.sum())
        return len(take)

    def probability(self) -> GroupProbability:
        return GroupProbability(dict(self.group), self.low, self.high, self.size)


def rate_inputs(
    pop: DiscretePopulation, names: list[str], fixed: dict[str, float]
) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """Each model input's values (increasing) and integer counts under the population's marginal
    (a fixed input: its value, count 1), and the counts' total variation from the marginals."""
    values, counts, off = [], [], 0.0
    for name in names:
        if name in fixed:
            values.append(np.array([fixed[name]]))
            counts.append(np.array([1], dtype=np.int64))
            continue
        v, c, tv = marginal_counts(pop, name)
        order = np.argsort(v, kind="stable")
        values.append(v[order])
        counts.append(c[order])
        off += tv
    return values, counts, off


def make_rates(
    question: Any, names: list[str], bounder_of: Callable[[list[np.ndarray], list[np.ndarray]], tuple]
) -> list[Rate]:
    """One rate per protected cell (and per cell given each label value where a metric needs the
    label); `bounder_of(values, counts)` gives each its bounder and the counts its boxes cut (the
    bounder may merge values the model does not tell apart)."""
    from ..probability.bounds import label_conditions

    pop = question.population
    protected = list(question.protected) or list(pop.protected)
    runs: list[tuple[str, DiscretePopulation]] = [("", pop)]
    if needing(question.metrics, "label"):
        runs += [(f"Y={values[0]}", sub) for sub, _, _, values in label_conditions(question)]
    rates = []
    for key, sub in runs:
        for combo in itertools.product(*(range(sub.variables[p].card) for p in protected)):
            evidence = dict(zip(protected, combo))
            fixed = {p: float(sub.variables[p].states[s]) for p, s in evidence.items()}
            values, counts, off = rate_inputs(sub, names, fixed)
            bounder, counts = bounder_of(values, counts)
            size = float(np.prod([sub.marginal(p)[s] for p, s in evidence.items()]))
            rates.append(Rate(key, sub.group_name(evidence), size, counts, bounder, off))
    return rates


def refine(
    rates: list[Rate], deadline: float | None, memory_limit: int | None, progress: Any, started: float
) -> dict[str, Any]:
    """Refine the rates until each is decided, the deadline, an interrupt or the memory limit:
    each step bounds a batch of the widest rate's heaviest boxes. Returns the run's stats."""
    batch, examined, steps, full = FIRST_BATCH, 0, 0, False
    stopped = "converged"
    while True:
        live = [r for r in rates if r.boxes]
        if not live:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            stopped = "budget"
            break
        if stop_requested():
            stopped = "interrupted"
            break
        held = sum(r.boxes * (BYTES_PER_BOX + BYTES_PER_INPUT * len(r.counts)) for r in rates)
        rate = max(live, key=lambda r: r.open_mass)
        if memory_limit is not None and held + 2 * batch * BYTES_PER_INPUT * len(rate.counts) > memory_limit:
            stopped, full = MEMORY_STOPPED, True
            break
        begun = time.perf_counter()
        examined += rate.step(batch)
        steps += 1
        took = time.perf_counter() - begun
        if took < STEP_S / 2:
            batch = min(2 * batch, MAX_BATCH)
        elif took > 2 * STEP_S:
            batch = max(batch // 2, 16)
        if progress is not None:
            progress(
                ProgressEvent(
                    elapsed_s=time.perf_counter() - started,
                    undecided=max(r.high - r.low for r in rates),
                    boxes=examined,
                    iterations=steps,
                )
            )
    return {
        "stopped": stopped,
        "boxes_bounded": examined,
        "boxes_open": sum(r.boxes for r in rates),
        "steps": steps,
        "undecided_points_mass": max(math.fsum(r.stuck) for r in rates),
        **({"memory_limited": True} if full else {}),
    }


def answer_rates(
    question: Any, options: Any, progress: Any, engine: str, names: list[str], bounder_of: Callable, method: str
) -> GroupResult:
    """The registry entry points' common part: the rates, refined in the time limit, as a result."""
    started = time.perf_counter()
    rates = make_rates(question, names, bounder_of)
    deadline = None if options.time_limit is None else started + options.time_limit
    stats = refine(rates, deadline, options.memory_limit, progress, started)
    if progress is not None and not stats["steps"]:
        progress(ProgressEvent(elapsed_s=time.perf_counter() - started))
    groups = [r.probability() for r in rates if r.key == ""]
    conditional: dict[str, list[GroupProbability]] = {}
    for r in rates:
        if r.key:
            conditional.setdefault(r.key, []).append(r.probability())
    pop = question.population
    return GroupResult.build(
        groups,
        engine=engine,
        population=pop.describe(),
        **question.judged_by(),
        conditional=conditional,
        elapsed_s=time.perf_counter() - started,
        model=question.model_name,
        protected=list(question.protected) or list(pop.protected),
        label=question.label,
        stats={**stats, "rates": len(rates), "method": method},
    )
