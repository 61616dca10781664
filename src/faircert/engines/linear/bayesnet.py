"""Individual fairness of a linear model under a learned Bayesian network: P[x has an unfair twin].

With epsilon 0, x's twins differ from it only in the protected attributes, so with T the score of x
and c(a) the protected part of the score for x's protected values a, the twins' scores are
T - c(a) + c(a') over every combination a'. The decisions differ exactly when
c(a) - max c < T <= c(a) - min c (T > 0 deciding positive; for T >= 0 the ends swap), an interval
of T. P[unfair] is then the sum over groups a of P[a, T in that interval], which the histogram
engine (`group.grid`) bounds soundly from the score's distribution given a.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from ...models.linear import LinearModel
from ...options import VerifyOptions
from ...population.discrete import DiscretePopulation
from ...results import Counterexample, Result
from ..boxes.budget import Budget
from ..group import grid
from ..group.grid import GridEngine
from ..probability.twins import sampled_counterexamples, sampled_twins


def refined_unfair_probability(
    model: LinearModel,
    pop: DiscretePopulation,
    protected: list[str],
    deadline: float | None = None,
    memory_limit: int | None = None,
) -> tuple[float, float, dict[str, Any]]:
    """`unfair_probability` on score grids refined while the time left and the memory limit allow
    (`grid.refined`)."""
    (low, high, stats), passes, limited = grid.refined(
        lambda cells, first: unfair_probability(model, pop, protected, deadline, cells),
        lambda out: out[1] - out[0],
        deadline,
        memory_limit,
    )
    return low, high, dict(stats, grid_passes=passes, **({"memory_limited": True} if limited else {}))


def unfair_probability(
    model: LinearModel,
    pop: DiscretePopulation,
    protected: list[str],
    deadline: float | None = None,
    cells: int | None = None,
) -> tuple[float, float, dict[str, Any]]:
    """Sound bounds (low, high) on P[x has a twin decided otherwise] for x drawn from `pop`."""
    engine = GridEngine(model, pop, cells, deadline)
    combos = [dict(zip(protected, c)) for c in itertools.product(*[range(pop.variables[p].card) for p in protected])]
    shift = {i: sum(float(engine.contrib[p][s]) for p, s in g.items()) for i, g in enumerate(combos)}
    top, bottom = max(shift.values()), min(shift.values())
    low = high = total = 0.0
    for i, group in enumerate(combos):
        t_lo, t_hi = shift[i] - top, shift[i] - bottom
        if t_lo == t_hi:
            total += engine.histogram(group, [0.0]).total
            continue
        hist = engine.histogram(group, [t_lo, t_hi])
        above_lo, above_hi = hist.tail(t_lo, engine.strict), hist.tail(t_hi, engine.strict)
        low += max(0.0, above_lo[0] - above_hi[1])
        high += max(0.0, above_lo[1] - above_hi[0])
        total += hist.total
    stats = {
        "grid_step": engine.stats.grid_step,
        "grid_width": engine.stats.grid_width,
        "max_cells": engine.stats.max_cells,
        "population_mass": total,
    }
    # the total is a float sum too: divide by its largest and smallest possible values
    return (
        min(1.0, low / (total * (1 + grid.MASS_ROUNDING))),
        min(1.0, high / (total * (1 - grid.MASS_ROUNDING))),
        stats,
    )


def answer(model: LinearModel, network: Any, prop: Any, pop: DiscretePopulation, options: VerifyOptions) -> Result:
    """The verify result under the population: shares as probabilities, counterexamples drawn from
    the population and re-checked on the compiled network `network` over `prop.domain`'s codes."""
    start = time.perf_counter()
    deadline = None if options.time_limit is None else time.monotonic() + options.time_limit
    low, high, stats = refined_unfair_probability(
        model, pop, list(prop.protected_names), deadline, options.memory_limit
    )
    cexs: list[Counterexample] = []
    if high > 0 and options.max_counterexamples > 0:
        X, _, pairs = sampled_twins(network, prop, pop.expanded(), options.seed)
        cexs = sampled_counterexamples(network, X, pairs, options.max_counterexamples)
    verdict = "fair" if high == 0 else "unfair" if low > 0 or cexs else "unknown"
    stats.update(population=pop.describe(), exact=False)
    return Result.about(
        prop,
        verdict=verdict,
        certified=1.0 - high,
        falsified=low,
        undecided=high - low,
        domain_size=prop.domain.measure(exclude=list(prop.protected)),
        counterexamples=cexs,
        elapsed_s=time.perf_counter() - start,
        engine="linear-population",
        model=network.source,
        stats=stats,
        epsilon_semantics="other_protected_value",
        exact=False,
        stopped=Budget(deadline).ended(high <= low, bool(stats.get("memory_limited"))),
    )
