"""A statistical estimate of a tree ensemble's unfair share where the exact refinement stopped early.

The refinement has settled part of the measured space exactly (sizes of confident inputs and of
unfair ones) and left open boxes, each with its open slices (protected combinations). The estimate
keeps the settled sizes and samples inputs uniformly from the open part only, so its interval is as
narrow as the open part is small:

    unfair share of X_kappa = (U_settled + O * p_unfair) / (C_settled + O * p_confident)

with O the open size and p the shares of sampled open inputs that are confident / unfair. Every
sampled input is classified exactly on the model: its own label and confidence by the model's
arithmetic; its twins with epsilon 0 by evaluating the other protected values, with epsilon > 0 by
an exact search of its epsilon-neighbourhood for the other label (`find_label`). A search cut off
by the time budget leaves the input "unknown", which widens the interval. The interval is a Wilson
interval for each share (Bonferroni over the two when kappa is given), clipped to the sound bounds:
a statistical statement, reported beside the sound figures, never instead of them.
"""

from __future__ import annotations

import time
from statistics import NormalDist

import numpy as np

from ..models.trees import TreeEnsemble
from ..properties import IndividualFairness
from ..results import StatisticalEstimate
from .boxes_sampling import wilson
from .trees_boxes import NormalisedTrees, domain_box
from .trees_dilated import find_label
from .trees_joint import _SliceBounds

METHOD = ("stratified: settled boxes exact, uniform samples over the open boxes classified exactly on the "
          "model, Wilson intervals")


def estimate_unfair_share(ir: TreeEnsemble, nt: NormalisedTrees, q, prop: IndividualFairness, confidence: float,
                          budget_s: float, seed: int = 0, min_samples: int = 20_000, max_samples: int = 200_000,
                          chunk: int = 4096) -> StatisticalEstimate | None:
    """Estimate of 1 - M (the unfair share of X_kappa) from quantification `q`; None if nothing is open."""
    if q.open_lo is None or not q.open_slices.any():
        return None
    t_end = time.monotonic() + budget_s
    rng = np.random.default_rng(seed)
    free = _measured(prop, len(q.eps))
    rows, slices = np.nonzero(q.open_slices)
    size = np.prod(np.where(free, q.open_hi[rows] - q.open_lo[rows], 1.0), axis=1)
    open_size = float(size.sum())
    cdf = np.cumsum(size) / open_size
    checker = _Checker(ir, nt, q, prop)
    n = n_conf = n_unfair = n_unknown = 0
    while n < min_samples or (n < max_samples and time.monotonic() < t_end):
        pick = np.minimum(np.searchsorted(cdf, rng.random(chunk), side="right"), len(size) - 1)
        x = _uniform_points(rng, q.open_lo[rows[pick]], q.open_hi[rows[pick]], q.discrete)
        conf, unfair, unknown = checker(x, slices[pick], t_end)
        n += chunk
        n_conf += int(conf.sum())
        n_unfair += int(unfair.sum())
        n_unknown += int(unknown.sum())
    alpha = 1.0 - confidence
    exact_conf = prop.kappa is None  # then every input is confident: p_confident = 1 exactly
    z = NormalDist().inv_cdf(1.0 - (alpha / 2 if exact_conf else alpha / 4))
    pc_lo, pc_hi = (1.0, 1.0) if exact_conf else wilson(n_conf, n, z)
    pu_lo = wilson(n_unfair, n, z)[0]
    pu_hi = wilson(n_unfair + n_unknown, n, z)[1]
    pu, pc = (n_unfair + n_unknown / 2) / n, n_conf / n

    def share(p_unfair: float, p_conf: float) -> float:
        den = q.conf_settled + open_size * p_conf
        return min(1.0, (q.unfair + open_size * p_unfair) / den) if den > 0 else 0.0

    m_lo, m_hi = q.bounds
    lo_s, hi_s = 1.0 - m_hi, 1.0 - m_lo  # the sound range of the unfair share
    clip = (lambda v: float(min(hi_s, max(lo_s, v))))
    # the share grows with p_unfair and falls with p_confident; p_unfair <= p_confident always
    return StatisticalEstimate(unfair=clip(share(pu, max(pc, pu))), ci_low=clip(share(pu_lo, pc_hi)),
                               ci_high=clip(share(pu_hi, max(pc_lo, pu_hi))), confidence=confidence, samples=n,
                               method=METHOD + (f"; {n_unknown} samples whose neighbourhood search ran out of "
                                                "time count as either verdict" if n_unknown else ""))


def _measured(prop: IndividualFairness, width: int) -> np.ndarray:
    """The measured features: the non-protected ones for fairness, all for robustness."""
    free = np.ones(width, dtype=bool)
    if not prop.robustness:
        free[list(prop.protected)] = False
    return free


def _uniform_points(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    x = lo + rng.random(lo.shape) * (hi - lo)
    return np.where(discrete, np.minimum(np.floor(x), hi - 1.0), x)


class _Checker:
    """Exact per-input verdicts: (confident, unfair, unknown) for inputs of given slices."""

    def __init__(self, ir: TreeEnsemble, nt: NormalisedTrees, q, prop: IndividualFairness) -> None:
        self.ir, self.nt, self.q, self.prop = ir, nt, q, prop
        self.prot = [] if prop.robustness else list(prop.protected)
        self.dlo, self.dhi = domain_box(prop.domain)
        self.free = _measured(prop, len(q.eps))
        self.has_eps = bool(np.any(q.eps[self.free] > 0))
        self.sb = _SliceBounds(nt, self.prot, q.slices) if self.has_eps else None
        self.tol = ir.margin_view(prop.kappa)[2]

    def __call__(self, x: np.ndarray, slice_of: np.ndarray, t_end: float):
        ir, q, prot = self.ir, self.q, self.prot
        x = x.copy()
        x[:, prot] = q.slices[slice_of][:, prot]
        score = ir.score(x)
        label = ir.label_from_score(score)
        if q.kappa is None:
            conf = np.ones(len(x), dtype=bool)
        else:
            p = ir.proba_from_score(score)
            conf = np.maximum(p, 1.0 - p) > q.kappa
        unfair = np.zeros(len(x), dtype=bool)
        n_sl = len(q.slices)
        twins = [] if self.prop.robustness else range(n_sl)
        for u in twins:  # the same other features under every other protected combination
            xu = x.copy()
            xu[:, prot] = q.slices[u][prot]
            unfair |= (slice_of != u) & (ir.predict(xu) != label)
        unfair &= conf
        unknown = np.zeros(len(x), dtype=bool)
        if not self.has_eps:
            return conf, unfair, unknown
        ask = np.nonzero(conf & ~unfair)[0]
        if not len(ask):
            return conf, unfair, unknown
        disc = q.discrete
        lo = np.where(self.free, np.maximum(self.dlo, x[ask] - q.eps), x[ask])
        hi = np.where(self.free, np.minimum(self.dhi, x[ask] + q.eps + disc), x[ask] + disc)
        if self.prop.robustness:
            qi, sl = np.arange(len(ask)), np.zeros(len(ask), dtype=np.int64)
        else:
            qi, sl = np.nonzero(np.arange(n_sl)[None] != slice_of[ask][:, None])
        qlo, qhi = lo[qi].copy(), hi[qi].copy()
        qlo[:, prot] = q.slices[sl][:, prot]
        qhi[:, prot] = q.slices[sl][:, prot] + 1.0
        want = np.where(label[ask][qi] == 1, -1, 1)
        point, resolved = find_label(ir, self.nt, self.sb, qlo, qhi, sl, want, self.tol, t_end)
        found = ~np.isnan(point[:, 0])
        hit = np.zeros(len(ask), dtype=bool)
        np.logical_or.at(hit, qi, found)
        missing = np.zeros(len(ask), dtype=bool)
        np.logical_or.at(missing, qi, ~resolved)
        unfair[ask[hit]] = True
        unknown[ask[~hit & missing]] = True
        return conf, unfair, unknown
