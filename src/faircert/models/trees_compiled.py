"""Compiled scores of tree ensembles, for the paths that evaluate millions of inputs (testing mode,
estimates, re-checks); `faircert.compiled` says when it is used (else the numpy evaluation runs).

The arithmetic is exactly `TreeEnsemble.score_of_leaves(leaf_values(X))`: every tree's leaf by the
split rule, then base + scale * the leaves summed in tree order (a float32 running sum where the
framework sums in float32), so both paths give bit-identical scores. Inputs are rounded as the model
rounds them (to float32 first, as in `TreeEnsemble._inputs`) inside the kernel.
"""

from __future__ import annotations

import numpy as np

from ..compiled import jit, jit_inline, over_rows


def slice_scores(
    ir, X: np.ndarray, own: np.ndarray, prot: list[int], values: np.ndarray, reading: np.ndarray
) -> np.ndarray:
    """Scores (rows x len(values)): column u is the score of X with features `prot` set to
    values[u]; column own[i] of row i is the score of X[i] as it is (it holds own[i]'s values).
    Only the trees in `reading` (those that split on `prot`) are evaluated again for the other
    columns. With no values, one column: the scores of X."""
    roots, feat, thr, child, value, depth = ir._flat()
    step = (child.astype(np.int64) << 32) | feat  # one load per node for both (faster than two arrays)
    if ir.split == "<=":  # right iff x > t, i.e. x >= the next float above t: one comparison for both rules
        thr = np.nextafter(thr, np.inf)
    values = np.asarray(values, dtype=np.float64)  # (columns x len(prot))
    out = np.empty((len(X), max(1, len(values))))
    # the kernel takes tuples (numba compiles them as such): the columns asked for, the flat
    # forest, and the framework's arithmetic
    columns = (
        np.asarray(own, dtype=np.intp),
        np.asarray(prot, dtype=np.intp),
        values,
        np.asarray(reading, dtype=np.intp),
    )
    forest = (roots, step, thr, value, depth)
    arithmetic = (bool(ir.input_float32), bool(ir.sum_float32), float(ir.base_score), float(ir.scale))
    over_rows(_kernel, len(X), np.ascontiguousarray(X, dtype=np.float64), columns, forest, arithmetic, out)
    return out


def warm(ir) -> None:
    """Compile the kernel for this ensemble's arrays (one row of zeros)."""
    slice_scores(ir, np.zeros((1, ir.n_features)), np.zeros(1, dtype=np.intp), [0], np.zeros((1, 1)), np.zeros(0))


def scores(ir, X: np.ndarray) -> np.ndarray:
    """The scores of the rows of X."""
    return slice_scores(ir, X, np.zeros(len(X), dtype=np.intp), [], np.zeros((0, 0)), np.zeros(0))[:, 0]


@jit_inline
def _descend(x, trees, roots, step, thr, value, depth, node, leaf):
    """leaf[t] = the leaf value x reaches in tree t, for the trees t in `trees`."""
    n_eval = len(trees)
    for j in range(n_eval):
        node[j] = roots[trees[j]]
    # level by level over all trees: their loads are independent, so they overlap; leaves point to
    # themselves with threshold +inf, so every tree takes `depth` steps
    for _ in range(depth):
        for j in range(n_eval):
            n = node[j]
            node[j] = (step[n] >> 32) + np.intp(x[step[n] & 0xFFFFFFFF] >= thr[n])
    for j in range(n_eval):
        leaf[trees[j]] = value[node[j]]


@jit_inline
def _sum(leaf, sum_f32, base, scale):
    if sum_f32:
        s32 = np.float32(base)
        for j in range(len(leaf)):
            s32 = np.float32(s32 + np.float32(leaf[j]))
        return np.float64(s32) * scale
    s = 0.0
    for j in range(len(leaf)):
        s += leaf[j]
    return base + scale * s


@jit
def _kernel(X, columns, forest, arithmetic, out, start, stop):
    """out[i] for rows start..stop (see `slice_scores`)."""
    own, prot, values, reading = columns
    roots, step, thr, value, depth = forest
    in_f32, sum_f32, base, scale = arithmetic
    d = X.shape[1]
    n_trees = len(roots)
    every = np.arange(n_trees)
    own_leaf, leaf = np.empty(n_trees), np.empty(n_trees)
    node = np.empty(n_trees, dtype=np.intp)
    x = np.empty(d)
    for i in range(start, stop):
        for k in range(d):
            x[k] = np.float64(np.float32(X[i, k])) if in_f32 else X[i, k]
        _descend(x, every, roots, step, thr, value, depth, node, own_leaf)
        out[i, own[i]] = _sum(own_leaf, sum_f32, base, scale)
        for u in range(values.shape[0]):
            if u == own[i]:
                continue
            for k in range(len(prot)):
                x[prot[k]] = np.float64(np.float32(values[u, k])) if in_f32 else values[u, k]
            leaf[:] = own_leaf
            _descend(x, reading, roots, step, thr, value, depth, node, leaf)
            out[i, u] = _sum(leaf, sum_f32, base, scale)
