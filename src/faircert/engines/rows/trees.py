"""Per-row audit of tree ensembles: the twins of a row are decided on the cells of its ball.

A tree ensemble is constant between consecutive thresholds of each feature, so on each moving
feature it suffices to try the window's ends and, for every threshold inside the window, the
values just below and at it (on the grid for discrete features; in float64 and, when the model
reads float32, in float32 for real ones). Every cell of the ball then holds a candidate, and
evaluating all candidates with every other protected combination decides the row exactly. A ball
with more than `MAX_CELLS` cells is searched at random instead: `unfair` when a twin flips,
otherwise `unknown`, never `fair`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...models.trees import TreeEnsemble
from ...options import AuditOptions
from .audit import UNKNOWN, Audit, Decisions, enumerate_balls, run

#: Cells of one row's ball evaluated at most (times the other protected combinations).
MAX_CELLS = 20_000
#: Random points of a ball tried when it has more cells.
PROBES = 2048


class TreeRows:
    name = "rows-trees"

    def __init__(self, ir: TreeEnsemble, seed: int) -> None:
        self.ir = ir
        offset, _, self.tol = ir.margin_view(None)
        self.offset = offset - ir.base_score
        self.rng = np.random.default_rng(seed)
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
        cells: list[np.ndarray | None] = []
        too_big: list[int] = []
        for k, i in enumerate(rows):
            axes = [self._cuts(int(j), lo[k, j], hi[k, j], bool(audit.discrete[j])) for j in moving]
            size = int(np.prod([len(a) for a in axes])) if axes else 1
            if size > MAX_CELLS:
                too_big.append(k)
                cells.append(None)
                continue
            grid = np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(-1, len(moving))
            P = np.repeat(audit.rows[i][None], len(grid), axis=0)
            P[:, moving] = grid
            cells.append(P)
        small = [k for k in range(len(rows)) if cells[k] is not None]
        balls = [c for c in cells if c is not None]
        out = Decisions([UNKNOWN] * len(rows), ["not reached"] * len(rows), [None] * len(rows))
        found = enumerate_balls(self, audit, rows[small], balls, method="tree cells")
        for k, v, m, t in zip(small, found.verdicts, found.methods, found.twins):
            out.verdicts[k], out.methods[k], out.twins[k] = v, m, t
        for k in too_big:
            P = self.rng.uniform(lo[k], hi[k], (PROBES, len(lo[k])))
            P = np.where(audit.discrete, np.round(P), P)
            found = enumerate_balls(self, audit, rows[[k]], [np.clip(P, lo[k], hi[k])], method="search")
            out.verdicts[k], out.twins[k] = found.verdicts[0], found.twins[0]
            out.methods[k] = "search" if found.verdicts[0] == "unfair" else "too many cells: searched, not proven"
            if out.verdicts[k] == "fair":  # a search proves nothing
                out.verdicts[k] = UNKNOWN
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
    return run(TreeRows(model, options.seed), question, options, progress)
