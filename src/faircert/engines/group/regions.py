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

The cells' rates under one population are refined together (`Joint`): the protected inputs the
model reads are dimensions of the boxes too, a box's mass is its probability over the other
inputs, and a decided box counts in the rate of every cell whose protected values it holds, so
where the label hardly depends on the protected values one box decides every cell's rate at once.
Boxes are taken by weight: their mass times the cells they hold.

Masses are products of integer counts divided by their totals (`trees.marginal_counts`: exact
for marginals learned from rows, the rounding's total variation added to the bounds otherwise);
the bounds are widened by a relative `MASS_SLACK` for the floating-point roundings.

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
from ...options import GroupOptions
from ...population.discrete import DiscretePopulation
from ...progress import ProgressEvent
from ...results import GroupProbability, GroupResult
from .trees import marginal_counts

#: Relative widening of the masses for the floating-point arithmetic behind them: each box's mass
#: is a product of exact integer differences each divided by an exact total (2 roundings of 2**-53
#: per input), a step's sum of at most `MAX_BATCH` such positive terms errs by at most that many
#: roundings more, and the steps' sums are added exactly (`math.fsum`): (2 * inputs + MAX_BATCH)
#: * 2**-53 < 1e-10 for models of up to a thousand inputs.
MASS_SLACK = 1e-10
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
class Joint:
    """The rates of every protected cell under one population (the groups', or given a label value),
    refined together: the protected inputs the model reads are dimensions of the boxes as well, and
    a box proven positive (negative) counts its mass over the other inputs in the rate of every cell
    whose values it holds. Where the label hardly depends on the protected values, one box decides
    every cell's rate at once."""

    key: str  # "" for the groups' rates, "Y=<value>" for the rates given a label value
    groups: list[dict[str, Any]]
    sizes: list[float]
    dims: list[int]  # the box dimensions of the protected inputs the model reads
    member: np.ndarray  # (cells, len(dims)): each cell's index in each of those dimensions
    counts: list[np.ndarray]  # per model input, the count of each of its values (or cells of them)
    bounder: Bounder
    off: float  # total variation of the counts from the population's marginals
    lo: np.ndarray = field(init=False)
    hi: np.ndarray = field(init=False)
    mass: np.ndarray = field(init=False)
    weight: np.ndarray = field(init=False)
    positive: list[np.ndarray] = field(default_factory=list)  # per step, each cell's mass proven positive
    negative: list[np.ndarray] = field(default_factory=list)
    stuck: list[np.ndarray] = field(default_factory=list)  # points whose margin is within the tolerance

    def __post_init__(self) -> None:
        self.free = [j for j in range(len(self.counts)) if j not in self.dims]
        self.cum = [np.concatenate([[0.0], np.cumsum(c, dtype=np.float64)]) for c in self.counts]
        self.lo = np.zeros((1, len(self.counts)), dtype=np.int32)
        self.hi = np.array([[len(c) for c in self.counts]], dtype=np.int32)
        self.mass = self.masses(self.lo, self.hi)
        self.weight = self.mass * self.cover(self.lo, self.hi).sum(axis=1)

    def masses(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Each box's probability over the inputs other than the protected ones."""
        out = np.ones(len(lo))
        for j in self.free:
            c = self.cum[j]
            out *= (c[hi[:, j]] - c[lo[:, j]]) / c[-1]
        return out

    def cover(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """(boxes, cells): which cells' protected values each box holds."""
        held = np.ones((len(lo), len(self.groups)), dtype=bool)
        for k, j in enumerate(self.dims):
            held &= (lo[:, j, None] <= self.member[None, :, k]) & (self.member[None, :, k] < hi[:, j, None])
        return held

    def _total(self, parts: list[np.ndarray], g: int) -> float:
        return math.fsum(float(p[g]) for p in parts)

    def low(self, g: int) -> float:
        return max(0.0, self._total(self.positive, g) * (1 - MASS_SLACK) - self.off)

    def high(self, g: int) -> float:
        return min(1.0, 1.0 - self._total(self.negative, g) * (1 - MASS_SLACK) + self.off)

    @property
    def open_weight(self) -> float:
        return float(self.weight.sum())

    @property
    def boxes(self) -> int:
        return len(self.mass)

    def _by_cell(self, mass: np.ndarray, held: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        return np.array([float(mass[chosen & held[:, g]].sum()) for g in range(len(self.groups))])

    def step(self, batch: int) -> int:
        """Bound the `batch` open boxes of most weight (mass times the cells held): count the decided
        ones, split the others. Returns the boxes bounded."""
        n = len(self.mass)
        if n == 0:
            return 0
        take = np.arange(n) if batch >= n else np.argpartition(-self.weight, batch - 1)[:batch]
        keep = np.ones(n, dtype=bool)
        keep[take] = False
        lo, hi, mass = self.lo[take], self.hi[take], self.mass[take]
        held = self.cover(lo, hi)
        b = self.bounder.bound(lo, hi)
        tol = self.bounder.tolerance
        pos, neg = b.lower > tol, b.upper < -tol
        self.positive.append(self._by_cell(mass, held, pos))
        self.negative.append(self._by_cell(mass, held, neg))
        split = ~pos & ~neg & (b.feature >= 0)
        self.stuck.append(self._by_cell(mass, held, ~pos & ~neg & (b.feature < 0)))
        lo, hi, f, at = lo[split], hi[split], b.feature[split].astype(np.int64), b.at[split].astype(np.int32)
        rows = np.arange(len(lo))
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[rows, f] = at
        right_lo[rows, f] = at
        born_lo, born_hi = np.concatenate([lo, right_lo]), np.concatenate([left_hi, hi])
        born = self.masses(born_lo, born_hi)
        self.lo = np.concatenate([self.lo[keep], born_lo])
        self.hi = np.concatenate([self.hi[keep], born_hi])
        self.mass = np.concatenate([self.mass[keep], born])
        self.weight = np.concatenate([self.weight[keep], born * self.cover(born_lo, born_hi).sum(axis=1)])
        return len(take)

    def probabilities(self) -> list[GroupProbability]:
        return [
            GroupProbability(dict(g), self.low(k), self.high(k), size)
            for k, (g, size) in enumerate(zip(self.groups, self.sizes))
        ]


def joint_inputs(
    pop: DiscretePopulation, names: list[str], protected: list[str]
) -> tuple[list[np.ndarray], list[np.ndarray], float, dict[str, np.ndarray]]:
    """Each model input's values (increasing) and integer counts under the population's marginal
    (a protected input: every state, count 1 each), the counts' total variation from the
    marginals, and for each protected input the position of each state among its values."""
    values, counts, off, where = [], [], 0.0, {}
    for name in names:
        if name in protected:
            v = np.array([float(x) for x in pop.variables[name].states])
            order = np.argsort(v, kind="stable")
            values.append(v[order])
            counts.append(np.ones(len(v), dtype=np.int64))
            where[name] = np.argsort(order)  # state index -> position
            continue
        v, c, tv = marginal_counts(pop, name)
        order = np.argsort(v, kind="stable")
        values.append(v[order])
        counts.append(c[order])
        off += tv
    return values, counts, off, where


def make_rates(
    question: Any, names: list[str], bounder_of: Callable[[list[np.ndarray], list[np.ndarray]], tuple]
) -> list[Joint]:
    """One joint refinement of the protected cells' rates, and one more per label value where a
    metric needs the label; `bounder_of(values, counts)` gives each its bounder, the counts its
    boxes cut and where each value lies among them (the bounder may merge values the model does
    not tell apart)."""
    from ..probability.bounds import label_conditions

    pop = question.population
    protected = list(question.protected) or list(pop.protected)
    runs: list[tuple[str, DiscretePopulation]] = [("", pop)]
    if needing(question.metrics, "label"):
        runs += [(f"Y={values[0]}", sub) for sub, _, _, values in label_conditions(question)]
    joints = []
    for key, sub in runs:
        values, counts, off, where = joint_inputs(sub, names, protected)
        bounder, counts, cell_of = bounder_of(values, counts)
        read = [p for p in protected if p in names]
        dims = [names.index(p) for p in read]
        groups, sizes, member = [], [], []
        for combo in itertools.product(*(range(sub.variables[p].card) for p in protected)):
            evidence = dict(zip(protected, combo))
            groups.append(sub.group_name(evidence))
            sizes.append(float(np.prod([sub.marginal(p)[s] for p, s in evidence.items()])))
            member.append([cell_of[j][where[p][evidence[p]]] for p, j in zip(read, dims)])
        cells = np.array(member, dtype=np.int64).reshape(len(groups), len(dims))
        joints.append(Joint(key, groups, sizes, dims, cells, counts, bounder, off))
    return joints


def refine(
    joints: list[Joint], deadline: float | None, memory_limit: int | None, progress: Any, started: float
) -> dict[str, Any]:
    """Refine until every box is decided, the deadline, an interrupt or the memory limit: each step
    bounds a batch of the heaviest boxes of the refinement with the most open weight. Returns the
    run's stats."""
    batch, examined, steps, full = FIRST_BATCH, 0, 0, False
    stopped = "converged"
    while True:
        live = [r for r in joints if r.boxes]
        if not live:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            stopped = "budget"
            break
        if stop_requested():
            stopped = "interrupted"
            break
        held = sum(r.boxes * (BYTES_PER_BOX + BYTES_PER_INPUT * len(r.counts)) for r in joints)
        joint = max(live, key=lambda r: r.open_weight)
        if memory_limit is not None and held + 2 * batch * BYTES_PER_INPUT * len(joint.counts) > memory_limit:
            stopped, full = MEMORY_STOPPED, True
            break
        begun = time.perf_counter()
        examined += joint.step(batch)
        steps += 1
        took = time.perf_counter() - begun
        if took < STEP_S / 2:
            batch = min(2 * batch, MAX_BATCH)
        elif took > 2 * STEP_S:
            batch = max(batch // 2, 16)
        if progress is not None:
            widest = max(r.high(g) - r.low(g) for r in joints for g in range(len(r.groups)))
            progress(
                ProgressEvent(
                    elapsed_s=time.perf_counter() - started, undecided=widest, boxes=examined, iterations=steps
                )
            )
    return {
        "stopped": stopped,
        "boxes_bounded": examined,
        "boxes_open": sum(r.boxes for r in joints),
        "steps": steps,
        "undecided_points_mass": max(math.fsum(float(p.max()) for p in r.stuck) for r in joints),
        **({"memory_limited": True} if full else {}),
    }


def answer_rates(
    question: Any,
    options: GroupOptions,
    progress: Any,
    engine: str,
    names: list[str],
    bounder_of: Callable,
    method: str,
) -> GroupResult:
    """The registry entry points' common part: the rates, refined in the time limit, as a result."""
    started = time.perf_counter()
    rates = make_rates(question, names, bounder_of)
    deadline = None if options.time_limit is None else started + options.time_limit
    stats = refine(rates, deadline, options.memory_limit, progress, started)
    if progress is not None and not stats["steps"]:
        progress(ProgressEvent(elapsed_s=time.perf_counter() - started))
    groups = [p for r in rates if r.key == "" for p in r.probabilities()]
    conditional: dict[str, list[GroupProbability]] = {}
    for r in rates:
        if r.key:
            conditional.setdefault(r.key, []).extend(r.probabilities())
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
        stats={**stats, "rates": sum(len(r.groups) for r in rates), "method": method},
    )
