"""Cut boxes where their bounds' linear forms change verdict, instead of at the midpoint.

The backward pass gives, for every twin, linear forms valid over the whole box that bound the
logit from below and above. Along one feature, each form proves the twin positive (or
non-positive) on a half-line; cutting the box at those points yields slabs whose verdict the same
forms already prove (fair: all twins on one side; unfair: two twins on opposite sides) and a
thinner undecided rest. Every slab is re-checked by concretising the forms over it, so a cut can
only waste work, never claim too much.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import arrays
from .arrays import namespace
from .symbolic import TwinBounds

MIN_GAIN = 0.02  # cut only when the forms decide at least this share of the box along the feature
#: a cut on a real feature lies on this grid of the box's width, inside the proven part: the
#: forms of a box may round differently in another batch, its cuts do not move with them
CUT_GRID = 2.0**-24


@dataclass
class Cuts:
    """Slabs of the cut boxes: their ranges, their source box, and the verdicts already proven
    (on the backend of the boxes cut: `to_numpy` brings them to the host)."""

    lo: np.ndarray
    hi: np.ndarray
    src: np.ndarray  # index of the box each slab comes from
    fair: np.ndarray
    unfair: np.ndarray
    cut: np.ndarray  # (U,) which input boxes were cut

    def to_numpy(self) -> Cuts:
        return Cuts(*(arrays.to_numpy(v) for v in (self.lo, self.hi, self.src, self.fair, self.unfair, self.cut)))


def _reach(a: np.ndarray, rest: np.ndarray, tol: float):
    """Thresholds theta with a*x + rest > tol for x > theta (a > 0) or x < theta (a < 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (tol - rest) / a


def cut_boxes(
    bd: TwinBounds, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray, tol: float
) -> Cuts:
    """Cut boxes `rows` of the bounds `bd` (ranges lo/hi) along their most decisive feature. All on
    one backend (`arrays.namespace`): numpy arrays, or torch tensors on one device."""
    xp = namespace(lo)
    inf = np.inf
    a = bd.form_a[:, rows]  # (2, U, T, d)
    c = bd.form_c[:, rows]  # (2, U, T)
    lo_b, hi_b = lo[None, :, None, :], hi[None, :, None, :]
    least = xp.minimum(a * lo_b, a * hi_b)  # each feature's worst contribution
    rest = c[..., None] + least.sum(axis=3, keepdims=True) - least  # worst case of the others
    theta = _reach(a, rest, tol)
    # proven part of [lo, hi] along each feature for each form and twin, as an interval [s, e]
    s = xp.where(a > 0, xp.maximum(theta, lo_b), xp.where(a < 0, lo_b, xp.where(rest > tol, lo_b, inf)))
    e = xp.where(a < 0, xp.minimum(theta, hi_b), xp.where(a > 0, hi_b, xp.where(rest > tol, hi_b, -inf)))
    width = xp.maximum(hi - lo, 1e-300)
    # share of the feature's range where all twins are proven on one side
    s_all, e_all = xp.amax(s, axis=2), xp.amin(e, axis=2)  # (2, U, d)
    gain = (xp.clip(e_all - s_all, 0, None) / width).sum(axis=0)  # (U, d)
    feat = xp.argmax(gain, axis=1)
    cut = gain[arrays.arange(xp, len(rows), like=gain), feat] >= MIN_GAIN
    if not bool(cut.any()):
        empty = arrays.empty(xp, (0, lo.shape[1]), like=lo)
        none = arrays.empty(xp, 0, like=lo, dtype=bool)
        return Cuts(empty, empty, arrays.empty(xp, 0, like=lo, dtype=np.int64), none, none, cut)
    idx = xp.flatnonzero(cut)
    f = feat[idx]
    s_f = arrays.permute(xp, s, (1, 3, 0, 2))[idx, f]  # (U', 2, T)
    e_f = arrays.permute(xp, e, (1, 3, 0, 2))[idx, f]
    blo, bhi = lo[idx, f], hi[idx, f]
    disc = discrete[f]
    # cut points: the ends of every proven interval strictly inside the box; on integers a start
    # s proves x >= floor(s) + 1 and an end e proves x <= ceil(e) - 1
    n = len(idx)
    st = s_f.reshape(n, -1)
    en = e_f.reshape(n, -1)
    grid = ((bhi - blo) * CUT_GRID)[:, None]
    with np.errstate(invalid="ignore"):
        bst = xp.where(disc[:, None], xp.floor(st), blo[:, None] + xp.ceil((st - blo[:, None]) / grid) * grid)
        ben = xp.where(disc[:, None], xp.ceil(en) - 1, blo[:, None] + xp.floor((en - blo[:, None]) / grid) * grid)
    ok_s = xp.isfinite(st) & (st > blo[:, None]) & (bst < bhi[:, None])
    ok_e = xp.isfinite(en) & (en < bhi[:, None]) & (ben >= blo[:, None])
    bnd = xp.sort(xp.concatenate([xp.where(ok_s, bst, inf), xp.where(ok_e, ben, inf)], axis=1), axis=1)
    dup = xp.zeros(bnd.shape, dtype=bool, like=bnd)
    dup[:, 1:] = bnd[:, 1:] == bnd[:, :-1]
    bnd = xp.sort(xp.where(dup, inf, bnd), axis=1)
    step = arrays.astype(xp, disc, np.float64)[:, None]  # 1 on a grid, 0 on a real line
    starts = xp.concatenate([blo[:, None], bnd + step], axis=1)
    ends = xp.concatenate([bnd, bhi[:, None]], axis=1)
    ends = xp.where(xp.isfinite(ends), ends, bhi[:, None])
    valid = xp.isfinite(starts) & (starts <= ends)
    valid[:, 1:] &= xp.isfinite(bnd)
    pi, pj = xp.nonzero(valid)
    src = idx[pi]
    plo, phi = lo[src], hi[src]  # copies: indexed by an array
    fs = f[pi]
    r = arrays.arange(xp, len(pi), like=plo)
    plo[r, fs] = starts[pi, pj]
    phi[r, fs] = ends[pi, pj]
    # verdicts of each slab from the parent's forms
    av = bd.form_a[:, rows[src]]  # (2, P, T, d)
    cv = bd.form_c[:, rows[src]]
    val = cv + xp.minimum(av * plo[None, :, None, :], av * phi[None, :, None, :]).sum(axis=3)
    proven = val > tol  # (2, P, T)
    pos, neg = proven[0], proven[1]
    fair = pos.all(axis=1) | neg.all(axis=1)
    unfair = pos.any(axis=1) & neg.any(axis=1) & ~fair
    # a cut that decides nothing would only repeat itself: drop it
    useful = xp.bincount(src, weights=fair | unfair, minlength=len(rows)) > 0
    cut &= useful
    keep = useful[src]
    return Cuts(plo[keep], phi[keep], src[keep], fair[keep], unfair[keep], cut)
