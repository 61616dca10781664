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

Shared draws: where the cells' evidence (the protected attributes, and the label where it is a
variable) shares no edge with the population's other variables (independent marginals), every
cell's conditional population of the other variables is the population's own, so one stream of
draws of the whole population, with each cell's evidence set in turn, is an exact i.i.d. stream of
every cell at once. A tree ensemble labels a draw under every cell's evidence in one descent of
each tree (`trees_compiled.setting_scores`), so all the cells get each draw for little more than
one cell's cost. The cells of a stream take their looks together; each cell's interval at each
look is the one above, on that cell's own stream, and the union bound needs no independence
between cells, so the guarantee is unchanged.

Allocation: after the first look of every stream (a cell, or cells sharing their draws), the
stream drawn next is the one whose next look is predicted to shrink the sum of the squared metric
widths most per draw (the widest metric counts most; `Sampling.next_stream`), until every metric
is at most `target` wide or the time is out; a look the time would cut short is not taken.
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

    def shares(self) -> bool:
        """Whether the model labels a draw under many cells' evidence at once for about one cell's
        cost (a tree ensemble, by the compiled kernel)."""
        from ... import compiled

        try:
            return bool(self.model.accept(_Shares())) and compiled.available()
        except AttributeError:  # a model no visitor reaches
            return False

    def positives_in(self, codes: dict[str, np.ndarray], fixed: tuple[str, ...], settings: np.ndarray) -> np.ndarray:
        """Positives of the draws `codes` under each row of `settings` (states of the variables
        `fixed`, which replace the draws' own), one count per row."""
        from ...models import trees_compiled

        read = [k for k, name in enumerate(fixed) if name in self.names]
        if not read:  # the model reads none of them: one labelling serves every setting
            return np.full(len(settings), self.positives(codes), dtype=np.int64)
        columns = [self.names.index(fixed[k]) for k in read]
        values = np.array([[self.values[fixed[k]][row[k]] for k in read] for row in settings], dtype=np.float64)
        distinct, inverse = np.unique(values, axis=0, return_inverse=True)
        X = np.stack([np.asarray(self.values[n][codes[n]], dtype=np.float64) for n in self.names], axis=1)
        scores = trees_compiled.setting_scores(self.model, X, columns, distinct)
        counts = self.model.label_from_score(scores).astype(bool).sum(axis=0)
        return counts[np.asarray(inverse).ravel()].astype(np.int64)


class _Shares:
    """`Labeller.shares` for each kind of model."""

    def trees(self, model: Any) -> bool:
        return True

    def linear(self, model: Any) -> bool:
        return False

    network = linear


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
class Stream:
    """Draws shared by `cells`: a single cell's own conditional draws (`fixed` empty), or draws of
    a population whose cells differ only in the states of `fixed`, set to each cell's row of
    `settings` (see the module docstring)."""

    cells: list[Stratum]
    sampler: ConditionalSampler
    rng: np.random.Generator
    fixed: tuple[str, ...] = ()
    settings: np.ndarray | None = None
    looks: int = 0
    seconds_per_draw: float = 0.0

    @property
    def n(self) -> int:
        return grid(self.looks - 1) if self.looks else 0

    @classmethod
    def alone(cls, cell: Stratum) -> Stream:
        return cls([cell], cell.sampler, cell.rng)


def streams_of(cells: list[Stratum], labeller: Labeller) -> list[Stream]:
    """The cells' streams: cells of one population with the same evidence variables share one,
    where that evidence shares no edge with the population's other variables and the model labels
    many settings at once; every other cell draws alone."""
    families: dict[tuple[int, tuple[str, ...]], list[Stratum]] = {}
    for cell in cells:
        key = (id(cell.sampler.population), tuple(sorted(cell.sampler.evidence)))
        families.setdefault(key, []).append(cell)
    out = []
    for (_, fixed), family in families.items():
        pop = family[0].sampler.population
        if len(family) > 1 and len(family) <= 64 and isolated(pop, fixed) and labeller.shares():
            settings = np.array([[c.sampler.evidence[f] for f in fixed] for c in family], dtype=np.int64)
            out.append(Stream(family, ConditionalSampler(pop, {}), family[0].rng, fixed, settings))
        else:
            out += [Stream.alone(c) for c in family]
    return out


def isolated(population: DiscretePopulation, names: tuple[str, ...]) -> bool:
    """Whether no edge joins the variables `names` to the population's others: then the others'
    distribution given any states of `names` is their own (the joint's tables split in two)."""
    inside = set(names)
    return all(
        (set(v.parents) <= inside) if v.name in inside else not (set(v.parents) & inside)
        for v in population.variables.values()
    )


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
    stopped: str = ""
    streams: list[Stream] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.streams:
            self.streams = [Stream.alone(c) for c in self.cells]

    def look(self, stream: Stream) -> bool:
        """Draw up to the stream's next look and update its cells' intervals; False (nothing
        changed) when the deadline cuts the look short."""
        todo = grid(stream.looks) - stream.n
        positive = np.array([c.positive for c in stream.cells], dtype=np.int64)
        started = time.perf_counter()
        while todo > 0:
            size = min(todo, CHUNK)
            codes = stream.sampler.sample(stream.rng, size)
            if stream.settings is None:
                positive += self.labeller.positives(codes)
            else:
                positive += self.labeller.positives_in(codes, stream.fixed, stream.settings)
            todo -= size
            if todo and self.deadline is not None and time.perf_counter() > self.deadline:
                return False
        drawn = grid(stream.looks) - stream.n
        stream.seconds_per_draw = (time.perf_counter() - started) / drawn
        stream.looks += 1
        alpha = self.delta / (len(self.cells) * LOOKS)
        for cell, k in zip(stream.cells, positive):
            cell.looks = stream.looks
            cell.positive = int(k)
            cell.low, cell.high = clopper_pearson(cell.positive, cell.n, alpha)
        return True

    def objective(self) -> float:
        return sum((m.high - m.low) ** 2 for m in metrics_of(self.cells, self.metrics).values())

    def next_stream(self) -> Stream | None:
        """The stream whose next look is predicted to shrink the objective most per draw. A look
        shrinks an interval about as the square root of the draws grows; its effect on the metrics
        is read from its cells' intervals grown by that factor instead (the same slope, seen from
        the other side), which also credits cells tied at a metric's end: shrinking one of two tied
        cells moves nothing, widening either does."""
        base, best, choice, wanted = self.objective(), 0.0, None, False
        grow = math.sqrt(RATIO)
        for stream in self.streams:
            if stream.looks >= LOOKS:
                continue
            kept = [(cell.low, cell.high) for cell in stream.cells]
            for cell in stream.cells:
                centre = cell.positive / cell.n
                low, high = cell.low, cell.high
                cell.low, cell.high = (
                    max(0.0, centre - (centre - low) * grow),
                    min(1.0, centre + (high - centre) * grow),
                )
            gain = self.objective() - base
            for cell, (low, high) in zip(stream.cells, kept):
                cell.low, cell.high = low, high
            per_draw = gain / (grid(stream.looks) - stream.n)
            wanted |= per_draw > 0
            if per_draw > best and self.affordable(stream):
                best, choice = per_draw, stream
        if choice is None:  # no look helps the metrics, or none fits the time left
            self.stopped = "budget" if wanted else "converged"
        return choice

    def affordable(self, stream: Stream) -> bool:
        if self.deadline is None:
            return True
        return time.perf_counter() + (grid(stream.looks) - stream.n) * stream.seconds_per_draw <= self.deadline

    def run(self) -> None:
        for stream in self.streams:
            if not self.look(stream):
                raise FaircertError("no time to sample every cell once")
        while True:
            widths = [m.high - m.low for m in metrics_of(self.cells, self.metrics).values()]
            chosen: Stream | None
            if max(widths) <= self.target:
                self.stopped = "target width"
                return
            if stop_requested():
                self.stopped = "interrupted"
                return
            chosen = self.next_stream()
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
    labeller = Labeller.of(model, population)
    run = Sampling(cells, labeller, delta, metrics, deadline, target, streams=streams_of(cells, labeller))
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
            # draws of the populations: a shared stream's draw is a draw of each of its cells
            "population_draws": sum(s.n for s in run.streams),
            "shared_streams": sum(1 for s in run.streams if s.settings is not None),
            "stopped": run.stopped,
        },
    )
