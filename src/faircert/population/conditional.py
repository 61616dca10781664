"""Exact draws from a discrete population given evidence (a protected cell, and the label where a
metric conditions on it), without rejection and without weights.

The network's joint is the product of its tables. Split the variables into the evidence E, the
hidden ancestors A of E, and the rest R. The ancestors with the evidence form an ancestral set, so
P[A, R | E] = P[A | E] * prod over R of P[v | parents(v)]: once A is drawn from its posterior, R is
drawn forward, table by table. P[A | E] is proportional to the product of the tables of A and E
with E fixed; variable elimination sums A out one variable at a time (this also gives P[E]), and
drawing the variables back in the reverse order, each from the product of the tables it was summed
out of given the variables drawn already, is an exact draw from the posterior. Where E are roots,
A is empty and the draw is plain forward sampling with E fixed. Every draw is independent and
exactly distributed, so a binomial interval on the draws holds as it does for any i.i.d. sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, PropertyError
from .discrete import DiscretePopulation

#: The most configurations one elimination step may hold (tables multiplied before a sum).
MAX_CONFIGURATIONS = 2_000_000


@dataclass
class _Table:
    """A factor: its variables and a dense array over their states (axes in that order)."""

    scope: tuple[str, ...]
    values: np.ndarray


def _multiply(tables: list[_Table]) -> _Table:
    scope = tuple(dict.fromkeys(v for t in tables for v in t.scope))
    axis = {v: i for i, v in enumerate(scope)}
    operands: list = []
    for t in tables:
        operands += [t.values, [axis[v] for v in t.scope]]
    return _Table(scope, np.einsum(*operands, list(range(len(scope)))))


def draw_states(table: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each draw i, the state whose cumulative probability in row `rows[i]` of the 2-D `table`
    first exceeds `u[i]` (in [0, 1)); a row need not be normalised. Draws are grouped by row so
    that each row is searched once (a row-by-state comparison matrix costs n x states)."""
    cum = np.cumsum(table, axis=1)
    out = np.empty(len(u), dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], len(order)]):
        r = sorted_rows[a]
        idx = order[a:b]
        out[idx] = np.searchsorted(cum[r], u[idx] * cum[r, -1], side="right")
    return np.minimum(out, table.shape[1] - 1)


@dataclass
class ConditionalSampler:
    """Exact draws from `population` given `evidence` ({variable: state index}); `mass` is P[evidence]."""

    population: DiscretePopulation
    evidence: dict[str, int]
    mass: float = 0.0
    #: hidden ancestors in the order they were summed out, each with the factor it was summed out of
    _steps: list[tuple[str, _Table]] = field(default_factory=list)
    _forward: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        pop, evidence = self.population, self.evidence
        for name, state in evidence.items():
            if name not in pop.variables or not 0 <= state < pop.variables[name].card:
                raise PropertyError(f"no state {state} of variable {name!r} in the population")
        ancestry = pop._ancestors(list(evidence))
        hidden = [n for n in pop.order() if n in ancestry and n not in evidence]
        tables = [self._sliced(n) for n in pop.order() if n in ancestry]
        for name in self._elimination_order(hidden, tables):
            used = [t for t in tables if name in t.scope]
            joint = _multiply(used)
            if joint.values.size > MAX_CONFIGURATIONS:
                raise PropertyError(
                    f"conditioning the population on {sorted(evidence)} needs {joint.values.size:,} "
                    f"configurations at once (at most {MAX_CONFIGURATIONS:,})"
                )
            self._steps.append((name, joint))
            rest = tuple(v for v in joint.scope if v != name)
            tables = [t for t in tables if name not in t.scope]
            tables.append(_Table(rest, joint.values.sum(axis=joint.scope.index(name))))
        self.mass = float(math.prod(float(t.values) for t in tables))  # every table is a scalar now
        if not self.mass > 0:
            raise DataError(f"the evidence {self.population.group_name(evidence)} has probability 0")
        self._forward = [n for n in pop.order() if n not in ancestry]

    def _sliced(self, name: str) -> _Table:
        """The table of `name`, its evidence variables fixed at their states."""
        v = self.population.variables[name]
        scope = v.parents + (name,)
        index = tuple(self.evidence.get(s, slice(None)) for s in scope)
        return _Table(tuple(s for s in scope if s not in self.evidence), v.cpt[index])

    def _elimination_order(self, hidden: list[str], tables: list[_Table]) -> list[str]:
        """Greedy: next the variable whose product of tables is smallest."""
        cards = {n: self.population.variables[n].card for n in self.population.variables}
        scopes = [set(t.scope) for t in tables]
        order, left = [], list(hidden)

        def joined(name: str, scopes: list[set[str]]) -> set[str]:
            return set().union(*(s for s in scopes if name in s))

        while left:
            name = min(left, key=lambda n: math.prod(cards[v] for v in joined(n, scopes)))
            scopes = [s for s in scopes if name not in s] + [joined(name, scopes) - {name}]
            order.append(name)
            left.remove(name)
        return order

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """`n` independent draws: each variable's state index per draw."""
        pop = self.population
        codes = {name: np.full(n, state, dtype=np.int64) for name, state in self.evidence.items()}
        for name, joint in reversed(self._steps):  # the posterior of the hidden ancestors
            axis = joint.scope.index(name)
            values = np.moveaxis(joint.values, axis, -1)
            others = [v for v in joint.scope if v != name]
            flat = values.reshape(-1, values.shape[-1])
            rows = np.zeros(n, dtype=np.int64)
            for v in others:
                rows = rows * pop.variables[v].card + codes[v]
            codes[name] = draw_states(flat, rows, rng.random(n))
        for name in self._forward:  # the rest, forward
            var = pop.variables[name]
            rows = np.zeros(n, dtype=np.int64)
            for p in var.parents:
                rows = rows * pop.variables[p].card + codes[p]
            codes[name] = draw_states(var.cpt.reshape(-1, var.card), rows, rng.random(n))
        return codes
