"""The complete check for tree ensembles: is there any counterexample at all?

For `IndividualFairness` (fairness or robustness, epsilon, kappa) it answers `fair` with a proof,
`unfair` with a pair re-checked on the model, or `unknown` when the solver's budget runs out or
its answer falls inside its own tolerances.

Encoding (a mixed-integer program of the twin query, solved by HiGHS through scipy): for the input
x and its twin x', every threshold t that the trees compare feature f against becomes a binary
predicate p = [x_f goes left at t], tied to the value of x_f by big-M rows (integer features
exactly: left iff x_f <= ceil(t) - 1 for "<"; real ones with the boundary point allowed on both
sides, a superset). Predicates of one feature are monotone in t. Every tree picks one leaf; a leaf
is allowed only where its path's predicates hold, so the picked leaves are exactly those the model
reaches. The margin m = offset + scale * sum of leaf values is linear in the leaf indicators.
Shared features (epsilon 0) share their variables between x and x'; others satisfy
|x_f - x'_f| <= epsilon_f. For fairness the protected features are one-hot per copy and at least
one of them differs. x and x' reach different leaves in at least one tree (else the model's sums
are the same numbers in the same order, and the labels agree exactly). Each direction (x labelled 1 and x' 0, then the reverse) asks for a pair
whose separation u = min(margin of x beyond its threshold, margin of x' on the other side) is at
least -tau.

Soundness: the program describes a superset of the real pairs (only boundary points are added),
so when HiGHS finds no pair with u >= -tau, no pair exists: tau covers the float error of the
model's own sum (`margin_view`) and the solver's feasibility tolerances scaled by the size of the
leaf values. A solution is only a candidate: its pair counts after the model itself labels both
points and finds x confident. Anything else (time limit, a bound within tau of 0, a candidate the
model rejects) is `unknown`, never a proof.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from ...models.trees import TreeEnsemble
from ...properties import IndividualFairness

#: HiGHS's feasibility and integrality tolerances are 1e-7 and 1e-6; proofs keep well clear of them.
SOLVER_TOLERANCE = 1e-5
MAX_PROTECTED_VALUES = 4096  # one-hot variables per protected feature and copy
FLOAT32_TOP = 2.0 ** 24  # integers beyond this are not all float32 values


@dataclass
class TreeDecision:
    """The complete check's answer on one region."""

    verdict: str  # "fair" (proof), "unfair" (re-checked pair), "unknown"
    x: list[float] | None = None
    x_prime: list[float] | None = None
    #: separation below which pairs count as within the solver's tolerances (see the module docstring)
    tau: float = 0.0
    elapsed_s: float = 0.0
    #: why the answer is unknown, when it is
    reason: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


class _Program:
    """Columns and rows of a mixed-integer program, built incrementally."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, lb: float, ub: float, integer: bool = False) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(1 if integer else 0)
        return len(self.lb) - 1

    def row(self, coeffs: dict[int, float], lb: float = -np.inf, ub: float = np.inf) -> None:
        self.rows.append((coeffs, lb, ub))

    def solve(self, objective: dict[int, float], time_limit: float):
        n = len(self.lb)
        c = np.zeros(n)
        for j, v in objective.items():
            c[j] = v
        r, col, val = [], [], []
        for i, (coeffs, _, _) in enumerate(self.rows):
            for j, v in coeffs.items():
                r.append(i)
                col.append(j)
                val.append(v)
        a = coo_array((val, (r, col)), shape=(len(self.rows), n)).tocsr()
        lo = np.array([lb for _, lb, _ in self.rows])
        hi = np.array([ub for _, _, ub in self.rows])
        with _native_stdout_silenced():
            return milp(c, constraints=LinearConstraint(a, lo, hi), integrality=np.array(self.integer),
                        bounds=Bounds(np.array(self.lb), np.array(self.ub)),
                        options={"time_limit": max(time_limit, 0.05), "presolve": True})


@contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """HiGHS prints some diagnostics from C++ straight to file descriptor 1, where `--json -` writes
    the result: send them to /dev/null while it runs."""
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout (captured, closed): nothing to protect
        yield
        return
    saved = os.dup(fd)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)


class _Copy:
    """The variables of one input (x or its twin): values, predicates, leaves and the margin."""

    def __init__(self, value: dict[int, int], pred: dict[tuple[int, float], int]) -> None:
        self.value = value
        self.pred = pred
        self.margin: dict[int, float] = {}
        #: per tree, leaf node -> its indicator
        self.picks: list[dict[int, int]] = []


class _Encoder:
    def __init__(self, ir: TreeEnsemble, prop: IndividualFairness) -> None:
        self.ir, self.prop = ir, prop
        self.dom = prop.domain
        self.p = _Program()
        self.offset, conf, tol = ir.margin_view(prop.kappa)
        self.conf = 0.0 if conf is None else conf
        leaf_total = ir.scale * sum(float(np.abs(t.value[t.is_leaf]).max()) for t in ir.trees)
        self.tau = tol + SOLVER_TOLERANCE * max(1.0, leaf_total + abs(self.offset))
        self.thresholds = self._thresholds()
        eps = np.asarray(prop.epsilon, dtype=float)
        protected = set(prop.protected)
        shared = [i for i in range(len(self.dom)) if i not in protected and eps[i] == 0]
        x = self._copy(None, shared)
        xp = self._copy(x, shared)
        for i in range(len(self.dom)):
            if i in protected or i in shared:
                continue
            # |x_i - x'_i| <= epsilon_i
            self.p.row({x.value[i]: 1.0, xp.value[i]: -1.0}, -eps[i], eps[i])
        if protected:
            self._another_combination(x, xp, sorted(protected))
        self.x, self.xp = x, xp
        for copy in (x, xp):
            self._trees(copy)
        self._some_tree_differs()

    def _thresholds(self) -> dict[int, np.ndarray]:
        per: dict[int, list[float]] = {}
        for t in self.ir.trees:
            inner = ~t.is_leaf
            for f, thr in zip(t.feature[inner], t.threshold[inner]):
                per.setdefault(int(f), []).append(float(thr))
        return {f: np.unique(v) for f, v in per.items()}

    def _exact_integer(self, i: int) -> bool:
        f = self.dom.features[i]
        return f.is_discrete and not (self.ir.input_float32 and max(abs(f.min), abs(f.max)) > FLOAT32_TOP)

    def _copy(self, other: _Copy | None, shared: list[int]) -> _Copy:
        value: dict[int, int] = {}
        pred: dict[tuple[int, float], int] = {}
        for i, f in enumerate(self.dom.features):
            if other is not None and i in shared:
                value[i] = other.value[i]
                pred.update({k: v for k, v in other.pred.items() if k[0] == i})
                continue
            value[i] = self.p.var(f.min, f.max, integer=f.is_discrete)
            previous = None
            for t in self.thresholds.get(i, ()):
                b = self._predicate(i, float(t), value[i])
                pred[(i, float(t))] = b
                if previous is not None:  # x < t_k implies x < t_k+1
                    self.p.row({previous: 1.0, b: -1.0}, ub=0.0)
                previous = b
        return _Copy(value, pred)

    def _predicate(self, i: int, t: float, x: int) -> int:
        """A binary b = [x goes left at t], tied to x by big-M rows."""
        f = self.dom.features[i]
        if self._exact_integer(i):
            left_top = math.ceil(t) - 1 if self.ir.split == "<" else math.floor(t)
            right_bottom = left_top + 1
        else:  # real (or float32-rounded) values: the boundary may go either way; widen by float32 rounding
            slack = float(np.spacing(np.float32(t))) if self.ir.input_float32 else 0.0
            left_top, right_bottom = t + slack, t - slack
        can_go_left, can_go_right = f.min <= left_top, f.max >= right_bottom
        b = self.p.var(0 if can_go_right else 1, 1 if can_go_left else 0, integer=True)
        # b = 1 -> x <= left_top;  b = 0 -> x >= right_bottom
        m_left = max(f.max - left_top, 0.0)
        m_right = max(right_bottom - f.min, 0.0)
        self.p.row({x: 1.0, b: m_left}, ub=left_top + m_left)
        self.p.row({x: 1.0, b: m_right}, lb=right_bottom)
        return b

    def _another_combination(self, x: _Copy, xp: _Copy, protected: list[int]) -> None:
        """The protected features as one-hot per copy; at least one of them differs."""
        same_total: dict[int, float] = {}
        for i in protected:
            values = self.dom.features[i].values()
            if len(values) > MAX_PROTECTED_VALUES:
                raise ValueError(f"protected feature {self.dom.features[i].name!r} has {len(values)} values")
            onehot = []
            for copy in (x, xp):
                bits = [self.p.var(0, 1, integer=True) for _ in values]
                self.p.row(dict.fromkeys(bits, 1.0), 1.0, 1.0)
                self.p.row({copy.value[i]: 1.0, **{b: -float(v) for b, v in zip(bits, values)}}, 0.0, 0.0)
                onehot.append(bits)
            for a, b in zip(*onehot):
                s = self.p.var(0.0, 1.0)  # s >= a + b - 1: 1 where both copies take this value
                self.p.row({s: 1.0, a: -1.0, b: -1.0}, lb=-1.0)
                same_total[s] = 1.0
        self.p.row(same_total, ub=len(protected) - 1)

    def _trees(self, copy: _Copy) -> None:
        for tree in self.ir.trees:
            leaves = np.nonzero(tree.is_leaf)[0]
            pick = {int(leaf): self.p.var(0, 1, integer=True) for leaf in leaves}
            copy.picks.append(pick)
            self.p.row(dict.fromkeys(pick.values(), 1.0), 1.0, 1.0)
            below = _leaves_below(tree)
            for node in np.nonzero(~tree.is_leaf)[0]:
                b = copy.pred[(int(tree.feature[node]), float(tree.threshold[node]))]
                left = {pick[leaf]: 1.0 for leaf in below[int(tree.left[node])]}
                right = {pick[leaf]: 1.0 for leaf in below[int(tree.right[node])]}
                self.p.row({**left, b: -1.0}, ub=0.0)  # a leaf on the left needs b = 1
                self.p.row({**right, b: 1.0}, ub=1.0)  # one on the right needs b = 0
            for leaf, var in pick.items():
                copy.margin[var] = copy.margin.get(var, 0.0) + self.ir.scale * float(tree.value[leaf])

    def _some_tree_differs(self) -> None:
        """x and x' reach different leaves in at least one tree: where every tree agrees, the model
        adds the same numbers in the same order, so the labels agree exactly (no tolerance needed)."""
        same_total: dict[int, float] = {}
        for pick, pick_p in zip(self.x.picks, self.xp.picks):
            for leaf, a in pick.items():
                s = self.p.var(0.0, 1.0)  # s >= a + b - 1: 1 where both copies reach this leaf
                self.p.row({s: 1.0, a: -1.0, pick_p[leaf]: -1.0}, lb=-1.0)
                same_total[s] = 1.0
        self.p.row(same_total, ub=len(self.x.picks) - 1)

    def direction(self, positive: bool, u_min: float, time_limit: float):
        """Look for x labelled 1 (positive) or 0 and x' the other with separation u >= u_min, where
        u = min(margin of x beyond its threshold, margin of x' on the other side). A feasibility
        problem: HiGHS stops at the first solution instead of proving one best."""
        big = abs(self.offset) + sum(abs(v) for v in self.x.margin.values()) + self.conf + 1.0
        if u_min > big:
            return None
        u = self.p.var(u_min, big)
        sign = 1.0 if positive else -1.0
        # u <= sign * m_x - conf  and  u <= -sign * m_x'
        rows_before = len(self.p.rows)
        self.p.row({u: 1.0, **{j: -sign * v for j, v in self.x.margin.items()}}, ub=sign * self.offset - self.conf)
        self.p.row({u: 1.0, **{j: sign * v for j, v in self.xp.margin.items()}}, ub=-sign * self.offset)
        try:
            return self.p.solve({}, time_limit)
        finally:  # the next question starts from the shared rows
            del self.p.rows[rows_before:]
            self.p.lb.pop(), self.p.ub.pop(), self.p.integer.pop()

    def points(self, solution: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x and x' of a solution. A real value the solver left on a split's boundary may go either
        way there, so each real value moves to the middle of the cell its predicates chose (x' kept
        within epsilon of x)."""
        x, xp = self._values(solution, self.x), self._values(solution, self.xp)
        eps = np.asarray(self.prop.epsilon, dtype=float)
        for i in range(len(self.dom)):
            if self._exact_integer(i) or i in self.prop.protected:
                continue
            lo, hi = self._cell(solution, self.x, i)
            if self.x.value[i] == self.xp.value[i]:
                x[i] = xp[i] = _middle(lo, hi, x[i])
                continue
            lo_p, hi_p = self._cell(solution, self.xp, i)
            x[i] = _middle(max(lo, lo_p - eps[i]), min(hi, hi_p + eps[i]), x[i])
            xp[i] = _middle(max(lo_p, x[i] - eps[i]), min(hi_p, x[i] + eps[i]), xp[i])
        return x, xp

    def _values(self, solution: np.ndarray, copy: _Copy) -> np.ndarray:
        x = np.array([solution[copy.value[i]] for i in range(len(self.dom))], dtype=float)
        disc = self.dom.discrete_mask
        x[disc] = np.round(x[disc])
        return np.clip(x, self.dom.lower, self.dom.upper)

    def _cell(self, solution: np.ndarray, copy: _Copy, i: int) -> tuple[float, float]:
        """The interval of feature i that the solution's predicates allow (boundaries excluded)."""
        lo, hi = float(self.dom.features[i].min), float(self.dom.features[i].max)
        for t in self.thresholds.get(i, ()):
            if solution[copy.pred[(i, float(t))]] > 0.5:
                hi = min(hi, float(t))
            else:
                lo = max(lo, float(t))
        return lo, hi


def _middle(lo: float, hi: float, fallback: float) -> float:
    return (lo + hi) / 2 if lo < hi else fallback


def _leaves_below(tree) -> dict[int, list[int]]:
    """Leaves of the subtree under each node."""
    out: dict[int, list[int]] = {}

    def walk(node: int) -> list[int]:
        if tree.left[node] < 0:
            out[node] = [node]
        else:
            out[node] = walk(int(tree.left[node])) + walk(int(tree.right[node]))
        return out[node]

    walk(0)
    return out


def recheck_pair(ir: TreeEnsemble, prop: IndividualFairness, x: np.ndarray, xp: np.ndarray) -> bool:
    """Whether (x, x') is a counterexample by the model's own predictions and the property's terms."""
    dom = prop.domain
    if not (dom.contains(x[None])[0] and dom.contains(xp[None])[0]):
        return False
    eps = np.asarray(prop.epsilon, dtype=float)
    free = [i for i in range(len(dom)) if i not in prop.protected]
    if np.any(np.abs(x[free] - xp[free]) > eps[free]):
        return False
    if prop.protected and np.all(x[list(prop.protected)] == xp[list(prop.protected)]):
        return False
    label, confident = ir.label_and_confident(ir.score(np.vstack([x, xp])), prop.kappa)
    return bool(confident[0] and label[0] != label[1])


def decide_trees(ir: TreeEnsemble, prop: IndividualFairness, time_limit: float | None = 10.0) -> TreeDecision:
    """Is there any counterexample to `prop` on `ir` in the domain? See the module docstring.

    Per direction: is any pair separated by more than -tau? No: that direction is proven empty. Yes:
    the pair is re-checked on the model; if the model does not confirm it (its separation lies within
    the tolerances), a pair separated by at least +tau is asked for, whose re-check is then decisive.
    """
    t0 = time.monotonic()
    budget = 60.0 if time_limit is None else float(time_limit)
    enc = _Encoder(ir, prop)
    stats = {"variables": len(enc.p.lb), "rows": len(enc.p.rows), "solves": 0}
    proven: dict[str, bool] = {}
    reasons = []
    for name, positive in (("x positive", True), ("x negative", False)):
        for u_min in (-enc.tau, enc.tau):
            left = budget - (time.monotonic() - t0)
            if left <= 0:
                reasons.append(f"{name}: time limit")
                break
            res = enc.direction(positive, u_min, left)
            stats["solves"] += 1
            if res is None or res.status == 2:  # infeasible: no pair separated by u_min this way
                proven[name] = u_min < 0
                if u_min > 0:
                    reasons.append(f"{name}: only pairs within the tolerances")
                break
            if res.x is not None:
                x, xp = enc.points(res.x)
                if recheck_pair(ir, prop, x, xp):
                    return TreeDecision("unfair", x.tolist(), xp.tolist(), tau=enc.tau,
                                        elapsed_s=time.monotonic() - t0, stats=stats)
                continue
            reasons.append(f"{name}: {res.message.strip()}")
            break
    if len(proven) == 2 and all(proven.values()):
        return TreeDecision("fair", tau=enc.tau, elapsed_s=time.monotonic() - t0, stats=stats)
    return TreeDecision("unknown", tau=enc.tau, elapsed_s=time.monotonic() - t0, reason="; ".join(reasons) or
                        "the solver's pairs are not confirmed by the model", stats=stats)
