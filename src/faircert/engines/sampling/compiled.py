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


def corner_keys(lo: np.ndarray) -> np.ndarray:
    """`trees.open.corner_keys` (the same hash of each row) without numpy's temporaries: a step of
    the hash per pass over millions of boxes' corners took seconds."""
    bits = np.ascontiguousarray(lo, dtype=np.float64).view(np.uint64)
    out = np.empty(len(bits), dtype=np.uint64)
    _corner_keys(bits, out)
    return out


def warm() -> None:
    """Compile the kernels (one point in one box, the hash of one corner)."""
    points_in_boxes(np.zeros((1, 1)), np.zeros(1, dtype=np.intp), np.zeros((1, 1)), np.ones((1, 1)), np.ones(1, bool))
    corner_keys(np.zeros((1, 1)))


@jit
def _corner_keys(bits, out):
    # every operand uint64: arithmetic modulo 2**64, as numpy's on uint64 arrays
    golden, m1, m2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
    s1, s2, s3 = np.uint64(30), np.uint64(27), np.uint64(31)
    for i in range(bits.shape[0]):
        h = np.uint64(0)
        for j in range(bits.shape[1]):
            x = bits[i, j] + np.uint64(j) * golden
            x = (x ^ (x >> s1)) * m1
            x = (x ^ (x >> s2)) * m2
            h += x ^ (x >> s3)
        out[i] = h


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
