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
are the same numbers in the same order, and the labels agree exactly). Each direction (x labelled
1 and x' 0, then the reverse) asks for a pair whose separation u = min(margin of x beyond its threshold,
margin of x' on the other side) is at least -tau.

Soundness: the program describes a superset of the real pairs (only boundary points are added),
so when HiGHS finds no pair with u >= -tau, no pair exists: tau covers the float error of the
model's own sum (`margin_view`) and the solver's feasibility tolerances scaled by the size of the
leaf values. A solution is only a candidate: its pair counts after the model itself labels both
points and finds x confident. Anything else (time limit, a bound within tau of 0, a candidate the
model rejects) is `unknown`, never a proof.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from ... import orphans
from ...errors import PropertyError
from ...models.trees import TreeEnsemble
from ...options import VerifyOptions
from ...progress import ProgressEvent
from ...properties import IndividualFairness
from ...results import Counterexample, Result

#: HiGHS's feasibility and integrality tolerances are 1e-7 and 1e-6; proofs keep well clear of them.
SOLVER_TOLERANCE = 1e-5
MAX_PROTECTED_VALUES = 4096  # one-hot variables per protected feature and copy
FLOAT32_TOP = 2.0**24  # integers beyond this are not all float32 values
#: Programs with more variables are solved in a child process killed at the time limit.
CHILD_VARIABLES = 20_000
CHILD_GRACE_S = 1.0
#: Random pairs drawn before the program is built, in batches: where counterexamples are common
#: they are found in milliseconds. At most SEARCH_BATCHES batches for the whole domain (one per
#: partition: most partitions of a fair model have none), a tenth of the time limit and SEARCH_S.
SEARCH_SHARE = 0.1
SEARCH_S = 2.0
SEARCH_BATCH = 1024
SEARCH_BATCHES = 8


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
        problem = (c, a, lo, hi, np.array(self.integer), np.array(self.lb), np.array(self.ub), max(time_limit, 0.05))
        if n > CHILD_VARIABLES and "fork" in multiprocessing.get_all_start_methods():
            return _solve_in_child(problem)
        return _solve(*problem)


def _solve(c, a, lo, hi, integrality, lb, ub, time_limit) -> Any:
    with _native_stdout_silenced():
        return milp(
            c,
            constraints=LinearConstraint(a, lo, hi),
            integrality=integrality,
            bounds=Bounds(lb, ub),
            options={"time_limit": time_limit, "presolve": True},
        )


class _Stopped:
    """What a solve stopped at its time limit answers: no solution, no proof."""

    status = 1
    x = None
    message = "time limit (the solver was stopped)"


def _solve_in_child(problem: tuple) -> Any:
    """HiGHS on a large program can run far past its time limit (presolve and the first relaxation
    do not look at the clock), so it runs in a forked child that is killed at the limit."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    parent = os.getpid()

    def work() -> None:
        orphans.exit_with_parent(parent)  # a solve nobody waits for any more is not finished
        res = _solve(*problem)
        send.send((res.status, res.x, res.message))

    child = context.Process(target=work, daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(problem[-1] + CHILD_GRACE_S):
            status, x, message = receive.recv()
            return _Answer(status, x, message)
        return _Stopped()
    except EOFError:  # the child died without an answer (out of memory, killed)
        return _Stopped()
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()


@dataclass
class _Answer:
    status: int
    x: Any
    message: str


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
    def __init__(
        self, ir: TreeEnsemble, prop: IndividualFairness, region: tuple[np.ndarray, np.ndarray] | None = None
    ) -> None:
        self.ir, self.prop = ir, prop
        self.region = region
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
        if region is not None:  # x inside the region; its twin anywhere in the domain (within epsilon)
            for i, var in x.value.items():
                self.p.lb[var] = max(self.p.lb[var], float(region[0][i]))
                self.p.ub[var] = min(self.p.ub[var], float(region[1][i]))
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
            left_top: float = math.ceil(t) - 1 if self.ir.split == "<" else math.floor(t)
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


def _reads_no_protected(ir: TreeEnsemble, prop: IndividualFairness) -> bool:
    """Fairness at epsilon 0 where no tree splits on a protected feature: twins reach the same
    leaves, so their scores are the same numbers summed in the same order."""
    eps = np.asarray(prop.epsilon, dtype=float)
    free = [i for i in range(len(prop.domain)) if i not in prop.protected]
    return (
        bool(prop.protected)
        and not prop.robustness
        and not np.any(eps[free] > 0)
        and len(ir.trees_reading(list(prop.protected))) == 0
    )


def _search(
    ir: TreeEnsemble, prop: IndividualFairness, lo: np.ndarray, hi: np.ndarray, deadline: float, batches: int
) -> tuple[tuple[np.ndarray, np.ndarray] | None, int]:
    """Random pairs, `batches` batches or until `deadline`: x uniform in the region [lo, hi], x'
    another protected value (fairness) and within epsilon of x on the other features; the first
    pair the model confirms (`recheck_pair`), and how many were drawn."""
    dom = prop.domain
    rng = np.random.default_rng(0)
    eps = np.asarray(prop.epsilon, dtype=float)
    disc = dom.discrete_mask
    protected = list(prop.protected)
    drawn = 0
    for _ in range(batches):
        if time.monotonic() >= deadline:
            break
        n = SEARCH_BATCH
        u = rng.random((n, len(dom)))
        x = np.where(disc, np.floor(lo + u * (hi - lo + 1)), lo + u * (hi - lo))
        x = np.minimum(x, hi)
        step = rng.random((n, len(dom))) * 2 - 1
        step = np.where(disc, np.round(step * np.floor(eps + 1e-12)), step * eps)
        xp = np.clip(x + step, dom.lower, dom.upper)
        for i in protected:  # another value of each protected feature (at least one differs)
            f = dom.features[i]
            xp[:, i] = f.min + rng.integers(0, int(f.max - f.min) + 1, n) if disc[i] else rng.uniform(f.min, f.max, n)
        twins = ~np.all(xp[:, protected] == x[:, protected], axis=1) if protected else np.ones(n, dtype=bool)
        label, confident = ir.label_and_confident(ir.score(np.vstack([x, xp])), prop.kappa)
        bad = np.flatnonzero(twins & confident[:n] & (label[:n] != label[n:]))
        drawn += n
        for k in bad[:8]:
            if recheck_pair(ir, prop, x[k], xp[k]):
                return (x[k], xp[k]), drawn
    return None, drawn


def decide_trees(
    ir: TreeEnsemble,
    prop: IndividualFairness,
    time_limit: float | None = 10.0,
    region: tuple[np.ndarray, np.ndarray] | None = None,
) -> TreeDecision:
    """Is there any counterexample to `prop` on `ir` in the domain (with x inside `region`, a box
    (lo, hi) of inclusive bounds, when given)? See the module docstring.

    Per direction: is any pair separated by more than -tau? No: that direction is proven empty. Yes:
    the pair is re-checked on the model; if the model does not confirm it (its separation lies within
    the tolerances), a pair separated by at least +tau is asked for, whose re-check is then decisive.
    """
    t0 = time.monotonic()
    budget = 60.0 if time_limit is None else float(time_limit)
    if _reads_no_protected(ir, prop):
        return TreeDecision(
            "fair",
            elapsed_s=time.monotonic() - t0,
            stats={"proof": "no tree reads a protected feature and epsilon is 0"},
        )
    lo, hi = (prop.domain.lower, prop.domain.upper) if region is None else region
    found, drawn = _search(
        ir, prop, lo, hi, t0 + min(SEARCH_SHARE * budget, SEARCH_S), SEARCH_BATCHES if region is None else 1
    )
    if found is not None:
        return TreeDecision(
            "unfair",
            found[0].tolist(),
            found[1].tolist(),
            elapsed_s=time.monotonic() - t0,
            stats={"pairs_drawn": drawn, "solves": 0},
        )
    enc = _Encoder(ir, prop, region)
    stats = {"variables": len(enc.p.lb), "rows": len(enc.p.rows), "solves": 0, "pairs_drawn": drawn}
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
                    return TreeDecision(
                        "unfair", x.tolist(), xp.tolist(), tau=enc.tau, elapsed_s=time.monotonic() - t0, stats=stats
                    )
                continue
            reasons.append(f"{name}: {res.message.strip()}")
            break
    if len(proven) == 2 and all(proven.values()):
        return TreeDecision("fair", tau=enc.tau, elapsed_s=time.monotonic() - t0, stats=stats)
    return TreeDecision(
        "unknown",
        tau=enc.tau,
        elapsed_s=time.monotonic() - t0,
        reason="; ".join(reasons) or "the solver's pairs are not confirmed by the model",
        stats=stats,
    )


MAX_PARTITIONS = 1_000_000
DECISION_SHARE = 0.8  # of the time limit, for the decisions; the shares' quantification gets the rest


def partitions(prop: IndividualFairness, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Fairify's grid: every non-protected integer feature with more than `size` values cut into
    chunks of `size` (inclusive bounds, one row per partition, the first feature varying slowest)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise PropertyError(f"partition size must be an integer >= 1, got {size!r}")
    per_feature: list[list[tuple[float, float]]] = []
    for i, f in enumerate(prop.domain.features):
        if f.is_discrete and i not in prop.protected and f.max - f.min + 1 > size:
            per_feature.append([(s, min(s + size - 1, f.max)) for s in range(int(f.min), int(f.max) + 1, size)])
        else:
            per_feature.append([(f.min, f.max)])
    count = math.prod(len(c) for c in per_feature)
    if count > MAX_PARTITIONS:
        raise PropertyError(
            f"partition size {size} cuts the domain into {count:,} partitions (limit "
            f"{MAX_PARTITIONS:,}); use a larger partition size"
        )
    cells = np.array(list(itertools.product(*per_feature)), dtype=np.float64).reshape(count, len(per_feature), 2)
    return cells[:, :, 0].copy(), cells[:, :, 1].copy()


def answer(ir: TreeEnsemble, prop: IndividualFairness, options: VerifyOptions, progress=None) -> Result:
    """Registry entry point (method "complete"): decide the domain, or every partition of it.

    The shares come from the quantifying engine run in what the decision left of the time limit
    (a proof of fairness makes them exact: certified 1); the decision and its evidence, and with
    `partition_size` one row per partition, are added."""
    from .verify import verify_trees

    t0 = time.monotonic()
    budget = None if options.time_limit is None else DECISION_SHARE * options.time_limit
    if options.partition_size is None:
        lo, hi = prop.domain.lower[None], prop.domain.upper[None]
    else:
        lo, hi = partitions(prop, options.partition_size)
    rows, pairs = [], []
    for k in range(len(lo)):
        left = None if budget is None else budget - (time.monotonic() - t0)
        start = time.monotonic()
        if left is not None and left <= 0:
            d = TreeDecision("unknown", reason="time limit")
        else:
            d = decide_trees(ir, prop, left, (lo[k], hi[k]) if options.partition_size is not None else None)
        if d.verdict == "unfair" and d.x is not None and d.x_prime is not None:
            pairs.append(Counterexample(d.x, d.x_prime, *map(float, ir.predict_proba(np.array([d.x, d.x_prime])))))
        rows.append(
            dict(
                id=k,
                verdict=d.verdict,
                seconds=time.monotonic() - start,
                evidence=_evidence(d),
                counterexample=pairs[-1].to_dict() if d.verdict == "unfair" else None,
                **_bounds_of_cut(prop, lo[k], hi[k]),
            )
        )
        if progress is not None:
            decided = sum(r["verdict"] != "unknown" for r in rows)
            progress(ProgressEvent(elapsed_s=time.monotonic() - t0, decided=decided, partitions=len(rows)))
    verdicts = [r["verdict"] for r in rows]
    verdict = "unfair" if "unfair" in verdicts else "fair" if all(v == "fair" for v in verdicts) else "unknown"
    elapsed = time.monotonic() - t0
    left = None if options.time_limit is None else max(options.time_limit - elapsed, 0.5)
    result = verify_trees(
        ir,
        prop,
        time_limit=left,
        seed=options.seed,
        max_counterexamples=options.max_counterexamples,
        progress=progress,
        confidence=options.confidence,
    )
    if result.counterexamples:  # re-checked pairs the quantification met decide an undecided question too
        verdict = "unfair"
    if verdict == "fair":  # proven: every confident input is fair
        result.certified, result.falsified, result.undecided = 1.0, 0.0, 0.0
        assert result.measure is not None  # the quantifying engine always measures
        result.measure = replace(result.measure, lower=1.0, upper=1.0)
    result.verdict = verdict
    result.counterexamples = (pairs + result.counterexamples)[: options.max_counterexamples]
    decided = sum(v != "unknown" for v in verdicts)
    result.decision = dict(
        verdict=result.verdict,
        evidence=(
            "counterexample"
            if result.verdict == "unfair"
            else "proof"
            if result.verdict == "fair"
            else "budget exhausted"
        ),
        regions=len(rows),
        fair=verdicts.count("fair"),
        unfair=verdicts.count("unfair"),
        unknown=verdicts.count("unknown"),
        coverage=decided / len(rows),
        partition_size=options.partition_size,
        partitions_per_s=decided / max(elapsed, 1e-9),
        decision_s=elapsed,
        solver="HiGHS (mixed-integer program of the twin query)",
    )
    result.partitions = rows if options.partition_size is not None else None
    result.engine = "tree-complete"
    result.elapsed_s = time.monotonic() - t0
    return result


def _evidence(d: TreeDecision) -> str | None:
    return {"unfair": "counterexample", "fair": "proof"}.get(d.verdict, d.reason or None)


def _bounds_of_cut(prop: IndividualFairness, lo: np.ndarray, hi: np.ndarray) -> dict:
    """The partition's bounds on the features the grid cuts (those narrower than the domain)."""
    names = prop.domain.names
    cut = [i for i in range(len(names)) if lo[i] != prop.domain.lower[i] or hi[i] != prop.domain.upper[i]]
    return {"lower": {names[i]: _num(lo[i]) for i in cut}, "upper": {names[i]: _num(hi[i]) for i in cut}}


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)
