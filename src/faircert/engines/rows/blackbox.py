"""Per-row audit of a black-box classifier: every twin of a small ball evaluated (exact), a larger
ball searched at random (`unfair` when a twin flips, otherwise `unknown`, never `fair`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...models.blackbox import BlackBoxModel
from ...options import AuditOptions
from .audit import UNFAIR, UNKNOWN, Audit, Decisions, ball_size, enumerate_balls, run

#: Twins of one row evaluated whole (ball points x other protected combinations).
ENUMERATE = 20_000
#: Random points of a larger ball tried.
PROBES = 1024


class BlackBoxRows:
    name = "rows-blackbox"
    tol = 0.0

    def __init__(self, model: BlackBoxModel, seed: int) -> None:
        self.model = model
        self.rng = np.random.default_rng(seed)

    def margins(self, X: np.ndarray) -> np.ndarray:
        """+1 for the positive label, -1 for the other: the model gives no margin."""
        return np.where(self.model.predict(X) == 1, 1.0, -1.0) if len(X) else np.zeros(0)

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        T = len(audit.combos)
        small = ball_size(audit, rows) * (T - 1) <= ENUMERATE
        out = Decisions([UNKNOWN] * len(rows), ["not reached"] * len(rows), [None] * len(rows))
        found = enumerate_balls(self, audit, rows[small])
        for k, v, m, t in zip(np.flatnonzero(small), found.verdicts, found.methods, found.twins):
            out.verdicts[k], out.methods[k], out.twins[k] = v, m, t
        lo, hi = audit.windows(rows)
        for k in np.flatnonzero(~small):
            P = np.clip(self.rng.uniform(lo[k], hi[k], (PROBES, len(lo[k]))), lo[k], hi[k])
            P = np.where(audit.discrete, np.round(P), P)
            found = enumerate_balls(self, audit, rows[[k]], [P], method="search")
            if found.verdicts[0] == UNFAIR:
                out.verdicts[k], out.methods[k], out.twins[k] = UNFAIR, "search", found.twins[0]
            else:
                out.methods[k] = "ball too large for a black box: searched, not proven"
        return out


def answer(model: BlackBoxModel, question: Any, options: AuditOptions, progress=None):
    return run(BlackBoxRows(model, options.seed), question, options, progress)
