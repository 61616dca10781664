"""Per-row audit of networks: enumeration of small balls, else bounds, search and a MILP.

A ball of at most `max_twins` twins (`RowLimits`; `ENUMERATE` by default) is evaluated whole
(exact). Otherwise the twins' logit bounds over the ball (the twin network's symbolic bounds on the
row's window) prove a row fair when every other combination stays on the row's side of 0 by more
than the tolerance; random and corner points of the ball look for a flipping twin; what stays
open goes to a MILP of one network copy whose protected combination may be any but the row's own
(HiGHS; a proof needs the solver's dual bound past the margin of `network.milp`, a candidate is
re-checked on the network) within `milp_seconds` and the time left. The MILPs are the last stage
(`finish`): every row gets its bounds and search before any row gets a MILP.
Networks with smooth units have no MILP: their balls are split into boxes until the bounds decide
each one or a box's centre flips (`SPLIT_BOXES` boxes, then unknown).

With a `device` (`AuditOptions.device`) the bounds of the rows' balls and of their split boxes are
computed with torch there, in float64 (`network.arrays`); the twins found are re-checked on the
model on the host, and the MILP's own bounds stay numpy's.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

import numpy as np

from ...models.network import ReluNetwork
from ...options import AuditOptions
from ..boxes.budget import TIME_LIMIT
from ..network.milp import DUAL_TOL, SAFETY, _copy, _Model, _widen
from ..network.problem import Problem
from ..network.refine import one_thread
from ..network.symbolic import bound_twins
from .audit import (
    DEFERRED,
    FAIR,
    UNFAIR,
    UNKNOWN,
    Audit,
    Decisions,
    ball_size,
    enumerate_balls,
    past,
    row_rng,
    run,
)

#: Twins of one row evaluated whole (ball points x other protected combinations), by default.
ENUMERATE = 50_000
#: Random points of a ball tried before the MILP.
PROBES = 256
#: Boxes one row's ball may be split into (networks with smooth units, which have no MILP).
SPLIT_BOXES = 20_000


class NetworkRows:
    name = "rows-network"

    def __init__(self, network: ReluNetwork, prop: Any, device: str | None = None) -> None:
        self.network = network
        self.pb = Problem.build(network, prop, device)  # the bounds on the device, if one is asked
        self.tol = self.pb.tol

    def margins(self, X: np.ndarray) -> np.ndarray:
        return self.network.logit(X)

    def decide(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        T = len(audit.combos)
        small = ball_size(audit, rows) * (T - 1) <= audit.limits.twins(ENUMERATE)
        out = Decisions.open(len(rows))
        if small.any():
            out.merge(np.flatnonzero(small), enumerate_balls(self, audit, rows[small], deadline=deadline))
        big = np.flatnonzero(~small)
        if big.size:
            out.merge(big, self._bounded(audit, rows[big], deadline))
        return out

    def _bounded(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        """Bounds, then a search; what both leave waits for the MILP (`finish`)."""
        pb = self.pb
        lo, hi = audit.windows(rows)
        bd = pb.bound(lo[:, pb.free], hi[:, pb.free])
        out = Decisions.open(len(rows))
        for k, i in enumerate(rows.tolist()):
            positive = audit.labels[i] == 1
            safe = bd.lower[k] > self.tol if positive else bd.upper[k] < -self.tol
            if np.all(safe[audit.others(rows[[k]])[0]]):
                out.set(k, FAIR, "bounds")
            elif past(deadline):
                out.set(k, UNKNOWN, TIME_LIMIT)
            elif (twin := self._search(audit, i, lo[k], hi[k])) is not None:
                out.set(k, UNFAIR, "search", twin)
            else:
                out.set(k, UNKNOWN, DEFERRED)
        return out

    def finish(self, audit: Audit, rows: np.ndarray, deadline: float | None) -> Decisions:
        """A MILP for each row the bounds and the search left open, within `milp_seconds` and the
        time left."""
        lo, hi = audit.windows(rows)
        seconds = audit.limits.milp_seconds
        out = Decisions.open(len(rows))
        for k, i in enumerate(rows.tolist()):
            left = math.inf if deadline is None else deadline - time.time()
            if left <= 0:
                out.set(k, UNKNOWN, TIME_LIMIT)
                continue
            if not self.network.piecewise_linear:  # the MILP encodes ReLUs only: split the ball
                verdict, twin = self._split(audit, i, lo[k], hi[k], deadline)
                why = "split" if verdict != UNKNOWN else f"split undecided ({SPLIT_BOXES:,} boxes)"
                out.set(k, verdict, why, twin)
                continue
            verdict, twin = self._milp(audit, i, lo[k], hi[k], min(seconds, left))
            if verdict != UNKNOWN:
                out.set(k, verdict, "milp", twin)
            elif left < seconds and past(deadline):  # the run's deadline, not the row's own budget, ended it
                out.set(k, UNKNOWN, TIME_LIMIT)
            else:
                out.set(k, UNKNOWN, f"milp undecided (raise milp_seconds, now {seconds:g} s)")
        return out

    def _flips(self, audit: Audit, i: int, Y: np.ndarray) -> np.ndarray | None:
        M = self.margins(Y)
        differs = (np.abs(M) > self.tol) & ((M > 0) != (audit.labels[i] == 1))
        return Y[int(np.argmax(differs))] if differs.any() else None

    def _search(self, audit: Audit, i: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
        """A flipping twin among random and corner points of the ball, with every other combination."""
        d = len(lo)
        rng = row_rng(audit.seed, i)
        P = rng.uniform(lo, hi, (PROBES, d))
        P[: PROBES // 2] = np.where(rng.random((PROBES // 2, d)) < 0.5, lo, hi)
        P = np.where(audit.discrete, np.round(P), P)
        P = np.clip(P, lo, hi)
        combos = [c for c in range(len(audit.combos)) if c != audit.own[i]]
        Y = np.concatenate([audit.with_combo(P, np.full(len(P), c)) for c in combos])
        return self._flips(audit, i, Y)

    def _split(self, audit: Audit, i: int, lo: np.ndarray, hi: np.ndarray, deadline: float | None):
        """Branch and bound over the ball: boxes whose twins the bounds keep on the row's side are
        done, a box's centre is tried for a flip, the rest split on the feature that widens their
        bounds most; unknown once `SPLIT_BOXES` boxes were bounded or a box cannot be split."""
        pb = self.pb
        others = np.arange(len(audit.combos)) != audit.own[i]
        positive = audit.labels[i] == 1
        blo, bhi = lo[pb.free][None], hi[pb.free][None]
        smallest = 1e-9 * np.maximum(pb.hi - pb.lo, 1.0)
        bounded = 0
        while blo.shape[0]:
            if bounded >= SPLIT_BOXES or (deadline is not None and time.time() >= deadline):
                return UNKNOWN, None
            bounded += blo.shape[0]
            bd = pb.bound(blo, bhi)
            safe = bd.lower > self.tol if positive else bd.upper < -self.tol
            open_ = ~np.all(safe[:, others], axis=1)
            blo, bhi, score = blo[open_], bhi[open_], bd.score[open_]
            centre = np.where(pb.discrete, np.floor((blo + bhi) / 2), (blo + bhi) / 2)
            point = np.repeat(lo[None], centre.shape[0], axis=0)
            point[:, pb.free] = centre
            combos = [c for c in range(len(audit.combos)) if others[c]]
            twin = self._flips(
                audit, i, np.concatenate([audit.with_combo(point, np.full(len(point), c)) for c in combos])
            )
            if twin is not None:
                return UNFAIR, twin
            width = bhi - blo
            can = np.where(pb.discrete, width > 0, width > smallest)
            if not np.all(can.any(axis=1)):
                return UNKNOWN, None
            j = np.argmax(np.where(can, score + 1e-300, -1.0), axis=1)  # a splittable feature, widest score
            r = np.arange(blo.shape[0])
            a, b = blo[r, j], bhi[r, j]
            mid = np.where(pb.discrete[j], np.floor((a + b) / 2), (a + b) / 2)
            left_hi, right_lo = bhi.copy(), blo.copy()
            left_hi[r, j] = mid
            right_lo[r, j] = np.where(pb.discrete[j], mid + 1, mid)
            blo, bhi = np.concatenate([blo, right_lo]), np.concatenate([left_hi, bhi])
        return FAIR, None

    def _milp(self, audit: Audit, i: int, lo: np.ndarray, hi: np.ndarray, seconds: float):
        """Minimise (label 1) or maximise (label 0) the logit over the ball, any other combination."""
        pb = self.pb
        flo, fhi = lo[pb.free], hi[pb.free]
        bd = bound_twins(pb.twin, flo[None], fhi[None], keep_hidden=True)
        T = pb.n_twins
        assert bd.hidden is not None  # asked for with keep_hidden
        hidden = [(l[0].min(axis=0), u[0].max(axis=0)) for l, u in bd.hidden[: len(pb.twin.weights)]]
        model = _Model()
        x = model.var(flo, fhi, integer=pb.discrete)
        s = model.var(np.zeros(T), np.where(np.arange(T) == audit.own[i], 0.0, 1.0), integer=True)
        model.add([(s, np.ones((1, T)))], 1.0, 1.0)
        o_lo, o_hi = _widen(np.array(bd.lower.min()), np.array(bd.upper.max()))
        y = _copy(model, pb, x, s, hidden, float(o_lo), float(o_hi))
        positive = audit.labels[i] == 1
        c = np.zeros(model.n)
        c[y] = 1.0 if positive else -1.0
        res = model.solve(c, seconds)
        margin = SAFETY * DUAL_TOL * model.ranges() + self.tol
        if res.x is not None:
            xs, ss = res.x[x], res.x[s]
            point = np.empty(len(audit.lower))
            point[pb.free] = np.where(pb.discrete, np.round(xs), xs)
            candidate = audit.with_combo(point, int(np.argmax(ss)))
            twin = self._flips(audit, i, candidate[None])
            if twin is not None:
                return UNFAIR, twin
        bound = getattr(res, "mip_dual_bound", None)
        if res.status == 0 and bound is not None and np.isfinite(bound):
            # positive row: min logit >= bound; negative row: max logit <= -bound
            if float(bound) > margin:
                return FAIR, None
        return UNKNOWN, None


def answer(model: ReluNetwork, question: Any, options: AuditOptions, progress=None):
    # on a device the rows are decided in this process (or in workers that set their own threads):
    # one BLAS and torch CPU thread, as the refinement
    with one_thread(options.device) if options.device is not None else contextlib.nullcontext():
        return run(lambda prop: NetworkRows(model, prop, options.device), question, options, progress)
