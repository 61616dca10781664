"""Per-row audit of a black-box classifier: every twin of a small ball evaluated (exact), a larger
ball searched at random (`unfair` when a twin flips, otherwise `unknown`, never `fair`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...models.blackbox import BlackBoxModel
from ...options import AuditOptions
from ..boxes.budget import TIME_LIMIT
from .audit import UNFAIR, UNKNOWN, Audit, Decisions, ball_size, enumerate_balls, past, row_rng, run

#: Twins of one row evaluated whole (ball points x other protected combinations), by default.
ENUMERATE = 20_000
#: Random points of a larger ball tried.
PROBES = 1024


class BlackBoxRows:
    name = "rows-blackbox"
    tol = 0.0
    #: twins per call: a black box may be slow on each (an SVC, nearest neighbours), and the time
    #: limit is checked between calls
    batch = 20_000
    #: a black box may label a point otherwise in another batch: a twin that does not flip when
    #: re-checked leaves its row unknown (for the IRs it would be a bug)
    batch_dependent = True

    def __init__(self, model: BlackBoxModel) -> None:
        self.model = model

    def margins(self, X: np.ndarray) -> np.ndarray:
        """+1 for the positive label, -1 for the other: the model gives no margin."""
        return np.where(self.model.predict(X) == 1, 1.0, -1.0) if len(X) else np.zeros(0)

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        T = len(audit.combos)
        cap = audit.limits.twins(ENUMERATE)
        size = ball_size(audit, rows)
        small = np.flatnonzero(size * (T - 1) <= cap)
        out = Decisions.open(len(rows))
        out.merge(small, enumerate_balls(self, audit, rows[small], deadline=deadline))
        lo, hi = audit.windows(rows)
        for k in sorted(set(range(len(rows))) - set(small.tolist())):
            if past(deadline):
                out.set(k, UNKNOWN, TIME_LIMIT)
                continue
            rng = row_rng(audit.seed, int(rows[k]))
            P = np.clip(rng.uniform(lo[k], hi[k], (PROBES, len(lo[k]))), lo[k], hi[k])
            P = np.where(audit.discrete, np.round(P), P)
            found = enumerate_balls(self, audit, rows[[k]], [P], "search")
            if found.verdicts[0] == UNFAIR:
                out.set(k, UNFAIR, "search", found.twins[0])
            elif np.isinf(size[k]):  # no budget makes a real feature's ball finite
                out.set(k, UNKNOWN, "a real feature moves: searched, not proven (a black box has no bounds)")
            else:
                why = f"ball too large for a black box: searched, not proven (raise max_twins, now {cap:,})"
                out.set(k, UNKNOWN, why)
        return out


def answer(model: BlackBoxModel, question: Any, options: AuditOptions, progress=None):
    result = run(lambda prop: BlackBoxRows(model), question, options, progress)
    if model.reason:  # what made the model a black box, as the other black-box engines say it
        result.stats["black_box"] = model.reason
    return result
