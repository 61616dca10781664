"""Exact treatment of boxes with few grid points: every point of every twin in one forward pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .arrays import namespace
from .problem import Problem


@dataclass
class ExactResult:
    """Per-box counts of unfair grid points, plus unfair points with a separating twin pair."""

    unfair: np.ndarray  # (K,) unfair points per box (their mass, under a non-uniform measure)
    cex_x: np.ndarray  # (n, d) free part of x
    cex_xp: np.ndarray  # (n, d) free part of x'
    cex_a: np.ndarray  # (n,) twin of x
    cex_b: np.ndarray  # (n,) twin of x'


def grid_points(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All integer points of the boxes (K, d), and the box each belongs to."""
    size = (hi - lo + 1).astype(np.int64)
    counts = np.prod(size, axis=1)
    box = np.repeat(np.arange(lo.shape[0]), counts)
    local = np.arange(box.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    x = np.empty((box.shape[0], lo.shape[1]))
    for i in range(lo.shape[1]):
        s = size[box, i]
        x[:, i] = lo[box, i] + local % s
        local //= s
    return x, box


def labels(pb: Problem, x: np.ndarray) -> np.ndarray:
    """Labels (n, T) of free points x under every twin, computed by the model itself."""
    n, T = x.shape[0], pb.n_twins
    full = pb.full(np.repeat(x, T, axis=0), np.tile(np.arange(T), n))
    return (pb.network.logit(full) > 0).reshape(n, T)


def exact_boxes(pb: Problem, lo: np.ndarray, hi: np.ndarray, want_cex: int = 64) -> ExactResult:
    """Count unfair grid points of each box exactly (boxes must be grids, see `exact_ok`), with up to
    `want_cex` witness pairs: one in each unfair box first (in box order), then more."""
    if pb.has_eps:
        return _exact_eps(pb, lo, hi, want_cex)
    x, box = grid_points(lo, hi)
    lab = labels(pb, x)
    bad = lab.any(axis=1) & ~lab.all(axis=1)
    unfair = np.bincount(box, weights=bad * pb.point_mass(x), minlength=lo.shape[0])
    where = np.flatnonzero(bad)
    _, first = np.unique(box[where], return_index=True)  # grid_points lists each box's points together
    idx = np.concatenate([where[first], np.delete(where, first)])[:want_cex]
    a = np.argmax(lab[idx], axis=1)
    b = np.argmin(lab[idx], axis=1)
    return ExactResult(unfair, x[idx], x[idx], a, b)


def _exact_eps(pb: Problem, lo: np.ndarray, hi: np.ndarray, want_cex: int) -> ExactResult:
    """Exact counts with epsilon: x is unfair iff some twin a of x and some twin b of a point x' of
    its window (b another protected combination, `pb.pairs`) get different labels."""
    from scipy.ndimage import maximum_filter  # only needed with epsilon

    unfair = np.zeros(lo.shape[0])
    cx: list[np.ndarray] = []
    cxp: list[np.ndarray] = []
    ca: list[int] = []
    cb: list[int] = []
    pairs = pb.pairs.astype(np.float64)
    for k in range(lo.shape[0]):
        elo, ehi = pb.enlarge(lo[k], hi[k])
        x, _ = grid_points(elo[None], ehi[None])
        lab = labels(pb, x)
        shape = tuple((ehi - elo + 1).astype(np.int64))[::-1]  # grid_points varies feature 0 fastest
        pos = np.moveaxis(lab.reshape(shape + (pb.n_twins,)), -1, 0)  # (T, ...) per twin
        size = (1,) + tuple((2 * pb.eps + 1).astype(np.int64))[::-1]
        pos_near = maximum_filter(pos, size=size, mode="constant", cval=False)
        neg_near = maximum_filter(~pos, size=size, mode="constant", cval=False)
        # for each twin a: is some allowed twin b positive / negative within the window?
        pos_other = np.tensordot(pairs, pos_near, axes=(1, 0)) > 0
        neg_other = np.tensordot(pairs, neg_near, axes=(1, 0)) > 0
        bad = np.asarray(((pos & neg_other) | (~pos & pos_other)).any(axis=0))
        crop = tuple(slice(int(a), int(b) + 1) for a, b in zip((lo[k] - elo)[::-1], (hi[k] - elo)[::-1]))
        inner = bad[crop]
        unfair[k] = (inner.ravel() * pb.point_mass(grid_points(lo[k][None], hi[k][None])[0])).sum()
        if len(cx) < want_cex and unfair[k]:  # one witness per box, so that every unfair box has one
            for pt in np.argwhere(inner)[:3]:
                xv = lo[k] + pt[::-1]
                found = _witness(pb, xv)
                if found is not None:
                    cx.append(xv)
                    cxp.append(found[0])
                    ca.append(found[1])
                    cb.append(found[2])
                    break
    d = lo.shape[1]
    return ExactResult(
        unfair,
        np.array(cx).reshape(-1, d),
        np.array(cxp).reshape(-1, d),
        np.array(ca, dtype=np.int64),
        np.array(cb, dtype=np.int64),
    )


def _witness(pb: Problem, x: np.ndarray):
    """A twin a and a point x' (twin b, an allowed pair) in x's window labelled differently from (x, a)."""
    own = labels(pb, x[None])[0]
    wlo, whi = pb.enlarge(x, x)
    pts, _ = grid_points(wlo[None], whi[None])
    lab = labels(pb, pts)
    for a in range(pb.n_twins):
        for b in np.flatnonzero(pb.pairs[a]):
            hit = np.flatnonzero(lab[:, b] != own[a])
            if hit.size:
                return pts[hit[0]], a, int(b)
    return None


def exact_ok(pb: Problem, lo: Any, hi: Any, limit: int) -> Any:
    """Boxes whose (window-enlarged) grid is small enough to enumerate (a mask where they are)."""
    xp = namespace(lo)
    grid = xp.all(pb.here("discrete", lo) | ((hi == lo) & (pb.here("eps", lo) == 0)), axis=1)
    count = xp.prod(hi - lo + 1, axis=1)
    if pb.has_eps:
        elo, ehi = pb.enlarge(lo, hi)
        return grid & (count <= limit) & (xp.prod(ehi - elo + 1, axis=1) <= 64 * limit)
    return grid & (count <= limit)
