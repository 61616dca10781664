"""Sound group rates of tree ensembles under independent marginals, counted by `trees.population`.

Under independent marginals a protected cell's population is the product measure with the
protected values fixed, so P[yhat = 1 | cell] is a share of the product measure, which the
tree-population engine counts exactly (or bounds, any-time) for the question "has x a twin with
another label". That question is made this one by one extra input d, the only protected feature:
a tree on d adds nothing where d = 0 and sends the score below every threshold where d = 1. The
twin with d = 1 is then always negative, so x has a twin with another label exactly where the
model labels x (with the cell's values) positive, whatever x's own d: the unfair share is the rate.

The engine counts integer masses: each input's marginal is written with the data's row count as
denominator (exact for marginals learned from rows); where a probability is not such a fraction,
the rounding's total variation (summed over the inputs, a bound on how far any rate of a product
measure moves) widens the bounds.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import numpy as np

from ... import memory
from ...domain import Domain, Feature
from ...metrics import needing
from ...models.trees import Tree, TreeEnsemble
from ...options import GroupOptions
from ...population.discrete import DiscretePopulation
from ...population.marginals import Marginals
from ...progress import ProgressEvent
from ...properties import individual_fairness
from ...results import GroupProbability, GroupResult

#: The denominator of the marginals where the data's row count does not write them exactly (their
#: smoothing, or no row count).
DENOMINATOR = 2**22


#: Most leaves (all trees together) this engine takes. Its counts are any-time, but on larger
#: ensembles they stay [0, 1] within practical limits (a 100-tree forest of depth 8, 16,456 leaves,
#: over the demo's lending data: nothing in 10 s, where 3,571 leaves were bounded within 0.015),
#: while the probability-bounds engine narrows them; that engine takes them instead.
MAX_LEAVES = 8_000


def accepts(model: TreeEnsemble, question: Any) -> bool:
    """Whether the ensemble is small enough (`MAX_LEAVES`) and every input the model reads, every
    protected attribute and the label are independent under the population (and under each label
    value's, where EO asks): their ancestor sets are disjoint (a bin and its data values count as
    one)."""
    if sum(int(t.is_leaf.sum()) for t in model.trees) > MAX_LEAVES:
        return False
    return reads_independent_inputs(model, question)


def reads_independent_inputs(model: Any, question: Any) -> bool:
    """Whether every input the model reads, every protected attribute and the label are
    independent under the population (and under each label value's, where EO asks): their
    ancestor sets are disjoint (a bin and its data values count as one); every state a number."""
    pops = [question.population]
    if needing(question.metrics, "label"):
        pops += list(getattr(question.population, "by_label", {}).values()) or [None]
    names = model.named_inputs() + list(question.protected)
    return all(pop is not None and _independent(pop, names) for pop in pops)


def _independent(pop: DiscretePopulation, names: list[str]) -> bool:
    if any(n not in pop.variables for n in names):  # the registry passes discrete populations only
        return False
    try:  # the model reads numbers: every state of every input is one
        [float(s) for n in names for s in pop.variables[n].states]
    except (TypeError, ValueError):
        return False
    seen: set[str] = set()
    for name in dict.fromkeys(names):
        ancestry = pop._ancestors([name])
        if ancestry & seen:
            return False
        seen |= ancestry
    return True


def with_switch(ir: TreeEnsemble) -> TreeEnsemble:
    """The ensemble with one more input d (last): unchanged where d = 0, negative everywhere where
    d = 1 (one more tree whose d = 1 leaf outweighs every other tree and the base score)."""
    reach = sum(float(np.abs(t.value[t.is_leaf]).max()) for t in ir.trees)
    big = reach + (abs(ir.base_score) + 1.0) / ir.scale + 1.0
    d = ir.n_features
    switch = Tree(
        np.array([d, -1, -1]),
        np.array([0.5, 0.0, 0.0]),
        np.array([1, -1, -1]),
        np.array([2, -1, -1]),
        np.array([0.0, 0.0, -big]),
    )
    names = ir.named_inputs() + ["faircert: switch"]
    return replace(ir, trees=list(ir.trees) + [switch], n_features=d + 1, feature_names=names)


def marginal_counts(pop: DiscretePopulation, name: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, integer counts, total variation from the population's marginal) of input `name`."""
    probs = pop.marginal(name)
    written = [
        np.rint(probs * rows).astype(np.int64) for rows in (int(pop.info.get("rows") or DENOMINATOR), DENOMINATOR)
    ]
    counts = min(written, key=lambda c: float(np.abs(c / c.sum() - probs).sum()))
    tv = 0.5 * float(np.abs(counts / counts.sum() - probs).sum())
    keep = counts > 0
    counts = counts[keep]
    values = np.array([float(s) for s in pop.variables[name].states])[keep]
    return values, counts, tv + 1e-14  # the sum's own rounding, far below 1e-14


def rate_bounds(
    switched: TreeEnsemble, pop: DiscretePopulation, fixed: dict[str, float], time_limit: float | None, seed: int
) -> tuple[float, float, bool, bool]:
    """Sound bounds on P[yhat = 1] under the population's marginals with the inputs in `fixed` set
    to their values, whether the count completed (the bounds then differ by the marginals'
    rounding alone) and whether the run's memory limit (`memory.limited`) stopped it."""
    from ..trees.population import stretched
    from ..trees.quantify import quantify
    from ..trees.run import TreeOptions

    names = switched.named_inputs()[:-1]
    features, values, counts, tv = [], [], [], 0.0
    for name in names:
        if name in fixed:
            v, c = np.array([fixed[name]]), np.array([1])
        else:
            v, c, off = marginal_counts(pop, name)
            tv += off
        features.append(Feature(name, "real", float(v.min()), float(v.max())))
        values.append(v)
        counts.append(c)
    features.append(Feature("faircert: switch", "integer", 0, 1, protected=True))
    values.append(np.array([0.0, 1.0]))
    counts.append(np.array([1, 1]))
    prop = individual_fairness(Domain(tuple(features)), "faircert: switch")
    prop = replace(prop, population=Marginals(tuple(values), tuple(counts), 1))
    ir_s, prop_s, _ = stretched(switched, prop)
    q = quantify(ir_s, prop_s, time_limit, None, TreeOptions(keep_pieces=0))
    lower, upper = q.bounds  # on the share without a twin of another label: the negatives
    low = q.unfair / q.measured_upper if q.measured_upper > 0 else 0.0
    complete = bool(q.complete and upper - lower <= 1e-12)
    full = q.stopped == memory.STOPPED or bool(q.stats.get("memory_limited"))
    return max(0.0, low - tv), min(1.0, (low if complete else 1.0 - lower) + tv), complete, full


def _compile_kernels(ir: TreeEnsemble) -> None:
    """The compiled kernels of the tree engines, built before the runs' clocks start."""
    from ... import compiled
    from ..trees.verify import _warm

    compiled.warm(lambda: _warm(ir))


def answer(ir: TreeEnsemble, question: Any, options: GroupOptions, progress: Any = None) -> GroupResult:
    """Registry entry point: every rate the metrics read (the groups, and given each label value
    where a metric needs the label) as sound bounds, each count getting an equal share of the time
    left less what a count costs beyond its share (preparing the boxes); a count with no time left
    is not started, and its rate stays [0, 1]. A count that reaches the memory limit ends the run
    at once: the counts after it are not started either."""
    from ..probability.bounds import label_conditions

    started = time.perf_counter()
    pop = question.population
    protected = list(question.protected) or list(pop.protected)
    runs: list[tuple[str, DiscretePopulation]] = [("", pop)]
    if needing(question.metrics, "label"):
        runs += [(f"Y={values[0]}", sub) for sub, _, _, values in label_conditions(question)]
    cells = list(itertools.product(*(range(pop.variables[p].card) for p in protected)))
    switched = with_switch(ir)
    _compile_kernels(switched)
    deadline = None if options.time_limit is None else started + options.time_limit
    todo, overhead = len(runs) * len(cells), 0.0
    rates: dict[str, list[GroupProbability]] = {}
    complete, full = True, False
    for key, sub in runs:
        for combo in cells:
            evidence = dict(zip(protected, combo))
            fixed = {p: float(sub.variables[p].states[s]) for p, s in evidence.items()}
            each = None if deadline is None else (deadline - time.perf_counter()) / todo - overhead
            todo -= 1
            low, high, done = 0.0, 1.0, False
            if not full and (each is None or each > 0):
                begun = time.perf_counter()
                with memory.limited(options.memory_limit):
                    low, high, done, full = rate_bounds(switched, sub, fixed, each, options.seed)
                overhead = max(overhead, time.perf_counter() - begun - (each or 0.0))
            complete &= done
            size = float(np.prod([sub.marginal(p)[s] for p, s in evidence.items()]))
            rates.setdefault(key, []).append(GroupProbability(sub.group_name(evidence), low, high, size))
            if progress is not None:
                progress(ProgressEvent(elapsed_s=time.perf_counter() - started))
    groups = rates.pop("")
    return GroupResult.build(
        groups,
        engine="tree-population-group",
        population=pop.describe(),
        **question.judged_by(),
        conditional=rates,
        elapsed_s=time.perf_counter() - started,
        model=question.model_name,
        protected=protected,
        label=question.label,
        stats={
            "stopped": memory.STOPPED if full else "converged" if complete else "budget",
            "runs": len(runs) * len(cells),
            **({"memory_limited": True} if full else {}),
        },
    )
