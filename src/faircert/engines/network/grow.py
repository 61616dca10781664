"""Prove whole boxes unfair by growing them around counterexamples.

Start from a point where twin a is positive and twin b negative, then widen one feature at a time
(least influential first) to the largest of a few radii for which the bounds still prove
"a > 0 and b <= 0" everywhere. Growth stays inside the undecided box that holds the point, so the
refinement remains a partition; `carve` cuts the grown box out of it.
"""

from __future__ import annotations

import numpy as np

from .problem import Problem

RADII = 6  # candidate radii per feature: width, width/4, width/16, ...


def separated(pb: Problem, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, chunk: int) -> np.ndarray:
    """Boxes on which twin a is provably positive and twin b provably non-positive."""
    ok = np.empty(lo.shape[0], dtype=bool)
    for s in range(0, lo.shape[0], chunk):
        e = min(s + chunk, lo.shape[0])
        bd = pb.bound(lo[s:e], hi[s:e])
        r = np.arange(e - s)
        ok[s:e] = (bd.lower[r, a[s:e]] > pb.tol) & (bd.upper[r, b[s:e]] < -pb.tol)
    return ok


def grow(
    pb: Problem, x: np.ndarray, a: np.ndarray, b: np.ndarray, blo: np.ndarray, bhi: np.ndarray, chunk: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grown unfair boxes around points x inside boxes [blo, bhi]; `ok` marks proven ones."""
    C, d = x.shape
    glo, ghi = x.copy(), x.copy()
    bd = pb.bound(glo, ghi)
    rows = np.arange(C)
    ok = (bd.lower[rows, a] > pb.tol) & (bd.upper[rows, b] < -pb.tol)
    order = np.argsort(bd.sens * (bhi - blo), axis=1, kind="stable")
    live = np.flatnonzero(ok)
    scale = 4.0 ** -np.arange(RADII)
    for j in range(d):
        if live.size == 0:
            break
        f = order[live, j]
        width = bhi[live, f] - blo[live, f]
        act = live[width > 0]
        if act.size == 0:
            continue
        f = order[act, j]
        r = (bhi[act, f] - blo[act, f])[:, None] * scale[None, :]
        r = np.where(pb.discrete[f][:, None], np.ceil(r), r)
        clo = np.repeat(glo[act], RADII, axis=0)
        chi = np.repeat(ghi[act], RADII, axis=0)
        fr = np.repeat(f, RADII)
        idx = np.arange(clo.shape[0])
        clo[idx, fr] = np.maximum(blo[act, f][:, None], glo[act, f][:, None] - r).ravel()
        chi[idx, fr] = np.minimum(bhi[act, f][:, None], ghi[act, f][:, None] + r).ravel()
        good = separated(pb, clo, chi, np.repeat(a[act], RADII), np.repeat(b[act], RADII), chunk)
        good = good.reshape(-1, RADII)
        has = good.any(axis=1)
        first = np.argmax(good, axis=1)
        pick = np.flatnonzero(has)
        src = pick * RADII + first[pick]
        glo[act[pick]] = clo[src]
        ghi[act[pick]] = chi[src]
    return glo, ghi, ok


def carve(
    lo: np.ndarray, hi: np.ndarray, glo: np.ndarray, ghi: np.ndarray, discrete: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of boxes [lo, hi] outside their sub-boxes [glo, ghi] (slabs, one side at a time)."""
    step = discrete.astype(np.float64)
    pieces_lo, pieces_hi = [], []
    cur_lo, cur_hi = lo.copy(), hi.copy()
    for i in range(lo.shape[1]):
        left = glo[:, i] > cur_lo[:, i]
        if left.any():
            plo, phi = cur_lo[left].copy(), cur_hi[left].copy()
            phi[:, i] = glo[left, i] - step[i]
            pieces_lo.append(plo)
            pieces_hi.append(phi)
        right = ghi[:, i] < cur_hi[:, i]
        if right.any():
            plo, phi = cur_lo[right].copy(), cur_hi[right].copy()
            plo[:, i] = ghi[right, i] + step[i]
            pieces_lo.append(plo)
            pieces_hi.append(phi)
        cur_lo[:, i], cur_hi[:, i] = glo[:, i], ghi[:, i]
    d = lo.shape[1]
    if not pieces_lo:
        return np.empty((0, d)), np.empty((0, d))
    return np.concatenate(pieces_lo), np.concatenate(pieces_hi)
