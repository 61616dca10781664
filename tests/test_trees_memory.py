"""Compact storage of the tree refinement: boxes encoded exactly, each unfair box stored once with its
unfair protected values, and the memory limit in bytes."""

from __future__ import annotations

import numpy as np
import pytest
from test_trees_engine import _small_problem, brute_force_masks

from faircert import memory
from faircert.domain import Domain, Feature
from faircert.engines.boxes.frontier import BoxCodec, Frontier
from faircert.engines.trees.quantify import quantify
from faircert.engines.trees.run import TreeOptions
from faircert.engines.trees.sampling import region_is_exact, sample_unfair
from faircert.engines.trees.verify import verify_trees
from faircert.properties import individual_fairness


def test_box_codec_is_exact_and_small():
    dlo, dhi = np.array([0.0, -5.0, 0.0]), np.array([300.0, 70000.0, 1.0])
    discrete = np.array([True, True, False])
    codec = BoxCodec(dlo, dhi, discrete)
    assert [codec.dtype[f"l{f}"].itemsize for f in range(3)] == [2, 4, 8]  # uint16, uint32, float64
    lo = np.array([[0.0, -5.0, 0.0], [17.0, 65600.0, 0.25]])
    hi = np.array([[300.0, 70000.0, 1.0], [18.0, 65601.0, 0.1 + 0.2]])
    back = codec.decode(codec.encode(lo, hi))
    assert np.array_equal(back[0], lo) and np.array_equal(back[1], hi)
    with pytest.raises(ValueError):
        codec.encode(np.array([[0.5, 0.0, 0.0]]), hi[:1])  # off the integer grid
    cuts = BoxCodec.for_cuts(dlo, dhi, discrete, np.array([0, 2, 2]), np.array([7.0, 0.1 + 0.2, 0.5]))
    assert cuts.bytes_per_box == 2 * 3  # every feature has at most 4 positions: one byte each
    lo2, hi2 = np.array([[7.0, -5.0, 0.1 + 0.2]]), np.array([[300.0, 70000.0, 0.5]])
    back = cuts.decode(cuts.encode(lo2, hi2))
    assert np.array_equal(back[0], lo2) and np.array_equal(back[1], hi2)
    with pytest.raises(ValueError):
        cuts.encode(np.array([[8.0, -5.0, 0.0]]), hi2)  # not a cut position


def test_frontier_counts_the_bytes_it_holds():
    dlo, dhi = np.zeros(4), np.full(4, 200.0)
    fr = Frontier(np.ones(4, dtype=bool), 3, BoxCodec(dlo, dhi, np.ones(4, dtype=bool)))
    lo = np.array([[0.0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]])
    fr.push(lo, lo + np.arange(5, 0, -1)[:, None])
    assert fr.count == 5 and fr.nbytes == 5 * 8  # 8 coordinates of one byte each
    a_lo, a_hi = fr.pop()
    assert np.array_equal(a_lo, lo[:3]) and np.array_equal(a_hi - a_lo, np.repeat([[5.0], [4], [3]], 4, axis=1))
    assert fr.count == 2 and fr.nbytes == 2 * 8


def _multi_valued_problem(seed: int):
    """An XGBoost model on a small grid whose protected feature has 3 or more values."""
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    X, y, dom = _small_problem(seed, n_features=4)
    assert dom.features[0].max >= 2
    clf = xgb.XGBClassifier(n_estimators=12, max_depth=3, random_state=seed, n_jobs=1).fit(X, y)
    return load_model(clf), dom


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unfair_boxes_stored_once_are_the_exact_region(seed):
    ir, dom = _multi_valued_problem(seed)
    prop = individual_fairness(dom, "p", epsilon=0.0, kappa=0.5)
    grid, conf, unfair = brute_force_masks(ir, dom, (0,), np.zeros(len(dom.features)), 0.5, False)
    q = quantify(ir, prop)
    assert q.complete and q.unfair_boxes is not None and q.unfair_boxes.whole
    assert q.unfair == unfair.sum() > 0 and q.unfair_boxes.size == q.unfair
    assert q.measured_upper == conf.sum()
    # each box once, with several unfair slices on some: fewer boxes than pieces
    assert q.unfair_boxes.boxes < q.n_pieces
    # the pieces it stands for cover every unfair grid point exactly once, and nothing else
    ex = q.explicit()
    points = grid.reshape(-1, len(dom.features))
    inside = np.all((points[:, None] >= ex.piece_lo[None]) & (points[:, None] < ex.piece_hi[None]), axis=2)
    assert np.array_equal(inside.sum(axis=1), unfair.ravel().astype(int))
    # testing mode: uniform over the exact region, every pair re-checked
    assert region_is_exact(q)
    x, xp, rejected = sample_unfair(ir, q, 20_000, seed=3)
    assert len(x) == 20_000 and rejected == 0
    region = {tuple(r) for r in points[unfair.ravel()].tolist()}
    assert {tuple(r) for r in x.tolist()} <= region
    assert np.all(x[:, 0] != xp[:, 0]) and np.array_equal(x[:, 1:], xp[:, 1:])
    assert np.all(ir.predict(x) != ir.predict(xp))
    share = np.bincount(points[unfair.ravel()][:, 0].astype(int)) / unfair.sum()
    drawn = np.bincount(x[:, 0].astype(int), minlength=len(share)) / len(x)
    assert np.all(np.abs(drawn - share) < 4 * np.sqrt(share * (1 - share) / len(x)) + 1e-9)


def test_verify_keeps_only_the_boxes_of_its_counterexamples():
    ir, dom = _multi_valued_problem(0)
    prop = individual_fairness(dom, "p", epsilon=0.0, kappa=0.5)
    whole = quantify(ir, prop)
    res = verify_trees(ir, prop, max_counterexamples=3)
    assert res.stats["converged"] and res.unfair_size == whole.unfair
    assert res.stats["unfair_boxes_stored"] <= 3 < res.stats["unfair_boxes"] == whole.unfair_boxes.boxes
    assert len(res.counterexamples) == 3 and res.stats["rejected_counterexamples"] == 0
    # the same pairs as from the whole region: the centres of its largest pieces
    x, xp = whole.unfair_boxes.largest(3)
    assert [c.x for c in res.counterexamples] == x.tolist() and [c.x_prime for c in res.counterexamples] == xp.tolist()
    q = quantify(ir, prop, options=TreeOptions(keep_pieces=3))
    assert not region_is_exact(q) and region_is_exact(whole)


def _large_problem():
    """Enough trees and features that the refinement is far from done after a few thousand boxes."""
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    rng = np.random.default_rng(0)
    n = 8
    X = rng.integers(0, 100, (3000, n)).astype(float)
    X[:, 0] = rng.integers(0, 4, 3000)
    y = np.sin(X[:, 1] / 9) + X[:, 2] / 50 - X[:, 3] / 70 + 0.3 * X[:, 0] + rng.normal(0, 0.5, 3000) > 0.8
    feats = [Feature("p", "categorical", 0, 3)] + [Feature(f"f{i}", "integer", 0, 99) for i in range(1, n)]
    clf = xgb.XGBClassifier(n_estimators=30, max_depth=4, random_state=0, n_jobs=1).fit(X, y.astype(int))
    return load_model(clf), Domain(tuple(feats))


def test_the_byte_limit_holds_at_least_three_times_the_boxes_it_held_before():
    ir, dom = _large_problem()
    n = len(dom.features)
    budget = 400_000
    with memory.limited(budget):
        q = quantify(ir, individual_fairness(dom, "p", epsilon=0.0, kappa=0.5))
    assert q.stats["memory_limited"] and not q.complete
    open_boxes = sum(len(p[0]) for p in q.open_parts)
    stored = open_boxes + q.unfair_boxes.boxes
    # before: an open box took two float64 rows and every unfair (box, slice) four, so the budget held
    # at most budget / (16 n) boxes
    before = budget // (16 * n)
    assert stored >= 3 * before, (stored, before)
    held = open_boxes * 2 * n + q.unfair_boxes.nbytes  # one byte per coordinate here
    assert held <= budget + 4 * 4096 * 2 * n  # the last round's boxes may pass it
    lo, hi = q.bounds
    assert 0 <= lo < hi <= 1
