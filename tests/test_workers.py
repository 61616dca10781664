"""Box work on several processes: the same answers as one process, and no chunk lost when a worker
dies."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from faircert import PropertyError
from faircert.engines.boxes.workers import Parallelism, Workers
from faircert.options import VerifyOptions


class Squares:
    """A job whose first call in any worker kills that worker (once per marker file)."""

    def __init__(self, marker: Path | None = None) -> None:
        self.marker = marker

    def square(self, x: int) -> int:
        if self.marker is not None and not self.marker.exists():
            self.marker.write_text("died once")
            os._exit(1)
        return x * x


def test_map_returns_results_in_chunk_order_in_process_and_on_workers():
    chunks = [(i,) for i in range(9)]
    with Workers(Squares(), 1) as one, Workers(Squares(), 2) as two:
        assert one.map("square", chunks) == two.map("square", chunks) == [i * i for i in range(9)]
        assert one.pids() == [os.getpid()]


def test_a_dead_worker_loses_no_chunk(tmp_path):
    with Workers(Squares(tmp_path / "marker"), 2) as pool:
        assert pool.map("square", [(i,) for i in range(8)]) == [i * i for i in range(8)]
        assert pool.restarts == 1


def _adult_like():
    pytest.importorskip("xgboost")
    import xgboost as xgb

    from faircert.domain import Domain, Feature
    from faircert.models.io import load_model

    rng = np.random.default_rng(0)
    X = np.stack([rng.integers(0, 60, 3000), rng.integers(0, 2, 3000), rng.integers(0, 40, 3000),
                  rng.integers(0, 30, 3000)], axis=1).astype(float)
    y = ((X[:, 0] / 60 + X[:, 2] / 40 + 0.3 * X[:, 1] + rng.normal(0, 0.3, 3000)) > 1.1).astype(int)
    clf = xgb.XGBClassifier(n_estimators=30, max_depth=4, random_state=0, n_jobs=1).fit(X, y)
    dom = Domain((Feature("a", "integer", 0, 59), Feature("s", "binary", 0, 1), Feature("b", "integer", 0, 39),
                  Feature("c", "integer", 0, 29)))
    return load_model(clf), dom


def test_trees_give_the_same_shares_on_one_and_two_workers():
    from faircert.engines.trees.quantify import quantify
    from faircert.properties import individual_fairness

    ir, dom = _adult_like()
    prop = individual_fairness(dom, "s", kappa=0.5)
    for budget in (400, None):  # a box budget (stopped early), and to the end
        one = quantify(ir, prop, 120, max_boxes=budget)
        two = quantify(ir, prop, 120, parallel=Parallelism(workers=2), max_boxes=budget)
        assert one.bounds == two.bounds and one.unfair == two.unfair and one.complete == two.complete
        assert one.complete == (budget is None)
    assert one.bounds[0] == one.bounds[1] < 1.0


def test_worker_counts_and_box_budgets_are_checked():
    with pytest.raises(PropertyError, match="workers must be an integer >= 1"):
        VerifyOptions(workers=0)
    with pytest.raises(PropertyError, match="max boxes must be an integer >= 1"):
        VerifyOptions(max_boxes=-3)


def test_the_api_takes_workers_and_a_box_budget(tmp_path):
    import faircert

    ir, dom = _adult_like()
    one = faircert.verify(ir, dom, "s", kappa=0.5, max_boxes=400, max_counterexamples=0)
    two = faircert.verify(ir, dom, "s", kappa=0.5, max_boxes=400, max_counterexamples=0, workers=2)
    assert (one.certified, one.falsified, one.undecided) == (two.certified, two.falsified, two.undecided)
    assert one.undecided > 0 and one.verdict == "unknown"
