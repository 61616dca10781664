"""Margin bounds of merged tree pairs (`engines/trees/pairs.py`) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_trees_engine import _models, _small_problem, brute_force

from faircert.engines.trees import pairs
from faircert.engines.trees.boxes import domain_box, normalise
from faircert.engines.trees.verify import verify_trees
from faircert.properties import individual_fairness


def _grid(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Every integer point of the box [lo, hi)."""
    return np.array(list(itertools.product(*[np.arange(a, b) for a, b in zip(lo, hi)])), dtype=np.float64)


def _random_boxes(rng, dlo, dhi, n):
    a = rng.integers(dlo, dhi, (n, len(dlo)))
    b = rng.integers(dlo, dhi, (n, len(dlo)))
    return np.minimum(a, b).astype(float), np.maximum(a, b).astype(float) + 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_bounds_contain_every_margin_and_are_never_looser(seed, monkeypatch):
    X, y, dom = _small_problem(seed, n_features=4)
    rng = np.random.default_rng(seed)
    tighter = 0
    for ir in _models(X, y, seed):
        nt = normalise(ir, dom)
        lo, hi = _random_boxes(rng, *domain_box(dom), 60)
        monkeypatch.setattr(pairs, "MERGE_PAIRS", False)
        plain_min, plain_max, _ = nt.bounds(lo, hi)
        monkeypatch.setattr(pairs, "MERGE_PAIRS", True)
        vmin, vmax, _ = nt.bounds(lo, hi)
        assert len(nt.tree_pairs.pairs) == nt.n_trees // 2
        assert np.all(vmax >= vmin)
        low, high = nt.offset + vmin.sum(axis=1), nt.offset + vmax.sum(axis=1)
        assert np.all(low >= nt.offset + plain_min.sum(axis=1) - 1e-9)
        assert np.all(high <= nt.offset + plain_max.sum(axis=1) + 1e-9)
        for i in range(len(lo)):
            margin = nt.offset + ir.scale * ir.leaf_values(_grid(lo[i], hi[i])).sum(axis=1)
            assert margin.min() >= low[i] - 1e-9 and margin.max() <= high[i] + 1e-9
        tighter += int(np.sum(high - low < (plain_max - plain_min).sum(axis=1) - 1e-9))
    assert tighter > 0


def test_pair_ranges_are_exact_for_two_trees(monkeypatch):
    """With two trees merged, the bounds are the exact min and max of the margin over each box."""
    X, y, dom = _small_problem(3, n_features=4)
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    ir = load_model(xgb.XGBClassifier(n_estimators=2, max_depth=4, random_state=0, n_jobs=1).fit(X, y))
    monkeypatch.setattr(pairs, "MERGE_PAIRS", True)
    nt = normalise(ir, dom)
    lo, hi = _random_boxes(np.random.default_rng(0), *domain_box(dom), 40)
    vmin, vmax, _ = nt.bounds(lo, hi)
    for i in range(len(lo)):
        margin = nt.offset + ir.scale * ir.leaf_values(_grid(lo[i], hi[i])).sum(axis=1)
        assert nt.offset + vmin[i].sum() == pytest.approx(margin.min(), abs=1e-9)
        assert nt.offset + vmax[i].sum() == pytest.approx(margin.max(), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 4])
def test_verification_with_merged_pairs_matches_brute_force(seed, monkeypatch):
    monkeypatch.setattr(pairs, "MERGE_PAIRS", True)
    X, y, dom = _small_problem(seed, n_features=4)
    for ir in _models(X, y, seed):
        for epsilon in (None, 1):
            prop = individual_fairness(dom, "p", epsilon=epsilon)
            conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, None, False)
            res = verify_trees(ir, prop)
            assert res.stats["converged"] and res.unfair_size == unfair and res.confident_size == conf
