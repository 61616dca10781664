"""The k-d measure of (disjoint boxes A) ∩ (union of boxes U) against counting grid cells."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from faircert.engines.trees import union as trees_union
from faircert.engines.trees.union import covered

SIZE = 10


def _disjoint_cells(rng, n: int, d: int):
    """n distinct cells of a random grid partition of [0, SIZE)^d: pairwise disjoint boxes."""
    cuts = [np.unique(np.concatenate([[0, SIZE], rng.integers(1, SIZE, 3)])) for _ in range(d)]
    cells = list(itertools.product(*[list(itertools.pairwise(c)) for c in cuts]))
    pick = rng.choice(len(cells), size=min(n, len(cells)), replace=False)
    lo = np.array([[cells[i][k][0] for k in range(d)] for i in pick], dtype=float)
    hi = np.array([[cells[i][k][1] for k in range(d)] for i in pick], dtype=float)
    return lo, hi


def _inside(points, lo, hi):
    """points x boxes: which box contains which unit-cell centre."""
    return np.all((points[:, None, :] > lo[None]) & (points[:, None, :] < hi[None]), axis=2)


@pytest.mark.parametrize("batch", [trees_union.BATCH, 4])
def test_covered_size_and_pieces_match_grid_count(monkeypatch, batch):
    """Sizes equal the count of unit cells in A and in some U; pieces are disjoint, lie in their A
    and U boxes and add up to the covered size; tiny batches (split every step) agree."""
    monkeypatch.setattr(trees_union, "BATCH", batch)
    rng = np.random.default_rng(11)
    for _ in range(60):
        d = int(rng.integers(1, 4))
        a_lo, a_hi = _disjoint_cells(rng, int(rng.integers(1, 20)), d)
        u_lo = rng.integers(-1, SIZE, (int(rng.integers(0, 15)), d)).astype(float)
        u_hi = u_lo + rng.integers(1, 6, u_lo.shape)
        cells = np.stack(np.meshgrid(*[np.arange(-1, SIZE + 6)] * d, indexing="ij"), -1).reshape(-1, d) + 0.5
        in_a = _inside(cells, a_lo, a_hi).any(axis=1)
        in_u = _inside(cells, u_lo, u_hi).any(axis=1) if len(u_lo) else np.zeros(len(cells), bool)
        res = covered(a_lo, a_hi, u_lo, u_hi)
        assert res.complete
        assert res.settled == in_a.sum()
        assert res.covered == (in_a & in_u).sum()
        if res.piece_lo:
            p_lo, p_hi = np.concatenate(res.piece_lo), np.concatenate(res.piece_hi)
            pa, pu = np.concatenate(res.piece_a), np.concatenate(res.piece_u)
            assert np.all(p_lo >= a_lo[pa]) and np.all(p_hi <= a_hi[pa])
            assert np.all(p_lo >= u_lo[pu]) and np.all(p_hi <= u_hi[pu])
            assert _inside(cells, p_lo, p_hi).sum(axis=1).max() <= 1
            assert np.prod(p_hi - p_lo, axis=1).sum() == res.covered
        else:
            assert res.covered == 0


def test_covered_stops_at_the_deadline_with_a_partial_settled_size():
    rng = np.random.default_rng(2)
    a_lo, a_hi = _disjoint_cells(rng, 50, 3)
    u_lo = rng.integers(0, SIZE, (40, 3)).astype(float)
    res = covered(a_lo, a_hi, u_lo, u_lo + 2, deadline=0.0)
    assert not res.complete and res.settled == 0 and res.covered == 0
