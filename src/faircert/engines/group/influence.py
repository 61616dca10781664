"""Fairness influence functions (FVGM §5): how much a feature's distribution drives the bias.

FIF_a(S) = P[yhat = 1 | a] - P[yhat = 1 | a] with the features in S made uniform (independent of
everything, their children keeping their tables): uniform over the categories of a categorical
feature, over the range of a binned one (each bin weighted by its width); likewise for DI and SP.
The sign is the paper's: base minus perturbed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import PropertyError
from ...population.discrete import DiscretePopulation
from ...results import GroupProbability, Influence, di_interval, gap_interval

GroupsOf = Callable[[DiscretePopulation], list[GroupProbability]]


def uniform_over(population: DiscretePopulation, features: Sequence[str]) -> DiscretePopulation:
    """The population with each feature of `features` replaced by a uniform, independent one."""
    for f in features:
        if f not in population.variables:
            raise PropertyError(
                f"influence: unknown feature {f!r}; the population has: {', '.join(population.variables)}"
            )
        if f in population.protected or f == population.label:
            raise PropertyError(f"influence: {f!r} is protected or the label; influence is measured for other features")
        var = population.variables[population.bin_of(f)]
        # a binned feature is made uniform over its range (bins weighted by width; inside a bin, its
        # data values keep their frequencies), a categorical one uniform over its categories
        probs = np.diff(np.asarray(var.edges)) if var.edges is not None else np.ones(var.card)
        population = population.with_marginal(var.name, probs / probs.sum())
    return population


def influences(
    population: DiscretePopulation, base: list[GroupProbability], groups_of: GroupsOf, subsets: Sequence[Sequence[str]]
) -> list[Influence]:
    """FIFs of each feature set in `subsets` on every group's positive rate, DI and SP."""
    base_di, base_sp = _point(di_interval(base)), _point(gap_interval("sp", base))
    out = []
    for subset in subsets:
        perturbed = groups_of(uniform_over(population, subset))
        by_group = {b.name: b.value - p.value for b, p in zip(base, perturbed)}
        out.append(
            Influence(
                list(subset),
                by_group,
                di=base_di - _point(di_interval(perturbed)),
                sp=base_sp - _point(gap_interval("sp", perturbed)),
                perturbed={p.name: p.value for p in perturbed},
            )
        )
    return out


#: Influence is computed only when every group rate is known to within this (else it cannot rank).
INFLUENCE_WIDTH = 0.01


def default_subsets(population: DiscretePopulation, columns: Sequence[str]) -> list[list[str]]:
    """Each non-protected feature the model reads, on its own."""
    skip = set(population.protected) | {population.label}
    return [[c] for c in columns if c in population.variables and c not in skip]


def requested_subsets(
    influence: bool | Sequence[Sequence[str]], population: DiscretePopulation, columns: Sequence[str]
) -> list[list[str]]:
    """The feature sets a question asks the influence of: every feature on its own (True, or "*"
    among the sets), and the sets given."""
    every = default_subsets(population, columns)
    if isinstance(influence, bool):
        return every if influence else []
    return [x for s in influence for x in (every if list(s) == ["*"] else [list(s)])]


def _point(m) -> float:
    return 0.5 * (m.low + m.high)
