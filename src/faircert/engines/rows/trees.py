"""Per-row audit of tree ensembles: the twins of a row are decided on the cells of its ball.

A tree ensemble is constant between consecutive thresholds of each feature, so on each moving
feature it suffices to try the window's ends and, for every threshold inside the window, the
values just below and at it (on the grid for discrete features; in float64 and, when the model
reads float32, in float32 for real ones). Every cell of the ball then holds a candidate, and
evaluating all candidates with every other protected combination decides the row exactly. A ball
with more than `max_cells` cells (`RowLimits`) is searched at random instead: `unfair` when a twin
flips, otherwise `unknown`, never `fair`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...models.trees import TreeEnsemble
from ...options import AuditOptions
from ..boxes.budget import TIME_LIMIT
from .audit import UNFAIR, UNKNOWN, Audit, Decisions, enumerate_balls, past, row_rng, run

#: Random points of a ball tried when it has more cells than the limit.
PROBES = 2048


class TreeRows:
    name = "rows-trees"

    def __init__(self, ir: TreeEnsemble) -> None:
        self.ir = ir
        offset, _, self.tol = ir.margin_view(None)
        self.offset = offset - ir.base_score
        found: dict[int, list[np.ndarray]] = {}
        for t in ir.trees:
            inner = ~t.is_leaf
            for f in np.unique(t.feature[inner]):
                found.setdefault(int(f), []).append(t.threshold[inner][t.feature[inner] == f])
        self.thresholds: dict[int, np.ndarray] = {f: np.unique(np.concatenate(v)) for f, v in found.items()}

    def margins(self, X: np.ndarray) -> np.ndarray:
        return self.ir.score(X) + self.offset

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        lo, hi = audit.windows(rows)
        moving = np.flatnonzero(audit.eps > 0)
        cap = audit.limits.max_cells
        axes = [
            [self._cuts(int(j), lo[k, j], hi[k, j], bool(audit.discrete[j])) for j in moving] for k in range(len(rows))
        ]
        sizes = np.array([np.prod([float(len(a)) for a in ax]) for ax in axes])
        small = np.flatnonzero(sizes <= cap)

        def cells(k: int) -> np.ndarray:  # built one row at a time: a chunk's balls never all at once
            ax = axes[small[k]]
            grid = np.array(list(itertools.product(*ax)), dtype=np.float64).reshape(-1, len(moving))
            P = np.repeat(audit.take(rows[small[k]])[None], len(grid), axis=0)
            P[:, moving] = grid
            return P

        out = Decisions.open(len(rows))
        out.merge(small, enumerate_balls(self, audit, rows[small], cells, "tree cells", deadline))
        for k in np.flatnonzero(sizes > cap).tolist():
            if past(deadline):
                out.set(k, UNKNOWN, TIME_LIMIT)
                continue
            rng = row_rng(audit.seed, int(rows[k]))
            P = rng.uniform(lo[k], hi[k], (PROBES, len(lo[k])))
            P = np.clip(np.where(audit.discrete, np.round(P), P), lo[k], hi[k])
            found = enumerate_balls(self, audit, rows[[k]], [P], "search")
            if found.verdicts[0] == UNFAIR:
                out.set(k, UNFAIR, "search", found.twins[0])
            else:  # a search proves nothing
                out.set(k, UNKNOWN, f"too many cells: searched, not proven (raise max_cells, now {cap:,})")
        return out

    def _cuts(self, j: int, lo: float, hi: float, discrete: bool) -> np.ndarray:
        """One value in every cell of feature j's window [lo, hi]."""
        t = self.thresholds.get(j, np.zeros(0))
        t = t[(t > lo) & (t <= hi)]
        if discrete:
            values = np.concatenate([[lo, hi], np.floor(t), np.floor(t) + 1, np.ceil(t) - 1, np.ceil(t)])
        else:
            below = np.nextafter(t, -np.inf)
            values = np.concatenate([[lo, hi], t, below])
            if self.ir.input_float32:
                t32 = t.astype(np.float32)
                values = np.concatenate(
                    [values, t32.astype(np.float64), np.nextafter(t32, np.float32(-np.inf)).astype(np.float64)]
                )
        return np.unique(values[(values >= lo) & (values <= hi)])


def answer(model: TreeEnsemble, question: Any, options: AuditOptions, progress=None):
    return run(lambda prop: TreeRows(model), question, options, progress)
