"""Epsilon 0 refinement cutting open boxes along every leaf of a tree (split="leaves") against brute force."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from test_trees_engine import _small_problem, brute_force
from test_trees_joint import two_protected_problem

from faircert.domain import Domain, Feature
from faircert.engines.trees.boxes import normalise
from faircert.engines.trees.joint import SliceBounds
from faircert.engines.trees.leafsplit import LeafSplitter
from faircert.engines.trees.quantify import _slices, quantify
from faircert.engines.trees.run import TreeOptions
from faircert.errors import PropertyError
from faircert.models.io import load_model
from faircert.properties import individual_fairness


def _problem(seed: int, values: int):
    """A small grid problem whose protected feature p has `values` values."""
    X, y, dom = _small_problem(seed, n_features=4)
    X[:, 0] = X[:, 0] % values
    feats = list(dom.features)
    feats[0] = Feature("p", "categorical", 0, values - 1)
    return X, y, Domain(tuple(feats))


def _models(X, y, seed):
    xgb = pytest.importorskip("xgboost")
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    yield load_model(xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=seed, n_jobs=1).fit(X, y))
    yield load_model(RandomForestClassifier(8, max_depth=4, random_state=seed).fit(X, y))
    yield load_model(GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=seed).fit(X, y))


def _check(ir, prop, conf, unfair):
    leaves = quantify(ir, prop, options=TreeOptions(split="leaves"))
    node = quantify(ir, prop, options=TreeOptions(split="node"))
    assert leaves.complete and node.complete
    assert leaves.measured_upper == conf and leaves.conf_settled == conf and leaves.unfair == unfair
    assert leaves.bounds == node.bounds and leaves.unfair == node.unfair
    return leaves, node


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("values", [2, 3, 5])
@pytest.mark.parametrize("kappa", [None, 0.5])
def test_leaf_splits_match_brute_force_and_node_splits(seed, values, kappa):
    X, y, dom = _problem(seed, values)
    prop = individual_fairness(dom, "p", kappa=kappa)
    for ir in _models(X, y, seed):
        conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, False)
        _check(ir, prop, conf, unfair)


@pytest.mark.parametrize("kappa", [None, 0.5])
def test_leaf_splits_with_two_protected_features(kappa):
    ir, dom = two_protected_problem(n=15, depth=4)
    prop = individual_fairness(dom, ["p", "q"], kappa=kappa)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, kappa, False)
    _check(ir, prop, conf, unfair)


def test_leaf_split_partitions_a_box_into_single_leaves_under_every_slice():
    X, y, dom = _problem(1, 4)
    ir = next(_models(X, y, 1))
    prop = individual_fairness(dom, "p")
    nt = normalise(ir, dom)
    slo, _ = _slices(prop, nt.dlo, nt.dhi)
    free = np.ones(len(nt.dlo), dtype=bool)
    free[0] = False
    splitter = LeafSplitter(nt, [0], SliceBounds(nt, [0], slo).prot_ok)
    lo, hi = nt.dlo[None].copy(), nt.dhi[None].copy()
    for t in range(3):  # the leaves of the first three trees, one after the other
        lo, hi = splitter.split(lo, hi, np.full(len(lo), t), free)
    size = np.prod((hi - lo)[:, free], axis=1)
    assert size.sum() == np.prod((nt.dhi - nt.dlo)[free]) and (size > 0).all()
    # every grid point lies in exactly one piece, and each piece sits in one leaf of each tree per slice
    axes = [np.arange(f.min, f.max + 1) for f in dom.features]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes)).astype(float)
    inside = ((grid[:, None, free] >= lo[None, :, free]) & (grid[:, None, free] < hi[None, :, free])).all(axis=2)
    assert (inside.sum(axis=1) == 1).all()
    piece = inside.argmax(axis=1)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from cells import leaves

    for v in range(int(dom.features[0].max) + 1):
        g = grid.copy()
        g[:, 0] = v
        leaf = leaves(ir, g, 3)
        for k in range(len(lo)):
            assert (leaf[piece == k] == leaf[piece == k][0]).all()


def test_leaf_splits_stopped_early_give_sound_bounds():
    X, y, dom = _problem(2, 3)
    ir = next(_models(X, y, 2))
    prop = individual_fairness(dom, "p", kappa=0.5)
    conf, unfair = brute_force(ir, dom, prop.protected, prop.epsilon, 0.5, False)
    truth = 1.0 - unfair / conf
    q = quantify(ir, prop, options=TreeOptions(split="leaves", max_boxes=10))
    assert not q.complete
    assert q.bounds[0] - 1e-12 <= truth <= q.bounds[1] + 1e-12


def test_unknown_split_is_refused():
    X, y, dom = _problem(0, 2)
    ir = next(_models(X, y, 0))
    with pytest.raises(PropertyError, match="unknown split"):
        quantify(ir, individual_fairness(dom, "p"), options=TreeOptions(split="tree"))


def test_leaf_splits_give_the_same_shares_on_one_and_two_workers():
    from faircert.engines.boxes.workers import Parallelism

    X, y, dom = _problem(4, 3)
    ir = next(_models(X, y, 4))
    prop = individual_fairness(dom, "p", kappa=0.5)
    for budget in (30, None):
        one = quantify(ir, prop, 120, options=TreeOptions(split="leaves", max_boxes=budget))
        two = quantify(
            ir, prop, 120, options=TreeOptions(split="leaves", parallel=Parallelism(workers=2), max_boxes=budget)
        )
        assert one.bounds == two.bounds and one.unfair == two.unfair and one.complete == two.complete
