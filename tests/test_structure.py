"""Structure learning: the local scores equal their formulas, and hill climbing honours its
constraints and finds the dependencies that generated the data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from faircert.errors import DataError
from faircert.population.structure import LocalScores, hill_climb


def _chain(n: int = 3000, seed: int = 0) -> np.ndarray:
    """a -> b -> c with strong dependence, and d independent of everything."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.1)) % 3
    c = (b + (rng.random(n) < 0.1)) % 3
    d = rng.integers(0, 2, n)
    return np.stack([a, b, c, d], axis=1)


def test_local_scores_equal_their_formulas():
    codes = np.array([[0, 0], [0, 1], [1, 1], [1, 1], [0, 0]])
    # child 1 given parent 0: counts n[a][b] = [[2, 1], [0, 2]]
    counts = [[2, 1], [0, 2]]
    k2 = sum(math.lgamma(2) - math.lgamma(sum(r) + 2) + sum(math.lgamma(x + 1) for x in r) for r in counts)
    assert LocalScores(codes, [2, 2], "k2")(1, frozenset({0})) == pytest.approx(k2)
    loglik = sum(x * math.log(x / sum(r)) for r in counts for x in r if x)
    assert LocalScores(codes, [2, 2], "bic")(1, frozenset({0})) == pytest.approx(loglik - 0.5 * math.log(5) * 2)
    a_j, a_jk = 10 / 2, 10 / 4
    bdeu = sum(
        math.lgamma(a_j) - math.lgamma(sum(r) + a_j) + sum(math.lgamma(x + a_jk) - math.lgamma(a_jk) for x in r)
        for r in counts
    )
    assert LocalScores(codes, [2, 2], "bdeu")(1, frozenset({0})) == pytest.approx(bdeu)
    with pytest.raises(DataError, match="score"):
        LocalScores(codes, [2, 2], "aic")


@pytest.mark.parametrize("score", ["k2", "bic", "bdeu"])
def test_hill_climbing_finds_the_chain_and_leaves_the_independent_column_alone(score):
    edges = hill_climb(_chain(), [3, 3, 3, 2], set(), score, max_indegree=2)
    skeleton = {frozenset(e) for e in edges}
    assert {frozenset({0, 1}), frozenset({1, 2})} <= skeleton
    assert not any(3 in e for e in skeleton)


def test_hill_climbing_honours_forbidden_children_indegree_and_acyclicity():
    codes = _chain(seed=1)
    edges = hill_climb(codes, [3, 3, 3, 2], {1}, "k2", max_indegree=1)
    assert all(child != 1 for _, child in edges)
    children = {}
    for p, c in edges:
        children.setdefault(c, []).append(p)
    assert all(len(ps) <= 1 for ps in children.values())
    # acyclic: repeatedly remove nodes without parents
    left, remaining = set(range(4)), list(edges)
    while left:
        roots = {v for v in left if not any(c == v and p in left for p, c in remaining)}
        assert roots, f"cycle among {left}"
        left -= roots
    local = LocalScores(codes, [3, 3, 3, 2], "k2")
    total = sum(local(v, frozenset(p for p, c in edges if c == v)) for v in range(4))
    assert total > sum(local(v, frozenset()) for v in range(4))
