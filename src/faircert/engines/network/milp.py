"""Exact check of one box: a MILP of the twin network (HiGHS through `scipy.optimize.milp`).

The query: are there x in the box, x' in x's epsilon-window (inside the domain) and protected
combinations a != b (a = b = the only one for robustness) with f(x, a) > 0 and f(x', b) <= 0?
Two copies of the network share the encoding:

* free inputs x (and x' when some epsilon is positive, with |x_i - x'_i| <= eps_i): integer
  variables on integer/binary/categorical features, continuous on real ones;
* protected combinations as one-hot binaries s (copy 1) and s' (copy 2) with s_t + s'_t <= 1, so
  every pair of different combinations (all 5 x 4 ordered race pairs, say) is one encoding; the
  protected values enter through the first layer's bias, sum_t s_t * b1[t];
* each hidden ReLU with pre-activation bounds [l, u] from the symbolic bounds (`bound_twins`, the
  union over twins): stable neurons are linear (u <= 0: h = 0; l >= 0: h = pre), unstable ones get
  the big-M encoding h >= pre, h >= 0, h <= pre - l (1 - delta), h <= u delta, delta binary;
* the objective maximises t <= f(x, a), t <= -f(x', b): a pair exists iff max t > 0 (one
  orientation suffices with epsilon 0, where the copies are symmetric; otherwise both run).

How a solver answer becomes a proof (the solver works in floating point with tolerances):

* The bounds [l, u] are widened by a relative 1e-7 before use, so rounding in the bounds never cuts
  a true point off, and a neuron counts as stable only on the widened bounds.
* HiGHS accepts solutions that violate constraints and integrality by its tolerances; its feasible
  set is a superset of the exact one, so its dual bound stays an upper bound of the exact optimum
  except for the error of its dual arithmetic: reduced costs wrong by at most the dual feasibility
  tolerance (1e-7) move the bound by at most that times the sum of the variables' ranges. The margin
  is ten times that, plus a relative term in the logit scale.
* "Fair" needs the solver's dual bound on max t below -margin. A time-out, a failure or an
  "infeasible" (the exact problem is always feasible) is never a proof: the caller splits the box
  or leaves it unknown. A solution with t > 0 is only a candidate: the caller re-checks the pair
  on the real model before calling anything unfair.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from .problem import Problem
from .symbolic import bound_twins

#: HiGHS' default dual feasibility tolerance (the reduced-cost error the margin covers).
DUAL_TOL = 1e-7
#: Safety factor on the tolerance-derived margin.
SAFETY = 10.0
#: Relative widening of the symbolic bounds (float64 rounding in them is far below this).
WIDEN = 1e-7


@dataclass
class MilpAnswer:
    """`fair` (proven with the margin), `pair` (a candidate to re-check) or `unknown`."""

    status: str
    x: np.ndarray | None = None  # free part of x (d,)
    xp: np.ndarray | None = None  # free part of x' (d,)
    a: int = 0  # protected combination of x
    b: int = 0  # protected combination of x'
    bound: float = np.inf  # solver's upper bound on max t (the worst orientation)
    margin: float = 0.0
    elapsed: float = 0.0
    nodes: int = 0
    solves: int = 0


class _Model:
    """Variables, bounds and constraint rows, collected as dense blocks and assembled sparse."""

    def __init__(self) -> None:
        self.lb: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.integer: list[np.ndarray] = []
        self.n = 0
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.row_lo: list[np.ndarray] = []
        self.row_hi: list[np.ndarray] = []
        self.m = 0

    def var(self, lb, ub, integer=False) -> np.ndarray:
        lb, ub = np.atleast_1d(np.asarray(lb, float)), np.atleast_1d(np.asarray(ub, float))
        k = lb.shape[0]
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(np.broadcast_to(np.asarray(integer, dtype=np.int8), (k,)).copy())
        idx = np.arange(self.n, self.n + k)
        self.n += k
        return idx

    def add(self, terms: list[tuple[np.ndarray, np.ndarray]], lo, hi) -> None:
        """Rows lo <= sum over terms of coef (m, len(cols)) @ vars[cols] <= hi."""
        m = max(np.size(lo), np.size(hi), max(np.shape(coef)[0] for _, coef in terms))
        lo = np.broadcast_to(np.asarray(lo, float), (m,))
        hi = np.broadcast_to(np.asarray(hi, float), (m,))
        r = np.arange(self.m, self.m + m)
        for cols, coef in terms:
            coef = np.broadcast_to(coef, (m, len(cols)))
            rr, cc = np.nonzero(coef)
            self.rows.append((r[rr], np.asarray(cols)[cc], coef[rr, cc]))
        self.row_lo.append(np.array(lo))
        self.row_hi.append(np.array(hi))
        self.m += m

    def solve(self, objective: np.ndarray, time_limit: float):
        with _quiet_stdout():
            return self._solve(objective, time_limit)

    def _solve(self, objective: np.ndarray, time_limit: float):
        r = np.concatenate([t[0] for t in self.rows])
        c = np.concatenate([t[1] for t in self.rows])
        v = np.concatenate([t[2] for t in self.rows])
        A = coo_matrix((v, (r, c)), shape=(self.m, self.n)).tocsr()
        return milp(
            objective,
            integrality=np.concatenate(self.integer),
            bounds=Bounds(np.concatenate(self.lb), np.concatenate(self.ub)),
            constraints=LinearConstraint(A, np.concatenate(self.row_lo), np.concatenate(self.row_hi)),
            options=dict(time_limit=max(time_limit, 0.01), presolve=True),
        )

    def ranges(self) -> float:
        return float(np.sum(np.concatenate(self.ub) - np.concatenate(self.lb)))


@contextlib.contextmanager
def _quiet_stdout():
    """HiGHS prints some diagnostics straight to file descriptor 1 (even with disp off); keep
    them out of the command's output (which may be JSON on stdout)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real descriptor (captured): nothing to guard
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _widen(l: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return l - WIDEN * (1.0 + np.abs(l)), u + WIDEN * (1.0 + np.abs(u))


def _copy(model: _Model, pb: Problem, x: np.ndarray, s: np.ndarray, hidden, out_lo: float, out_hi: float) -> int:
    """Encode one copy of the network on inputs x and one-hot twin s; returns its output variable."""
    net = pb.twin
    pb.network.require_piecewise_linear("the MILP")
    prev: Any = None
    for k, (l, u) in enumerate(hidden):
        l, u = _widen(l, u)
        n = l.shape[0]
        h = model.var(np.zeros(n), np.maximum(u, 0.0))
        # pre-activation as terms (cols, coef) and a constant
        if k == 0:
            pre = [(x, net.w1), (s, net.b1.T)]
            const = np.zeros(n)
        else:
            w, b = net.weights[k - 1], net.biases[k - 1]
            pre = [(prev, w)]
            const = b
        neg = [(cols, -coef) for cols, coef in pre]
        active = l >= 0
        unstable = (l < 0) & (u > 0)
        ones = np.eye(n)
        if active.any():  # h - pre = const
            sel = np.flatnonzero(active)
            model.add([(h[sel], ones[np.ix_(sel, sel)])] + [(c, co[sel]) for c, co in neg], const[sel], const[sel])
        if unstable.any():
            sel = np.flatnonzero(unstable)
            m = sel.size
            delta = model.var(np.zeros(m), np.ones(m), integer=True)
            eye = np.eye(m)
            # h >= pre
            model.add([(h[sel], eye)] + [(c, co[sel]) for c, co in neg], const[sel], np.inf)
            # h - pre - l delta <= -l   (h <= pre - l (1 - delta))
            model.add(
                [(h[sel], eye), (delta, -np.diag(l[sel]))] + [(c, co[sel]) for c, co in neg],
                -np.inf,
                const[sel] - l[sel],
            )
            # h - u delta <= 0
            model.add([(h[sel], eye), (delta, -np.diag(u[sel]))], -np.inf, np.zeros(m))
        # inactive neurons: h's bounds are [0, 0]
        prev = h
    y = model.var(out_lo, out_hi)
    if hidden:
        w, b = net.weights[-1], net.biases[-1]
        model.add([(y, np.ones((1, 1))), (prev, -w)], b, b)
    else:
        model.add([(y, np.ones((1, 1))), (x, -net.w1), (s, -net.b1.T)], 0.0, 0.0)
    return int(y[0])


def _union(hidden, out_lo, out_hi, n_hidden):
    """Bounds of one box, union over twins: hidden layers and the output."""
    layers = [(l[0].min(axis=0), u[0].max(axis=0)) for l, u in hidden[:n_hidden]]
    return layers, float(out_lo.min()), float(out_hi.max())


def box_bounds(pb: Problem, lo: np.ndarray, hi: np.ndarray, tight: bool):
    """Union-over-twins neuron bounds for x's box and (with epsilon) x''s enlarged box."""
    n_hidden = len(pb.twin.weights)
    bd = bound_twins(pb.twin, lo[None], hi[None], tight, keep_hidden=True)
    own = _union(bd.hidden, bd.lower, bd.upper, n_hidden)
    if not pb.has_eps:
        return own, own
    elo, ehi = pb.enlarge(lo, hi)
    ebd = bound_twins(pb.twin, elo[None], ehi[None], tight, keep_hidden=True)
    return own, _union(ebd.hidden, ebd.lower, ebd.upper, n_hidden)


def solve_box(pb: Problem, lo: np.ndarray, hi: np.ndarray, time_limit: float, tight: bool = False) -> MilpAnswer:
    """Decide whether the box holds a counterexample (see the module docstring for soundness)."""
    t0 = time.perf_counter()
    own, win = box_bounds(pb, lo, hi, tight)
    orientations = [+1] if not pb.has_eps else [+1, -1]
    worst = -np.inf
    answer = MilpAnswer("unknown")
    for sign in orientations:
        # sign +1: f(x, a) > 0 >= f(x', b); sign -1: f(x, a) <= 0 < f(x', b)
        t_hi = min(own[2], -win[1]) if sign > 0 else min(-own[1], win[2])
        if t_hi < -pb.tol:  # the bounds alone exclude this orientation
            worst = max(worst, t_hi)
            continue
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return _done(answer, "unknown", t0)
        res, margin, ids = _solve_orientation(pb, lo, hi, own, win, sign, left)
        answer.solves += 1
        answer.nodes += int(getattr(res, "mip_node_count", 0) or 0)
        answer.margin = max(answer.margin, margin)
        if res.x is not None and -res.fun > 0:
            x, xp, s, sp = (res.x[i] for i in ids)
            answer.x, answer.xp = _round(pb, x), _round(pb, xp)
            answer.a, answer.b = int(np.argmax(s)), int(np.argmax(sp))
            answer.bound = np.inf
            return _done(answer, "pair", t0)
        bound = getattr(res, "mip_dual_bound", None)
        if res.status != 0 or bound is None or not np.isfinite(bound):
            return _done(answer, "unknown", t0)
        t_bound = -float(bound)
        worst = max(worst, t_bound)
        if not t_bound < -margin:
            answer.bound = worst
            return _done(answer, "unknown", t0)
    answer.bound = worst
    return _done(answer, "fair", t0)


def _done(answer: MilpAnswer, status: str, t0: float) -> MilpAnswer:
    answer.status = status
    answer.elapsed = time.perf_counter() - t0
    return answer


def _round(pb: Problem, x: np.ndarray) -> np.ndarray:
    return np.where(pb.discrete, np.round(x), x)


def _solve_orientation(pb: Problem, lo, hi, own, win, sign: int, time_limit: float):
    model = _Model()
    x = model.var(lo, hi, integer=pb.discrete)
    if pb.has_eps:
        elo, ehi = pb.enlarge(lo, hi)
        xp = model.var(elo, ehi, integer=pb.discrete)
        # |x - x'| <= eps (0: equal)
        d = pb.d
        model.add([(x, np.eye(d)), (xp, -np.eye(d))], -pb.eps, pb.eps)
    else:
        xp = x
    T = pb.n_twins
    s = model.var(np.zeros(T), np.ones(T), integer=True)
    sp = model.var(np.zeros(T), np.ones(T), integer=True)
    model.add([(s, np.ones((1, T)))], 1.0, 1.0)
    model.add([(sp, np.ones((1, T)))], 1.0, 1.0)
    if T > 1:  # another protected combination
        model.add([(s, np.eye(T)), (sp, np.eye(T))], -np.inf, np.ones(T))
    o_lo, o_hi = _widen(np.array(own[1]), np.array(own[2]))
    w_lo, w_hi = _widen(np.array(win[1]), np.array(win[2]))
    y1 = _copy(model, pb, x, s, own[0], float(o_lo), float(o_hi))
    y2 = _copy(model, pb, xp, sp, win[0], float(w_lo), float(w_hi))
    # t <= sign * y1, t <= -sign * y2
    a1, a2 = (o_lo, o_hi) if sign > 0 else (-o_hi, -o_lo)
    b1, b2 = (-w_hi, -w_lo) if sign > 0 else (w_lo, w_hi)
    t = model.var(float(min(a1, b1)), float(min(a2, b2)))
    model.add([(t, np.ones((1, 1))), (np.array([y1]), np.array([[-float(sign)]]))], -np.inf, 0.0)
    model.add([(t, np.ones((1, 1))), (np.array([y2]), np.array([[float(sign)]]))], -np.inf, 0.0)
    c = np.zeros(model.n)
    c[t] = -1.0
    margin = SAFETY * DUAL_TOL * model.ranges() + pb.tol
    res = model.solve(c, time_limit)
    return res, margin, (x, xp, s, sp)
