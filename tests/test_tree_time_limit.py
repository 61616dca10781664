"""A tree ensemble with epsilon > 0 keeps a small time limit: the counterexamples drawn from the
undecided part (a neighbourhood search each) and the statistical estimate end by the limit."""

from __future__ import annotations

import time

import numpy as np
import pytest

import faircert
from faircert.domain import Domain, Feature


@pytest.fixture(scope="module")
def forest():
    """150 trees over eight features: far from decided in a second with epsilon on two of them."""
    xgb = pytest.importorskip("xgboost")
    from faircert.models.io import load_model

    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.integers(0, 2, n)] + [rng.integers(0, 60, n) for _ in range(7)]).astype(float)
    y = ((X[:, 1] / 60 + X[:, 2] / 60 - X[:, 3] / 90 + 0.3 * X[:, 0] + rng.normal(0, 0.3, n)) > 0.8).astype(int)
    clf = xgb.XGBClassifier(n_estimators=150, max_depth=5, random_state=0, n_jobs=1).fit(X, y)
    dom = Domain((Feature("s", "binary", 0, 1),) + tuple(Feature(f"x{j}", "integer", 0, 59) for j in range(1, 8)))
    ir = load_model(clf)
    faircert.verify(ir, dom, protected="s", epsilon={"x1": 2}, time_limit=1, workers=1)  # kernels compiled
    return ir, dom


@pytest.mark.parametrize("limit", [1.0, 2.0])
def test_an_epsilon_run_ends_by_its_time_limit(forest, limit):
    ir, dom = forest
    t = time.monotonic()
    result = faircert.verify(ir, dom, protected="s", epsilon={"x1": 2, "x2": 5}, time_limit=limit, workers=1)
    wall = time.monotonic() - t
    assert result.stopped == "time limit" and result.undecided > 0  # the limit, not the work, ended it
    assert result.stats["estimate_s"] > 0 and result.statistical is not None
    # the engine's own clock (a loaded machine slows the work, not the clock's checks)
    assert result.elapsed_s <= limit + 0.25 * limit
    assert wall <= 1.5 * limit + 2
    for c in result.counterexamples:  # each drawn pair re-checked on the model
        assert (ir.predict(np.array([c.x]))[0] == 1) != (ir.predict(np.array([c.x_prime]))[0] == 1)


def test_counterexample_draws_stop_at_their_deadline(forest):
    from faircert.engines.trees.quantify import quantify
    from faircert.engines.trees.run import TreeOptions
    from faircert.engines.trees.sampling import sample_unfair
    from faircert.properties import individual_fairness

    ir, dom = forest
    prop = individual_fairness(dom, ["s"], epsilon={"x1": 2, "x2": 5})
    q = quantify(ir, prop, 0.5, options=TreeOptions(method="refinement", keep_pieces=0))
    assert not q.complete
    t = time.monotonic()
    x, xp, _ = sample_unfair(ir, q, 100, deadline=t)  # already past: nothing drawn
    assert len(x) == len(xp) == 0 and time.monotonic() - t < 1.0
    x, xp, _ = sample_unfair(ir, q, 20)  # no deadline: as many as asked
    assert len(x) == 20
