"""Epsilon 0 fairness by the joint partition (trees_joint) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_trees_engine import _small_problem, brute_force

from faircert.domain import Domain, Feature
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.sampling import sample_unfair
from faircert.engines.trees.verify import verify_trees
from faircert.properties import individual_fairness


def _xgb(X, y, seed, n=20, depth=3):
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    return load_model(xgb.XGBClassifier(n_estimators=n, max_depth=depth, random_state=seed, n_jobs=1).fit(X, y))


def two_protected_problem(n: int, depth: int):
    """An ensemble over 5 features whose first two (p, q) are categorical, to protect both."""
    X, y, dom = _small_problem(7, n_features=5)
    feats = list(dom.features)
    feats[1] = Feature("q", "categorical", feats[1].min, feats[1].max)
    return _xgb(X, y, 7, n=n, depth=depth), Domain(tuple(feats))


@pytest.mark.parametrize("seed", [0, 2, 4])
@pytest.mark.parametrize("kappa", [None, 0.5, 0.65, 0.9])
def test_joint_partition_matches_brute_force(seed, kappa):
    X, y, dom = _small_problem(seed, n_features=4)
    ir = _xgb(X, y, seed)
    prop = individual_fairness(dom, "p", kappa=kappa)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, False)
    seen = []
    res = verify_trees(ir, prop, progress=seen.append)
    assert res.confident_size == conf and res.unfair_size == unfair and res.stats["converged"]
    truth = 1.0 - unfair / conf if conf else 1.0
    assert res.measure_lower == pytest.approx(truth, abs=1e-12)
    for s in seen:
        assert s.measure_lower - 1e-12 <= truth <= s.measure_upper + 1e-12
    assert [s.measure_lower for s in seen] == sorted(s.measure_lower for s in seen)
    assert bool(res.counterexamples) == (unfair > 0) and res.stats["rejected_counterexamples"] == 0


@pytest.mark.parametrize("kappa", [0.5, 0.7])
def test_joint_partition_two_protected_features(kappa):
    ir, dom = two_protected_problem(n=25, depth=4)
    prop = individual_fairness(dom, ["p", "q"], kappa=kappa)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, False)
    q = quantify(ir, prop)
    assert q.complete and q.measured_upper == conf and q.unfair == unfair and q.conf_settled == conf
    x, xp, rejected = sample_unfair(ir, q, 3000, seed=0)
    assert rejected == 0 and (len(x) == 3000 or unfair == 0)
    assert np.all(ir.predict(x) != ir.predict(xp)) and np.all(x[:, 2:] == xp[:, 2:])


def test_joint_partition_time_limited_bounds_are_sound():
    X, y, dom = _small_problem(3, n_features=5)
    ir = _xgb(X, y, 0, n=30, depth=4)
    prop = individual_fairness(dom, "p", kappa=0.6)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.6, False)
    truth = 1 - unfair / conf
    for limit in (1e-6, 1e-3, 3e-3, 1e-2, 3e-2):
        lo, hi = quantify(ir, prop, time_limit=limit).bounds
        assert lo - 1e-12 <= truth <= hi + 1e-12


@pytest.mark.parametrize("most_leaves", [8, 20])
def test_leaf_ranges_match_masked_min_and_max(most_leaves):
    """The dense sorted layout gives each tree's min and max over its reachable leaves, for ragged
    trees (ties in value included; up to 8 leaves: the bit-table path, more: argmax) and for a
    subset of the trees."""
    from faircert.engines.trees.boxes import LeafRanges

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, most_leaves + 1, size=12)
    sizes[0] = most_leaves
    start = np.concatenate([[0], np.cumsum(sizes)])
    val = np.round(rng.normal(size=start[-1]), 1)  # rounding makes equal leaf values
    ok = rng.random((300, start[-1])) < 0.4
    ok[np.arange(300)[:, None], start[:-1][None, :] + rng.integers(0, sizes)] = (
        True  # a box reaches a leaf of every tree
    )
    want_min = np.array([[val[a:b][ok[r, a:b]].min() for a, b in itertools.pairwise(start)] for r in range(300)])
    want_max = np.array([[val[a:b][ok[r, a:b]].max() for a, b in itertools.pairwise(start)] for r in range(300)])
    ranges = LeafRanges.of_trees(start, val)
    vmin, vmax = ranges.reduce(ok[:, ranges.idx])
    assert np.array_equal(vmin, want_min) and np.array_equal(vmax, want_max)
    some = np.array([1, 4, 5, 11])
    smin, smax = ranges.subset(some).reduce(ok[:, ranges.idx][:, ranges.columns(some)])
    assert np.array_equal(smin, want_min[:, some]) and np.array_equal(smax, want_max[:, some])
