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


def setting_scores(ir, X: np.ndarray, prot: list[int], values: np.ndarray) -> np.ndarray:
    """Scores (rows x len(values)): column u is the score of X with features `prot` set to
    values[u] (at most 64 settings). Each tree is descended once per row for all settings together:
    a split on a protected feature sends each setting its own way, every other split sends them
    all one way, so a tree costs one path per leaf the settings reach (one, where it reads no
    protected feature) instead of one path per setting. The arithmetic is `scores`' (bit-identical)."""
    values = np.asarray(values, dtype=np.float64).reshape(len(values), len(prot))
    if not 0 < len(values) <= 64:
        raise ValueError("setting_scores takes 1 to 64 settings")
    forest, right = _settings_forest(ir, tuple(prot), values)
    out = np.empty((len(X), len(values)))
    arithmetic = (bool(ir.input_float32), bool(ir.sum_float32), float(ir.base_score), float(ir.scale))
    over_rows(_settings_kernel, len(X), np.ascontiguousarray(X, dtype=np.float64), forest, right, arithmetic, out)
    return out


def _settings_forest(ir, prot: tuple[int, ...], values: np.ndarray) -> tuple[tuple, np.ndarray]:
    """The flat forest as `_settings_kernel` reads it (a protected split marked in its step), and
    for every protected split the settings it sends right (bits): kept on the ensemble for the last
    settings asked (a sampling run asks for the same ones again and again)."""
    key = (prot, values.tobytes())
    kept = getattr(ir, "_settings_cache", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    roots, feat, thr, child, value, depth = ir._flat()
    if ir.split == "<=":  # right iff x > t, i.e. x >= the next float above t
        thr = np.nextafter(thr, np.inf)
    own = values.astype(np.float32).astype(np.float64) if ir.input_float32 else values
    protected = np.isin(feat, prot) & (child != np.arange(len(child)))
    # one load per node: the child, the feature, and whether the split is protected (bit 31)
    step = (child.astype(np.int64) << 32) | feat | (protected.astype(np.int64) << 31)
    column = np.searchsorted(np.sort(prot), feat[protected])
    own = own[:, np.argsort(prot)]  # the settings' columns in the order of the sorted features
    goes = own[:, column] >= thr[protected][None, :]  # settings x protected splits
    right = np.zeros(len(feat), dtype=np.int64)
    right[protected] = (goes.astype(np.int64) << np.arange(len(values), dtype=np.int64)[:, None]).sum(axis=0)
    nodes = np.empty(len(step), dtype=np.dtype([("step", np.int64), ("thr", np.float64)]))
    nodes["step"], nodes["thr"] = step, thr  # a node's two reads side by side: one cache line
    found = ((roots, nodes, value, depth), right)
    ir._settings_cache = (key, found)
    return found


@jit
def _settings_kernel(X, forest, right, arithmetic, out, start, stop):
    """out[i, u] for rows start..stop (see `setting_scores`). A row's paths (a tree and the settings
    that follow it) advance one split each in turn, so that their loads overlap as `_kernel`'s
    trees do; a protected split that parts the settings starts a new path, and a path that reaches
    its leaf leaves the turns."""
    roots, nodes, value, depth = forest
    in_f32, sum_f32, base, scale = arithmetic
    d = X.shape[1]
    m = out.shape[1]
    n_trees = len(roots)
    every = np.int64(-1) if m == 64 else (np.int64(1) << m) - 1
    most = n_trees * m  # each setting follows one path per tree
    node = np.empty(most, dtype=np.int64)  # a path's node, and its tree in the high bits
    masks = np.empty(most, dtype=np.int64)
    leaf = np.empty((m, n_trees))
    x = np.empty(d)
    for i in range(start, stop):
        for k in range(d):
            x[k] = np.float64(np.float32(X[i, k])) if in_f32 else X[i, k]
        for t in range(n_trees):
            node[t] = (np.int64(t) << 32) | roots[t]
            masks[t] = every
        paths = n_trees
        while paths:
            p = 0
            while p < paths:
                tree = node[p] >> 32
                n = node[p] & 0xFFFFFFFF
                step = nodes[n].step
                c = step >> 32
                if c == n:  # a leaf points to itself: record it, and the last path takes its place
                    v = value[n]
                    mask = masks[p]
                    u = 0
                    while u < m and mask != 0:  # the settings' bits (the shift keeps the sign)
                        if mask & 1:
                            leaf[u, tree] = v
                        mask >>= 1
                        u += 1
                    paths -= 1
                    node[p] = node[paths]
                    masks[p] = masks[paths]
                    continue
                if step & 0x80000000:
                    mask = masks[p]
                    r = mask & right[n]
                    if r != 0 and r != mask:
                        node[paths] = (tree << 32) | (c + 1)
                        masks[paths] = r
                        paths += 1
                        masks[p] = mask & ~r
                    elif r != 0:
                        c = c + 1
                else:
                    c = c + np.int64(x[step & 0x7FFFFFFF] >= nodes[n].thr)
                node[p] = (tree << 32) | c
                p += 1
        for u in range(m):
            if sum_f32:
                s32 = np.float32(base)
                for t in range(n_trees):
                    s32 = np.float32(s32 + np.float32(leaf[u, t]))
                out[i, u] = np.float64(s32) * scale
            else:
                s = 0.0
                for t in range(n_trees):
                    s += leaf[u, t]
                out[i, u] = base + scale * s


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
