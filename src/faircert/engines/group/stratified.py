"""Group rates sampled cell by cell from a discrete population, with simultaneous intervals.

Each rate P[yhat = 1 | cell] (a protected cell, and for a metric that conditions on the label, a
cell with the label fixed) is estimated from draws of the cell's own conditional population
(`population.conditional`: exact draws, no rejection, no weights), so a cell of 0.3% of the
population gets as many draws as the sampling gives it, not 0.3% of them.

Sequential looks on a fixed grid: a cell is only ever looked at after n_j = ceil(FIRST * RATIO**j)
draws, j < LOOKS, and its interval at every look is Clopper-Pearson at level delta / (m LOOKS) for
m cells. For each cell and each j the event "the look-j interval misses" is fixed in advance on the
cell's own stream of draws, so the chance that any interval of any cell at any look misses is at
most delta, whatever the allocation reads from the data to decide which cell to draw next and when
to stop (a union bound, Bonferroni over the cells and the looks). Every metric is computed from the
rates by sound interval arithmetic, so every rate and every metric hold together with probability
at least 1 - delta.

Allocation: after the first look of every cell, the cell drawn next is the one whose next look is
predicted to shrink the sum of the squared metric widths most per draw (the widest metric
counts most; `Sampling.next_cell`), until every metric is at most `target` wide or the time is out; a look the time
would cut short is not taken.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import DataError, FaircertError
from ...interrupt import requested as stop_requested
from ...metrics import METRICS, MetricInterval, needing
from ...population.conditional import ConditionalSampler
from ...population.discrete import DiscretePopulation
from ...results import GroupProbability, GroupResult

#: Draws of a cell at its first look, the growth of its draws from one look to the next, and the
#: most looks a cell gets (its last at about 2 * 10**8 draws): the union bound is over these looks.
FIRST = 2000
RATIO = 1.5
LOOKS = 30
#: Draws passed to the model at once.
CHUNK = 50_000
#: Metric width at which sampling stops before its time.
TARGET_WIDTH = 0.005

METHOD = (
    "stratified: each cell's conditional population sampled directly (exact draws: variable "
    "elimination over the protected attributes' ancestors, the rest forward), draws allocated "
    "to the cells that widen the metrics; Clopper-Pearson per rate at delta/(m L) for m rates and "
    "L possible looks, a union bound over every rate and every look, and the metrics computed "
    "from the rates by interval arithmetic: every rate and metric holds together"
)


def grid(j: int) -> int:
    """A cell's draws at its look j."""
    return math.ceil(FIRST * RATIO**j)


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    from ..sampling.sequential import _clopper_pearson

    lo, hi = _clopper_pearson(np.array([k]), n, alpha)
    return float(lo[0]), float(hi[0])


@dataclass
class Stratum:
    """One rate: the cell's conditional population, its draws so far and its interval."""

    key: str  # "" for the groups' own rates, "Y=<value>" for the rates given a label value
    group: dict[str, Any]  # the protected values, as reports name them
    size: float  # P[cell] (given the label value for "Y=" rates)
    sampler: ConditionalSampler
    rng: np.random.Generator
    looks: int = 0  # looks taken: the draws are grid(looks - 1)
    positive: int = 0
    low: float = 0.0
    high: float = 1.0

    @property
    def n(self) -> int:
        return grid(self.looks - 1) if self.looks else 0

    def probability(self) -> GroupProbability:
        return GroupProbability(dict(self.group), self.low, self.high, self.size)


@dataclass
class Labeller:
    """The model's labels of a population's draws (state codes), column by column."""

    model: Any
    names: list[str]
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, model: Any, population: DiscretePopulation) -> Labeller:
        names = model.named_inputs()
        missing = [n for n in names if n not in population.variables]
        if missing:
            raise DataError(f"the population has no variable(s) {missing} that the model reads")
        values = {}
        for name in names:
            states = population.variables[name].states
            try:
                values[name] = np.array([float(x) for x in states])
            except (TypeError, ValueError):  # names: a linear model reads them, others refuse them
                values[name] = np.array(states, dtype=object)
        return cls(model, names, values)

    def positives(self, codes: dict[str, np.ndarray]) -> int:
        from ..sampling.sequential import _point_label

        return int(_point_label(self.model, self.names, {n: self.values[n][codes[n]] for n in self.names}).sum())


def strata(question: Any, seed: int) -> tuple[list[Stratum], list[str]]:
    """One stratum per rate the question's metrics read (the groups, and given each label value
    where a metric needs the label), and notes on cells left out (probability 0)."""
    from ..probability.bounds import label_conditions

    population = question.population
    protected = list(question.protected) or list(population.protected)
    cells: list[tuple[str, Any, list[str], str | None]] = [("", population, protected, None)]
    if needing(question.metrics, "label"):
        for pop, prot, split_on, values in label_conditions(question):
            cells.append((f"Y={values[0]}" if split_on is None else "", pop, prot, split_on))
    seeds = itertools.count()
    out, notes = [], []
    for key, pop, prot, split_on in cells:
        for combo in itertools.product(*(range(pop.variables[p].card) for p in prot)):
            evidence = dict(zip(prot, combo))
            name = pop.group_name({p: s for p, s in evidence.items() if p != split_on})
            label = "" if split_on is None else f"Y={pop.variables[split_on].labels[evidence[split_on]]}"
            rng = np.random.default_rng([seed, next(seeds)])
            try:
                sampler = ConditionalSampler(pop, evidence)
            except DataError:
                notes.append(f"{label or key} {name}: probability 0 under the population, left out")
                continue
            size = sampler.mass
            if split_on is not None:
                size /= ConditionalSampler(pop, {split_on: evidence[split_on]}).mass
            out.append(Stratum(label or key, name, size, sampler, rng))
    return out, notes


def rates(cells: list[Stratum]) -> tuple[list[GroupProbability], dict[str, list[GroupProbability]]]:
    """The groups' own rates and the conditional ones (by key), from the cells' intervals."""
    conditional: dict[str, list[GroupProbability]] = {}
    for c in cells:
        if c.key:
            conditional.setdefault(c.key, []).append(c.probability())
    return [c.probability() for c in cells if c.key == ""], conditional


def metrics_of(cells: list[Stratum], names: tuple[str, ...]) -> dict[str, MetricInterval]:
    """The metrics' intervals from the cells' intervals (sound interval arithmetic)."""
    groups, conditional = rates(cells)
    return {name: METRICS[name].interval(groups, conditional) for name in names}


@dataclass
class Sampling:
    """The cells, how they are labelled, the error probability shared by all their intervals,
    and the time and width at which the sampling stops."""

    cells: list[Stratum]
    labeller: Labeller
    delta: float
    metrics: tuple[str, ...]
    deadline: float | None
    target: float = TARGET_WIDTH
    seconds_per_draw: float = 0.0
    stopped: str = ""

    def look(self, cell: Stratum) -> bool:
        """Draw up to the cell's next look and update its interval; False (nothing changed) when
        the deadline cuts the look short."""
        todo, positive = grid(cell.looks) - cell.n, cell.positive
        started = time.perf_counter()
        while todo > 0:
            size = min(todo, CHUNK)
            positive += self.labeller.positives(cell.sampler.sample(cell.rng, size))
            todo -= size
            if todo and self.deadline is not None and time.perf_counter() > self.deadline:
                return False
        drawn = grid(cell.looks) - cell.n
        self.seconds_per_draw = (time.perf_counter() - started) / drawn
        cell.looks += 1
        cell.positive = positive
        alpha = self.delta / (len(self.cells) * LOOKS)
        cell.low, cell.high = clopper_pearson(positive, cell.n, alpha)
        return True

    def objective(self) -> float:
        return sum((m.high - m.low) ** 2 for m in metrics_of(self.cells, self.metrics).values())

    def next_cell(self) -> Stratum | None:
        """The cell whose next look is predicted to shrink the objective most per draw. A look
        shrinks an interval about as the square root of the draws grows; its effect on the metrics
        is read from the interval grown by that factor instead (the same slope, seen from the other
        side), which also credits cells tied at a metric's end: shrinking one of two tied cells
        moves nothing, widening either does."""
        base, best, choice, wanted = self.objective(), 0.0, None, False
        grow = math.sqrt(RATIO)
        for cell in self.cells:
            if cell.looks >= LOOKS:
                continue
            low, high = cell.low, cell.high
            centre = cell.positive / cell.n
            cell.low, cell.high = max(0.0, centre - (centre - low) * grow), min(1.0, centre + (high - centre) * grow)
            gain = self.objective() - base
            cell.low, cell.high = low, high
            per_draw = gain / (grid(cell.looks) - cell.n)
            wanted |= per_draw > 0
            if per_draw > best and self.affordable(cell):
                best, choice = per_draw, cell
        if choice is None:  # no look helps the metrics, or none fits the time left
            self.stopped = "budget" if wanted else "converged"
        return choice

    def affordable(self, cell: Stratum) -> bool:
        if self.deadline is None:
            return True
        return time.perf_counter() + (grid(cell.looks) - cell.n) * self.seconds_per_draw <= self.deadline

    def run(self) -> None:
        for cell in self.cells:
            if not self.look(cell):
                raise FaircertError("no time to sample every cell once")
        while True:
            widths = [m.high - m.low for m in metrics_of(self.cells, self.metrics).values()]
            chosen: Stratum | None
            if max(widths) <= self.target:
                self.stopped = "target width"
                return
            if stop_requested():
                self.stopped = "interrupted"
                return
            chosen = self.next_cell()
            if chosen is None:
                return
            if not self.look(chosen):
                self.stopped = "budget"
                return


def estimate_stratified(
    model: Any, question: Any, time_limit: float | None, seed: int, delta: float, target: float = TARGET_WIDTH
) -> GroupResult:
    """The question's rates and metrics under its discrete population, sampled cell by cell (see
    the module docstring): a GroupResult of intervals that all hold together with probability at
    least 1 - `delta` (not bounds)."""
    started = time.perf_counter()
    population = question.population
    cells, notes = strata(question, seed)
    if not any(c.key == "" for c in cells):
        raise DataError("every protected group has probability 0 under the population")
    metrics = tuple(dict.fromkeys(("di", "sp") + tuple(question.metrics)))
    deadline = None if time_limit is None else started + time_limit
    run = Sampling(cells, Labeller.of(model, population), delta, metrics, deadline, target)
    run.run()
    groups, conditional = rates(cells)
    samples = sum(c.n for c in cells)
    return GroupResult.build(
        groups,
        engine="stratified-sampling",
        population=population.describe(),
        **question.judged_by(),
        conditional=conditional,
        approximations=notes,
        elapsed_s=time.perf_counter() - started,
        protected=list(question.protected),
        label=question.label,
        stats={
            "samples": samples,
            "delta": delta,
            "method": METHOD,
            "draws_per_s": samples / max(time.perf_counter() - started, 1e-9),
            "draws": {f"{c.key} {c.probability().name}".strip(): c.n for c in cells},
            "stopped": run.stopped,
        },
    )
