"""Exact P[yhat = 1 | group] for linear classifiers under discrete populations (Bayesian networks).

The score of a linear model is a sum of one contribution per raw variable (a one-hot group or a
binned column is ONE multi-valued variable, never independent bits), so P[score > 0 | evidence] is a
stochastic subset-sum problem. FVGM solves it with integerised weights and Boolean variables; here:

* evidence roots (the protected attributes) are fixed, barren variables dropped, and the rest split
  into components that are independent given the evidence;
* each component's distribution of partial sums is built exactly by expanding its variables in
  topological order over a frontier of variables whose children are still pending, merging equal
  (frontier, sum) rows: variable elimination on distributions of sums;
* components are convolved pairwise and the last two combined by sorting and binary search.

Sums are float64. When every contribution is a small dyadic rational computed exactly (integer
weights, one-hot or raw integer features) all sums are exact and ties (score == 0) are decided
exactly. Otherwise a rounding bound `tol` is derived and mass within `tol` of the threshold is
reported as an interval [lo, hi] (sound, usually of width 0). If a table grows past `max_rows`,
sums are bucketed into [min, max] ranges: still sound bounds, stated as an approximation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ...errors import DataError
from ...models.linear import LinearModel
from ...population.discrete import DiscretePopulation

UNIT = 2.0**-53
#: Table rows kept once the time budget is spent (bucketing keeps the bounds sound).
BUDGET_ROWS = 20_000
#: A table is bucketed before a variable expands it beyond this many times the rows allowed.
EXPANSION = 4


@dataclass
class Dist:
    """A finite distribution of partial sums as ranges [lo, hi] (lo is hi when exact) with masses."""

    lo: np.ndarray
    hi: np.ndarray
    p: np.ndarray

    @property
    def exact(self) -> bool:
        return self.lo is self.hi

    @property
    def size(self) -> int:
        return len(self.p)

    @property
    def mass(self) -> float:
        return float(self.p.sum())


@dataclass
class Scores:
    """Per-variable score contributions of a model under a population, and the rounding bound."""

    contrib: dict[str, np.ndarray]
    intercept: float
    strict: bool
    tol: float
    exact: bool
    #: With `spread_bins`: per binned variable, the least and greatest contribution within each bin.
    spread: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass
class TableStats:
    """What an engine's subset-sum tables took, over all its queries."""

    exact_arithmetic: bool  # every sum of contributions is exact in float64
    rounding_bound: float  # how far a sum may be off otherwise
    max_rows: int = 0  # the largest table
    components: int = 0  # the most independent components of one query
    bucketed: bool = False  # a table was bucketed down to its cap (sound bounds, not exact)
    over_budget: bool = False  # past the deadline, tables were bucketed to answer quickly


@dataclass
class Engine:
    """One model under one population; caches component distributions across queries.

    With `spread_bins`, a binned variable may take any value inside its bin (not only the bin's
    value): the results are then sound bounds for every distribution with the same bin
    probabilities, e.g. the continuous one the bins were made from.
    """

    model: LinearModel
    population: DiscretePopulation
    max_rows: int = 2_000_000
    spread_bins: bool = False
    #: time.monotonic() after which tables are bucketed down to `BUDGET_ROWS`: sound bounds, quickly
    deadline: float | None = None
    scores: Scores = field(init=False)
    stats: TableStats = field(init=False)
    _cache: dict = field(default_factory=dict)
    _seconds_per_row: float = 0.0

    def __post_init__(self) -> None:
        self.scores = score_tables(self.model, self.population)
        if self.spread_bins:
            self.scores.spread = bin_ranges(self.model, self.population)
            if self.scores.spread:  # edge contributions are not checked for exact sums: bound rounding
                total = abs(self.model.intercept) + sum(
                    max(
                        float(np.max(np.abs(c), initial=0.0)),
                        float(np.max(np.abs(self.scores.spread[n][0]), initial=0.0))
                        if n in self.scores.spread
                        else 0.0,
                        float(np.max(np.abs(self.scores.spread[n][1]), initial=0.0))
                        if n in self.scores.spread
                        else 0.0,
                    )
                    for n, c in self.scores.contrib.items()
                )
                n_terms = len(self.scores.contrib) + self.model.n_features + 8
                self.scores.tol = max(self.scores.tol, 4.0 * n_terms * UNIT * total)
                self.scores.exact = False
        self.stats = TableStats(exact_arithmetic=self.scores.exact, rounding_bound=self.scores.tol)

    def rows_cap(self, rows_next: int = 0) -> int:
        """The table size allowed now: `max_rows`, or `BUDGET_ROWS` once the deadline has passed or
        the next step, of `rows_next` rows at the speed measured so far, would end past it."""
        if self.deadline is not None:
            ends = time.monotonic() + self._seconds_per_row * rows_next
            if ends >= self.deadline:
                self.stats.over_budget = True
                return min(self.max_rows, BUDGET_ROWS)
        return self.max_rows

    def _timed(self, rows: int, started: float) -> None:
        """Measure the speed of a step (the slowest seen, to stay on the safe side of the deadline)."""
        if rows >= 10_000:
            self._seconds_per_row = max(self._seconds_per_row, (time.monotonic() - started) / rows)

    def probability(self, evidence: dict[str, int]) -> tuple[float, float, float]:
        """(lo, hi, P[evidence]) with lo <= P[yhat = 1 | evidence] <= hi."""
        pop, sc = self.population, self.scores
        relevant = [n for n, c in sc.contrib.items() if np.any(c != 0)] + list(evidence)
        keep = pop._ancestors(relevant)
        fixed = {n: s for n, s in evidence.items() if not pop.variables[n].parents}
        weight, offset, offset_hi = 1.0, sc.intercept, sc.intercept
        for n, s in fixed.items():
            weight *= float(pop.variables[n].cpt[s])
            c_lo, c_hi = sc.spread.get(n, (sc.contrib[n], sc.contrib[n]))
            offset += float(c_lo[s])
            offset_hi += float(c_hi[s])
        free = [n for n in pop.order() if n in keep and n not in fixed]
        dists = []
        for comp in _components(pop, free):
            comp_fixed = tuple(sorted((p, fixed[p]) for n in comp for p in pop.variables[n].parents if p in fixed))
            comp_ev = tuple(sorted((n, evidence[n]) for n in comp if n in evidence))
            key = (tuple(comp), comp_fixed, comp_ev)
            if key not in self._cache:
                self._cache[key] = self._component(comp, fixed, evidence)
            dists.append(self._cache[key])
        self.stats.components = max(self.stats.components, len(dists))
        mass = weight * float(np.prod([d.mass for d in dists])) if dists else weight
        if mass <= 0:
            return 0.0, 0.0, 0.0
        lo, hi = self._tail(dists, offset, offset_hi)
        return min(1.0, lo / mass * weight), min(1.0, hi / mass * weight), mass

    # ----- one component: expand variables over a frontier ----------------------------------------
    def _component(self, comp: list[str], fixed: dict[str, int], evidence: dict[str, int]) -> Dist:
        pop, contrib = self.population, self.scores.contrib
        comp_set = set(comp)
        pending_children = {n: {c for c in pop.children(n) if c in comp_set} for n in comp}
        frontier: list[str] = []
        codes = np.zeros((1, 0), dtype=np.int32)
        dist = Dist(np.zeros(1), None, np.ones(1))  # type: ignore[arg-type]
        dist.hi = dist.lo
        for name in _order(pop, comp, pending_children):
            var = pop.variables[name]
            table = var.cpt[tuple(fixed[p] if p in fixed else slice(None) for p in var.parents)]
            fparents = [p for p in var.parents if p not in fixed]
            states = np.array([evidence[name]]) if name in evidence else np.arange(var.card)
            started = time.monotonic()
            cap = self.rows_cap(dist.size * len(states))
            if dist.size * len(states) > EXPANSION * cap:  # bucket first: the expanded table stays small
                codes, dist = _bucket(codes, dist, max(1, EXPANSION * cap // len(states)))
                self.stats.bucketed = True
            rows = (
                table[tuple(codes[:, frontier.index(p)] for p in fparents)]
                if fparents
                else np.broadcast_to(table, (len(dist.p), var.card))
            )
            c = contrib[name][states]
            probs = (dist.p[:, None] * rows[:, states]).reshape(-1)
            if name in self.scores.spread:
                c_lo, c_hi = (x[states] for x in self.scores.spread[name])
                lo = (dist.lo[:, None] + c_lo[None, :]).reshape(-1)
                hi = (dist.hi[:, None] + c_hi[None, :]).reshape(-1)
            else:
                lo = (dist.lo[:, None] + c[None, :]).reshape(-1)
                hi = lo if dist.exact else (dist.hi[:, None] + c[None, :]).reshape(-1)
            codes = np.repeat(codes, len(states), axis=0)
            for p in var.parents:
                if p in pending_children:
                    pending_children[p].discard(name)
            if pending_children[name]:
                codes = np.concatenate([codes, np.tile(states, len(dist.p))[:, None].astype(np.int32)], axis=1)
                frontier.append(name)
            keep_cols = [i for i, f in enumerate(frontier) if pending_children[f]]
            frontier = [frontier[i] for i in keep_cols]
            codes = codes[:, keep_cols]
            nz = probs > 0
            codes, dist = _merge(
                codes[nz],
                Dist(lo[nz], hi[nz] if hi is not lo else lo[nz], probs[nz]),
                [pop.variables[f].card for f in frontier],
            )
            self.stats.max_rows = max(self.stats.max_rows, dist.size)
            self._timed(len(probs), started)
            cap = self.rows_cap()
            if dist.size > cap:
                codes, dist = _bucket(codes, dist, cap // 4)
                self.stats.bucketed = True
        return dist

    # ----- combining components: P[sum + offset > 0] ----------------------------------------------
    def _tail(self, dists: list[Dist], offset: float, offset_hi: float) -> tuple[float, float]:
        dists = sorted(dists, key=lambda d: d.size)
        while len(dists) > 2:
            a, b = dists[0], dists[1]
            cap = self.rows_cap()
            if a.size * b.size > cap:
                side = max(2, int(np.sqrt(cap)))
                a, b = _bucket_dist(a, side), _bucket_dist(b, side)
                self.stats.bucketed = True
            lo = (a.lo[:, None] + b.lo[None, :]).reshape(-1)
            hi = lo if (a.exact and b.exact) else (a.hi[:, None] + b.hi[None, :]).reshape(-1)
            p = (a.p[:, None] * b.p[None, :]).reshape(-1)
            _, merged = _merge(np.zeros((len(p), 0), dtype=np.int32), Dist(lo, hi, p), [])
            dists = sorted([merged] + dists[2:], key=lambda d: d.size)
        while len(dists) < 2:
            dists.append(Dist(np.zeros(1), np.zeros(1), np.ones(1)))
        a, b = dists
        tol, strict = self.scores.tol, self.scores.strict
        # lower bound: the smallest sums must clear the threshold by the rounding bound
        low = _pair_tail(a.lo, a.p, b.lo, b.p, offset, -tol, strict)
        high = _pair_tail(a.hi, a.p, b.hi, b.p, offset_hi, tol, strict)
        return low, max(low, high)


def _pair_tail(
    x: np.ndarray, px: np.ndarray, y: np.ndarray, py: np.ndarray, offset: float, slack: float, strict: bool
) -> float:
    """sum_i px_i * P[y > -(offset + x_i) - slack] (>= when not strict)."""
    order = np.argsort(y, kind="stable")
    ys = y[order]
    tail = np.concatenate([np.cumsum(py[order][::-1])[::-1], [0.0]])
    t = -(offset + x) - slack
    idx = np.searchsorted(ys, t, side="right" if strict else "left")
    return float(np.dot(px, tail[idx]))


def _merge(codes: np.ndarray, dist: Dist, cards: list[int]) -> tuple[np.ndarray, Dist]:
    """Rows with equal frontier states and equal sum ranges become one row."""
    if dist.size <= 1:
        return codes, dist
    key = np.ravel_multi_index(tuple(codes.T.astype(np.int64)), cards) if cards else np.zeros(dist.size, np.int64)
    order = np.lexsort((dist.lo, key)) if dist.exact else np.lexsort((dist.hi, dist.lo, key))
    k, lo = key[order], dist.lo[order]
    change = (k[1:] != k[:-1]) | (lo[1:] != lo[:-1])
    hi = lo
    if not dist.exact:
        hi = dist.hi[order]
        change |= hi[1:] != hi[:-1]
    starts = np.concatenate([[0], np.nonzero(change)[0] + 1])
    p = np.add.reduceat(dist.p[order], starts)
    new_lo = lo[starts]
    new_hi = new_lo if dist.exact else hi[starts]
    return codes[order][starts], Dist(new_lo, new_hi, p)


def _bucket(codes: np.ndarray, dist: Dist, target: int) -> tuple[np.ndarray, Dist]:
    """Soundly shrink a table: within each frontier state, group sorted sums into [min, max] buckets."""
    n = dist.size
    size = int(np.ceil(n / max(1, target)))
    # rows come sorted by (frontier key, lo) from _merge: runs of equal codes are the keys, and no sort
    # is needed (were they not, buckets would only be smaller: [min, max] per bucket stays sound)
    change = np.any(codes[1:] != codes[:-1], axis=1) if codes.shape[1] else np.zeros(max(n - 1, 0), dtype=bool)
    key = np.concatenate([[0], np.cumsum(change)])
    if np.all((dist.lo[1:] >= dist.lo[:-1]) | change):
        lo, hi, p = dist.lo, dist.hi, dist.p
    else:
        order = np.lexsort((dist.lo, key))
        key, lo, hi, p, codes = key[order], dist.lo[order], dist.hi[order], dist.p[order], codes[order]
    first = np.concatenate([[0], np.nonzero(key[1:] != key[:-1])[0] + 1])
    rank = np.arange(n) - np.repeat(first, np.diff(np.concatenate([first, [n]])))
    bucket_start = rank % size == 0
    starts = np.nonzero(bucket_start)[0]
    new_lo = np.minimum.reduceat(lo, starts)
    new_hi = np.maximum.reduceat(hi, starts)
    return codes[starts], Dist(new_lo, new_hi, np.add.reduceat(p, starts))


def _bucket_dist(d: Dist, target: int) -> Dist:
    if d.size <= target:
        return d
    return _bucket(np.zeros((d.size, 0), dtype=np.int32), Dist(d.lo, d.hi.copy(), d.p), target)[1]


def _components(pop: DiscretePopulation, names: list[str]) -> list[list[str]]:
    """Connected components of the network's skeleton restricted to `names` (each in topological order)."""
    inside = set(names)
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in names:
        for p in pop.variables[n].parents:
            if p in inside:
                parent[find(p)] = find(n)
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def _order(pop: DiscretePopulation, comp: list[str], children: dict[str, set[str]]) -> list[str]:
    """A topological order that keeps the frontier small (greedy: close variables early)."""
    pending = {n: set(c) for n, c in children.items()}
    done: set[str] = set()
    order: list[str] = []
    comp_set = set(comp)
    while len(order) < len(comp):
        ready = [
            n for n in comp if n not in done and all(p in done or p not in comp_set for p in pop.variables[n].parents)
        ]

        def cost(n: str) -> tuple[int, int]:
            closes = sum(1 for p in pop.variables[n].parents if p in pending and pending[p] == {n})
            opens = 1 if pending[n] else 0
            return (opens - closes, pop.variables[n].card)

        best = min(ready, key=cost)
        order.append(best)
        done.add(best)
        for p in pop.variables[best].parents:
            if p in pending:
                pending[p].discard(best)
    return order


def score_tables(model: LinearModel, population: DiscretePopulation) -> Scores:
    """Contribution of every state of every population variable, and a sound rounding bound."""
    contrib, magnitude = {}, {}
    label = population.label or population.info.get("label")
    if label and label in model.columns:
        raise DataError(f"the model reads the label column {label!r}; give the label that the model predicts")
    for name, var in population.variables.items():
        contrib[name] = np.asarray(model.contributions(name, list(var.states)), dtype=np.float64)
        magnitude[name] = np.asarray(model.contribution_magnitudes(name, list(var.states)), dtype=np.float64)
    missing = [c for c in model.columns if c not in population.variables]
    if missing:
        raise DataError(f"the population has no variable for model column(s) {missing}")
    overflow = [name for name, c in contrib.items() if not np.all(np.isfinite(c))]
    if overflow:
        raise DataError(
            f"the model's score overflows on states of population variable(s) {overflow}: check their values"
        )
    exact = _exact_sums(model, population, contrib)
    total = abs(model.intercept) + sum(float(m.max(initial=0.0)) for m in magnitude.values())
    n_terms = len(contrib) + model.n_features + 8
    tol = 0.0 if exact else 4.0 * n_terms * UNIT * total
    return Scores(contrib, model.intercept, model.strict, tol, exact)


def bin_ranges(model: LinearModel, population: DiscretePopulation) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Least and greatest contribution of each bin of each binned variable that the model reads
    linearly (a numeric encoding is monotone, so the bin's edges attain them)."""
    out = {}
    for name, var in population.variables.items():
        enc = next((e for e in model.encoding if e.column == name), None)
        holder = population.variables[population.bin_of(name)]  # a bin's data values: their bin's range
        if holder.edges is None or enc is None or enc.kind != "numeric":
            continue
        at_edges = model.contributions(name, list(holder.edges))
        lo, hi = np.minimum(at_edges[:-1], at_edges[1:]), np.maximum(at_edges[:-1], at_edges[1:])
        if holder is not var:
            x = np.asarray(var.states, dtype=np.float64)
            b = np.clip(np.searchsorted(np.asarray(holder.edges), x, side="right") - 1, 0, holder.card - 1)
            # a value on an inner edge may sit in either bin: the union of both ranges
            left = np.clip(np.searchsorted(np.asarray(holder.edges), x, side="left") - 1, 0, holder.card - 1)
            lo, hi = np.minimum(lo[b], lo[left]), np.maximum(hi[b], hi[left])
        out[name] = (lo, hi)
    return out


def _exact_sums(model: LinearModel, population: DiscretePopulation, contrib: dict[str, np.ndarray]) -> bool:
    """True if every contribution is computed exactly and all sums of them are exact in float64."""
    if any(
        e.kind == "numeric" and (e.offset, e.divisor, e.factor, e.shift) != (0.0, 1.0, 1.0, 0.0) for e in model.encoding
    ):
        return False
    values = [model.intercept] + [float(v) for c in contrib.values() for v in c]
    for name, var in population.variables.items():
        if name not in model.columns:
            continue
        z = next(e for e in model.encoding if e.column == name).encode(list(var.states))
        w = model.column_weights(name)
        for row, c in zip(z, contrib[name]):
            if Fraction(float(c)) != sum(
                (Fraction(float(a)) * Fraction(float(b)) for a, b in zip(w, row)), Fraction(0)
            ):
                return False
    # a common dyadic grid 2**-k with enough headroom makes every partial sum exact
    for k in range(40):
        scaled = [v * 2.0**k for v in values]
        if all(float(s).is_integer() for s in scaled):
            total = abs(scaled[0]) + sum(float(np.max(np.abs(c))) * 2.0**k for c in contrib.values() if len(c))
            return total < 2.0**52
    return False


def brute_force(model: LinearModel, population: DiscretePopulation, evidence: dict[str, int]) -> tuple[float, float]:
    """(P[yhat = 1 | evidence], P[evidence]) by enumerating the joint (tests; tiny populations only)."""
    names = list(population.variables)
    contrib = score_tables(model, population).contrib
    num = den = 0.0
    for asg, p in population.joint():
        if any(asg[k] != v for k, v in evidence.items()):
            continue
        score = sum(Fraction(float(contrib[n][asg[n]])) for n in names) + Fraction(model.intercept)
        den += p
        num += p if (score > 0 if model.strict else score >= 0) else 0.0
    return (num / den if den > 0 else float("nan")), den


__all__ = ["Dist", "Engine", "Scores", "bin_ranges", "brute_force", "score_tables"]
