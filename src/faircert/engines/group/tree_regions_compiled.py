"""Compiled margin bounds of tree ensembles over boxes of value cells (`tree_regions`); `faircert.compiled`
says when they are used, else the numpy traversal runs. Both give the same leaves' minima and maxima,
the same cut of each box, and margin bounds that differ only by the order of the sums."""

from __future__ import annotations

import numpy as np

from ...compiled import jit


def bounds(
    lo: np.ndarray, hi: np.ndarray, links: np.ndarray, value: np.ndarray, roots: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sum of every tree's least reachable leaf, sum of greatest ones, chosen cut node or -1) per box;
    `links` holds each node's feature, left and right child, and cells left of its split, by rows."""
    out, cut = np.empty((2, len(lo))), np.empty(len(lo), dtype=np.int64)
    lo, hi = np.ascontiguousarray(lo, dtype=np.int64), np.ascontiguousarray(hi, dtype=np.int64)
    _kernel(lo, hi, links, value, roots, depth, out, cut)
    return out[0], out[1], cut


@jit
def _kernel(lo, hi, links, value, roots, depth, out, cut):  # pragma: no cover
    feat, left, right, bound_at = links[0], links[1], links[2], links[3]
    stack = np.empty(depth + 2, dtype=np.int64)
    for i in range(lo.shape[0]):
        total_low, total_high, widest, chosen = 0.0, 0.0, -1.0, -1
        for t in range(roots.shape[0]):
            vmin, vmax, first = np.inf, -np.inf, -1
            stack[0] = roots[t]
            top = 1
            while top > 0:
                top -= 1
                n = stack[top]
                if left[n] < 0:
                    vmin = min(vmin, value[n])
                    vmax = max(vmax, value[n])
                    continue
                f, b = feat[n], bound_at[n]
                go_left, go_right = lo[i, f] < b, hi[i, f] > b
                if go_left and go_right and first < 0:  # the first node (from the root) that splits the box
                    first = n
                if go_right:
                    stack[top] = right[n]
                    top += 1
                if go_left:
                    stack[top] = left[n]
                    top += 1
            total_low += vmin
            total_high += vmax
            if first >= 0 and vmax - vmin > widest:
                widest, chosen = vmax - vmin, first
        out[0, i], out[1, i], cut[i] = total_low, total_high, chosen
