"""Groups of trees merged into joint leaves, for tighter margin bounds over boxes.

The margin range over a box is bounded by the sum over groups of the min / max joint leaf value
reachable from the box. A joint leaf of a group is a consistent combination of one leaf per tree
(its leaf boxes intersect), so within a group the bound is exact: trees that split on the same
features stop contributing independent worst cases. Groups are formed greedily by feature overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .trees_boxes import NormalisedTrees


@dataclass
class Groups:
    """Joint leaves of every group as sparse path constraints."""

    start: np.ndarray     # first joint leaf of each group
    c_feat: np.ndarray    # joint leaves x constraints
    c_bound: np.ndarray
    c_upper: np.ndarray
    val: np.ndarray
    offset: float

    @property
    def n_groups(self) -> int:
        return len(self.start) - 1

    def bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-group min and max joint value reachable from each box, and the reachability matrix."""
        ok = np.where(self.c_upper, lo[:, self.c_feat] < self.c_bound, hi[:, self.c_feat] > self.c_bound).all(axis=2)
        seg = self.start[:-1]
        vmin = np.minimum.reduceat(np.where(ok, self.val, np.inf), seg, axis=1)
        vmax = np.maximum.reduceat(np.where(ok, self.val, -np.inf), seg, axis=1)
        return vmin, vmax, ok

    def cut(self, lo: np.ndarray, hi: np.ndarray, ok: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A (feature, boundary) strictly inside each box among the constraints of reachable joint leaves."""
        width = int(np.max(np.diff(self.start)))
        idx = self.start[group][:, None] + np.arange(width)[None]
        valid = idx < self.start[group + 1][:, None]
        idx = np.minimum(idx, len(self.val) - 1)
        rows = np.arange(len(lo))[:, None]
        reach = ok[rows, idx] & valid
        f = self.c_feat[idx]            # boxes x width x K
        b = self.c_bound[idx]
        lo_f = np.take_along_axis(lo[:, None, :].repeat(width, 1), f, axis=2)
        hi_f = np.take_along_axis(hi[:, None, :].repeat(width, 1), f, axis=2)
        inside = (lo_f < b) & (hi_f > b) & reach[:, :, None]
        flat = inside.reshape(len(lo), -1)
        k = np.argmax(flat, axis=1)
        return f.reshape(len(lo), -1)[np.arange(len(lo)), k], b.reshape(len(lo), -1)[np.arange(len(lo)), k]


def _tree_features(nt: NormalisedTrees, j: int) -> set[int]:
    s, e = nt.start[j], nt.start[j + 1]
    used = nt.c_bound[s:e] < np.inf
    return set(nt.c_feat[s:e][used].tolist())


def make_groups(nt: NormalisedTrees, size: int = 2, max_joint: int = 256) -> Groups:
    """Merge trees into groups of up to `size` trees sharing features (joint leaves capped)."""
    m = nt.n_trees
    feats = [_tree_features(nt, j) for j in range(m)]
    left = list(range(m))
    groups: list[list[int]] = []
    while left:
        g = [left.pop(0)]
        while len(g) < size and left:
            common = [len(feats[k] & set().union(*(feats[i] for i in g))) for k in left]
            best = int(np.argmax(common))
            if common[best] == 0:
                break
            g.append(left.pop(best))
        groups.append(g)
    K = nt.c_feat.shape[1]
    cf, cb, cu, vals, start = [], [], [], [], [0]
    for g in groups:
        j = g[0]
        lo, hi = nt.leaf_lo[j], nt.leaf_hi[j]
        s, e = nt.start[j], nt.start[j + 1]
        f_, b_, u_, v_ = nt.c_feat[s:e], nt.c_bound[s:e], nt.c_upper[s:e], nt.leaf_val[j]
        for j2 in g[1:]:
            lo2, hi2 = nt.leaf_lo[j2], nt.leaf_hi[j2]
            s2, e2 = nt.start[j2], nt.start[j2 + 1]
            nlo = np.maximum(lo[:, None], lo2[None])
            nhi = np.minimum(hi[:, None], hi2[None])
            a, c = np.nonzero(np.all(nlo < nhi, axis=2))
            if len(a) > max_joint:  # too many joint leaves: keep this tree on its own
                groups.append([j2])
                continue
            lo, hi = nlo[a, c], nhi[a, c]
            f_ = np.hstack([f_[a], nt.c_feat[s2:e2][c]])
            b_ = np.hstack([b_[a], nt.c_bound[s2:e2][c]])
            u_ = np.hstack([u_[a], nt.c_upper[s2:e2][c]])
            v_ = v_[a] + nt.leaf_val[j2][c]
        cf.append(f_); cb.append(b_); cu.append(u_); vals.append(v_)
        start.append(start[-1] + len(v_))
    width = max(x.shape[1] for x in cf)
    pad = lambda arrs, fill, dt: np.vstack([np.hstack([a, np.full((len(a), width - a.shape[1]), fill, dtype=dt)])
                                            for a in arrs])
    return Groups(np.array(start), pad(cf, 0, np.int64), pad(cb, np.inf, np.float64), pad(cu, True, bool),
                  np.concatenate(vals), nt.offset)
