"""Counterexamples of tree ensembles: concrete twins of the proven unfair pieces, their re-check on
the model, and testing mode (inputs drawn uniformly from the exact unfair region)."""

from __future__ import annotations

import time

import numpy as np

from ... import memory
from ...models.trees import TreeEnsemble
from ...options import VerifyOptions
from ...progress import Progress, ProgressEvent
from ...properties import UnfairSamples
from ..boxes.workers import Parallelism
from .boxes import uniform_points
from .open import Checker, OpenBoxes, measured, multinomial_rows
from .quantify import Quantification, check_not_vacuous, quantify
from .run import TreeOptions

SAMPLE_CHUNK = 1 << 16  # rows drawn and re-checked at a time in testing mode
SAMPLE_ROUND = 1 << 24  # at most this many draws per round of testing mode (their row indices are kept)
SEARCH_SAMPLE_CHUNK = 4096  # open draws searched at a time in testing mode with epsilon > 0
MAX_DRAWS_PER_SAMPLE = 50  # testing mode gives up on an open part that is almost never unfair


# ----- concrete counterexamples ---------------------------------------------------------------------
def twins_of(q: Quantification, x: np.ndarray, twin: np.ndarray) -> np.ndarray:
    """A twin of every row of x inside its twin box (the box was dilated by epsilon to reach x)."""
    lo, hi = q.part.lo[twin], q.part.hi[twin]
    top = np.where(q.discrete, hi - 1.0, np.nextafter(hi, -np.inf))
    bottom = np.where(q.discrete, lo, np.nextafter(lo, np.inf))
    xp = np.clip(x, bottom, np.maximum(bottom, top))
    if not q.robustness:
        for i in q.protected:
            xp[:, i] = lo[:, i]
    return xp


def recheck(ir: TreeEnsemble, q: Quantification, x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """Rows where (x, x') is a genuine counterexample for the real model's predictions."""
    ok = q.part.lo.shape[1] == x.shape[1]
    if not ok:
        return np.zeros(len(x), dtype=bool)
    free = measured(q)
    # within epsilon up to a few floats of rounding on real features (twins come from x +- epsilon)
    slack = 8 * np.spacing(np.abs(x) + q.eps)
    close = np.all((np.abs(x - xp) <= q.eps + slack)[:, free], axis=1)
    if not q.robustness:
        close &= np.any(x[:, list(q.protected)] != xp[:, list(q.protected)], axis=1)
    score, score_p = _scores(ir, q, np.vstack([x, xp])).reshape(2, -1)
    label, conf = ir.label_and_confident(score, q.kappa)
    return close & conf & (label != ir.label_from_score(score_p))


def _scores(ir: TreeEnsemble, q: Quantification, x: np.ndarray) -> np.ndarray:
    """Model scores of the rows; on integer grids each distinct row is evaluated once."""
    if not q.discrete.all() or len(x) < 1000:
        return ir.score(x)
    lo = x.min(axis=0)
    width = x.max(axis=0) - lo + 1
    if np.sum(np.log2(width)) > 62:
        return ir.score(x)
    stride = np.cumprod(np.concatenate([[1], width[:-1]])).astype(np.int64)
    keys = (x - lo).astype(np.int64) @ stride
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(uniq) > 0.5 * len(x):
        return ir.score(x)
    return ir.score(x[first])[inverse]


def piece_points(q: Quantification, rows: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """A point of each chosen piece: its centre, or uniform at random when rng is given."""
    lo, hi = q.piece_lo[rows], q.piece_hi[rows]
    if rng is None:
        return np.where(q.discrete, lo + np.floor((hi - lo - 1) / 2), (lo + hi) / 2)
    return uniform_points(rng, lo, hi, q.discrete)


def sample_unfair(
    ir: TreeEnsemble, q: Quantification, n: int, seed: int = 0, deadline: float = np.inf
) -> tuple[np.ndarray, np.ndarray, int]:
    """n inputs drawn uniformly from the exact unfair region, with twins; returns (x, x', rejected).
    At the `deadline` (`time.monotonic()`) the draws stop (at epsilon 0, after the first round) and
    the pairs kept so far are returned:
    fewer than n, and no longer a uniform sample (counterexamples, each re-checked all the same).

    The region is the proven pieces and, where the quantification stopped early, the unfair inputs of
    its open boxes: inputs are drawn from both by size, and one drawn from an open box is kept only
    if it is unfair on the model (exact verdict: the other protected values evaluated, or with
    epsilon > 0 its neighbourhood searched, which is slower), so the kept inputs are uniform over the
    exact region. `rejected` counts pairs that failed the final re-check.
    """
    width = len(q.eps)
    opened = OpenBoxes(q) if not q.complete and q.open_parts else None
    check = None
    if opened is not None:
        assert q.nt is not None  # `quantify` records the trees it ran on
        check = Checker(ir, q.nt, q)
    open_size = opened.size if opened is not None else 0.0
    # open boxes that stand for the whole space (the region path) already hold the pieces
    pieces = q.open_settled is None
    boxes = q.unfair_boxes  # epsilon 0: each unfair box once, weighted by its number of unfair slices
    if not pieces:
        piece_size = np.zeros(0)
    elif boxes is not None:
        piece_size = boxes.box_weights()
    else:
        piece_size = np.prod(q.piece_hi - q.piece_lo, axis=1)
    total = float(piece_size.sum()) + open_size
    if n <= 0 or total <= 0:
        return np.zeros((0, width)), np.zeros((0, width)), 0
    rng = np.random.default_rng(seed)
    # epsilon > 0: a neighbourhood search per open draw; smaller steps keep its boxes few
    open_chunk = SAMPLE_CHUNK if check is None or not check.has_eps else SEARCH_SAMPLE_CHUNK
    out, rejected, drawn = _Pairs(int(1.1 * n) + SAMPLE_CHUNK, width), 0, 0
    # at epsilon 0 the first round (its first chunk of open draws: one model call) runs whatever the
    # time, so a run out of time still reports what it finds; with epsilon > 0 each open draw is a
    # neighbourhood search, and the deadline holds from the start
    while out.n < n and drawn < MAX_DRAWS_PER_SAMPLE * n and (not drawn or time.monotonic() < deadline):
        # rounds: the first (one step at most) measures the share of draws kept, the next ones draw
        # what that share says the rest needs, and a little more
        rate = out.n / drawn if drawn else 1.0
        m = (n - out.n) / max(rate, 1.0 / MAX_DRAWS_PER_SAMPLE) * (1.05 if drawn else 1.0) + 1024
        m = int(min(m, SAMPLE_CHUNK if not drawn else SAMPLE_ROUND))
        n_open = int(rng.binomial(m, open_size / total))
        for rows in multinomial_rows(rng, m - n_open, piece_size, SAMPLE_CHUNK) if m > n_open else ():
            if boxes is not None:
                x, xp = boxes.draw(rng, rows)
            else:
                x = piece_points(q, rows, rng)
                xp = twins_of(q, x, q.piece_twin[rows])
            ok = recheck(ir, q, x, xp)
            out.add(x[ok], xp[ok])
            rejected += int((~ok).sum())
        if n_open:
            assert opened is not None and check is not None  # else open_size is 0: no open draws
            for k, (xo, slice_of) in enumerate(opened.draws(rng, n_open, open_chunk)):
                first = not drawn and k == 0 and not check.has_eps  # whatever the time: see the loop
                if not first and time.monotonic() >= deadline:
                    break
                # the verdicts are the re-check, by the model (a search the deadline cuts is no verdict)
                _, unfair, _, twin = check(xo, slice_of, np.inf if first else deadline)
                out.add(xo[unfair], twin[unfair])
        drawn += m
    # a uniform subset of the draws (the last round overshoots), in random order: draws come grouped
    # by source and box, and any prefix of the output should be a uniform sample too
    keep = rng.permutation(out.n)[:n]
    return np.take(out.x, keep, axis=0), np.take(out.xp, keep, axis=0), rejected


class _Pairs:
    """Kept pairs (x, x'), written into arrays allocated once: a million rows of fresh memory cost
    more than the copy itself, so the pairs are not gathered in pieces and joined."""

    def __init__(self, capacity: int, width: int) -> None:
        self.x, self.xp, self.n = np.empty((capacity, width)), np.empty((capacity, width)), 0

    def add(self, x: np.ndarray, xp: np.ndarray) -> None:
        end = self.n + len(x)
        if end > len(self.x):  # the rounds overshot more than foreseen
            grow = np.empty((max(end, 2 * len(self.x)) - len(self.x), self.x.shape[1]))
            self.x, self.xp = np.concatenate([self.x, grow]), np.concatenate([self.xp, grow])
        self.x[self.n : end], self.xp[self.n : end] = x, xp
        self.n = end


def region_is_exact(q: Quantification) -> bool:
    """Whether `sample_unfair` draws from the exact unfair region (else only from its proven part,
    or from the part kept for counterexamples)."""
    return (q.complete or q.open_parts is not None) and q.region_whole


def answer_samples(ir: TreeEnsemble, question: UnfairSamples, options: VerifyOptions, progress: Progress | None = None):
    """Registry entry point of testing mode: a DataFrame of `question.n` inputs drawn uniformly from
    the exact unfair region with their twins (suffix `_prime`) and both positive-label probabilities;
    `frame.attrs["summary"]` holds the measure's bounds, the region's sizes, whether the draws are
    uniform over the exact region (`region_exact`) and the timings. The region's refinement runs on
    the options' workers (or Ray cluster) and stops at their box budget, if any."""
    import pandas as pd

    prop = question.prop
    with memory.limited(options.memory_limit):
        q = quantify(
            ir,
            prop,
            options.time_limit,
            options=TreeOptions(
                parallel=Parallelism.of(options.workers, options.ray_address),
                max_boxes=getattr(options, "max_boxes", None),
            ),
        )
    check_not_vacuous(q.measured_upper, q.complete, prop)
    t0 = time.monotonic()
    x, xp, rejected = sample_unfair(ir, q, question.n, seed=options.seed)
    sample_s = time.monotonic() - t0

    def column(a):
        return a.astype(np.int64) if len(a) and np.all(a == np.round(a)) else a

    names = prop.domain.names
    frame = pd.DataFrame(
        {
            **{f: column(x[:, i]) for i, f in enumerate(names)},
            **{f"{f}_prime": column(xp[:, i]) for i, f in enumerate(names)},
            "output": ir.predict_proba(x),
            "output_prime": ir.predict_proba(xp),
        }
    )
    lower, upper = q.bounds
    frame.attrs["summary"] = {
        "engine": "tree-sampling",
        "written": len(x),
        "rejected": rejected,
        "distinct": len({tuple(r) for r in x.tolist()}),
        "measure_lower": lower,
        "measure_upper": upper,
        "unfair_size": q.unfair,
        "confident_size": q.measured_upper,
        "region_complete": q.complete,
        "region_exact": region_is_exact(q),
        "quantify_s": q.elapsed,
        "sample_s": sample_s,
    }
    if progress is not None:
        progress(ProgressEvent(elapsed_s=q.elapsed + sample_s, samples=len(x)))
    return frame
