"""Tree ensembles as boxes over a domain, and their partition into label-constant boxes.

Every split is normalised to "left iff x < b" in float64: on integer features b is an integer
(x < t becomes x < ceil(t); x <= t becomes x < floor(t) + 1), on real features with float32 inputs
b is the float64 point where rounding to float32 crosses the threshold. Boxes are half-open
[lo, hi): integer features use [min, max + 1) so that hi - lo counts grid points, real features
use [min, max] whose length is the volume. The size of a box is prod(hi - lo).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..domain import Domain
from ..models.trees import TreeEnsemble

# Labels and statuses of partition boxes.
NEG, POS = 0, 1


def _float32_boundary(t: np.ndarray, strict: bool) -> np.ndarray:
    """The float64 b with float32(x) < t  (strict) or float32(x) <= t  <=>  x < b (up to one tie point)."""
    t32 = t.astype(np.float32)
    # a = largest float32 strictly below t (strict) or at most t (non-strict)
    a = np.where(t32.astype(np.float64) < t, t32, np.nextafter(t32, np.float32(-np.inf)))
    if not strict:
        a = np.where(t32.astype(np.float64) <= t, t32, np.nextafter(t32, np.float32(-np.inf)))
    up = np.nextafter(a, np.float32(np.inf))
    return (a.astype(np.float64) + up.astype(np.float64)) / 2.0


def split_boundaries(ens: TreeEnsemble, domain: Domain, feature: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Normalised boundaries b (left iff x < b) of splits on `feature` at `threshold`."""
    discrete = domain.discrete_mask[feature]
    strict = ens.split == "<"
    b_int = np.ceil(threshold) if strict else np.floor(threshold) + 1.0
    if ens.input_float32:
        b_real = _float32_boundary(threshold, strict)
    else:
        b_real = threshold.astype(np.float64)
    return np.where(discrete, b_int, b_real)


def domain_box(domain: Domain) -> tuple[np.ndarray, np.ndarray]:
    lo = domain.lower.copy()
    hi = domain.upper + domain.discrete_mask.astype(np.float64)
    return lo, hi


@dataclass
class NormalisedTrees:
    """Leaves of every tree as boxes and as sparse path constraints, with margin contributions."""

    leaf_lo: list[np.ndarray]      # per tree: leaves x n
    leaf_hi: list[np.ndarray]
    leaf_val: list[np.ndarray]     # per tree: scaled leaf values
    start: np.ndarray              # index of each tree's first leaf in the concatenated arrays
    c_feat: np.ndarray             # all leaves x depth: feature of each path constraint
    c_bound: np.ndarray            # boundary b
    c_upper: np.ndarray            # True: x < b ; False: x >= b
    val: np.ndarray                # all leaves: scaled value
    offset: float

    @property
    def n_trees(self) -> int:
        return len(self.leaf_val)


def normalise(ens: TreeEnsemble, domain: Domain) -> NormalisedTrees:
    n = ens.n_features
    dlo, dhi = domain_box(domain)
    leaf_lo, leaf_hi, leaf_val, cons = [], [], [], []
    for t in ens.trees:
        inner = ~t.is_leaf
        bounds = np.zeros(len(t.feature))
        bounds[inner] = split_boundaries(ens, domain, t.feature[inner], t.threshold[inner])
        los, his, vals = [], [], []
        stack = [(0, [])]
        while stack:
            node, path = stack.pop()
            if t.left[node] < 0:
                lo, hi = dlo.copy(), dhi.copy()
                for f, b, upper in path:
                    if upper:
                        hi[f] = min(hi[f], b)
                    else:
                        lo[f] = max(lo[f], b)
                los.append(lo)
                his.append(hi)
                vals.append(ens.scale * t.value[node])
                cons.append(path)
                continue
            f, b = int(t.feature[node]), float(bounds[node])
            stack.append((int(t.right[node]), path + [(f, b, False)]))
            stack.append((int(t.left[node]), path + [(f, b, True)]))
        leaf_lo.append(np.array(los))
        leaf_hi.append(np.array(his))
        leaf_val.append(np.array(vals, dtype=np.float64))
    depth = max(1, max(len(p) for p in cons))
    total = len(cons)
    c_feat = np.zeros((total, depth), dtype=np.int64)
    c_bound = np.full((total, depth), np.inf)
    c_upper = np.ones((total, depth), dtype=bool)
    for k, path in enumerate(cons):
        for d, (f, b, upper) in enumerate(path):
            c_feat[k, d], c_bound[k, d], c_upper[k, d] = f, b, upper
    start = np.cumsum([0] + [len(v) for v in leaf_val])
    offset = ens.margin_view(None)[0]
    return NormalisedTrees(leaf_lo, leaf_hi, leaf_val, start, c_feat, c_bound, c_upper,
                           np.concatenate(leaf_val), offset)


def suffix_bounds(nt: NormalisedTrees, lo: np.ndarray, hi: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Sound min / max of the sum of trees first.. over each box (per tree: its reachable leaves)."""
    n_box = len(lo)
    if first >= nt.n_trees or n_box == 0:
        return np.zeros(n_box), np.zeros(n_box)
    s = nt.start[first]
    feat, bound, upper = nt.c_feat[s:], nt.c_bound[s:], nt.c_upper[s:]
    glo = lo[:, feat]  # boxes x leaves x depth
    ghi = hi[:, feat]
    ok = np.where(upper, glo < bound, ghi > bound).all(axis=2)
    val = nt.val[s:]
    seg = nt.start[first:-1] - s
    vmin = np.minimum.reduceat(np.where(ok, val, np.inf), seg, axis=1).sum(axis=1)
    vmax = np.maximum.reduceat(np.where(ok, val, -np.inf), seg, axis=1).sum(axis=1)
    return vmin, vmax


@dataclass
class Partition:
    """Disjoint boxes covering the start boxes, each with a constant label and confidence status."""

    lo: np.ndarray
    hi: np.ndarray
    start: np.ndarray      # index of the start box (slice) each box lies in
    label: np.ndarray      # NEG / POS
    confident: np.ndarray  # bool
    tie: np.ndarray        # bool: margin within tolerance of a decision threshold (label/status unknown)
    complete: bool         # False if the time limit stopped the enumeration
    pending_size: float    # size of boxes left unexplored when stopped

    @property
    def size(self) -> np.ndarray:
        return np.prod(self.hi - self.lo, axis=1)


def partition(nt: NormalisedTrees, lo0: np.ndarray, hi0: np.ndarray, c: float | None, tol: float,
              deadline: float = np.inf, chunk: int = 4096, on_boxes=None) -> Partition:
    """Split the start boxes tree by tree until label (and confidence) are constant on every box.

    Pruning: a box stops as soon as the partial sum plus the reachable range of the remaining
    trees decides the label (margin > 0 or <= 0) and the confidence (|margin| > c or not), with
    `tol` of slack; boxes whose exact margin is within `tol` of a threshold are flagged `tie`.
    """
    out_lo, out_hi, out_start, out_label, out_conf, out_tie = [], [], [], [], [], []
    stack = [(lo0.copy(), hi0.copy(), np.arange(len(lo0)), np.full(len(lo0), nt.offset), 0)]
    complete, pending = True, 0.0
    while stack:
        lo, hi, st, acc, j = stack.pop()
        if time.monotonic() > deadline:
            complete = False
            pending += float(np.prod(hi - lo, axis=1).sum())
            continue
        vmin, vmax = suffix_bounds(nt, lo, hi, j)
        mlo, mhi = acc + vmin, acc + vmax
        pos = mlo > tol
        neg = mhi < -tol
        if c is None:
            conf_known = np.ones(len(lo), dtype=bool)
            conf = conf_known
        else:
            conf_yes = (mlo > c + tol) | (mhi < -c - tol)
            conf_no = (mlo > -c + tol) & (mhi < c - tol)
            conf_known = conf_yes | conf_no
            conf = conf_yes
        done = (pos | neg) & conf_known
        if j >= nt.n_trees:
            done = np.ones(len(lo), dtype=bool)
        if done.any():
            d = done
            out_lo.append(lo[d]); out_hi.append(hi[d]); out_start.append(st[d])
            out_label.append(np.where(pos[d], POS, NEG)); out_conf.append(conf[d])
            out_tie.append(~((pos | neg) & conf_known)[d])
            if on_boxes is not None:
                on_boxes(int(d.sum()))
        keep = ~done
        lo, hi, st, acc = lo[keep], hi[keep], st[keep], acc[keep]
        if len(lo) == 0:
            continue
        # expand by the leaves of tree j
        llo, lhi, lval = nt.leaf_lo[j], nt.leaf_hi[j], nt.leaf_val[j]
        nlo = np.maximum(lo[:, None, :], llo[None])
        nhi = np.minimum(hi[:, None, :], lhi[None])
        ok = np.all(nlo < nhi, axis=2)
        bi, li = np.nonzero(ok)
        nlo, nhi = nlo[bi, li], nhi[bi, li]
        nst, nacc = st[bi], acc[bi] + lval[li]
        for k in range(0, len(bi), chunk)[::-1]:
            sl = slice(k, k + chunk)
            stack.append((nlo[sl], nhi[sl], nst[sl], nacc[sl], j + 1))
    cat = (lambda xs, shape, dt: np.concatenate(xs) if xs else np.zeros(shape, dtype=dt))
    n = lo0.shape[1]
    return Partition(cat(out_lo, (0, n), float), cat(out_hi, (0, n), float), cat(out_start, (0,), np.int64),
                     cat(out_label, (0,), np.int64), cat(out_conf, (0,), bool), cat(out_tie, (0,), bool),
                     complete, pending)
