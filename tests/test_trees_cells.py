"""Leaf-tuple cells of epsilon-0 fairness problems (`benchmarks/cells.py`, which measures how
many there are) against brute force over every grid point."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from cells import count_cells, leaf_tuple_ids, sample_deeper

from faircert.domain import Domain, Feature
from faircert.models.io import load_model

RANGES = [(0, 5), (2, 9), (0, 3), (0, 2), (1, 4)]  # feature 3 is protected
PROTECTED = 3


def _domain() -> Domain:
    return Domain(
        tuple(Feature(f"x{i}", "categorical" if i == PROTECTED else "integer", a, b) for i, (a, b) in enumerate(RANGES))
    )


def _grid(ranges) -> np.ndarray:
    axes = [np.arange(a, b + 1) for a, b in ranges]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes)).astype(float)


def _data(seed: int):
    rng = np.random.default_rng(seed)
    X = _grid(RANGES)
    X = X[rng.choice(len(X), 600, replace=False)]
    y = rng.integers(0, 2, len(X))  # random labels: the trees cut at many places, on every feature
    # thresholds between grid points and beyond the domain
    return X + rng.choice([0.0, 0.5], X.shape), y


def _brute_force_tuples(clf_leaves, trees: int) -> list[int]:
    """Distinct leaf tuples over the grid after 1..trees trees; `clf_leaves(X)` is the framework's own
    leaf index per row and tree."""
    free = _grid([r for i, r in enumerate(RANGES) if i != PROTECTED])
    per_value = []
    for v in range(RANGES[PROTECTED][0], RANGES[PROTECTED][1] + 1):
        X = np.insert(free, PROTECTED, v, axis=1)
        per_value.append(np.asarray(clf_leaves(X), dtype=np.int64).reshape(len(X), -1))
    out = []
    for t in range(1, trees + 1):
        rows = np.concatenate([leaf[:, :t] for leaf in per_value], axis=1)
        out.append(len(np.unique(rows, axis=0)))
    return out


def _check(ir, clf_leaves, trees: int) -> None:
    dom = _domain()
    res = count_cells(ir, dom, f"x{PROTECTED}")
    expected = _brute_force_tuples(clf_leaves, trees)
    assert res.counts == expected
    assert res.counts == sorted(res.counts) and res.counts[-1] > 10 * res.counts[0]
    # the cells partition the grid of the other features
    free = [r for i, r in enumerate(RANGES) if i != PROTECTED]
    sizes = np.prod((res.hi - res.lo).astype(np.int64), axis=1)
    assert (sizes > 0).all() and sizes.sum() == np.prod([b - a + 1 for a, b in free])
    # every grid point of a cell has the cell's leaf tuple; different cells have different tuples
    grid = _grid(free)
    inside = np.all((grid[:, None] >= res.lo[None]) & (grid[:, None] < res.hi[None]), axis=2)
    assert (inside.sum(axis=1) == 1).all()
    cell = inside.argmax(axis=1)
    ids = leaf_tuple_ids(ir, dom, f"x{PROTECTED}", grid, trees)
    assert len(np.unique(np.stack([cell, ids], axis=1), axis=0)) == len(res.lo) == len(np.unique(ids))


@pytest.mark.parametrize("seed", [0, 1])
def test_xgboost_cells_equal_brute_force_leaf_tuples(seed):
    xgb = pytest.importorskip("xgboost")
    X, y = _data(seed)
    clf = xgb.XGBClassifier(n_estimators=12, max_depth=3, random_state=seed, n_jobs=1).fit(X, y)
    _check(load_model(clf), lambda Z: clf.get_booster().predict(xgb.DMatrix(Z), pred_leaf=True), 12)


def test_sklearn_forest_cells_equal_brute_force_leaf_tuples():
    from sklearn.ensemble import RandomForestClassifier

    X, y = _data(2)
    clf = RandomForestClassifier(8, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    _check(load_model(clf), clf.apply, 8)


def _xgboost(seed: int, trees: int):
    """An XGBoost model (depth 3) on the test data of `seed`, and the test domain."""
    xgb = pytest.importorskip("xgboost")
    X, y = _data(seed)
    clf = xgb.XGBClassifier(n_estimators=trees, max_depth=3, random_state=seed, n_jobs=1).fit(X, y)
    return load_model(clf), _domain()


def test_caps_stop_after_an_exact_count():
    ir, dom = _xgboost(0, 8)
    full = count_cells(ir, dom, f"x{PROTECTED}").counts
    capped = count_cells(ir, dom, f"x{PROTECTED}", cap=full[3] - 1, chunk=7)
    assert capped.stopped == "cap" and capped.counts == full[:4] and capped.kept_trees == 3
    assert len(capped.lo) == full[2]
    timed = count_cells(ir, dom, f"x{PROTECTED}", time_limit=0.0)
    assert timed.stopped == "time" and timed.counts == full[:1]


def test_sampled_deeper_counts_are_exact_when_every_cell_is_drawn():
    ir, dom = _xgboost(1, 12)
    full = count_cells(ir, dom, f"x{PROTECTED}").counts
    capped = count_cells(ir, dom, f"x{PROTECTED}", cap=full[4] - 1)
    every = sample_deeper(ir, dom, f"x{PROTECTED}", capped, time_limit=1e9, batch=5, chunk=3)
    assert every["trees"] == list(range(5, 13)) and every["sampled"] == every["of"] == full[3]
    assert np.allclose(every["estimate"], full[4:]) and np.allclose(every["stderr"], 0)
    some = sample_deeper(ir, dom, f"x{PROTECTED}", capped, time_limit=0.0, batch=5)
    assert some["sampled"] == 5 and all(np.isfinite(some["estimate"]))
