"""Compiled uniform points in boxes (see `faircert.compiled`): the same points as
`trees.boxes.uniform_points(rng, lo[box], hi[box], discrete)` from the same uniforms, without
gathering the boxes' rows first (testing mode draws millions of points from millions of boxes)."""

from __future__ import annotations

import numpy as np

from ...compiled import jit


def points_in_boxes(u: np.ndarray, box: np.ndarray, lo: np.ndarray, hi: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    """Row i: lo[box[i]] + u[i] * (hi - lo)[box[i]], floored on discrete features (grid points), below
    hi on real ones."""
    x = np.empty(u.shape)
    _points(u, np.asarray(box, dtype=np.intp), lo, hi, np.asarray(discrete, dtype=np.bool_), x, 0, len(u))
    return x


def warm() -> None:
    """Compile the kernel (one point in one box)."""
    points_in_boxes(np.zeros((1, 1)), np.zeros(1, dtype=np.intp), np.zeros((1, 1)), np.ones((1, 1)), np.ones(1, bool))


@jit
def _points(u, box, lo, hi, discrete, x, start, stop):
    d = u.shape[1]
    for i in range(start, stop):
        b = box[i]
        for k in range(d):
            width = hi[b, k] - lo[b, k]
            v = u[i, k] * width
            if discrete[k]:
                x[i, k] = lo[b, k] + min(np.floor(v), width - 1.0)  # u * width can round up to the width
            else:
                x[i, k] = min(lo[b, k] + v, np.nextafter(hi[b, k], -np.inf))  # and lo + u * width to hi
