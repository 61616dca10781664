"""Any-time sound bounds on event probabilities by refining boxes in CDF coordinates.

The probability space is the unit cube [0, 1]^d of the random inputs' CDF values, with volume as
probability (the inputs are independent). A box is evaluated by interval abstract interpretation
into three-valued events (surely true / surely false / undecided). The lower bound of P[E] is the
mass of boxes where E is surely true, the upper bound 1 minus the mass where it is surely false;
undecided boxes are split (largest weighted mass first) along the dimension whose trial split
decides most, at a bar edge for step/discrete inputs, until `decide` answers or time runs out.
Unbounded tails are just boxes whose values reach +-inf; they shrink like any other box.

Sums of masses are rounded down with a rigorous relative error bound and accumulated exactly as
Fractions, so bounds stay sound in float64.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ...checkpoint import pack, unpack
from ...errors import PropertyError
from ...memory import default_limit
from ...progress import Progress, ProgressEvent
from ..boxes.budget import Budget
from ..boxes.workers import SERIAL, Parallelism
from .events import BoxEvaluator

_U = 2.0**-53
#: longest decided mass a checkpoint may hold (a sum of float64 masses: a few hundred digits)
MAX_FRACTION_CHARS = 4000
#: bounds this close are as exact as float64 inputs allow; refining further only chases rounding slivers
TIGHT = 1e-13
#: restrict trial splits to the two inputs weighing most in (nearly) affine undecided conditions
NARROW = True

#: evaluate(lo, hi) -> (may_true (N, m), may_false (N, m), dep (N,) uint64 or None, width (N, m),
#: sensitivities {symbol: (N,)} or None): width says how far each undecided event is from decided,
#: sensitivities how much each input's symbol weighs in its affine form (both only guide splitting).
Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]]


@dataclass
class Bounds:
    """Final sound intervals of each event's probability, and how they were reached."""

    low: list[float]
    high: list[float]
    verdict: str | None
    boxes: int
    evaluations: int
    iterations: int
    elapsed_s: float
    exhausted: str = ""
    stats: dict = field(default_factory=dict)


def _sum_down(values: np.ndarray, d: int) -> Fraction:
    """A Fraction <= the exact sum of the true products whose float values are `values`."""
    if values.size == 0:
        return Fraction(0)
    s = float(np.sum(values))
    # each mass is a product of d rounded widths (<= 2d roundings); summation adds <= n more
    s *= 1.0 - (values.size + 2 * d + 8) * 2 * _U
    return Fraction(max(0.0, float(np.nextafter(s, 0.0))))


def _fraction(text: Any) -> Fraction:
    """A decided mass as a checkpoint stores it ("p/q"), bounded in size (the file is untrusted)."""
    if not isinstance(text, str) or len(text) > MAX_FRACTION_CHARS or not re.fullmatch(r"\d+(/\d+)?", text):
        raise ValueError("not a fraction")
    return Fraction(text)


def _down(x: Fraction | float) -> float:
    f = float(x)
    return float(np.nextafter(f, -np.inf)) if Fraction(f) > x else f


def _up(x: Fraction | float) -> float:
    f = float(x)
    return float(np.nextafter(f, np.inf)) if Fraction(f) < x else f


class TrialJob:
    """What workers hold to evaluate trial splits: the evaluator."""

    def __init__(self, evaluate: Evaluator) -> None:
        self.evaluate = evaluate

    def events(self, raw: list, n: int):
        assert isinstance(self.evaluate, BoxEvaluator)  # asked only of evaluators that split their draws
        return self.evaluate.events(raw, n)

    def boxes(self, lo: np.ndarray, hi: np.ndarray):
        return self.evaluate(lo, hi)


class Refiner:
    """Box refinement state for one set of events over d independent CDF coordinates."""

    def __init__(self, marginals: list, evaluate: Evaluator, n_events: int, trials: Any = None) -> None:
        self.marginals = marginals
        #: where trial splits are evaluated: workers holding a `TrialJob` (None: here)
        self.trials = trials
        self.d = len(marginals)
        self.evaluate = evaluate
        self.m = n_events
        self.breaks = [np.asarray(getattr(mg, "breaks", np.empty(0)), dtype=np.float64) for mg in marginals]
        #: inputs with unbounded support: their tails are carved off in thin slices first
        self.unbounded = np.array([bool(getattr(mg, "unbounded", False)) for mg in marginals], dtype=bool)
        self.acc_true = [Fraction(0)] * n_events
        self.acc_false = [Fraction(0)] * n_events
        self.evaluations = 0
        lo, hi = np.zeros((1, self.d)), np.ones((1, self.d))
        mt, mf, dep, w, sens = self._eval(lo, hi)
        self.L, self.H, self.mt, self.mf, self.dep, self.w = lo, hi, mt, mf, dep, w
        self.S = self._dense(sens, 1)
        self._retire()

    def state(self, iterations: int) -> dict[str, Any]:
        """What a resumed refinement needs: the undecided boxes and the exact decided masses (the
        boxes' events are evaluated again on resuming, so the file holds no verdicts)."""
        return {
            "lo": pack(self.L),
            "hi": pack(self.H),
            "true": [str(x) for x in self.acc_true],
            "false": [str(x) for x in self.acc_false],
            "evaluations": self.evaluations,
            "iterations": iterations,
        }

    def restore(self, state: dict[str, Any]) -> int:
        """Take a saved state (checked: the file is untrusted); returns the iterations it had run."""
        try:
            L, H = unpack(state["lo"], "f8", self.d), unpack(state["hi"], "f8", self.d)
            true, false = [_fraction(x) for x in state["true"]], [_fraction(x) for x in state["false"]]
            evaluations, iterations = state["evaluations"], state["iterations"]
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise PropertyError(
                f"checkpoint: its bounds' state is incomplete or malformed ({type(exc).__name__})"
            ) from None
        ok = (
            L.shape == H.shape
            and np.all(L >= 0)
            and np.all(H <= 1)
            and np.all(L <= H)
            and len(true) == len(false) == self.m
            and all(t >= 0 and f >= 0 and t + f <= 1 for t, f in zip(true, false))
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (evaluations, iterations))
        )
        if not ok:
            raise PropertyError("checkpoint: its boxes or decided masses do not fit this question")
        self.acc_true, self.acc_false = true, false
        self.L, self.H = L, H
        self.mt, self.mf, self.dep, self.w, sens = self._eval(L, H)
        self.S = self._dense(sens, len(L))
        self.evaluations = evaluations + len(L)
        self._retire()
        return iterations

    def _dense(self, sens: dict | None, n: int) -> np.ndarray:
        """(n, d + 1): each input's |coefficient| in the undecided forms, then all computed symbols'
        (NaN row: no affine information)."""
        out = np.zeros((n, self.d + 1))
        if sens is None:
            out[:] = np.nan
            return out
        for k, v in sens.items():
            col = min(self.d, k)
            out[:, col] += np.broadcast_to(v, (n,))
        return out

    def _evaluate_trials(self, calls: list[tuple[str, tuple]]) -> list:
        """The trial splits' events, in order: here, or on the workers (one call each)."""
        if self.trials is None or not calls:
            job = TrialJob(self.evaluate)
            return [getattr(job, method)(*args) for method, args in calls]
        out: list = [None] * len(calls)
        for method in ("events", "boxes"):
            idx = [i for i, (m, _) in enumerate(calls) if m == method]
            for i, res in zip(idx, self.trials.map(method, [calls[i][1] for i in idx])):
                out[i] = res
        return out

    def _eval(self, lo: np.ndarray, hi: np.ndarray):
        self.evaluations += len(lo)
        return self.evaluate(lo, hi)

    @property
    def nbytes(self) -> int:
        """What the undecided boxes take, with what is known of each."""
        return sum(a.nbytes for a in (self.L, self.H, self.mt, self.mf, self.w, self.S)) + (
            0 if self.dep is None else self.dep.nbytes
        )

    @property
    def mass(self) -> np.ndarray:
        return np.prod(self.H - self.L, axis=1)

    def _retire(self) -> None:
        """Move boxes where every event is decided into the exact accumulators."""
        undecided = self.mt & self.mf
        done = ~undecided.any(axis=1)
        if not done.any():
            return
        mass = self.mass[done]
        for k in range(self.m):
            self.acc_true[k] += _sum_down(mass[~self.mf[done, k]], self.d)
            self.acc_false[k] += _sum_down(mass[~self.mt[done, k]], self.d)
        keep = ~done
        self.L, self.H, self.mt, self.mf = self.L[keep], self.H[keep], self.mt[keep], self.mf[keep]
        self.w = self.w[keep]
        self.S = self.S[keep]
        self.dep = None if self.dep is None else self.dep[keep]

    def bounds(self) -> tuple[list[Fraction], list[Fraction]]:
        mass = self.mass
        low, high = [], []
        for k in range(self.m):
            low.append(self.acc_true[k] + _sum_down(mass[~self.mf[:, k]], self.d))
            high.append(1 - self.acc_false[k] - _sum_down(mass[~self.mt[:, k]], self.d))
        return low, high

    def _split_points(self, lo: np.ndarray, hi: np.ndarray, j: int) -> np.ndarray:
        mid = 0.5 * (lo + hi)
        br = self.breaks[j]
        if br.size:
            # the bar edge nearest the middle, when one lies strictly inside the box
            i = np.clip(np.searchsorted(br, mid), 0, br.size - 1)
            cand = np.stack([br[np.clip(i - 1, 0, br.size - 1)], br[i]])
            inside = (cand > lo) & (cand < hi)
            dist = np.where(inside, np.abs(cand - mid), np.inf)
            best = np.take_along_axis(cand, np.argmin(dist, axis=0)[None], axis=0)[0]
            mid = np.where(np.isfinite(dist.min(axis=0)), best, mid)
        return mid

    def step(self, weights: np.ndarray, batch: int) -> None:
        """Split the `batch` undecided boxes of largest weighted undecided mass."""
        n = len(self.L)
        undecided = self.mt & self.mf
        prio = self.mass * (undecided * weights).sum(axis=1)
        b = min(n, batch)
        pick = np.argpartition(-prio, b - 1)[:b] if b < n else np.arange(n)
        rest = np.ones(n, dtype=bool)
        rest[pick] = False
        L, H = self.L[pick], self.H[pick]
        if self.dep is None:
            relevant = np.ones((b, self.d), dtype=bool)
        else:
            bits = np.uint64(1) << np.arange(self.d, dtype=np.uint64)
            relevant = (self.dep[pick][:, None] & bits[None, :]) != 0
            none = ~relevant.any(axis=1)
            relevant[none] = True
        width = H - L
        relevant &= width > 0
        pwidth = self.mass[pick] * (self.w[pick] * weights).sum(axis=1)
        best_score = np.full(b, np.inf)
        best_dim = np.zeros(b, dtype=np.int64)
        # a relevant unbounded input whose box reaches an infinite end: cut a thin tail (2^-20 of the
        # box's mass on that side) before anything else, so the rest of the box has finite values
        tail = relevant & self.unbounded[None, :] & ((L == 0) | (H == 1))
        carve = tail.any(axis=1)
        carve_dim = np.argmax(tail, axis=1)
        # where the undecided conditions are (nearly) affine in the inputs, only the two inputs with
        # the largest coefficients are worth a trial split
        S = self.S[pick]
        affine = (
            ~carve
            & np.isfinite(S[:, -1])
            & (S[:, -1] <= 0.1 * np.nansum(S, axis=1))
            & (np.nan_to_num(S[:, :-1]).max(axis=1, initial=0) > 0)
        )
        if affine.any() and self.d > 2 and NARROW:
            top = np.argsort(-np.nan_to_num(S[:, :-1]), axis=1)[:, :2]
            keep = np.zeros_like(relevant)
            np.put_along_axis(keep, top, True, axis=1)
            narrowed = relevant & keep
            ok = affine & narrowed.any(axis=1)
            relevant = np.where(ok[:, None], narrowed, relevant)
        trials = {}
        # inputs' intervals of the picked boxes, reused by every trial that splits another input
        parent = self.evaluate.draws(L, H) if isinstance(self.evaluate, BoxEvaluator) else None
        splits = []
        calls: list[tuple[str, tuple]] = []
        for j in range(self.d):
            rows = np.nonzero(relevant[:, j] & (~carve | (carve_dim == j)))[0]
            if rows.size == 0:
                continue
            lo, hi = L[rows], H[rows]
            s = self._split_points(lo[:, j], hi[:, j], j)
            at_lo = carve[rows] & (lo[:, j] == 0)
            at_hi = carve[rows] & ~at_lo
            s = np.where(at_lo, hi[:, j] * 2.0**-20, np.where(at_hi, 1.0 - (1.0 - lo[:, j]) * 2.0**-20, s))
            left_hi, right_lo = hi.copy(), lo.copy()
            left_hi[:, j] = s
            right_lo[:, j] = s
            clo = np.concatenate([lo, right_lo])
            chi = np.concatenate([left_hi, hi])
            if parent is not None:
                raw = [
                    tuple(np.concatenate([x[rows], x[rows]]) for x in parent[k])
                    if k != j
                    else self.marginals[j].interval(clo[:, j], chi[:, j])
                    for k in range(self.d)
                ]
                calls.append(("events", (raw, len(clo))))
            else:
                calls.append(("boxes", (clo, chi)))
            self.evaluations += len(clo)
            splits.append((j, rows, clo, chi))
        for (j, rows, clo, chi), (mt, mf, dep, w, sens) in zip(splits, self._evaluate_trials(calls)):
            S = self._dense(sens, len(clo))
            cmass = np.prod(chi - clo, axis=1)
            cscore = cmass * ((mt & mf) * weights).sum(axis=1)
            score = cscore[: rows.size] + cscore[rows.size :]
            cwidth = cmass * (w * weights).sum(axis=1)
            wscore = cwidth[: rows.size] + cwidth[rows.size :]
            # first: most mass decided; then: undecided conditions narrowed most; then: widest side
            key = (
                np.round(score / np.maximum(prio[pick][rows], 1e-300), 9)
                + 1e-10 * np.minimum(wscore / np.maximum(pwidth[rows], 1e-300), 1.0)
                - 1e-13 * width[rows, j]
            )
            better = key < best_score[rows]
            best_score[rows[better]] = key[better]
            best_dim[rows[better]] = j
            trials[j] = (rows, clo, chi, mt, mf, dep, w, S)
        parts = [
            (
                self.L[rest],
                self.H[rest],
                self.mt[rest],
                self.mf[rest],
                None if self.dep is None else self.dep[rest],
                self.w[rest],
                self.S[rest],
            )
        ]
        for j, (rows, clo, chi, mt, mf, dep, w, S) in trials.items():
            chosen = best_dim[rows] == j
            if not chosen.any():
                continue
            sel = np.concatenate([chosen, chosen])
            parts.append((clo[sel], chi[sel], mt[sel], mf[sel], None if dep is None else dep[sel], w[sel], S[sel]))
        self.L = np.concatenate([p[0] for p in parts])
        self.H = np.concatenate([p[1] for p in parts])
        self.mt = np.concatenate([p[2] for p in parts])
        self.mf = np.concatenate([p[3] for p in parts])
        self.dep = None if any(p[4] is None for p in parts) else np.concatenate([p[4] for p in parts])
        self.w = np.concatenate([p[5] for p in parts])
        self.S = np.concatenate([p[6] for p in parts])
        self._retire()


@dataclass(frozen=True)
class RefineOptions:
    """What a refinement may spend and where it reports. The undecided boxes stop growing at
    `memory_limit` bytes (default `memory.default_limit()`). With `parallel`, the trial splits of
    each step are evaluated on its workers, one input per call; the result is the same as in one
    process. With a `checkpoint` (a `checkpoint.Part`), the state is saved between steps when one
    is due and at the end, and a state already there is resumed."""

    time_limit: float | None = 60.0
    memory_limit: int | None = None
    progress: Progress | None = None
    parallel: Parallelism = SERIAL
    checkpoint: Any = None


#: A minute, the default memory limit, one process, no progress and no checkpoint.
DEFAULT_REFINE = RefineOptions()


def refine(
    marginals: list,
    evaluate: Evaluator,
    n_events: int,
    decide: Callable[[list[Fraction], list[Fraction]], str | None],
    weights: Callable[[list[Fraction], list[Fraction]], np.ndarray],
    budget: RefineOptions = DEFAULT_REFINE,
) -> Bounds:
    """Refine until `decide(low, high)` returns a verdict, every box is decided, or the `budget` ends."""
    if budget.parallel == SERIAL:
        return _refine(marginals, evaluate, n_events, decide, weights, budget, None)
    with budget.parallel.open(TrialJob(evaluate)) as workers:
        return _refine(marginals, evaluate, n_events, decide, weights, budget, workers)


def _refine(marginals, evaluate, n_events, decide, weights, budget: RefineOptions, trials) -> Bounds:
    time_limit, progress, checkpoint = budget.time_limit, budget.progress, budget.checkpoint
    memory_limit = default_limit() if budget.memory_limit is None else budget.memory_limit
    start = time.perf_counter()
    limits = Budget.of(time_limit, clock=time.perf_counter)
    r = Refiner(marginals, evaluate, n_events, trials)
    saved = checkpoint.load() if checkpoint is not None else None
    iterations = 0 if saved is None else r.restore(saved)
    exhausted = ""
    per_split = 0.0  # the slowest seconds per split seen so far
    while True:
        low, high = r.bounds()
        verdict = decide(low, high)
        if verdict is not None or len(r.L) == 0:
            break
        if max(h - lo for lo, h in zip(low, high)) <= TIGHT:
            exhausted = "tight"
            break
        elapsed = time.perf_counter() - start
        if limits.spent(memory_full=r.nbytes > memory_limit):
            exhausted = limits.stopped
            break
        batch = int(np.clip(len(r.L) // 2, 1, 8192))
        if time_limit is not None and per_split > 0:  # a step must not run far past the time limit
            batch = int(np.clip((time_limit - elapsed) / (2 * per_split), 1, batch))
        stepped = time.perf_counter()
        r.step(np.asarray(weights(low, high), dtype=np.float64), batch)
        per_split = max(per_split, (time.perf_counter() - stepped) / batch)
        iterations += 1
        if progress is not None:
            progress(ProgressEvent(elapsed_s=elapsed, boxes=len(r.L), iterations=iterations))
        if checkpoint is not None and checkpoint.due():
            checkpoint.save(r.state(iterations))
    if checkpoint is not None:
        checkpoint.save(r.state(iterations))
    return Bounds(
        [_down(x) for x in low],
        [_up(x) for x in high],
        verdict,
        len(r.L),
        r.evaluations,
        iterations,
        time.perf_counter() - start,
        exhausted,
    )
