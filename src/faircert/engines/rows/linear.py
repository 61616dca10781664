"""Per-row audit of separable models, in closed form.

With logit = bias + sum_j t_j(x_j), a row's twins reach exactly the scores
    bias + sum_{fixed j} t_j(x_j) + sum_{moving j} [min, max of t_j over x_j's window] + s(c'),
so a row is unfair iff (label 1 and the least twin score is <= 0) or (label 0 and the greatest is
> 0). The extreme twin is the witness. Scores within the proven rounding bound of 0 are decided
again in exact rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import PropertyError
from ...models.network import ReluNetwork
from ...options import AuditOptions
from ..linear.separable import SeparableScore
from .audit import FAIR, UNFAIR, Audit, Decisions, reach, run


def accepts(model: ReluNetwork, question: Any) -> bool:
    """Registry predicate (the registry offers networks only): a network whose score is separable
    over the domain widened to hold the rows (a kink between the domain and a row outside it is not)."""
    return SeparableScore.of(model, reach(question).domain) is not None


class LinearRows:
    name = "rows-linear"

    def __init__(self, score: SeparableScore) -> None:
        self.score = score
        self.tol = score.rounding

    def margins(self, X: np.ndarray) -> np.ndarray:
        """Scores, with those near 0 replaced by +-2 tol after an exact decision (so none stay unsure)."""
        X = np.atleast_2d(X)
        s = self.score.scores(X)
        for i in np.flatnonzero(np.abs(s) <= self.tol):
            s[i] = 2 * self.tol if self.score.exact(X[i]) > 0 else -2 * self.tol
        return s

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        score, X = self.score, audit.take(rows)
        lo, hi = audit.windows(rows)
        protected = list(audit.prop.protected)
        moving = [j for j in range(X.shape[1]) if audit.eps[j] > 0]
        fixed = [j for j in range(X.shape[1]) if j not in protected and j not in moving]
        base = score.bias + sum((score.tables[j].at(X[:, j]) for j in fixed), np.zeros(len(rows)))
        low_pick, high_pick = X.copy(), X.copy()
        r_low, r_high = base.copy(), base.copy()
        for j in moving:
            arg_lo, val_lo, arg_hi, val_hi = score.tables[j].window_extremes(lo[:, j], hi[:, j])
            low_pick[:, j], high_pick[:, j] = arg_lo, arg_hi
            r_low += val_lo
            r_high += val_hi
        shifts = sum(
            (score.tables[j].at(audit.combos[:, k]) for k, j in enumerate(protected)), np.zeros(len(audit.combos))
        )
        others = audit.others(rows)
        positive = audit.labels[rows] == 1
        # the extreme twin: least score for a positive row, greatest for a negative one
        masked_lo = np.where(others, shifts[None, :], np.inf)
        masked_hi = np.where(others, shifts[None, :], -np.inf)
        combo = np.where(positive, np.argmin(masked_lo, axis=1), np.argmax(masked_hi, axis=1))
        extreme = np.where(positive, r_low + masked_lo.min(axis=1), r_high + masked_hi.max(axis=1))
        flips = np.where(positive, extreme <= 0, extreme > 0)
        picks = np.where(positive[:, None], low_pick, high_pick)
        picks[:, protected] = audit.combos[combo]
        methods = ["closed form"] * len(rows)
        for k in np.flatnonzero(np.abs(extreme) <= self.tol).tolist():  # too near 0 for floats: exact
            picks[k], flips[k] = self._exact_extreme(audit, rows[k], moving, lo[k], hi[k], bool(positive[k]))
            methods[k] = "closed form (exact)"
        verdicts = [UNFAIR if f else FAIR for f in flips.tolist()]  # the constants, not a copy a row
        twins: list[np.ndarray | None] = [None] * len(rows)
        for k in np.flatnonzero(flips).tolist():  # each twin its own array: the chunk's memory is let go
            twins[k] = picks[k].copy()
        return Decisions(verdicts, methods, twins)

    def _exact_extreme(
        self, audit: Audit, i: int, moving: list[int], lo: np.ndarray, hi: np.ndarray, positive: bool
    ) -> tuple[np.ndarray, bool]:
        """The extreme twin of row i and whether it flips, in exact arithmetic."""
        score, x = self.score, audit.take(i).copy()
        pick = min if positive else max
        for j in moving:
            t = score.tables[j]
            grid = np.arange(lo[j], hi[j] + 1) if t.discrete else np.array([lo[j], hi[j]])
            x[j] = pick(grid, key=lambda v: score.exact_term(j, v))
        candidates = [audit.with_combo(x, c) for c in range(len(audit.combos)) if c != audit.own[i]]
        exact = [score.exact(y) for y in candidates]
        best = (min if positive else max)(range(len(exact)), key=exact.__getitem__)
        flips = exact[best] <= 0 if positive else exact[best] > Fraction(0)
        return candidates[best], bool(flips)


def answer(model: ReluNetwork, question: Any, options: AuditOptions, progress=None):
    def make(prop: Any) -> LinearRows:
        score = SeparableScore.of(model, prop.domain)
        if score is None:  # the registry's predicate admits only separable models
            raise PropertyError("the model is not separable over this domain")
        return LinearRows(score)

    return run(make, question, options, progress)
