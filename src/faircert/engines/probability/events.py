"""Events over boxes of the population's CDF space: each random input's interval per box, and the
stacked may-be-true / may-be-false events an engine refines."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import intervals as iv


def marginal_intervals(marginals: list, lo: np.ndarray, hi: np.ndarray) -> list[tuple]:
    """(lo, hi, lo_open, hi_open) of each input for CDF boxes (N, d)."""
    return [m.interval(lo[:, j], hi[:, j]) for j, m in enumerate(marginals)]


def as_intervals(raw: list[tuple]) -> list[iv.Iv]:
    track = len(raw) <= 64
    return [
        iv.Iv(vlo, vhi, olo, ohi, np.uint64(1 << j) if track else None, 0.0, affine_form(vlo, vhi, j))
        for j, (vlo, vhi, olo, ohi) in enumerate(raw)
    ]


#: track affine forms beside intervals (correlations between derived values)
AFFINE = True


def affine_form(lo, hi, j: int):
    from . import affine

    return affine.from_interval(np.asarray(lo), np.asarray(hi), symbol=j) if AFFINE else None


class BoxEvaluator:
    """Events of CDF boxes: `draws` maps boxes to input intervals, `events` runs the rest, so a
    refinement that changes one input of a box recomputes only that input's interval."""

    def __init__(self, marginals: list, events: Callable[[list[iv.Iv], int], tuple]) -> None:
        self.marginals = marginals
        self._events = events

    def draws(self, lo: np.ndarray, hi: np.ndarray) -> list[tuple]:
        return marginal_intervals(self.marginals, lo, hi)

    def events(self, raw: list[tuple], n: int) -> tuple:
        return self._events(as_intervals(raw), n)

    def __call__(self, lo: np.ndarray, hi: np.ndarray) -> tuple:
        return self.events(self.draws(lo, hi), len(lo))


def stack_events(events: list[iv.Bv], n: int):
    """(may_true, may_false, dep of the undecided events, width, symbol sensitivities) from events."""
    mt = np.stack([np.broadcast_to(e.may_true, (n,)) for e in events], axis=1)
    mf = np.stack([np.broadcast_to(e.may_false, (n,)) for e in events], axis=1)
    w = np.stack([np.broadcast_to(np.asarray(e.w, dtype=np.float64), (n,)) for e in events], axis=1)
    w = np.where(mt & mf, np.nan_to_num(w, nan=1e200, posinf=1e200), 0.0)
    sens = iv._sens_sum(*[e.sens for e in events])
    if any(e.dep is None for e in events):
        return mt, mf, None, w, sens
    dep = np.zeros(n, dtype=np.uint64)
    for k, e in enumerate(events):
        assert e.dep is not None  # every event tracks its inputs (checked above)
        dep |= np.where(mt[:, k] & mf[:, k], np.broadcast_to(e.dep, (n,)), np.uint64(0))
    return mt, mf, dep, w, sens
