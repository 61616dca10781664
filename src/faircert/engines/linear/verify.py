"""Exact individual fairness of separable models (linear models and the pipelines ending in one).

With logit(x) = bias + sum_free t_j(x_j) + s(c), where c is the protected combination and s(c) the
protected tables' sum, a point's free part x is unfair exactly when its twins fall on both sides
of 0: R(x) + max_c s(c) > 0 >= R(x) + min_c s(c), i.e. R(x) in (-max s, -min s] with R the free
score. The unfair share is the share of the free domain whose score lies in that interval, which
`count.share_between` computes exactly (meet in the middle) or bounds soundly (histograms).
"""

from __future__ import annotations

import itertools
import time
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...models.network import ReluNetwork
from ...options import VerifyOptions
from ...progress import ProgressEvent
from ...properties import IndividualFairness
from ...results import Counterexample, Result
from ..boxes.budget import DONE
from .count import share_between
from .relaxed import MAX_MOVING, moving_size, relaxed_share
from .separable import SeparableScore

#: Protected combinations a twin may take, at most (their shifts are re-derived exactly).
MAX_TWINS = 4096
#: Uniform draws searched for counterexamples before the targeted search.
DRAWS = 20_000


def accepts(model: Any, question: Any) -> bool:
    """Registry predicate: a separable network asked individual fairness (no kappa or robustness),
    its moving (epsilon) features discrete with at most `MAX_MOVING` joint values."""
    prop = question
    if prop.kappa is not None or prop.robustness or not isinstance(model, ReluNetwork):
        return False
    score = SeparableScore.of(model, prop.domain)
    if score is None:
        return False
    eps = np.asarray(prop.epsilon, dtype=np.float64)
    return moving_size([score.tables[i] for i in prop.free], list(eps[prop.free])) <= MAX_MOVING


class Twins:
    """The protected combinations and the shift each adds to the score, in float and exactly."""

    def __init__(self, score: SeparableScore, prop: IndividualFairness) -> None:
        self.score, self.prop = score, prop
        values = [prop.domain.features[i].values() for i in prop.protected]
        count = int(np.prod([len(v) for v in values]))
        if count > MAX_TWINS:
            raise PropertyError(f"the protected features have {count} combinations; at most {MAX_TWINS}")
        self.combos = np.array(list(itertools.product(*values)), dtype=np.float64).reshape(count, len(values))
        self.shifts = np.zeros(count)
        for k, i in enumerate(prop.protected):
            self.shifts += score.tables[i].at(self.combos[:, k])
        self._exact: list[Fraction] | None = None

    def exact_shifts(self) -> list[Fraction]:
        if self._exact is None:
            self._exact = [
                sum((self.score.exact_term(i, c[k]) for k, i in enumerate(self.prop.protected)), Fraction(0))
                for c in self.combos
            ]
        return self._exact

    def full(self, free_values: np.ndarray, combo: int) -> np.ndarray:
        """A whole input from free feature values (rows) and one protected combination."""
        free_values = np.atleast_2d(free_values)
        x = np.empty((free_values.shape[0], len(self.prop.domain)))
        x[:, self.prop.free] = free_values
        x[:, list(self.prop.protected)] = self.combos[combo]
        return x


class _Exact:
    """Exact decisions for `count.share_between`: a free point is unfair when its twins' exact
    logits lie on both sides of 0."""

    def __init__(self, score: SeparableScore, twins: Twins) -> None:
        self.score, self.twins = score, twins
        self.free = twins.prop.free
        self.bias = score.exact_bias()

    def term(self, position: int, value: float) -> Fraction:
        return self.score.exact_term(self.free[position], value)

    def inside(self, values: list[float]) -> bool:
        r = self.bias + sum((self.term(p, v) for p, v in enumerate(values)), Fraction(0))
        logits = [r + s for s in self.twins.exact_shifts()]
        return max(logits) > 0 >= min(logits)


def answer(network: ReluNetwork, prop: IndividualFairness, options: VerifyOptions, progress=None) -> Result:
    """Registry entry point: the exact (or tightly bounded) unfair share of a separable model."""
    t0 = time.perf_counter()
    score = SeparableScore.of(network, prop.domain)
    if score is None:  # the registry's predicate admits only separable models
        raise PropertyError("the model is not separable over this domain")
    if not prop.free:
        raise PropertyError("every feature is protected; there is nothing left to measure")
    twins = Twins(score, prop)
    free_tables = [score.tables[i] for i in prop.free]
    if prop.population is not None:  # the data's marginals: each feature a finite distribution
        m = prop.population
        free_tables = [score.tables[i].weighted(m.values[i], m.counts[i]) for i in prop.free]
    low, high = -float(twins.shifts.max()), -float(twins.shifts.min())
    eps = [
        float(np.floor(e + 1e-12)) if score.tables[i].discrete else float(e)
        for i, e in zip(prop.free, np.asarray(prop.epsilon)[prop.free])
    ]
    if any(e > 0 for e in eps):
        share = relaxed_share(
            free_tables, [score.tables[i] for i in prop.free], eps, score.bias, twins.shifts, score.rounding
        )
    elif len(set(twins.exact_shifts())) == 1:  # the protected features change no logit: fair everywhere
        from .count import Interval

        points = prop.domain.measure(exclude=list(prop.protected))
        exact_count = (0, 0, int(points)) if prop.population is None and all(t.discrete for t in free_tables) else None
        share = Interval(0.0, 0.0, True, "protected features without effect", exact_count)
    else:
        share = share_between(
            free_tables, score.bias, low, high, score.rounding, _Exact(score, twins), options.time_limit
        )
    if share.upper == 0:
        cexs = []
    elif any(e > 0 for e in eps):
        cexs = _relaxed_counterexamples(score, twins, free_tables, eps, options.max_counterexamples, options.seed)
    else:
        cexs = _counterexamples(score, twins, free_tables, low, high, options.max_counterexamples, options.seed)
    if share.upper == 0:
        verdict = "fair"
    elif share.lower > 0 or cexs:
        verdict = "unfair"
    else:
        verdict = "unknown"
    stats = dict(
        share.stats,
        method=share.method,
        exact=share.exact,
        twins=len(twins.shifts),
        rounding_bound=score.rounding,
        score_interval=[low, high],
    )
    if share.counts is not None:
        stats["counts"] = {
            "unfair_at_least": share.counts[0],
            "unfair_at_most": share.counts[1],
            "points": share.counts[2],
        }
    if prop.population is not None:
        stats["population"] = prop.population.describe()
    elapsed = time.perf_counter() - t0
    if progress is not None:
        progress(
            ProgressEvent(
                elapsed_s=elapsed,
                certified=1.0 - share.upper,
                falsified=share.lower,
                undecided=share.upper - share.lower,
            )
        )
    return Result.about(
        prop,
        verdict=verdict,
        certified=1.0 - share.upper,
        falsified=share.lower,
        undecided=share.upper - share.lower,
        domain_size=prop.domain.measure(exclude=list(prop.protected)),
        counterexamples=cexs,
        elapsed_s=elapsed,
        engine="linear-exact",
        model=network.source,
        stats=stats,
        epsilon_semantics="other_protected_value",
        exact=share.exact,
        stopped=DONE,  # a count, not a refinement: it always finishes
    )


def _relaxed_counterexamples(
    score: SeparableScore, twins: Twins, tables, eps: list[float], n: int, seed: int
) -> list[Counterexample]:
    """Pairs (x, x') with x drawn from the measure and x' the extreme twin inside x's window (the
    least or greatest score under another protected combination), each re-checked on the network."""
    if n <= 0:
        return []
    rng = np.random.default_rng(seed)
    prop = twins.prop
    points = _uniform(tables, rng, DRAWS)
    grids = [score.tables[i] for i in prop.free]
    low_pick, high_pick = points.copy(), points.copy()
    for k, (g, e) in enumerate(zip(grids, eps)):
        if e > 0:
            lo, hi = np.maximum(points[:, k] - e, g.lo), np.minimum(points[:, k] + e, g.hi)
            arg_lo, _, arg_hi, _ = g.window_extremes(lo, hi)
            low_pick[:, k], high_pick[:, k] = arg_lo, arg_hi
    out: list[Counterexample] = []
    T = len(twins.shifts)
    for a, b in ((a, b) for a in range(T) for b in range(T) if a != b):
        for pick in (low_pick, high_pick):
            X, XP = twins.full(points, a), twins.full(pick, b)
            o, op = score.network.logit(X), score.network.logit(XP)
            for i in np.flatnonzero((o > 0) != (op > 0))[: n - len(out)]:
                out.append(Counterexample(X[i].tolist(), XP[i].tolist(), float(o[i]), float(op[i])))
            if len(out) >= n:
                return out
    return out


def _counterexamples(
    score: SeparableScore, twins: Twins, tables, low: float, high: float, n: int, seed: int
) -> list[Counterexample]:
    """Pairs from the unfair set: draws from the measure first (uniform, or the population), then
    draws steered to the interval's middle; each pair re-checked on the network itself."""
    if n <= 0:
        return []
    rng = np.random.default_rng(seed)
    margin = score.rounding
    points = _uniform(tables, rng, DRAWS)
    r = score.bias + sum(t.at(points[:, k]) for k, t in enumerate(tables))
    found = points[(r > low + margin) & (r <= high - margin)]
    if len(found) < n:
        found = np.concatenate([found, _steered(tables, rng, score.bias, (low + high) / 2, 4 * n)])
    positive, negative = int(np.argmax(twins.shifts)), int(np.argmin(twins.shifts))
    out, seen = [], set()
    for free_values in found:
        key = tuple(free_values)
        if key in seen:
            continue
        seen.add(key)
        x, xp = twins.full(free_values, positive)[0], twins.full(free_values, negative)[0]
        o, op = (float(v) for v in score.network.logit(np.stack([x, xp])))
        if (o > 0) != (op > 0):
            out.append(Counterexample(x.tolist(), xp.tolist(), o, op))
            if len(out) >= n:
                break
    return out


def _uniform(tables, rng, n: int) -> np.ndarray:
    """Draws from each table's measure: its weighted points, its grid, or its interval."""
    cols = []
    for t in tables:
        if t.points is not None:
            cols.append(rng.choice(t.points, n, p=t.weights / t.weights.sum()))
        elif t.discrete:
            cols.append(rng.integers(int(t.lo), int(t.hi) + 1, n).astype(np.float64))
        else:
            cols.append(rng.uniform(t.lo, t.hi, n))
    return np.stack(cols, axis=1)


def _steered(tables, rng, bias: float, target: float, n: int) -> np.ndarray:
    """Points whose score approaches `target`: features in random order, each value drawn among
    those that keep the target reachable by the features left, the last one closest to it."""
    lows = np.array([t.low for t in tables])
    highs = np.array([t.high for t in tables])
    out = np.empty((n, len(tables)))
    for row in range(n):
        order = rng.permutation(len(tables))
        left = target - bias
        rest_lo, rest_hi = lows.sum(), highs.sum()
        for step, k in enumerate(order):
            t = tables[k]
            rest_lo, rest_hi = rest_lo - lows[k], rest_hi - highs[k]
            grid = t.value_points() if t.discrete else np.linspace(t.lo, t.hi, 257)
            values = t.values if t.discrete else t.at(grid)
            if step == len(order) - 1:
                pick = int(np.argmin(np.abs(left - values)))
            else:
                ok = np.flatnonzero((left - values >= rest_lo) & (left - values <= rest_hi))
                pick = (
                    int(rng.choice(ok)) if ok.size else int(np.argmin(np.abs(left - values - (rest_lo + rest_hi) / 2)))
                )
            out[row, k] = grid[pick]
            left -= values[pick]
    return out
