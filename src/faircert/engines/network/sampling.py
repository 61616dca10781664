"""Sampling inside boxes: counterexample search and the stratified estimate of the unfair share."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ...results import StatisticalEstimate
from .arrays import namespace
from .problem import Draws, Problem

MIN_CHUNK = 1000  # points sampled at once by the estimate, at the least
MAX_CHUNK = 50_000  # ... and at the most: larger arrays cost more per point (fresh memory)


def random_points(rng: Draws, lo: Any, hi: Any, discrete: Any) -> Any:
    """One uniform point per box (integers on discrete features); on the boxes' device (numpy
    arrays, or torch tensors with draws from `draws.BoxDraws` on the same device)."""
    xp = namespace(lo)
    u = rng.random(lo.shape)
    x = lo + u * (hi - lo)
    ints = xp.floor(lo + u * (hi - lo + 1.0))
    return xp.where(discrete, xp.minimum(ints, hi), x)


def draw_points(rng: Draws, pb: Problem, lo: Any, hi: Any) -> Any:
    """One point per box drawn from the problem's measure: uniform (where the boxes are), or the
    data's values under its marginals (boxes of mass > 0; on the host)."""
    if pb.weights is None:
        return random_points(rng, lo, hi, pb.here("discrete", lo))
    return pb.weights.sample(rng, lo, hi)


def twin_split(
    pb: Problem, x: np.ndarray, fast: bool = False, single: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Logits (n, T) of points; which points separate twins; a positive and a negative twin.

    `fast` computes them through the input tables (equal on the grid up to rounding; for
    estimates, never for evidence); `single` in float32 (for candidates that are re-checked)."""
    z = pb.logits(x, fast, single)
    pos = z > 0
    bad = np.asarray(pos.any(axis=1) & ~pos.all(axis=1))
    return z, bad, np.argmax(z, axis=1), np.argmin(z, axis=1)


def classify(pb: Problem, rng: np.random.Generator, x: np.ndarray, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(unfair, unknown) flags of sampled points; unknown only with epsilon > 0."""
    _, bad, _, _ = twin_split(pb, x, fast=True)
    unknown = np.zeros(x.shape[0], dtype=bool)
    if not pb.has_eps:
        return bad, unknown
    rest = np.flatnonzero(~bad)
    wlo, whi = pb.enlarge(x[rest], x[rest])
    fair = np.zeros(rest.size, dtype=bool)
    for s in range(0, rest.size, chunk):
        bd = pb.bound(wlo[s : s + chunk], whi[s : s + chunk])
        fair[s : s + chunk] = np.all(bd.lower > pb.tol, axis=1) | np.all(bd.upper < -pb.tol, axis=1)
    open_ = rest[~fair]
    # x is unfair when a twin a of x and an allowed twin b of a window point disagree
    own = pb.logits(x[open_]) > 0  # (n, T)
    pos_near = own.copy()
    neg_near = ~own
    for _ in range(8):
        z = pb.logits(random_points(rng, wlo[~fair], whi[~fair], pb.discrete)) > 0
        pos_near |= z
        neg_near |= ~z
    pairs = pb.pairs.astype(np.float64)
    pos_other = pos_near.astype(np.float64) @ pairs.T > 0  # (n, T): some allowed b positive near x
    neg_other = neg_near.astype(np.float64) @ pairs.T > 0
    seen = ((own & neg_other) | (~own & pos_other)).any(axis=1)
    bad[open_[seen]] = True
    unknown[open_[~seen]] = True
    return bad, unknown


def wilson(k: float, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Sampler:
    """Estimate of the unfair share: decided mass exact, uniform samples over the undecided boxes."""

    pb: Problem
    rng: np.random.Generator
    confidence: float
    halfwidth: float = 0.0009  # target half-width of the interval (share units)
    min_samples: int = 20_000
    max_samples: int = 4_000_000
    max_samples_eps: int = 200_000
    chunk: int = 50_000

    def estimate(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        mass: np.ndarray,
        falsified: float,
        deadline: float | None,
        bound_chunk: int,
    ) -> StatisticalEstimate:
        total = float(mass.sum())
        share = total / self.pb.domain_size
        if total <= 0:
            return StatisticalEstimate(falsified, falsified, falsified, self.confidence, 0)
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        cdf = np.cumsum(mass) / total
        n = k = unk = 0
        while True:
            started = time.perf_counter()
            pick = np.minimum(np.searchsorted(cdf, self.rng.random(self.chunk), side="right"), len(mass) - 1)
            x = draw_points(self.rng, self.pb, lo[pick], hi[pick])
            bad, unknown = classify(self.pb, self.rng, x, bound_chunk)
            per_point = (time.perf_counter() - started) / self.chunk
            n += self.chunk
            k += int(bad.sum())
            unk += int(unknown.sum())
            lo_p, _ = wilson(k, n, z)
            _, hi_p = wilson(k + unk, n, z)
            s_lo, s_hi = wilson(k + unk / 2, n, z)
            # points whose window could not be decided widen the interval; more samples cannot help there
            done = share * (s_hi - s_lo) / 2 <= self.halfwidth
            # once not even the smallest chunk fits before the deadline, the interval stays as
            # wide as its samples make it
            left = math.inf if deadline is None else deadline - time.perf_counter()
            late = left <= MIN_CHUNK * per_point
            cap = self.max_samples_eps if self.pb.has_eps else self.max_samples
            if n >= cap or (n >= self.min_samples and (done or late)):
                break
            if not done:  # jump towards the sample count the interval needs
                p = (k + unk / 2) / n
                need = (z * share) ** 2 * max(p * (1 - p), 1.0 / n) / self.halfwidth**2
                self.chunk = int(np.clip(need - n, self.chunk, MAX_CHUNK))
                # the next chunk fits in the time left, with room for the pace to vary
                self.chunk = int(max(min(self.chunk, 0.8 * left / max(per_point, 1e-9)), MIN_CHUNK))
        return StatisticalEstimate(
            unfair=falsified + share * (k + unk / 2) / n,
            ci_low=falsified + share * lo_p,
            ci_high=falsified + share * hi_p,
            confidence=self.confidence,
            samples=n,
            method="stratified: decided boxes exact, uniform samples over undecided boxes, Wilson interval",
        )
